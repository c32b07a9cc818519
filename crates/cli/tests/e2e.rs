//! End-to-end tests of the real `rsc` binary over real redis-server processes.

use rsc_client::{LocalShard, Membership, Outgoing};
use rsc_protocol::wire::{HeartbeatResponse, RuntimeConsumerCapacity};
use rsc_testkit::{RedisServer, RscBuilder, RscProcess, free_port};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

/// A real `rsc serve` with test timings, the bootstrap admin and `extra_env`.
fn start_rsc(redis_url: &str, extra_env: &[(&str, &str)]) -> RscProcess {
    let mut b = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), redis_url)
        .fast_timings(Duration::from_millis(1500), Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD);
    for (k, v) in extra_env {
        b = b.env(k, *v);
    }
    b.start()
}

/// The bootstrap admin's password every `Rsc` gets (through `RSC_ADMIN_PASSWORD`).
const ADMIN_PASSWORD: &str = "e2e-admin-password";

async fn post(base: &str, path: &str, body: Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn get(base: &str, path: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{base}{path}"))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json")
}

/// A test member: the SDK's model of the member protocol ([`Membership`]) with work that finishes at
/// once (a shard it gives up is reported DRAINING in one heartbeat, then REVOKED until confirmed).
#[derive(Clone, Debug)]
struct Member {
    membership: Membership,
}

impl Member {
    fn new(id: &str) -> Self {
        Member {
            membership: Membership::new(id, Duration::from_secs(1)),
        }
    }

    fn id(&self) -> &str {
        self.membership.member_id()
    }

    fn owned(&self) -> &BTreeSet<u32> {
        self.membership.owned()
    }

    /// Nothing given up that is still drained or not yet confirmed REVOKED.
    fn nothing_given_up(&self) -> bool {
        self.membership.draining().is_empty() && self.membership.released().is_empty()
    }

    async fn heartbeat(&mut self, base: &str, group: &str) -> Value {
        let req = self.membership.request(
            Outgoing {
                capacity: RuntimeConsumerCapacity {
                    runtime_max_concurrency: 1,
                    available_concurrency: 1,
                },
                request_id_suffix: "",
                acked_at: None,
            },
            |_| LocalShard::default(),
        );
        let sent_at = Instant::now();
        let (status, resp) = post(
            base,
            &format!(
                "/coord/v1/streams/{group}/groups/{group}/members/{}/heartbeat",
                self.id()
            ),
            serde_json::to_value(&req).expect("a request serialises"),
        )
        .await;
        assert_eq!(status, 200, "{resp}");
        let answer: HeartbeatResponse =
            serde_json::from_value(resp.clone()).expect("a heartbeat answer");
        // The shards that request reported DRAINING have finished: REVOKED from the next one on.
        self.membership.drained_all();
        self.membership.on_response(sent_at, &answer);
        resp
    }

    /// Shards this member is entitled to read right now (assigned or still draining).
    fn reading(&self) -> Vec<u32> {
        self.owned()
            .iter()
            .chain(self.membership.draining())
            .copied()
            .collect()
    }
}

fn assert_one_reader(members: &[&Member]) {
    let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
    for m in members {
        for s in m.reading() {
            if let Some(other) = seen.insert(s, m.id()) {
                panic!("shard {s} is read by both {other} and {}", m.id());
            }
        }
    }
}

