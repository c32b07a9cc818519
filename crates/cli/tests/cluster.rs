//! The SDK and the real `rsc` binary on a real Redis Cluster (the test kit's: three masters, with a
//! replica each where a failover is needed): records moved producer → consumers through a scale-out, a
//! master failover and a scale-in with none lost; a producer and consumer riding out a slot migration of a
//! shard stream (ASK, then MOVED); shard streams spread over the masters (offsets view); a cluster whose
//! nodes announce unreachable addresses used through the node map (coordinator and SDK); `rsc demo`.

use rsc_client::{
    AdminClient, Consumer, ConsumerConfig, CoordinatorClient, Credentials, Delivery, Producer,
    ProducerConfig, RedisTarget,
};
use rsc_testkit::{RedisCluster, RscBuilder, RscProcess};
use std::collections::{BTreeSet, HashMap};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ADMIN_PASSWORD: &str = "cluster-test-admin-password";
const MEMBER_LEASE_TTL: Duration = Duration::from_secs(3);
const CLIENT_LEASE: Duration = Duration::from_millis(1800);
/// Bound on every wait for a condition in these tests.
const WAIT: Duration = Duration::from_secs(90);

/// A real `rsc serve` on the cluster (seed nodes, and the node map when the cluster announces
/// unreachable addresses), with test timings and a short drain grace.
fn start_rsc(cluster: &RedisCluster) -> RscProcess {
    let mut b = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), "redis://127.0.0.1:1")
        .fast_timings(MEMBER_LEASE_TTL, Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD)
        .env(
            "COORDINATOR_REDIS_CLUSTER_NODES",
            cluster.node_addresses().join(","),
        )
        .env("COORDINATOR_STREAMS_DRAIN_GRACE", "2s");
    let map = cluster.node_map();
    if !map.is_empty() {
        let pairs: Vec<String> = map.iter().map(|(a, r)| format!("{a}={r}")).collect();
        b = b.env("COORDINATOR_REDIS_CLUSTER_NODE_MAP", pairs.join(","));
    }
    b.start()
}

/// The SDK's view of the same cluster.
fn target(cluster: &RedisCluster) -> RedisTarget {
    RedisTarget::cluster(cluster.node_addresses()).node_map(cluster.node_map())
}

fn coordinator(rsc: &RscProcess) -> CoordinatorClient {
    CoordinatorClient::builder([rsc.url()])
        .credentials(Some(Credentials::new("admin", ADMIN_PASSWORD)))
        .request_timeout(Duration::from_secs(3))
        .build()
        .unwrap()
}

fn consumer_config(stream: &str, redis: &RedisTarget, member: &str) -> ConsumerConfig {
    ConsumerConfig::new(stream, "unused")
        .redis(redis.clone())
        .member_id(member)
        .concurrency(2)
        .batch_size(20)
        .poll_timeout(Duration::from_millis(100))
        .assignment_lease(CLIENT_LEASE)
        .heartbeat_timeout(Duration::from_millis(500))
        .shutdown_timeout(Duration::from_secs(10))
        .ack_after_handle(true)
}

fn producer_config(stream: &str, redis: &RedisTarget) -> ProducerConfig {
    ProducerConfig::new(stream, "unused")
        .redis(redis.clone())
        .refresh_interval(Duration::from_millis(200))
        .routing_lease(Duration::from_secs(1))
}

