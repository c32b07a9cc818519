//! Against a real coordinator and redis-server: an answer that takes away a shard the member never started
//! reading (granted to it after a leave, then moved to a joiner before it heartbeated) asks for the next
//! heartbeat within a tenth of the interval, and that heartbeat releases the shard so the joiner is granted it
//! at its next heartbeat. Every other answer carries the configured interval.

use crate::support;

use rsc_testkit::RedisServer;
use std::time::Duration;
use support::*;

/// `test_config`'s heartbeat interval, and the acknowledge interval it implies (a tenth).
const INTERVAL_MS: i64 = 200;
const ACKNOWLEDGE_MS: i64 = 20;

#[tokio::test]
async fn a_grant_moved_on_before_its_member_heard_of_it_is_acknowledged_at_once_and_handed_over() {
    let redis = RedisServer::start();
    let (_running, api) = coordinator(test_config(&redis.url())).await;
    let p = "acknowledge";
    assert_eq!(api.create_stream(p, 4).await.status, 201);

    let mut a = Member::new("a");
    let mut b = Member::new("b");
    for _ in 0..4 {
        for m in [&mut a, &mut b] {
            let r = beat_ok(&api, p, m).await;
            assert_eq!(r["heartbeatIntervalMs"], INTERVAL_MS, "{r}");
        }
    }
    assert_eq!((a.owned().len(), b.owned().len()), (2, 2), "converged");
    let a_epoch = a.epoch();

    // b leaves gracefully: its two shards are released at once and granted to a, which has not heartbeated.
    b.membership.begin_leave();
    b.membership.drained_all();
    let r = beat_ok(&api, p, &mut b).await;
    assert!(b.membership.left(), "the leave is complete: {r}");

    // c joins before a heartbeats: c is targeted two shards, the ones a was granted but never told of.
    let mut c = Member::new("c");
    let r = beat_ok(&api, p, &mut c).await;
    assert_eq!(
        r["heartbeatIntervalMs"], INTERVAL_MS,
        "a join keeps the interval: {r}"
    );
    let pending = shards(&r["assignment"]["pendingShards"]);
    assert_eq!(pending.len(), 2, "{r}");
    assert!(
        pending.iter().all(|s| !a.owned().contains(s)),
        "c waits for the shards a never heard of: {r}"
    );

    // a's heartbeat at its old epoch cannot release them; its answer asks for the next one at once.
    let r = beat_ok(&api, p, &mut a).await;
    assert!(r["memberEpoch"].as_i64().unwrap() > a_epoch, "{r}");
    assert_eq!(r["heartbeatIntervalMs"], ACKNOWLEDGE_MS, "{r}");
    assert_eq!(
        a.membership.interval(),
        Some(Duration::from_millis(ACKNOWLEDGE_MS as u64)),
        "the SDK's membership takes the answer's interval"
    );
    let r = beat_ok(&api, p, &mut c).await;
    assert_eq!(
        shards(&r["assignment"]["assignedShards"]),
        Vec::<u32>::new(),
        "not yet released: {r}"
    );

    // The acknowledgement releases them; c is granted them at its next heartbeat.
    let r = beat_ok(&api, p, &mut a).await;
    assert_eq!(
        r["heartbeatIntervalMs"], INTERVAL_MS,
        "nothing left to acknowledge: {r}"
    );
    let r = beat_ok(&api, p, &mut c).await;
    assert_eq!(shards(&r["assignment"]["assignedShards"]), pending, "{r}");
    assert_disjoint(&[&a, &c]);
    assert_eq!(a.owned().len() + c.owned().len(), 4);

    // Operators see the requests counted (one: a's answer above).
    assert_eq!(
        metric_total(&api, "acknowledgement_requested_total").await,
        1.0
    );
}
