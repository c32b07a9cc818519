//! Lease deadlines are Redis server time; lapsed means deadline <= now.

use std::time::{SystemTime, UNIX_EPOCH};

use rsc_store::{CasOutcome, CasWrite, Store};

use crate::fixtures::{group, set_lease};

on_both_topologies!(
    lease_deadlines_come_from_redis_time,
    lapsed_members_include_the_deadline,
    live_members_without_a_lease_entry_are_found,
    leases_and_progress_of_a_big_group_are_read_whole_in_pages,
);

/// More entries than one HSCAN / ZSCAN page (and than Redis's compact encodings hold): every lease and every
/// progress entry comes back once, leases earliest deadline first and then by member, progress by member.
async fn leases_and_progress_of_a_big_group_are_read_whole_in_pages(store: &Store, name: &str) {
    const N: usize = 3_000;
    let keys = group(name);
    let () = crate::fixtures::raw(
        store,
        redis::cmd("EVAL")
            .arg(
                "for i = 1, tonumber(ARGV[1]) do \
                   local m = string.format('m%05d', i) \
                   redis.call('ZADD', KEYS[1], 1000 + (i % 7), m) \
                   redis.call('HSET', KEYS[2], m, '{\"i\":' .. i .. '}') \
                 end",
            )
            .arg(2)
            .arg(&keys.leases)
            .arg(&keys.progress)
            .arg(N),
    )
    .await;
    let leases = store.leases(&keys).await.expect("leases");
    let mut expected: Vec<(String, i64)> = (1..=N)
        .map(|i| (format!("m{i:05}"), 1000 + (i % 7) as i64))
        .collect();
    expected.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    assert_eq!(leases, expected);
    let progress = store.progress_all(&keys).await.expect("progress");
    let expected: Vec<(String, String)> = (1..=N)
        .map(|i| (format!("m{i:05}"), format!("{{\"i\":{i}}}")))
        .collect();
    assert_eq!(progress, expected);
}

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
        split: None,
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

async fn live_members_without_a_lease_entry_are_found(store: &Store, name: &str) {
    let keys = group(name);
    set_lease(store, &keys, "a", 100).await;
    set_lease(store, &keys, "b", 10_000_000_000_000).await;
    assert_eq!(store.lease_count(&keys).await.unwrap(), 2);
    assert!(
        store
            .members_without_lease(&keys, &["a", "b"])
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .members_without_lease(&keys, &[])
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .members_without_lease(&keys, &["a", "b", "c", "d"])
            .await
            .unwrap(),
        ["c", "d"]
    );
    let _: i64 = crate::fixtures::raw(store, redis::cmd("DEL").arg(&keys.leases)).await;
    assert_eq!(store.lease_count(&keys).await.unwrap(), 0);
    assert_eq!(
        store
            .members_without_lease(&keys, &["a", "b"])
            .await
            .unwrap(),
        ["a", "b"]
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
