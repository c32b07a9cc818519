//! Producer sightings and quiesced reports (a scale's producer quiesce): a sighting never erases a report,
//! the first sighting's time is kept (rollback stake, issue #32 finding 12), forgetting removes all three.

use rsc_store::{ProducerEntry, Sighting, SightingLimits, Store};

const LIMITS: SightingLimits = SightingLimits {
    ttl_ms: 60_000,
    max_producers: 3,
};

on_both_topologies!(producer_sightings_and_reports);

async fn producer_sightings_and_reports(store: &Store, name: &str) {
    let keys = store.keyspace().producers(name);
    let record = format!("rsc-test:{{{name}}}:stream");
    assert_eq!(keys.record, record);
    // Without the stream's record nothing is written.
    assert_eq!(
        store
            .producer_seen(name, "p0", None, 90, LIMITS)
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
    assert!(store.producers(name).await.expect("read").is_empty());
    store
        .producer_seen(name, "p1", Some("app"), 100, LIMITS)
        .await
        .expect("seen");
    store
        .producer_seen(name, "p2", None, 110, LIMITS)
        .await
        .expect("seen");
    store
        .producer_quiesced(name, "p1", Some("app"), "reshard-1", 7, 120, LIMITS)
        .await
        .expect("quiesced");
    // A later routing fetch moves the sighting and keeps the report.
    store
        .producer_seen(name, "p1", Some("app"), 130, LIMITS)
        .await
        .expect("seen");
    // Both hashes expire; a stream keeps at most `max_producers`.
    for key in [&keys.seen, &keys.first_seen, &keys.quiesced] {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut conn)
            .await
            .expect("pttl");
        assert!(ttl > 0 && ttl <= 60_000, "{key}: {ttl}");
    }
    assert_eq!(
        store
            .producer_seen(name, "p3", None, 140, LIMITS)
            .await
            .expect("seen"),
        Sighting::Recorded
    );
    assert_eq!(
        store
            .producer_seen(name, "p4", None, 150, LIMITS)
            .await
            .expect("seen"),
        Sighting::Full
    );
    assert_eq!(
        store
            .producer_seen(name, "p1", Some("app"), 160, LIMITS)
            .await
            .expect("seen"),
        Sighting::Recorded
    );
    let all = store.producers(name).await.expect("read");
    assert_eq!(
        all.get("p1"),
        Some(&ProducerEntry {
            last_seen_ms: 160,
            first_seen_ms: Some(100),
            principal: Some("app".into()),
            quiesced: Some(("reshard-1".into(), 7, 120)),
        })
    );
    assert_eq!(
        all.get("p2"),
        Some(&ProducerEntry {
            last_seen_ms: 110,
            first_seen_ms: Some(110),
            principal: None,
            quiesced: None,
        })
    );
    store
        .producers_forget(name, &["p1".to_string()])
        .await
        .expect("forget");
    let left = store.producers(name).await.expect("read");
    assert_eq!(left.keys().collect::<Vec<_>>(), vec!["p2", "p3"]);
    let firsts: Vec<String> = redis::cmd("HKEYS")
        .arg(&keys.first_seen)
        .query_async(&mut conn)
        .await
        .expect("hkeys");
    assert_eq!(
        firsts,
        vec!["p2", "p3"],
        "p1's first sighting is forgotten too"
    );

    // A producer that comes back after being forgotten is first seen again.
    store
        .producer_seen(name, "p1", Some("app"), 170, LIMITS)
        .await
        .expect("seen");
    let all = store.producers(name).await.expect("read");
    assert_eq!(all["p1"].first_seen_ms, Some(170));

    // A sighting written by an earlier version (no first-seen time) has none until its next sighting, which
    // records the time of the one before; a stale first-seen time of a producer no longer seen is replaced.
    let _: i64 = redis::cmd("HDEL")
        .arg(&keys.seen)
        .arg("p1")
        .arg("p3")
        .query_async(&mut conn)
        .await
        .expect("an earlier version forgets p1 and p3 (not their first-seen times)");
    let _: i64 = redis::cmd("HSET")
        .arg(&keys.seen)
        .arg("old")
        .arg("120 app")
        .query_async(&mut conn)
        .await
        .expect("an old-style sighting");
    let all = store.producers(name).await.expect("read");
    assert_eq!(all["old"].first_seen_ms, None);
    assert_eq!(all["old"].last_seen_ms, 120);
    store
        .producer_seen(name, "old", Some("app"), 180, LIMITS)
        .await
        .expect("seen");
    store
        .producer_seen(name, "p3", None, 190, LIMITS)
        .await
        .expect("seen");
    let all = store.producers(name).await.expect("read");
    assert_eq!(
        (all["old"].first_seen_ms, all["old"].last_seen_ms),
        (Some(120), 180)
    );
    assert_eq!(
        all["p3"].first_seen_ms,
        Some(190),
        "the stale 140 is replaced"
    );

    store.producers_clear(name).await.expect("clear");
    let exists: i64 = redis::cmd("EXISTS")
        .arg(&keys.seen)
        .arg(&keys.first_seen)
        .arg(&keys.quiesced)
        .query_async(&mut conn)
        .await
        .expect("exists");
    assert_eq!(exists, 0);
}
