//! The release forecast (`rsc_group::heartbeat::release_forecast`), against a real coordinator and
//! redis-server: a member whose steady answer names a shard another member still holds is asked back a
//! margin after that member's next heartbeat is due, as its lease in Redis tells, instead of a whole interval
//! later, or a margin from now when that member was just told to give the shard up; the handover itself is
//! unchanged, and the answers carry the configured interval again once nothing is awaited. Operators see such
//! answers counted.

use crate::support;

use rsc_coordinator::config::Dur;
use rsc_coordinator::server::Running;
use rsc_testkit::RedisServer;
use std::time::Duration;
use support::*;

/// The production default interval and lease TTL: the acknowledgement is then 100 ms and the margin 200 ms.
const INTERVAL_MS: i64 = 3_000;
const LEASE_TTL_MS: i64 = 15_000;
const ACK_MS: i64 = 100;
const MARGIN_MS: i64 = 2 * ACK_MS;

/// A coordinator at the production default timings on a fresh redis-server, and its key prefix.
struct AtDefaultTimings {
    redis: RedisServer,
    _running: Running,
    api: Api,
    key_prefix: String,
}

async fn at_default_timings() -> AtDefaultTimings {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    let k = &mut config.coordinator;
    k.heartbeat_interval = Dur(Duration::from_millis(INTERVAL_MS as u64));
    k.member_lease_ttl = Dur(Duration::from_millis(LEASE_TTL_MS as u64));
    let key_prefix = k.store.key_prefix.clone();
    let (_running, api) = coordinator(config).await;
    AtDefaultTimings {
        redis,
        _running,
        api,
        key_prefix,
    }
}

/// On a new stream `p` of four shards, `a` reads them all; then `c` joins and is targeted two of them, which
/// `a` must release first. Returns both and c's join answer.
async fn c_waits_for_a(api: &Api, p: &str) -> (Member, Member, serde_json::Value) {
    assert_eq!(api.create_stream(p, 4).await.status, 201);
    let mut a = Member::new("a");
    for _ in 0..3 {
        beat_ok(api, p, &mut a).await;
    }
    assert_eq!(a.owned().len(), 4, "a reads every shard");
    let mut c = Member::new("c");
    let joined = beat_ok(api, p, &mut c).await;
    assert_eq!(
        shards(&joined["assignment"]["pendingShards"]).len(),
        2,
        "{joined}"
    );
    (a, c, joined)
}

#[tokio::test]
async fn a_member_waiting_for_a_shard_is_asked_back_just_after_its_holder_is_due_to_release_it() {
    let AtDefaultTimings {
        redis,
        _running,
        api,
        key_prefix,
    } = at_default_timings().await;
    let p = "forecast";
    let (mut a, mut c, r) = c_waits_for_a(&api, p).await;
    let pending = shards(&r["assignment"]["pendingShards"]);
    assert_eq!(
        r["heartbeatIntervalMs"], INTERVAL_MS,
        "a was heard a moment ago, before c's join took the shards (not told yet): its next report is no \
         sooner than c's interval: {r}"
    );

    // a was last heard when its lease was last renewed (a lease TTL before its deadline).
    let mut conn = redis_conn(&redis.url()).await;
    let a_deadline = lease_deadline(&mut conn, &key_prefix, p, "a").await;
    let a_heard_at = a_deadline - LEASE_TTL_MS;
    let release_expected = a_heard_at + INTERVAL_MS + MARGIN_MS;
    // Wait (bounded) until a was heard more than the margin ago, so the forecast is sooner than the interval.
    until_redis_time(&mut conn, a_heard_at + MARGIN_MS + 100).await;

    // c's next heartbeats, still waiting, are asked back just after a is due to release: the first confirms
    // its join (a write, answered after one ZSCORE of a's lease), the second is steady (the renewal's script
    // reads a's lease).
    for answer in ["the join's confirmation", "a steady renewal"] {
        let before = redis_now(&mut conn).await;
        let r = beat_ok(&api, p, &mut c).await;
        let after = redis_now(&mut conn).await;
        assert_eq!(
            shards(&r["assignment"]["pendingShards"]),
            pending,
            "{answer}: {r}"
        );
        assert!(shards(&r["assignment"]["assignedShards"]).is_empty(), "{r}");
        let interval = r["heartbeatIntervalMs"].as_i64().unwrap();
        assert!(
            (release_expected - after..=release_expected - before).contains(&interval),
            "{answer}: asked back at a's expected release ({release_expected}), between {before} and {after}: \
             {interval} ms"
        );
        assert!(interval < INTERVAL_MS, "{interval}");
    }

    // a, an owner that must drain, keeps the interval; its next report releases the two shards.
    let r = beat_ok(&api, p, &mut a).await;
    assert_eq!(r["heartbeatIntervalMs"], INTERVAL_MS, "{r}");
    beat_ok(&api, p, &mut a).await;
    assert_eq!(a.owned().len(), 2, "a released two");
    // c back: granted them, and nothing is awaited any more, so the configured interval again.
    let r = beat_ok(&api, p, &mut c).await;
    assert_eq!(shards(&r["assignment"]["assignedShards"]), pending, "{r}");
    assert_eq!(r["heartbeatIntervalMs"], INTERVAL_MS, "{r}");
    assert_disjoint(&[&a, &c]);

    assert_eq!(
        metric_total(&api, "release_interval_shortened_total").await,
        2.0,
        "c's two answers were shortened"
    );
}

