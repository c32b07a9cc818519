//! Guarded publish and the quiesce surfaces against the real `rsc` binary and real redis-server:
//! - an SDK producer holding routing from before a scale is refused by the shard's routing boundary, refreshes
//!   and lands on the key's new shard exactly once; a plain XADD to an old shard after the switch is counted
//!   (`unorderedAppendsAfterSwitch` in the migration view, and the gauge), a guarded publish is not;
//! - the same on a Redis Cluster (the boundary key lies in its stream's slot);
//! - `rsc scale --quiesce-timeout` sends `producerQuiesce`, and the quiesced switch is counted by outcome;
//! - `rsc demo --quiesce --scale …` scales with producer quiesce and ends with `lost=0`.

use rsc_client::{
    CoordinatorClient, CreateStream, Credentials, Method, Producer, ProducerConfig, RedisTarget,
};
use rsc_protocol::routing::shard_for_key;
use rsc_testkit::{RedisCluster, RedisServer, RscBuilder, RscProcess};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

const ADMIN_PASSWORD: &str = "guarded-test-admin-password";

fn start_rsc(redis_url: &str) -> RscProcess {
    RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), redis_url)
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .env("COORDINATOR_STREAMS_DRAIN_GRACE", "2s")
        .admin_password(ADMIN_PASSWORD)
        .start()
}

