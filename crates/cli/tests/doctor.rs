//! `rsc doctor` on a healthy deployment: the real binary against a real `rsc serve` that has run every feature
//! that writes a key (sign-in and its throttle, tokens, streams, groups, member heartbeats, producer sightings,
//! a quiesced scale with a producer's report, audit). Every key under the prefix must have a shape of the one
//! list in rsc-store (`key_shapes.rs`), and doctor must pass the prefix check and exit 0.

use rsc_client::{CoordinatorClient, Credentials, Method};
use rsc_testkit::{RedisServer, RscBuilder};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

const PASSWORD: &str = "doctor-admin-password";
const KEY_PREFIX: &str = "redis-stream:coord";

fn keys_under_prefix(url: &str) -> Vec<String> {
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    redis::cmd("KEYS")
        .arg(format!("{KEY_PREFIX}:*"))
        .query(&mut c)
        .unwrap()
}

async fn heartbeat(c: &CoordinatorClient, stream: &str, group: &str, member: &str) -> Value {
    let body = json!({
        "protocolVersion": 1, "requestId": format!("{member}-1"), "memberId": member,
        "memberEpoch": 0, "metadataVersion": 0,
        "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1},
        "ownedShards": [], "revokingShards": [], "shardProgress": [],
    });
    c.send_json(
        Method::POST,
        &[
            "coord",
            "v1",
            "streams",
            stream,
            "groups",
            group,
            "members",
            member,
            "heartbeat",
        ],
        &[],
        Some(&body),
        None,
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_knows_every_key_a_coordinator_writes() {
    let redis = RedisServer::builder().appendonly(true).start();
    let rsc = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(PASSWORD)
        .start();
    let base = rsc.url();
    let http = reqwest::Client::new();
    let login = format!("{base}/coord/v1/auth/login");

    // Sign-in: a wrong password (throttle windows, a rejected audit record) and a good one (a token).
    let bad = http
        .post(&login)
        .json(&json!({"username": "admin", "password": "not-the-password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 401);
    let good = http
        .post(&login)
        .json(&json!({"username": "admin", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(good.status(), 200);

    let c = CoordinatorClient::builder([base.as_str()])
        .credentials(Some(Credentials::new("admin", PASSWORD)))
        .request_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let stream = "orders";
    c.create_stream(stream, 2, "doctor-test").await.unwrap();
    c.send_json(
        Method::POST,
        &["coord", "v1", "streams", stream, "groups", "billing"],
        &[],
        Some(&json!({"requestedBy": "doctor-test"})),
        None,
    )
    .await
    .unwrap();
    let joined = heartbeat(&c, stream, "billing", "member-1").await;
    assert_eq!(joined["status"], json!("OK"), "{joined}");

    // A producer that names itself is seen; a quiesced scale waits for it and it reports.
    let routing = c
        .producer_routing_as(stream, stream, None, Some("producer-1"))
        .await
        .unwrap();
    let scale = c
        .send_json(
            Method::POST,
            &["coord", "v1", "streams", stream, "scale"],
            &[],
            Some(&json!({"targetShardCount": 3, "requestedBy": "doctor-test", "reason": "every key shape",
                         "producerQuiesce": {"timeoutMs": 30000}})),
            None,
        )
        .await
        .unwrap();
    let resharding_id = scale["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    c.report_quiesced(
        stream,
        "producer-1",
        &resharding_id,
        routing.routing_version.unwrap_or(0),
    )
    .await
    .unwrap();

    // Every key under the prefix is one the list knows; the kinds this run wrote are all there.
    let deadline = Instant::now() + Duration::from_secs(10);
    let kinds = loop {
        let keys = keys_under_prefix(&redis.url());
        let mut kinds = BTreeSet::new();
        for k in &keys {
            let kind = rsc_store::coordinator_key_kind(KEY_PREFIX, k)
                .unwrap_or_else(|| panic!("{k} is not in rsc-store's list of key shapes"));
            kinds.insert(kind);
        }
        if kinds.contains("producers quiesced") || Instant::now() > deadline {
            break kinds;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for needed in [
        "group index",
        "audit stream",
        "group metadata",
        "member leases",
        "stream record",
        "producers seen",
        "producers first seen",
        "producers quiesced",
        "bearer token",
        "tokens of a user",
    ] {
        assert!(kinds.contains(needed), "no {needed} key: {kinds:?}");
    }

    let out = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args(["doctor", "--redis-url", &redis.url(), "--output", "json"])
        .env_remove("RSC_REDIS_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let prefix = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "key prefix")
        .unwrap();
    assert_eq!(prefix["result"], json!("PASS"), "{report}");
    assert_eq!(out.status.code(), Some(0), "{report}");
}
