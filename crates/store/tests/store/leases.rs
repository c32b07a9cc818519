//! Lease deadlines are Redis server time; lapsed means deadline <= now.

use std::time::{SystemTime, UNIX_EPOCH};

use rsc_store::{CasOutcome, CasWrite, Store};

use crate::fixtures::{group, set_lease};

on_both_topologies!(
    lease_deadlines_come_from_redis_time,
    lapsed_members_include_the_deadline
);

async fn lease_deadlines_come_from_redis_time(store: &Store, name: &str) {
    let keys = group(name);
    let before = store.server_time_ms().await.expect("time");
    let now_ms = crate::fixtures::create_group(store, &keys, &["m"]).await;
    let after = store.server_time_ms().await.expect("time");
    assert!(
        before <= now_ms && now_ms <= after,
        "{before} <= {now_ms} <= {after}"
    );
    assert_eq!(
        store.leases(&keys).await.expect("leases"),
        vec![("m".to_string(), now_ms + 60_000)]
    );

    let write = CasWrite {
        expected_revision: 1,
        aggregate_json: "{}".into(),
        updated_at: "t".into(),
        lease_ttl_ms: 7_000,
        renew: vec!["m".into()],
        ..CasWrite::default()
    };
    let CasOutcome::Written { now_ms, .. } = store.cas(&keys, &write).await.expect("cas") else {
        panic!("cas refused");
    };
    assert_eq!(
        store.leases(&keys).await.expect("leases"),
        vec![("m".to_string(), now_ms + 7_000)]
    );

    // The Redis server runs on this machine, so its clock agrees with ours to within seconds.
    let local_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64;
    let redis_ms = store.server_time_ms().await.expect("time");
    assert!(
        (local_ms - redis_ms).abs() < 5_000,
        "local {local_ms} vs redis {redis_ms}"
    );
}

async fn lapsed_members_include_the_deadline(store: &Store, name: &str) {
    let keys = group(name);
    set_lease(store, &keys, "a", 100).await;
    set_lease(store, &keys, "b", 500).await;
    set_lease(store, &keys, "c", 10_000_000_000_000).await;
    assert_eq!(
        store.leases(&keys).await.expect("leases"),
        vec![
            ("a".to_string(), 100),
            ("b".to_string(), 500),
            ("c".to_string(), 10_000_000_000_000)
        ]
    );
    assert_eq!(
        store.lapsed_members(&keys, 99).await.expect("lapsed"),
        Vec::<String>::new()
    );
    assert_eq!(
        store.lapsed_members(&keys, 499).await.expect("lapsed"),
        vec!["a"]
    );
    assert_eq!(
        store.lapsed_members(&keys, 500).await.expect("lapsed"),
        vec!["a", "b"]
    );
    let now = store.server_time_ms().await.expect("time");
    assert_eq!(
        store.lapsed_members(&keys, now).await.expect("lapsed"),
        vec!["a", "b"]
    );
}