async fn wait_for(what: &str, mut cond: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sequence numbers handled by the consumer (with `ack_after_handle`, acknowledged right after).
#[derive(Default)]
struct Handled(Mutex<HashMap<u64, u32>>);

impl Handled {
    fn handler(
        self: &Arc<Self>,
    ) -> impl Fn(Delivery) -> std::future::Ready<()> + Send + Sync + use<> {
        let me = self.clone();
        move |d: Delivery| {
            if let Some(seq) = d.field_str("seq").and_then(|s| s.parse::<u64>().ok()) {
                *me.0.lock().unwrap().entry(seq).or_default() += 1;
            }
            std::future::ready(())
        }
    }

    fn has_all(&self, published: &[u64]) -> bool {
        let seen = self.0.lock().unwrap();
        published.iter().all(|s| seen.contains_key(s))
    }
}

/// Publishes `seq` = 0, 1, … until `stop`; a failed publish is retried with the same seq, so `published`
/// holds exactly the records Redis accepted. Returns how many publishes failed (and were retried).
fn spawn_producer(
    producer: Arc<Producer>,
    published: Arc<Mutex<Vec<u64>>>,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut failures = 0u64;
        let mut seq = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let key = format!("key-{seq}");
            match producer
                .publish(&key, &[("seq", seq.to_string().as_str())])
                .await
            {
                Ok(_) => {
                    published.lock().unwrap().push(seq);
                    seq += 1;
                }
                Err(e) => {
                    failures += 1;
                    eprintln!("publish {seq} failed (retrying): {e}");
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        failures
    })
}

async fn published_grows(published: &Arc<Mutex<Vec<u64>>>, by: usize) {
    let start = published.lock().unwrap().len();
    wait_for(&format!("{by} more records published"), async || {
        published.lock().unwrap().len() >= start + by
    })
    .await;
}

/// Total pending entries of the group over the shard streams `0..shards`.
async fn pending_total(redis: &RedisTarget, stream: &str, shards: u32) -> i64 {
    let mut conn = redis.connect().await.unwrap();
    let mut total = 0;
    for i in 0..shards {
        let summary: redis::Value = redis::cmd("XPENDING")
            .arg(format!("{stream}:{i}"))
            .arg(stream)
            .query_async(&mut conn)
            .await
            .unwrap();
        if let redis::Value::Array(items) = summary
            && let Some(redis::Value::Int(n)) = items.first()
        {
            total += n;
        }
    }
    total
}

/// Scales the stream and waits until the group has `target` shards and no migration.
async fn scale_and_wait(admin: &AdminClient, stream: &str, target: u32) {
    admin
        .scale_stream(stream, target, "cluster test")
        .await
        .unwrap_or_else(|e| panic!("scale to {target}: {e:?}"));
    wait_for(&format!("the scale to {target} to complete"), async || {
        matches!(
            admin.group(stream, stream).await,
            Ok(Some(g)) if g.shard_count == target && g.active_migration.is_none()
        )
    })
    .await;
}

/// Index of every node holding a key of the group's hash tag, with the keys found there (SCAN on each).
async fn nodes_with_group_keys(cluster: &RedisCluster, stream: &str) -> Vec<(usize, Vec<String>)> {
    let pattern = format!("redis-stream:coord:{{{stream}:{stream}}}*");
    let mut out = Vec::new();
    for (i, node) in cluster.nodes().iter().enumerate() {
        let client = redis::Client::open(node.url()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let mut cursor = 0u64;
        let mut keys = Vec::new();
        loop {
            let (next, page): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await
                .unwrap();
            keys.extend(page);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        if !keys.is_empty() {
            out.push((i, keys));
        }
    }
    out
}

/// The master endpoint of every shard in the offsets view.
async fn shard_nodes(coord: &CoordinatorClient, stream: &str) -> Vec<String> {
    let offsets = coord
        .get_json(&[
            "coord",
            "v1",
            "monitoring",
            "streams",
            stream,
            "groups",
            stream,
            "offsets",
        ])
        .await
        .unwrap();
    offsets["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s["redisNodeEndpoint"]
                .as_str()
                .unwrap_or_else(|| panic!("no redisNodeEndpoint in {s}"))
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn records_survive_a_scale_out_a_master_failover_and_a_scale_in_on_a_cluster() {
    let cluster = RedisCluster::builder().with_replicas().start();
    let rsc = start_rsc(&cluster);
    let coord = coordinator(&rsc);
    let admin = AdminClient::new(coord.clone(), "cluster-test");
    let stream = "orders";
    admin
        .create_stream(stream, 4, "cluster test")
        .await
        .unwrap();
    let redis = target(&cluster);

    // The shard streams hash by their own keys: they spread over the masters.
    let nodes = shard_nodes(&coord, stream).await;
    assert!(
        nodes.iter().collect::<BTreeSet<_>>().len() >= 2,
        "4 shard streams on one master: {nodes:?}"
    );

    let handled = Arc::new(Handled::default());
    let consumer = Consumer::start(
        coord.clone(),
        consumer_config(stream, &redis, "c"),
        handled.handler(),
    )
    .await
    .unwrap();
    let producer = Arc::new(
        Producer::connect(coord.clone(), producer_config(stream, &redis))
            .await
            .unwrap(),
    );
    let published = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let producing = spawn_producer(producer.clone(), published.clone(), stop.clone());
    published_grows(&published, 200).await;

    scale_and_wait(&admin, stream, 8).await;
    published_grows(&published, 200).await;

    // The master of shard 0's stream fails over to its replica while records flow.
    let master = cluster.node_index_for_key(&format!("{stream}:0"));
    let promoted = tokio::task::block_in_place(|| cluster.failover(master));
    assert_eq!(cluster.node_index_for_key(&format!("{stream}:0")), promoted);
    published_grows(&published, 200).await;

    scale_and_wait(&admin, stream, 4).await;
    published_grows(&published, 200).await;

    stop.store(true, Ordering::Relaxed);
    let failures = producing.await.unwrap();
    let published: Vec<u64> = published.lock().unwrap().clone();
    wait_for("every published record handled", async || {
        handled.has_all(&published)
    })
    .await;
    wait_for("nothing pending", async || {
        pending_total(&redis, stream, 4).await == 0
    })
    .await;
    consumer.shutdown().await;
    eprintln!(
        "published {} (failed attempts retried: {failures}), handled {} distinct",
        published.len(),
        handled.0.lock().unwrap().len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn producer_and_consumer_ride_out_a_slot_migration_of_a_shard_stream() {
    let cluster = RedisCluster::start();
    let rsc = start_rsc(&cluster);
    let coord = coordinator(&rsc);
    let admin = AdminClient::new(coord.clone(), "cluster-test");
    let stream = "moving";
    admin
        .create_stream(stream, 3, "cluster test")
        .await
        .unwrap();
    let redis = target(&cluster);
    let handled = Arc::new(Handled::default());
    let consumer = Consumer::start(
        coord.clone(),
        consumer_config(stream, &redis, "m"),
        handled.handler(),
    )
    .await
    .unwrap();
    let producer = Arc::new(
        Producer::connect(coord.clone(), producer_config(stream, &redis))
            .await
            .unwrap(),
    );
    let published = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let producing = spawn_producer(producer.clone(), published.clone(), stop.clone());
    published_grows(&published, 100).await;

    let key = format!("{stream}:0");
    let from = cluster.node_index_for_key(&key);
    let to = (from + 1) % 3;
    let migration = tokio::task::block_in_place(|| cluster.begin_slot_migration(&key, to));
    published_grows(&published, 100).await;
    // The stream (with its consumer group) moves; the source now answers ASK for it.
    let moved = tokio::task::block_in_place(|| migration.move_keys());
    assert!(moved >= 1, "the slot of {key} held no key");
    published_grows(&published, 100).await;
    tokio::task::block_in_place(|| migration.finish());
    assert_eq!(cluster.node_index_for_key(&key), to);
    published_grows(&published, 100).await;

    stop.store(true, Ordering::Relaxed);
    let failures = producing.await.unwrap();
    assert_eq!(
        failures, 0,
        "redirects are followed inside the connection: no publish fails"
    );
    let published: Vec<u64> = published.lock().unwrap().clone();
    wait_for("every published record handled", async || {
        handled.has_all(&published)
    })
    .await;
    wait_for("nothing pending", async || {
        pending_total(&redis, stream, 3).await == 0
    })
    .await;
    consumer.shutdown().await;

    // The coordinator's own keys of the group (metadata, leases, progress) share one slot: one master.
    let holders = nodes_with_group_keys(&cluster, stream).await;
    assert_eq!(
        holders.len(),
        1,
        "group keys on several masters: {holders:?}"
    );
    // (The lease set is gone once every member has left; metadata and progress remain.)
    assert!(
        holders[0].1.iter().any(|k| k.ends_with(":metadata")) && holders[0].1.len() >= 2,
        "{holders:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_announcing_unreachable_addresses_is_used_through_the_node_map() {
    let cluster = RedisCluster::builder()
        .unreachable_announced_addresses()
        .start();
    let map = cluster.node_map();
    assert!(
        map.iter().all(|(a, _)| a.starts_with("127.0.0.2:")),
        "{map:?}"
    );

    // Without the map, the addresses the cluster announces cannot be reached.
    let unmapped = RedisTarget::cluster(cluster.node_addresses());
    let attempt = tokio::time::timeout(Duration::from_secs(30), async {
        let mut conn = unmapped.connect().await?;
        let () = redis::cmd("SET")
            .arg("probe")
            .arg(1)
            .query_async(&mut conn)
            .await?;
        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    })
    .await;
    assert!(
        !matches!(attempt, Ok(Ok(()))),
        "a write reached the cluster without the node map"
    );

    // With it, the coordinator (coordinator.redis.cluster-node-map) and the SDK both work.
    let rsc = start_rsc(&cluster);
    let coord = coordinator(&rsc);
    let admin = AdminClient::new(coord.clone(), "cluster-test");
    let stream = "natted";
    admin
        .create_stream(stream, 3, "cluster test")
        .await
        .unwrap();
    let nodes = shard_nodes(&coord, stream).await;
    assert!(
        nodes.iter().all(|n| n.starts_with("127.0.0.2:")),
        "the offsets view names the announced endpoints: {nodes:?}"
    );
    let redis = target(&cluster);
    let handled = Arc::new(Handled::default());
    let consumer = Consumer::start(
        coord.clone(),
        consumer_config(stream, &redis, "n"),
        handled.handler(),
    )
    .await
    .unwrap();
    let producer = Producer::connect(coord.clone(), producer_config(stream, &redis))
        .await
        .unwrap();
    let mut published = Vec::new();
    for seq in 0..300u64 {
        producer
            .publish(format!("key-{seq}"), &[("seq", seq.to_string())])
            .await
            .unwrap();
        published.push(seq);
    }
    wait_for("every published record handled", async || {
        handled.has_all(&published)
    })
    .await;
    consumer.shutdown().await;
}

#[test]
fn rsc_demo_over_a_three_master_cluster_loses_nothing() {
    let cluster = RedisCluster::start();
    let rsc = start_rsc(&cluster);
    let out = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args([
            "demo",
            "--coordinator",
            &rsc.url(),
            "--redis-cluster-nodes",
            &cluster.node_addresses().join(","),
            "--duration",
            "4",
            "--rate",
            "300",
        ])
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", ADMIN_PASSWORD)
        .env_remove("RSC_REDIS_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let last = stdout.lines().last().unwrap_or_default();
    let fields: HashMap<&str, u64> = last
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k, v.parse().unwrap()))
        .collect();
    assert!(fields.get("published").is_some_and(|&n| n > 0), "{last}");
    assert_eq!(fields.get("acked"), fields.get("published"), "{last}");
    assert_eq!(fields.get("lost"), Some(&0), "{last}");
}