fn coordinator(url: &str) -> CoordinatorClient {
    CoordinatorClient::builder([url])
        .credentials(Some(Credentials::new("admin", ADMIN_PASSWORD)))
        .request_timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

async fn create(c: &CoordinatorClient, stream: &str, shards: u32) {
    assert!(matches!(
        c.create_stream(stream, shards, "guarded-test")
            .await
            .unwrap(),
        CreateStream::Created(_)
    ));
}

async fn migration(c: &CoordinatorClient, stream: &str, id: &str) -> Value {
    c.get_json(&[
        "coord",
        "v1",
        "streams",
        stream,
        "groups",
        stream,
        "migrations",
        id,
    ])
    .await
    .unwrap()
}

/// Scrapes `/metrics` (READ) until it contains `needle` (bounded).
async fn wait_metric(rsc: &RscProcess, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = reqwest::Client::new()
            .get(format!("{}/metrics", rsc.url()))
            .basic_auth("admin", Some(ADMIN_PASSWORD))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if text.contains(needle) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "metric {needle} never appeared in\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every entry of shard streams `0..n` whose field `n` is `value`: (shard, id).
async fn entries_with(
    conn: &mut redis::aio::MultiplexedConnection,
    stream: &str,
    shards: u32,
    value: &str,
) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for s in 0..shards {
        let entries: redis::streams::StreamRangeReply = redis::cmd("XRANGE")
            .arg(format!("{stream}:{s}"))
            .arg("-")
            .arg("+")
            .query_async(conn)
            .await
            .unwrap();
        for e in entries.ids {
            if e.get::<String>("n").as_deref() == Some(value) {
                out.push((s, e.id.clone()));
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_sdk_producer_is_refused_after_a_scale_and_lands_once_on_the_new_shard() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url());
    let c = coordinator(&rsc.url());
    let stream = "guarded";
    create(&c, stream, 2).await;
    // Holds its routing for a minute: after the scale it publishes with the old routing.
    let stale = Producer::connect(
        coordinator(&rsc.url()),
        ProducerConfig::new(stream, redis.url())
            .refresh_interval(Duration::from_secs(60))
            .routing_lease(Duration::from_secs(120))
            .max_len(None),
    )
    .await
    .unwrap();
    // A key that moves from an old shard to a new one (2 → 4), and one that stays on that old shard.
    let moving = (0..)
        .map(|i| format!("moving-{i}"))
        .find(|k| shard_for_key(k.as_bytes(), 4).unwrap() >= 2)
        .unwrap();
    let old_shard = shard_for_key(moving.as_bytes(), 2).unwrap();
    let new_shard = shard_for_key(moving.as_bytes(), 4).unwrap();
    let staying = (0..)
        .map(|i| format!("staying-{i}"))
        .find(|k| shard_for_key(k.as_bytes(), 4).unwrap() == old_shard)
        .unwrap();
    let before = stale.publish(&moving, &[("n", "before")]).await.unwrap();
    assert_eq!(before.shard, old_shard);

    let answer = c
        .send_json(
            Method::POST,
            &["coord", "v1", "streams", stream, "scale"],
            &[],
            Some(
                &json!({"targetShardCount": 4, "requestedBy": "test", "reason": "guarded publish"}),
            ),
            None,
        )
        .await
        .unwrap();
    let id = answer["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(stale.stats().stale_routing_refusals, 0);

    // Still routing with 2 shards: refused by the old shard's boundary, refreshed, appended on the new shard.
    let after = stale.publish(&moving, &[("n", "after")]).await.unwrap();
    assert_eq!(after.shard, new_shard, "{after:?}");
    assert_eq!(stale.stats().stale_routing_refusals, 1);
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    assert_eq!(
        entries_with(&mut conn, stream, 4, "after").await,
        vec![(new_shard, after.id.clone())],
        "written once, on the key's new shard"
    );
    assert_eq!(entries_with(&mut conn, stream, 4, "before").await.len(), 1);

    // A plain XADD to the old shard after the switch (the key moved away) is counted; a guarded publish of a
    // key that still routes there is not.
    let _: String = redis::cmd("XADD")
        .arg(format!("{stream}:{old_shard}"))
        .arg("*")
        .arg("n")
        .arg("plain")
        .query_async(&mut conn)
        .await
        .unwrap();
    let guarded = stale.publish(&staying, &[("n", "guarded")]).await.unwrap();
    assert_eq!(guarded.shard, old_shard);
    let m = migration(&c, stream, &id).await;
    let shards = m["switchedShards"].as_array().cloned().unwrap_or_default();
    let old = shards
        .iter()
        .find(|s| s["shardIndex"] == json!(old_shard))
        .unwrap_or_else(|| panic!("old shard {old_shard} in the view: {m}"));
    assert_eq!(old["appendedAfterSwitch"], json!(2), "{m}");
    assert_eq!(old["unorderedAppendsAfterSwitch"], json!(1), "{m}");
    let routing = c
        .get_json(&[
            "coord",
            "v1",
            "streams",
            stream,
            "groups",
            stream,
            "producer-routing",
        ])
        .await
        .unwrap();
    assert_eq!(
        old["routingBoundary"], routing["routingVersion"],
        "the switch's routing version: {m}"
    );
    let other = shards
        .iter()
        .find(|s| s["shardIndex"] == json!(1 - old_shard))
        .unwrap_or_else(|| panic!("both old shards in the view: {m}"));
    assert_eq!(other["unorderedAppendsAfterSwitch"], json!(0), "{m}");
    wait_metric(
        &rsc,
        &format!(
            "redis_stream_coord_unordered_appends_after_switch{{stream=\"{stream}\",shard=\"{old_shard}\"}} 1"
        ),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_a_stale_sdk_producer_is_refused_and_lands_on_the_new_shard() {
    let cluster = RedisCluster::start();
    let mut b = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), "redis://127.0.0.1:1")
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD)
        .env(
            "COORDINATOR_REDIS_CLUSTER_NODES",
            cluster.node_addresses().join(","),
        );
    let map = cluster.node_map();
    if !map.is_empty() {
        let pairs: Vec<String> = map.iter().map(|(a, r)| format!("{a}={r}")).collect();
        b = b.env("COORDINATOR_REDIS_CLUSTER_NODE_MAP", pairs.join(","));
    }
    let rsc = b.start();
    let c = coordinator(&rsc.url());
    let stream = "guardedcluster";
    create(&c, stream, 2).await;
    let stale = Producer::connect(
        coordinator(&rsc.url()),
        ProducerConfig::new(stream, "unused")
            .redis(RedisTarget::cluster(cluster.node_addresses()).node_map(map))
            .refresh_interval(Duration::from_secs(60))
            .routing_lease(Duration::from_secs(120))
            .max_len(None),
    )
    .await
    .unwrap();
    let moving = (0..)
        .map(|i| format!("moving-{i}"))
        .find(|k| shard_for_key(k.as_bytes(), 4).unwrap() >= 2)
        .unwrap();
    let old_shard = shard_for_key(moving.as_bytes(), 2).unwrap();
    let before = stale.publish(&moving, &[("n", "before")]).await.unwrap();
    assert_eq!(before.shard, old_shard);
    let answer = c
        .send_json(
            Method::POST,
            &["coord", "v1", "streams", stream, "scale"],
            &[],
            Some(&json!({"targetShardCount": 4, "requestedBy": "test", "reason": "guarded"})),
            None,
        )
        .await
        .unwrap();
    let id = answer["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    let after = stale.publish(&moving, &[("n", "after")]).await.unwrap();
    assert_eq!(after.shard, shard_for_key(moving.as_bytes(), 4).unwrap());
    assert_eq!(stale.stats().stale_routing_refusals, 1);
    // Nothing reached the old shard after the switch.
    let m = migration(&c, stream, &id).await;
    let old = m["switchedShards"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["shardIndex"] == json!(old_shard))
        .cloned()
        .unwrap_or_else(|| panic!("old shard {old_shard} in the view: {m}"));
    assert_eq!(old["appendedAfterSwitch"], json!(0), "{m}");
    assert_eq!(old["unorderedAppendsAfterSwitch"], json!(0), "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rsc_scale_quiesce_timeout_asks_for_producer_quiesce_and_the_switch_is_counted() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url());
    let c = coordinator(&rsc.url());
    let stream = "cliquiesce";
    create(&c, stream, 2).await;
    let producer = Producer::connect(
        coordinator(&rsc.url()),
        ProducerConfig::new(stream, redis.url())
            .refresh_interval(Duration::from_millis(500))
            .producer_id("cli-test-producer"),
    )
    .await
    .unwrap();
    producer.publish("k", &[("n", "1")]).await.unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args([
            "scale",
            stream,
            "--shards",
            "3",
            "--reason",
            "quiesced by the CLI",
            "--quiesce-timeout",
            "20s",
            "-o",
            "json",
        ])
        .env("RSC_COORDINATOR", rsc.url())
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", ADMIN_PASSWORD)
        .env_remove("RSC_TOKEN")
        .env("RSC_CONFIG_DIR", tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_str(&stdout).unwrap();
    let id = printed["answer"]["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    // The flag reached the API: the scale quiesces producers with that timeout.
    let m = migration(&c, stream, &id).await;
    assert_eq!(m["producerQuiesce"]["timeoutMs"], json!(20000), "{m}");
    // The SDK producer quiesces, routing switches without waiting for the timeout, and it is counted.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let m = migration(&c, stream, &id).await;
        if m["routingShardCount"] == json!(3) {
            assert_eq!(m["producerQuiesce"]["forcedByTimeout"], json!(false), "{m}");
            break;
        }
        assert!(Instant::now() < deadline, "never switched: {m}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_metric(
        &rsc,
        &format!(
            "redis_stream_coord_quiesce_switch_total{{stream=\"{stream}\",outcome=\"all_quiesced\"}} 1"
        ),
    )
    .await;

    // A timeout out of range is refused by the CLI before anything is sent.
    let bad = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args([
            "scale",
            stream,
            "--shards",
            "4",
            "--reason",
            "x",
            "--quiesce-timeout",
            "11m",
        ])
        .env("RSC_COORDINATOR", rsc.url())
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", ADMIN_PASSWORD)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("--quiesce-timeout"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

#[test]
fn a_quiesced_demo_loses_nothing_across_its_scales() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url());
    let out = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args([
            "demo",
            "--coordinator",
            &rsc.url(),
            "--redis-url",
            &redis.url(),
            "--stream",
            "demoquiesce",
            "--rate",
            "300",
            "--quiesce",
            "--scale",
            "2,4",
            "--scale-every",
            "3",
            "--duration",
            "10",
        ])
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", ADMIN_PASSWORD)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let last = stdout.lines().last().unwrap_or_default().to_owned();
    let f: HashMap<String, u64> = last
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k.to_owned(), v.parse().ok()?)))
        .collect();
    assert!(out.status.success(), "{last}\nstderr:\n{stderr}");
    assert!(
        stderr.contains("scaled demoquiesce to 4 shards (producers quiesced)"),
        "{stderr}"
    );
    assert!(f["published"] > 0, "{last}");
    assert_eq!(f.get("lost"), Some(&0), "{last}\n{stderr}");
    assert_eq!(f["acked"], f["published"], "{last}");
}