#[tokio::test]
async fn three_members_converge_leave_gracefully_and_expire() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url(), &[]);
    let (status, body) = post(
        &rsc.url(),
        "/coord/v1/streams/e2e",
        json!({"initialShardCount": 12, "requestedBy": "e2e"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");

    let mut members = [Member::new("a"), Member::new("b"), Member::new("c")];
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        for m in members.iter_mut() {
            m.heartbeat(&rsc.url(), "e2e").await;
        }
        assert_one_reader(&members.iter().collect::<Vec<_>>());
        let counts: Vec<usize> = members.iter().map(|m| m.owned().len()).collect();
        if counts == [4, 4, 4] && members.iter().all(|m| m.nothing_given_up()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "did not converge to 4/4/4: {counts:?}"
        );
    }

    // c leaves gracefully, still draining its shards: nobody gets them until it reports REVOKED.
    let c_shards = members[2].owned().clone();
    let mut leave = members[2].clone();
    leave.membership.begin_leave();
    leave.heartbeat(&rsc.url(), "e2e").await; // reports DRAINING with epoch -1
    for _ in 0..5 {
        for m in members[..2].iter_mut() {
            m.heartbeat(&rsc.url(), "e2e").await;
        }
        for s in &c_shards {
            assert!(
                !members[0].owned().contains(s) && !members[1].owned().contains(s),
                "shard {s} granted before c revoked it"
            );
        }
    }
    leave.heartbeat(&rsc.url(), "e2e").await; // now reports REVOKED
    let deadline = Instant::now() + Duration::from_secs(10);
    while members[0].owned().len() + members[1].owned().len() < 12 {
        for m in members[..2].iter_mut() {
            m.heartbeat(&rsc.url(), "e2e").await;
        }
        assert_one_reader(&[&members[0], &members[1]]);
        assert!(
            Instant::now() < deadline,
            "c's shards were not handed over after REVOKED"
        );
    }
    assert_eq!((members[0].owned().len(), members[1].owned().len()), (6, 6));

    // b stops heartbeating after one last (lease-renewing) heartbeat: its shards reach a only after b's
    // lease, renewed no earlier than this send, has expired.
    let b_stopped_at = Instant::now();
    let last = members[1].heartbeat(&rsc.url(), "e2e").await;
    assert_eq!(last["status"], "OK");
    let deadline = Instant::now() + Duration::from_secs(15);
    while members[0].owned().len() < 12 {
        members[0].heartbeat(&rsc.url(), "e2e").await;
        assert!(
            Instant::now() < deadline,
            "b's shards were not reassigned after its lease expired"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        b_stopped_at.elapsed() >= Duration::from_millis(1_500),
        "reassigned before b's 1.5 s lease could expire"
    );
    let view = get(
        &rsc.url(),
        "/coord/v1/monitoring/streams/e2e/groups/e2e/members",
    )
    .await;
    let b = view["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["memberId"] == "b")
        .unwrap();
    assert_eq!(b["state"], "EXPIRED");
    let assignments = get(
        &rsc.url(),
        "/coord/v1/monitoring/streams/e2e/groups/e2e/assignments",
    )
    .await;
    assert_eq!(assignments["invariantViolations"], json!([]));
}

#[tokio::test]
async fn two_replicas_with_alternating_heartbeats_keep_one_reader_even_when_one_dies() {
    let redis = RedisServer::start();
    let r1 = start_rsc(&redis.url(), &[("COORDINATOR_ID", "r1")]);
    let mut r2 = start_rsc(&redis.url(), &[("COORDINATOR_ID", "r2")]);
    let (status, _) = post(
        &r1.url(),
        "/coord/v1/streams/rep",
        json!({"initialShardCount": 8, "requestedBy": "e2e"}),
    )
    .await;
    assert_eq!(status, 201);
    let bases = [r1.url(), r2.url()];
    let mut members: Vec<Member> = (0..4).map(|i| Member::new(&format!("m{i}"))).collect();
    let mut round = 0usize;
    let deadline = Instant::now() + Duration::from_secs(30);
    // Heartbeats alternate between replicas; members join one at a time.
    loop {
        round += 1;
        let joined = (round / 3 + 1).min(members.len());
        for (i, m) in members[..joined].iter_mut().enumerate() {
            m.heartbeat(&bases[(round + i) % 2], "rep").await;
        }
        assert_one_reader(&members.iter().collect::<Vec<_>>());
        if joined == members.len()
            && members
                .iter()
                .all(|m| m.owned().len() == 2 && m.membership.draining().is_empty())
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "replicas did not converge: {:?}",
            members.iter().map(|m| m.owned().len()).collect::<Vec<_>>()
        );
    }
    // Kill replica 2; everyone continues on replica 1, one member leaves by expiry.
    r2.kill();
    members.pop();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        for m in members.iter_mut() {
            m.heartbeat(&r1.url(), "rep").await;
        }
        assert_one_reader(&members.iter().collect::<Vec<_>>());
        let total: usize = members.iter().map(|m| m.owned().len()).sum();
        let counts: Vec<usize> = members.iter().map(|m| m.owned().len()).collect();
        if total == 8 && counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "did not rebalance after a replica died: {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let assignments = get(
        &r1.url(),
        "/coord/v1/monitoring/streams/rep/groups/rep/assignments",
    )
    .await;
    assert_eq!(assignments["invariantViolations"], json!([]));
}

#[test]
fn start_up_failures_say_what_to_do() {
    let port = free_port();
    let out = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args([
            "serve",
            "--redis-url",
            &format!("redis://127.0.0.1:{port}"),
            "--listen",
            "127.0.0.1:0",
        ])
        .env("COORDINATOR_REDIS_CONNECT_TIMEOUT", "1s")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("127.0.0.1:{port}")) && err.contains("redis-server"),
        "{err}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args(["serve"])
        .env("COORDINATOR_MEMBER_LEASE_TTL", "soon")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("member-lease-ttl"), "{err}");

    let redis = RedisServer::start();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args(["serve", "--redis-url", &redis.url(), "--listen", &addr])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&addr) && err.contains("--listen"), "{err}");
}

#[tokio::test]
async fn sigterm_shuts_down_gracefully() {
    let redis = RedisServer::start();
    let mut rsc = start_rsc(&redis.url(), &[]);
    let pid = rsc.pid().expect("running").to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success());
    let exit = rsc.wait_exit(Duration::from_secs(10));
    assert_eq!(exit, Some(0), "rsc exits gracefully (code 0) after SIGTERM");
}
