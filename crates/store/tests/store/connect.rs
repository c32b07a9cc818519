//! Connecting: fail fast and clearly when Redis is absent, survive a Redis restart, and expose a
//! connection that runs other commands in both topologies.

use std::time::{Duration, Instant};

use rsc_store::{HeartbeatOutcome, RedisTopology, Store, StoreError};
use rsc_testkit::RedisServer;

use crate::fixtures::{create_group, group, raw, standalone, standalone_with};

on_both_topologies!(ping_time_and_stream_commands);

async fn ping_time_and_stream_commands(store: &Store, name: &str) {
    let rtt = store.ping().await.expect("ping");
    assert!(rtt < Duration::from_secs(5));
    assert!(store.server_time_ms().await.expect("time") > 1_600_000_000_000);

    let stream = format!("rsc-test:{name}:0");
    let () = raw(
        store,
        redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&stream)
            .arg("g")
            .arg("$")
            .arg("MKSTREAM"),
    )
    .await;
    let exists: i64 = raw(store, redis::cmd("EXISTS").arg(&stream)).await;
    assert_eq!(exists, 1);
}

async fn assert_unreachable_fast(topology: RedisTopology) {
    let started = Instant::now();
    let result = Store::connect(&topology, Duration::from_millis(500)).await;
    let elapsed = started.elapsed();
    match result {
        Err(err @ StoreError::Unreachable { .. }) => {
            assert!(err.is_transient());
            let text = err.to_string();
            assert!(text.contains(&topology.describe()), "{text}");
            assert!(text.contains("redis-server --port"), "{text}");
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    // Bounded by the connect timeout (plus scheduling slack), not by reconnect backoff.
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
}

#[tokio::test]
async fn connecting_to_nothing_fails_fast_with_advice() {
    let mut server = RedisServer::start();
    let url = server.url();
    server.kill();
    assert_unreachable_fast(RedisTopology::Standalone(url.clone())).await;
    assert_unreachable_fast(RedisTopology::cluster(vec![url])).await;
}

#[tokio::test]
async fn commands_fail_fast_while_redis_is_down() {
    let mut fixture = standalone().await;
    let keys = group("down");
    create_group(&fixture.store, &keys, &["m"]).await;
    fixture.server.kill();
    // Each command fails within the connect timeout (plus slack), not after the reconnect backoff of
    // the client's defaults (six retries from 100 ms, about 6 s), and keeps failing fast.
    for attempt in 0..3 {
        let started = Instant::now();
        let result = fixture.store.revision(&keys).await;
        let elapsed = started.elapsed();
        match result {
            Err(err) => assert!(err.is_transient(), "attempt {attempt}: {err}"),
            Ok(r) => panic!("attempt {attempt}: Redis is down but the revision read {r:?}"),
        }
        assert!(
            elapsed < Duration::from_secs(3),
            "attempt {attempt} took {elapsed:?}"
        );
    }
}

#[tokio::test]
async fn a_bad_url_is_refused() {
    let result = Store::connect(
        &RedisTopology::Standalone("http://nowhere".into()),
        Duration::from_millis(500),
    )
    .await;
    assert!(
        matches!(result, Err(StoreError::InvalidUrl { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn the_store_reconnects_after_a_redis_restart() {
    let mut fixture = standalone_with(RedisServer::builder().appendonly(true).start()).await;
    let keys = group("restart");
    create_group(&fixture.store, &keys, &["m"]).await;
    fixture.server.restart();

    // The first command may fail on the dropped connection; every failure must be transient,
    // and the store must recover by itself within a bounded time.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match fixture.store.heartbeat(&keys, 1, "m", 60_000, None).await {
            Ok(outcome) => {
                assert!(
                    matches!(outcome, HeartbeatOutcome::Renewed { .. }),
                    "{outcome:?}"
                );
                break;
            }
            Err(e) => {
                assert!(e.is_transient(), "non-transient error after restart: {e}");
                assert!(Instant::now() < deadline, "no recovery within 10 s: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    let loaded = fixture
        .store
        .load(&keys)
        .await
        .expect("load")
        .expect("present");
    assert_eq!(loaded.revision, 1);
}
