//! Producer sightings and quiesced reports (a scale's producer quiesce): a sighting never erases a report,
//! forgetting removes both.

use rsc_store::{ProducerEntry, Store};

on_both_topologies!(producer_sightings_and_reports);

async fn producer_sightings_and_reports(store: &Store, name: &str) {
    let seen = format!("rsc-test:{{{name}}}:producers:seen");
    let quiesced = format!("rsc-test:{{{name}}}:producers:quiesced");
    assert!(
        store
            .producers(&seen, &quiesced)
            .await
            .expect("read")
            .is_empty()
    );
    store.producer_seen(&seen, "p1", 100).await.expect("seen");
    store.producer_seen(&seen, "p2", 110).await.expect("seen");
    store
        .producer_quiesced(&seen, &quiesced, "p1", "reshard-1", 7, 120)
        .await
        .expect("quiesced");
    // A later routing fetch moves the sighting and keeps the report.
    store.producer_seen(&seen, "p1", 130).await.expect("seen");
    let all = store.producers(&seen, &quiesced).await.expect("read");
    assert_eq!(
        all.get("p1"),
        Some(&ProducerEntry {
            last_seen_ms: 130,
            quiesced: Some(("reshard-1".into(), 7, 120)),
        })
    );
    assert_eq!(
        all.get("p2"),
        Some(&ProducerEntry {
            last_seen_ms: 110,
            quiesced: None,
        })
    );
    store
        .producers_forget(&seen, &quiesced, &["p1".to_string()])
        .await
        .expect("forget");
    let left = store.producers(&seen, &quiesced).await.expect("read");
    assert_eq!(left.keys().collect::<Vec<_>>(), vec!["p2"]);
}
