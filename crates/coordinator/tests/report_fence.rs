//! Against a real coordinator and redis-server: a member that reports owning a shard outside its grants is
//! fenced and its shards held. The hold is written with its end still to be counted (`anchorPending` in the
//! stored header), because the fence's write may land behind renewals through other replicas (ARCHITECTURE.md,
//! invariant 1); the first reconciler pass that reads it counts its end from its own clock, and only then does
//! the shard move on. The first coordinator runs no reconciler pass within the test (its tick is 10 minutes),
//! so the stored hold is still pending when Redis time passes the end the fence's decision gave it (as when
//! the fence's write lands late); a second one, started on the same Redis, counts it: the shard is granted no
//! earlier than a lease TTL after that start, not at once.

use crate::support;

use rsc_coordinator::config::Dur;
use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use std::time::Duration;
use support::*;

/// The group's stored header (layout 4: plain JSON).
async fn stored_header(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> String {
    redis::cmd("HGET")
        .arg(key)
        .arg("header")
        .query_async(conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_self_fences_hold_is_counted_by_the_first_reconciler_pass_that_reads_it_and_then_moves_the_shard()
 {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    config.coordinator.reconciler.tick_interval = Dur(Duration::from_secs(600));
    // Long enough that b's lease outlives the restart between the two coordinators.
    config.coordinator.member_lease_ttl = Dur(Duration::from_secs(3));
    let key_prefix = config.coordinator.store.key_prefix.clone();
    let ttl_ms = config.coordinator.member_lease_ttl.ms();
    let (running, api) = coordinator(config).await;
    let p = "reportfence";
    assert_eq!(api.create_stream(p, 2).await.status, 201);
    let mut a = Member::new("a");
    let mut b = Member::new("b");
    for _ in 0..4 {
        for m in [&mut a, &mut b] {
            beat_ok(&api, p, m).await;
        }
    }
    assert_eq!((a.owned().len(), b.owned().len()), (1, 1), "converged");
    let kept = a.owned()[0];

    // a claims both shards: fenced, and its own shard held, the hold's end still to be counted.
    let mut forged = a.request();
    forged["ownedShards"] = json!([{"shardIndex": 0}, {"shardIndex": 1}]);
    let r = api
        .send(
            "POST",
            &format!("/coord/v1/streams/{p}/groups/{p}/members/a/heartbeat"),
            Some(forged),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["status"], "FENCED_MEMBER_EPOCH", "{}", r.body);
    let view = group_view(&api, p, "assignments").await;
    let holds = view["holds"].as_array().expect("holds listed");
    assert_eq!(holds.len(), 1, "{view}");
    assert_eq!(holds[0]["memberId"], "a");
    assert_eq!(shards(&holds[0]["shards"]), vec![kept]);
    assert_eq!(
        holds[0]["endPending"], true,
        "the view says its end is still to be counted"
    );
    let mut conn = redis_conn(&redis.url()).await;
    let key = rsc_protocol::names::group_metadata_key(&key_prefix, p, p);
    let header = stored_header(&mut conn, &key).await;
    assert!(header.contains("\"anchorPending\":true"), "{header}");
    let stored: Value = serde_json::from_str(&header).unwrap();
    let first_until = stored["holds"][0]["untilMs"]
        .as_i64()
        .expect("the hold's end is stored");

    // Long past the end the fence's decision gave it, the hold still keeps the shard from b: no pass read it.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while redis_now(&mut conn).await <= first_until + 200 {
        let r = beat_ok(&api, p, &mut b).await;
        assert!(!b.owned().contains(&kept), "held: {r}");
        assert!(
            std::time::Instant::now() < deadline,
            "Redis time stands still"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let r = beat_ok(&api, p, &mut b).await;
    assert!(!b.owned().contains(&kept), "held past its first end: {r}");
    running.shutdown().await.unwrap();

    // A coordinator whose reconciler runs: its first pass counts the hold's end from its own clock.
    let started = redis_now(&mut conn).await;
    let mut config = test_config(&redis.url());
    config.coordinator.member_lease_ttl = Dur(Duration::from_secs(3));
    let (running, api) = coordinator(config).await;
    // Its first pass counts the end: the view shows the hold with its end counted, a lease TTL on at least.
    let counted = wait_for("the hold's end counted", Duration::from_secs(10), || {
        let api = api.clone();
        async move {
            let view = group_view(&api, p, "assignments").await;
            let hold = view["holds"][0].clone();
            (hold["endPending"] == false).then_some(hold)
        }
    })
    .await;
    let until = iso_to_ms(counted["until"].as_str().expect("until"));
    assert!(
        until >= started + ttl_ms,
        "the counted end {until} is a lease TTL ({ttl_ms} ms) after the pass, which began after {started}: {counted}"
    );
    // b heartbeats every 50 ms until it is granted a's shard (bounded: 15 s).
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let granted_at = loop {
        let r = api.heartbeat(p, p, &b).await;
        b.adopt(&r);
        if b.owned().contains(&kept) {
            break redis_now(&mut conn).await;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "b was not granted a's shard within 15 s: {r}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        granted_at >= started + ttl_ms,
        "the hold ended {} ms after the reconciler first read it, before a lease TTL ({ttl_ms} ms)",
        granted_at - started
    );
    let header = stored_header(&mut conn, &key).await;
    assert!(!header.contains("anchorPending"), "{header}");
    assert_eq!(group_view(&api, p, "assignments").await["holds"], json!([]));
    running.shutdown().await.unwrap();
}