/// The holder was just told to give the shards up (its last heartbeat came after c's join took them from it):
/// the release is under way, and c, asking a moment later, is asked back a margin from now instead of an
/// interval after a's next heartbeat. Whether c asked within the margin is read from Redis time; a run where
/// it did not (a slow machine) proves nothing and is tried again on a fresh stream, a bounded number of times.
#[tokio::test]
async fn a_member_asking_just_after_its_holder_was_told_to_give_the_shard_up_is_asked_back_a_margin_later()
 {
    let AtDefaultTimings {
        redis,
        _running,
        api,
        key_prefix,
    } = at_default_timings().await;
    let mut conn = redis_conn(&redis.url()).await;
    for attempt in 0..5 {
        let p = format!("told-{attempt}");
        let (mut a, mut c, joined) = c_waits_for_a(&api, &p).await;
        let pending = shards(&joined["assignment"]["pendingShards"]);
        beat_ok(&api, &p, &mut c).await; // c confirms its join
        // a's revocations began at c's join, by the replica's estimate of Redis time; a heartbeat less than an
        // acknowledgement (100 ms) after that is not known to come after it, so a heartbeats later.
        let joined_at = redis_now(&mut conn).await;
        until_redis_time(&mut conn, joined_at + ACK_MS + 50).await;

        // a is told: its answer takes the two shards away.
        let told = beat_ok(&api, &p, &mut a).await;
        assert_eq!(
            shards(&told["assignment"]["assignedShards"]).len(),
            2,
            "{told}"
        );
        let a_heard_at = lease_deadline(&mut conn, &key_prefix, &p, "a").await - LEASE_TTL_MS;
        let asked_at = redis_now(&mut conn).await;
        let r = beat_ok(&api, &p, &mut c).await;
        if asked_at - a_heard_at >= MARGIN_MS {
            continue; // c did not ask within the margin of a's heartbeat: nothing shown, try again
        }
        assert_eq!(shards(&r["assignment"]["pendingShards"]), pending, "{r}");
        let interval = r["heartbeatIntervalMs"].as_i64().unwrap();
        assert!(
            (MARGIN_MS..MARGIN_MS + 100).contains(&interval),
            "a was told {} ms before c asked: c is asked back a margin from now, not a's next heartbeat \
             ({} ms away): {interval} ms",
            asked_at - a_heard_at,
            a_heard_at + INTERVAL_MS - asked_at
        );
        // a reports them released (it drains at once); c, back, is granted them.
        beat_ok(&api, &p, &mut a).await;
        assert_eq!(a.owned().len(), 2, "a released two");
        let r = beat_ok(&api, &p, &mut c).await;
        assert_eq!(shards(&r["assignment"]["assignedShards"]), pending, "{r}");
        assert_disjoint(&[&a, &c]);
        return;
    }
    panic!(
        "in 5 attempts c never asked within {MARGIN_MS} ms of a's heartbeat: the machine is too slow to show it"
    );
}
