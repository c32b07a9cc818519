//! Replicas split the groups' background work (issue #35): three real `rsc serve` processes on one real Redis
//! register in the replica registry, each group's series come from exactly one of them (its owner by rendezvous
//! hashing), and when the owner of a group is killed with SIGKILL the others take its groups up: a member of
//! that group that goes silent at the kill is still expired, within its lease plus the replica lease.

use rsc_group::ownership::{ReplicaSet, group_work};
use rsc_testkit::{RedisServer, RscBuilder, RscProcess};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const PASSWORD: &str = "replicas-admin-password";
const MEMBER_LEASE: Duration = Duration::from_millis(1_500);
/// `fast_timings`' replica lease and renewal.
const REPLICA_LEASE: Duration = Duration::from_secs(1);
const RENEW: Duration = Duration::from_millis(200);
const IDS: [&str; 3] = ["replica-a", "replica-b", "replica-c"];
const GROUPS: usize = 12;

fn start(redis_url: &str, id: &str) -> RscProcess {
    RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), redis_url)
        .fast_timings(MEMBER_LEASE, Duration::from_secs(10))
        .admin_password(PASSWORD)
        .env("COORDINATOR_ID", id)
        .env("COORDINATOR_METRICS_REFRESH_INTERVAL", "200ms")
        .start()
}

async fn call(
    method: reqwest::Method,
    base: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, String) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .basic_auth("admin", Some(PASSWORD));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.expect("request");
    (r.status().as_u16(), r.text().await.unwrap_or_default())
}

