//! Failover hints (`coordinator/lapse_forecasts.rs`), against a real coordinator and redis-server: when a
//! member stops heartbeating, the member that its expiry would give shards to is asked back just after the
//! lapse (a shorter `heartbeatIntervalMs`) and its first heartbeat after the lapse already carries the grant;
//! a member that would gain nothing keeps the configured interval.
//!
//! The reconciler's tick is set far beyond the test, so only the heartbeat path can move the shard in time.

use crate::support;

use rsc_coordinator::config::Dur;
use rsc_testkit::RedisServer;
use std::time::Duration;
use support::*;

const INTERVAL_MS: i64 = 500;

#[tokio::test]
async fn the_member_that_takes_over_a_lapsed_members_shard_learns_of_it_in_its_first_heartbeat_after_the_lapse()
 {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    let k = &mut config.coordinator;
    k.heartbeat_interval = Dur(Duration::from_millis(INTERVAL_MS as u64));
    k.member_lease_ttl = Dur(Duration::from_millis(3_000));
    k.reconciler.tick_interval = Dur(Duration::from_secs(600));
    let key_prefix = k.store.key_prefix.clone();
    let (_running, api) = coordinator(config).await;
    let p = "failover";
    assert_eq!(api.create_stream(p, 3).await.status, 201);

    // a, b and c read one shard each. With c gone, the assignor gives its shard to a (equal previous
    // shards, the smaller member id gets the extra one), so only a would gain.
    let mut a = Member::new("a");
    let mut b = Member::new("b");
    let mut c = Member::new("c");
    for _ in 0..5 {
        for m in [&mut a, &mut b, &mut c] {
            beat_ok(&api, p, m).await;
        }
    }
    for m in [&a, &b, &c] {
        assert_eq!(m.owned().len(), 1, "{} converged: {:?}", m.id(), m.owned());
    }
    let c_shard = c.owned()[0];

    // c stops. Its lease deadline, as Redis holds it:
    let mut conn = redis_conn(&redis.url()).await;
    let deadline = lease_deadline(&mut conn, &key_prefix, p, "c").await;

    // Until the deadline, a and b heartbeat every 100 ms; b stops 300 ms before it (its own lease stays
    // live well past the deadline).
    let mut a_shortest = i64::MAX;
    let mut b_shortest = i64::MAX;
    loop {
        let now = redis_now(&mut conn).await;
        if now >= deadline {
            break;
        }
        let r = beat_ok(&api, p, &mut a).await;
        assert_eq!(a.owned().len(), 1, "no grant before c's lease lapsed: {r}");
        let interval = r["heartbeatIntervalMs"].as_i64().unwrap();
        if now >= deadline - INTERVAL_MS + 50 {
            a_shortest = a_shortest.min(interval);
        }
        if now < deadline - 300 {
            let r = beat_ok(&api, p, &mut b).await;
            b_shortest = b_shortest.min(r["heartbeatIntervalMs"].as_i64().unwrap());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        a_shortest < INTERVAL_MS,
        "a, which would take c's shard, is asked back before the configured interval within the last \
         interval before c's deadline (shortest answered: {a_shortest} ms)"
    );
    assert_eq!(
        b_shortest, INTERVAL_MS,
        "b gains nothing from c's expiry and keeps the configured interval"
    );

    // a's first heartbeat after the deadline answers with c's shard.
    let r = beat_ok(&api, p, &mut a).await;
    assert!(
        a.owned().contains(&c_shard),
        "a's first heartbeat after c's lapse carries c's shard {c_shard}: {r}"
    );
    for name in [
        "failover_interval_shortened_total",
        "failover_grant_in_answer_total",
    ] {
        let value = metric_total(&api, name).await;
        assert!(value >= 1.0, "{name}: {value}");
    }
}
