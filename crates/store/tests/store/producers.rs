//! Producer sightings and quiesced reports (a scale's producer quiesce): a sighting never erases a report,
//! forgetting removes both.

use rsc_store::{ProducerEntry, Sighting, SightingLimits, Store};

const LIMITS: SightingLimits = SightingLimits {
    ttl_ms: 60_000,
    max_producers: 3,
};

on_both_topologies!(producer_sightings_and_reports);

async fn producer_sightings_and_reports(store: &Store, name: &str) {
    let seen = format!("rsc-test:{{{name}}}:producers:seen");
    let quiesced = format!("rsc-test:{{{name}}}:producers:quiesced");
    let record = format!("rsc-test:{{{name}}}:stream");
    // Without the stream's record nothing is written.
    assert_eq!(
        store
            .producer_seen(&record, &seen, "p0", None, 90, LIMITS)
            .await
            .expect("seen"),
        Sighting::NoStream
    );
    let mut conn = store.connection();
    let () = redis::cmd("SET")
        .arg(&record)
        .arg("{}")
        .query_async(&mut conn)
        .await
        .expect("a stand-in record");
    assert!(
        store
            .producers(&seen, &quiesced)
            .await
            .expect("read")
            .is_empty()
    );
    store
        .producer_seen(&record, &seen, "p1", Some("app"), 100, LIMITS)
        .await
        .expect("seen");
    store
        .producer_seen(&record, &seen, "p2", None, 110, LIMITS)
        .await
        .expect("seen");
    store
        .producer_quiesced(
            &record,
            &seen,
            &quiesced,
            "p1",
            Some("app"),
            "reshard-1",
            7,
            120,
            LIMITS,
        )
        .await
        .expect("quiesced");
    // A later routing fetch moves the sighting and keeps the report.
    store
        .producer_seen(&record, &seen, "p1", Some("app"), 130, LIMITS)
        .await
        .expect("seen");
    // Both hashes expire; a stream keeps at most `max_producers`.
    for key in [&seen, &quiesced] {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut conn)
            .await
            .expect("pttl");
        assert!(ttl > 0 && ttl <= 60_000, "{key}: {ttl}");
    }
    assert_eq!(
        store
            .producer_seen(&record, &seen, "p3", None, 140, LIMITS)
            .await
            .expect("seen"),
        Sighting::Recorded
    );
    assert_eq!(
        store
            .producer_seen(&record, &seen, "p4", None, 150, LIMITS)
            .await
            .expect("seen"),
        Sighting::Full
    );
    assert_eq!(
        store
            .producer_seen(&record, &seen, "p1", Some("app"), 160, LIMITS)
            .await
            .expect("seen"),
        Sighting::Recorded
    );
    let all = store.producers(&seen, &quiesced).await.expect("read");
    assert_eq!(
        all.get("p1"),
        Some(&ProducerEntry {
            last_seen_ms: 160,
            principal: Some("app".into()),
            quiesced: Some(("reshard-1".into(), 7, 120)),
        })
    );
    assert_eq!(
        all.get("p2"),
        Some(&ProducerEntry {
            last_seen_ms: 110,
            principal: None,
            quiesced: None,
        })
    );
    store
        .producers_forget(&seen, &quiesced, &["p1".to_string()])
        .await
        .expect("forget");
    let left = store.producers(&seen, &quiesced).await.expect("read");
    assert_eq!(left.keys().collect::<Vec<_>>(), vec!["p2", "p3"]);
}