async fn json_call(method: reqwest::Method, base: &str, path: &str, body: Option<Value>) -> Value {
    let (status, text) = call(method, base, path, body).await;
    assert!(status < 300, "{path}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

async fn registry(redis_url: &str) -> Vec<String> {
    let client = redis::Client::open(redis_url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("ZRANGE")
        .arg("redis-stream:coord:replicas")
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// The groups whose `group_owner` series a replica exports, with the owner label.
async fn owned_in_metrics(base: &str) -> Vec<(String, String)> {
    let (_, text) = call(reqwest::Method::GET, base, "/metrics", None).await;
    text.lines()
        .filter(|l| l.starts_with("redis_stream_coord_group_owner{"))
        .map(|l| {
            let label = |name: &str| {
                let from = l.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                l[from..from + l[from..].find('"').unwrap()].to_owned()
            };
            (label("group"), label("owner"))
        })
        .collect()
}

async fn join(base: &str, group: &str, member: &str, seq: u64, epoch: i64, mv: i64) -> Value {
    json_call(
        reqwest::Method::POST,
        base,
        &format!("/coord/v1/streams/inv/groups/{group}/members/{member}/heartbeat"),
        Some(json!({
            "protocolVersion": 1, "requestId": format!("{member}-{seq}"), "memberId": member,
            "memberEpoch": epoch, "metadataVersion": mv,
            "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1},
        })),
    )
    .await
}

async fn member_state(base: &str, group: &str, member: &str) -> Option<String> {
    let v = json_call(
        reqwest::Method::GET,
        base,
        &format!("/coord/v1/monitoring/streams/inv/groups/{group}/members"),
        None,
    )
    .await;
    let list = v["members"].as_array().cloned().unwrap_or_default();
    list.iter()
        .find(|m| m["memberId"] == member)
        .and_then(|m| m["state"].as_str().map(str::to_owned))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_group_has_one_owner_and_a_killed_owners_groups_are_taken_up() {
    let redis = RedisServer::start();
    let mut replicas: Vec<RscProcess> = IDS.iter().map(|id| start(&redis.url(), id)).collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while registry(&redis.url()).await.len() < IDS.len() {
        assert!(
            Instant::now() < deadline,
            "replicas did not register: {:?}",
            registry(&redis.url()).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let base = replicas[0].url();
    json_call(
        reqwest::Method::POST,
        &base,
        "/coord/v1/streams/inv",
        Some(json!({"initialShardCount": 1, "requestedBy": "test", "reason": "replicas"})),
    )
    .await;
    let groups: Vec<String> = (0..GROUPS).map(|i| format!("g{i}")).collect();
    for g in &groups {
        json_call(
            reqwest::Method::POST,
            &base,
            &format!("/coord/v1/streams/inv/groups/{g}"),
            Some(json!({"requestedBy": "test", "reason": "replicas"})),
        )
        .await;
    }

    // Every group (the stream's default "inv" included) is exported by exactly one replica, its owner by
    // rendezvous hashing over the registry.
    let view = ReplicaSet::new(IDS);
    let all: Vec<String> = std::iter::once("inv".to_owned())
        .chain(groups.iter().cloned())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut seen: Vec<(String, String)> = Vec::new();
        for r in &replicas {
            for (g, owner) in owned_in_metrics(&r.url()).await {
                assert_eq!(
                    owner,
                    IDS[replicas.iter().position(|x| x.url() == r.url()).unwrap()]
                );
                seen.push((g, owner));
            }
        }
        seen.sort();
        let expected: Vec<(String, String)> = {
            let mut e: Vec<(String, String)> = all
                .iter()
                .map(|g| {
                    (
                        g.clone(),
                        view.owner(&group_work("inv", g)).unwrap().to_owned(),
                    )
                })
                .collect();
            e.sort();
            e
        };
        if seen == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "metrics owners {seen:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A group owned by replica-a; its member heartbeats through replica-b, the only replica it talks to.
    let victim = 0;
    let group = groups
        .iter()
        .find(|g| view.owner(&group_work("inv", g)) == Some(IDS[victim]))
        .expect("replica-a owns one of twelve groups")
        .clone();
    let other = replicas[1].url();
    let joined = join(&other, &group, "m1", 1, 0, 0).await;
    assert_eq!(joined["status"], "OK", "{joined}");
    let (epoch, mv) = (
        joined["memberEpoch"].as_i64().unwrap(),
        joined["metadataVersion"].as_i64().unwrap(),
    );
    let steady = join(&other, &group, "m1", 2, epoch, mv).await;
    assert_eq!(steady["status"], "OK", "{steady}");

    // The owner dies at once after the member's last heartbeat; nobody else ever hears from the member.
    replicas[victim].kill();
    let killed = Instant::now();
    let bound = MEMBER_LEASE + REPLICA_LEASE + RENEW + Duration::from_secs(1);
    // Bounded wait; on this shared machine allow slack beyond the target before calling it a failure.
    let give_up = killed + bound + Duration::from_secs(5);
    loop {
        if member_state(&other, &group, "m1").await.as_deref() == Some("EXPIRED") {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "the silent member of {group} (owned by the killed {}) was not expired {:?} after the kill",
            IDS[victim],
            killed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = killed.elapsed();
    eprintln!(
        "silent member expired {took:?} after its owner was killed (member lease {MEMBER_LEASE:?}, replica lease {REPLICA_LEASE:?}; target {bound:?})"
    );
    // The registry counts the dead replica out.
    let deadline = Instant::now() + Duration::from_secs(10);
    while registry(&redis.url())
        .await
        .contains(&IDS[victim].to_owned())
    {
        assert!(
            Instant::now() < deadline,
            "the killed replica stayed registered"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `components.reconciler.lastRunAt` of a replica's health: changes at every reconciler tick.
async fn last_run(base: &str) -> Option<String> {
    let health = json_call(
        reqwest::Method::GET,
        base,
        "/coord/v1/monitoring/health",
        None,
    )
    .await;
    health["components"]["reconciler"]["lastRunAt"]
        .as_str()
        .map(str::to_owned)
}

/// Waits (bounded) until the replica at `base` has completed `ticks` more reconciler ticks.
async fn wait_ticks(base: &str, ticks: usize) {
    let mut last = last_run(base).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    for _ in 0..ticks {
        loop {
            let now = last_run(base).await;
            if now.is_some() && now != last {
                last = now;
                break;
            }
            assert!(Instant::now() < deadline, "no reconciler tick on {base}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn signal(p: &RscProcess, sig: &str) {
    let pid = p.pid().expect("running").to_string();
    let ok = std::process::Command::new("kill")
        .args([sig, &pid])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {pid}");
}

/// Many streams written while their owner is away make their passes due in one tick; the owner lists their
/// groups from one read of the group index, not one read per stream (which made a tick after thousands of
/// creations cost streams × groups: issue #35's 10,000-group inventory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tick_with_many_due_streams_reads_the_group_index_once() {
    const STREAMS: usize = 30;
    let redis = RedisServer::start();
    let slow = |id: &str| {
        RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
            .admin_password(PASSWORD)
            .env("COORDINATOR_ID", id)
            .env("COORDINATOR_LOOP_TICK_INTERVAL", "1s")
            // Nothing else reads the index while the counts are taken: no sweep, no metrics refresh, and
            // the stopped owner stays in the other replica's view.
            .env("COORDINATOR_CLUSTER_SWEEP_INTERVAL", "10m")
            .env("COORDINATOR_METRICS_REFRESH_INTERVAL", "10m")
            .env("COORDINATOR_CLUSTER_REPLICA_LEASE", "60s")
            .start()
    };
    let ids = ["replica-a", "replica-b"];
    let front = slow(ids[0]);
    let owner = slow(ids[1]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while registry(&redis.url()).await.len() < ids.len() {
        assert!(Instant::now() < deadline, "replicas did not register");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let view = ReplicaSet::new(ids);
    let streams: Vec<String> = (0..)
        .map(|i| format!("idle{i}"))
        .filter(|s| view.owner(s) == Some(ids[1]))
        .take(STREAMS)
        .collect();
    wait_ticks(&owner.url(), 2).await;

    // The owner is away while every stream is created through the other replica.
    signal(&owner, "-STOP");
    for s in &streams {
        json_call(
            reqwest::Method::POST,
            &front.url(),
            &format!("/coord/v1/streams/{s}"),
            Some(json!({"initialShardCount": 1, "requestedBy": "test", "reason": "inventory"})),
        )
        .await;
    }
    let monitor = Monitor::start(&redis).await;
    signal(&owner, "-CONT");
    // The first tick after it returns takes every notice and runs every stream's pass; the next ones show
    // it is done.
    wait_ticks(&owner.url(), 3).await;
    let seen = monitor.stop();
    let index_reads = index_reads(&seen);
    // Every stream's pass ran: it publishes the routing ceiling of the stream's shard.
    for s in &streams {
        assert!(
            seen.contains(&format!("{s}:0:{{{s}:0}}:routing")),
            "the pass of {s} did not run after the owner came back"
        );
    }
    assert!(
        (1..=3).contains(&index_reads),
        "the group index was read {index_reads} times for {STREAMS} due streams in three ticks"
    );
}

/// `redis-cli monitor` into a file: every command Redis runs while it lives.
struct Monitor {
    child: std::process::Child,
    log: std::path::PathBuf,
}

impl Monitor {
    async fn start(redis: &RedisServer) -> Monitor {
        let log = std::env::temp_dir().join(format!(
            "rsc-monitor-{}-{}.log",
            std::process::id(),
            redis.port()
        ));
        let child = std::process::Command::new("redis-cli")
            .args(["-p", &redis.port().to_string(), "monitor"])
            .stdout(std::fs::File::create(&log).expect("monitor log"))
            .spawn()
            .expect("redis-cli monitor");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(&log).is_ok_and(|t| t.starts_with("OK")) {
            assert!(Instant::now() < deadline, "MONITOR did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Monitor { child, log }
    }

    /// Stops it and returns what it saw.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let seen = std::fs::read_to_string(&self.log).unwrap_or_default();
        let _ = std::fs::remove_file(&self.log);
        seen
    }
}

/// How many times `seen` (MONITOR's lines) read the whole group index.
fn index_reads(seen: &str) -> usize {
    seen.lines()
        .filter(|l| l.contains("\"HGETALL\" \"redis-stream:coord:group-index\""))
        .count()
}

/// Creating a stream that has no record yet reads only its own index entry, not the whole group index (which
/// made creating thousands of streams one after another cost O(groups²)); a further group of an existing
/// stream reads the index to find its siblings, and adopts their shard count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creating_a_new_stream_reads_its_own_index_entry_not_the_whole_index() {
    let redis = RedisServer::start();
    let replica = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .admin_password(PASSWORD)
        // Nothing but the creates reads the index while MONITOR watches: the reconciler and the metrics
        // refresh run once at start-up and not again within the test.
        .env("COORDINATOR_LOOP_TICK_INTERVAL", "10m")
        .env("COORDINATOR_CLUSTER_SWEEP_INTERVAL", "10m")
        .env("COORDINATOR_METRICS_REFRESH_INTERVAL", "10m")
        .start();
    let base = replica.url();
    // Both have run: the reconciler's first tick, and the metrics refresh whose snapshot health answers from.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let health = json_call(
            reqwest::Method::GET,
            &base,
            "/coord/v1/monitoring/health",
            None,
        )
        .await;
        if health["components"]["reconciler"]["lastRunAt"].is_string()
            && health["components"]["metadataDurability"]["checkedBy"] == "background check"
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "start-up work not done: {health}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let monitor = Monitor::start(&redis).await;
    for i in 0..10 {
        json_call(
            reqwest::Method::POST,
            &base,
            &format!("/coord/v1/streams/new{i}"),
            Some(json!({"initialShardCount": 3, "requestedBy": "test", "reason": "inventory"})),
        )
        .await;
    }
    let created = monitor.stop();
    assert_eq!(
        index_reads(&created),
        0,
        "creating ten new streams read the whole group index"
    );

    let monitor = Monitor::start(&redis).await;
    let group = json_call(
        reqwest::Method::POST,
        &base,
        "/coord/v1/streams/new3/groups/audit",
        Some(json!({"requestedBy": "test", "reason": "inventory"})),
    )
    .await;
    let further = monitor.stop();
    assert_eq!(group["shardCount"], 3, "{group}");
    assert_eq!(index_reads(&further), 1);
    // And the existing stream is refused as before.
    let (status, body) = call(
        reqwest::Method::POST,
        &base,
        "/coord/v1/streams/new3",
        Some(json!({"requestedBy": "test", "reason": "again"})),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("audit"), "{body}");
}
