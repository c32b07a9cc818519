//! TLS to Redis end to end: real TLS-only `redis-server`s (no plain-text port, so nothing passes over
//! plain text by accident) with certificates made for the test (rsc-testkit's `TlsRedis`, and a TLS
//! `RedisCluster`), the real `rsc` binary and the SDK. `rsc serve` with a CA file serves and creates a
//! stream on the TLS Redis; `rsc demo` over mutual TLS loses nothing; `rsc bench dataplane` and
//! `rsc bench heartbeat` run over TLS; `rsc demo` and `rsc serve` work on a TLS 3-master cluster.
//! Start-up fails with a message saying what is wrong for a wrong CA, a name the certificate does not
//! carry, a missing or unreadable file, a plain-text Redis behind `rediss://` (in `rsc serve`, the SDK's
//! producer and consumer, and `rsc demo`), and a server that wants a client certificate.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rsc_client::{ConsumerConfig, CoordinatorClient, Delivery, Producer, ProducerConfig, RedisTls};
use rsc_testkit::{RedisCluster, RedisServer, RscBuilder, RscProcess, TlsRedis};

const ADMIN_PASSWORD: &str = "tls-test-admin-password";
/// Start-up fails within the connect timeout (3 s by default); bound generously on a busy machine.
const EXIT_BOUND: Duration = Duration::from_secs(20);

fn rsc(redis_url: &str, ca_file: &Path) -> RscBuilder {
    RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), redis_url)
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD)
        .env(
            "COORDINATOR_REDIS_TLS_CA_FILE",
            ca_file.display().to_string(),
        )
}

/// `curl` with the admin's Basic credentials; returns (HTTP status, body).
fn curl(rsc: &RscProcess, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-o", "-", "-w", "\n%{http_code}", "-X", method])
        .args(["-u", &format!("admin:{ADMIN_PASSWORD}")])
        .arg(format!("{}{path}", rsc.url()));
    if let Some(b) = body {
        cmd.args(["-H", "Content-Type: application/json", "-d", b]);
    }
    let out = cmd.output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').expect("status line");
    (status.trim().parse().expect("HTTP status"), body.to_owned())
}

/// The start-up failure of an `rsc serve` that must not come up: its exit code and log.
fn failed_start(b: RscBuilder) -> (Option<i32>, String) {
    let mut p = b.spawn();
    let code = p.wait_exit(EXIT_BOUND);
    (code, p.log_text())
}

/// `redis-cli` over the TLS-only server's Unix socket (to look at the data without TLS).
fn redis_cli(redis: &TlsRedis, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .arg("-s")
        .arg(redis.unix_socket())
        .args(args)
        .output()
        .expect("redis-cli runs");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn serve_with_a_ca_file_works_over_tls() {
    let redis = TlsRedis::start(false);
    let rsc = rsc(&redis.url(), &redis.certs().ca_file()).start();
    assert_eq!(curl(&rsc, "GET", "/healthz", None).0, 200);
    let (status, body) = curl(&rsc, "GET", "/readyz", None);
    assert_eq!(status, 200, "{body}");
    let (status, body) = curl(
        &rsc,
        "POST",
        "/coord/v1/streams/tlsorders",
        Some(r#"{"initialShardCount": 2, "requestedBy": "test", "reason": "tls"}"#),
    );
    assert_eq!(status, 201, "{body}");
    // The shard streams and their consumer groups are on the TLS server (looked at over its Unix socket).
    assert_eq!(
        redis_cli(&redis, &["EXISTS", "tlsorders:0", "tlsorders:1"]),
        "2"
    );
    let (status, body) = curl(
        &rsc,
        "GET",
        "/coord/v1/streams/tlsorders/groups/tlsorders",
        None,
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"shardCount\":2"), "{body}");
}

#[test]
fn demo_over_mutual_tls_loses_nothing() {
    let redis = TlsRedis::start(true);
    let certs = redis.certs();
    let rsc = rsc(&redis.url(), &certs.ca_file())
        .env(
            "COORDINATOR_REDIS_TLS_CERT_FILE",
            certs.client_cert_file().display().to_string(),
        )
        .env(
            "COORDINATOR_REDIS_TLS_KEY_FILE",
            certs.client_key_file().display().to_string(),
        )
        .start();
    let out = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args([
            "demo",
            "--coordinator",
            &rsc.url(),
            "--redis-url",
            &redis.url(),
        ])
        .args(["--duration", "2", "--rate", "200"])
        .arg("--redis-tls-ca-file")
        .arg(certs.ca_file())
        .arg("--redis-tls-cert-file")
        .arg(certs.client_cert_file())
        .arg("--redis-tls-key-file")
        .arg(certs.client_key_file())
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", ADMIN_PASSWORD)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let last = stdout.lines().last().unwrap_or_default();
    let fields: HashMap<&str, u64> = last
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect();
    assert!(fields.get("published").is_some_and(|&n| n > 0), "{last}");
    assert_eq!(fields.get("acked"), fields.get("published"), "{last}");
    assert_eq!(fields.get("lost"), Some(&0), "{last}");

    // The same demo without the client certificate is refused by the server, and says so.
    let out = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args([
            "demo",
            "--coordinator",
            &rsc.url(),
            "--redis-url",
            &redis.url(),
        ])
        .args(["--duration", "1", "--stream", "tls-demo-nocert"])
        .arg("--redis-tls-ca-file")
        .arg(certs.ca_file())
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", ADMIN_PASSWORD)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("TLS"), "{stderr}");

    // A certificate without its key is refused before anything connects, naming the flag.
    let out = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args([
            "demo",
            "--coordinator",
            &rsc.url(),
            "--redis-url",
            &redis.url(),
        ])
        .arg("--redis-tls-cert-file")
        .arg(certs.client_cert_file())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("--redis-tls-key-file"), "{stderr}");
}

#[test]
fn start_up_fails_clearly_on_each_tls_mistake() {
    let redis = TlsRedis::start(false);
    let certs = redis.certs();

    let (code, log) = failed_start(rsc(&redis.url(), &certs.other_ca_file()));
    assert_ne!(code, Some(0), "{log}");
    assert!(code.is_some(), "still running with the wrong CA:\n{log}");
    assert!(log.contains("does not verify against the CA file"), "{log}");

    let (code, log) = failed_start(rsc(&redis.url_with_wrong_name(), &certs.ca_file()));
    assert!(code.is_some_and(|c| c != 0), "{log}");
    assert!(log.contains("does not name the host"), "{log}");

    let missing = certs.dir().join("no-such-ca.pem");
    let (code, log) = failed_start(rsc(&redis.url(), &missing));
    assert!(code.is_some_and(|c| c != 0), "{log}");
    assert!(
        log.contains(&missing.display().to_string()) && log.contains("No such file"),
        "{log}"
    );

    // A directory where the CA file should be: unreadable, and named.
    let (code, log) = failed_start(rsc(&redis.url(), certs.dir()));
    assert!(code.is_some_and(|c| c != 0), "{log}");
    assert!(
        log.contains(&format!("CA file {}", certs.dir().display())),
        "{log}"
    );

    // A client certificate whose key file is missing: the key file is named.
    let missing_key = certs.dir().join("no-such-key.pem");
    let (code, log) = failed_start(
        rsc(&redis.url(), &certs.ca_file())
            .env(
                "COORDINATOR_REDIS_TLS_CERT_FILE",
                certs.client_cert_file().display().to_string(),
            )
            .env(
                "COORDINATOR_REDIS_TLS_KEY_FILE",
                missing_key.display().to_string(),
            ),
    );
    assert!(code.is_some_and(|c| c != 0), "{log}");
    assert!(
        log.contains(&format!("key file {}", missing_key.display())),
        "{log}"
    );

    // A plain-text Redis behind rediss://: said as such, naming the address, not a generic timeout.
    let plain = RedisServer::start();
    let rediss_to_plain = format!("rediss://127.0.0.1:{}", plain.port());
    let (code, log) = failed_start(rsc(&rediss_to_plain, &certs.ca_file()));
    assert!(code.is_some_and(|c| c != 0), "{log}");
    assert!(log.contains("plain-text Redis port"), "{log}");
    assert!(log.contains(&rediss_to_plain), "{log}");

    let (code, log) = failed_start(rsc(&plain.url(), &certs.ca_file()));
    assert!(code.is_some_and(|c| c != 0), "{log}");
    assert!(log.contains("use rediss://"), "{log}");
}

/// Runs `rsc <args>` as the bootstrap admin, killed if it outlives `bound`.
fn run_rsc(args: &[&str], bound: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args(args)
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", ADMIN_PASSWORD)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rsc starts");
    let deadline = Instant::now() + bound;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// `k=v` pairs of the last stdout line starting with `first_key=` (panics, with the output, on failure).
fn summary(out: &Output, first_key: &str) -> HashMap<String, String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    let line = stdout
        .lines()
        .rfind(|l| l.starts_with(&format!("{first_key}=")))
        .unwrap_or_else(|| panic!("no {first_key}= line in:\n{stdout}"));
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn positive(s: &HashMap<String, String>, key: &str) {
    let v: f64 = s
        .get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{key} missing or not a number in {s:?}"));
    assert!(v > 0.0, "{key}={v} in {s:?}");
}

#[test]
fn the_sdk_and_demo_name_a_plain_text_redis_behind_rediss() {
    let redis = TlsRedis::start(false);
    let certs = redis.certs();
    let plain = RedisServer::start();
    let rediss_to_plain = format!("rediss://127.0.0.1:{}", plain.port());
    let tls = RedisTls::new().ca_file(certs.ca_file());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Nothing reaches the coordinator: both fail on their first connection to Redis.
    let coord = CoordinatorClient::builder(["http://127.0.0.1:1"])
        .build()
        .unwrap();
    let producer = runtime.block_on(async {
        tokio::time::timeout(
            EXIT_BOUND,
            Producer::connect(
                coord.clone(),
                ProducerConfig::new("tls-plain", rediss_to_plain.clone()).redis_tls(tls.clone()),
            ),
        )
        .await
    });
    let err = producer
        .expect("the producer gives up within the bound")
        .err()
        .expect("a producer on a plain-text port")
        .to_string();
    assert!(err.contains("plain-text Redis port"), "{err}");
    assert!(err.contains(&rediss_to_plain), "{err}");
    let consumer = runtime.block_on(async {
        tokio::time::timeout(
            EXIT_BOUND,
            rsc_client::Consumer::start(
                coord,
                ConsumerConfig::new("tls-plain", rediss_to_plain.clone()).redis_tls(tls),
                |d: Delivery| async move {
                    let _ = d.ack().await;
                },
            ),
        )
        .await
    });
    let err = consumer
        .expect("the consumer gives up within the bound")
        .err()
        .expect("a consumer on a plain-text port")
        .to_string();
    assert!(err.contains("plain-text Redis port"), "{err}");
    assert!(err.contains(&rediss_to_plain), "{err}");

    // `rsc demo` with its coordinator on the TLS Redis and its data plane pointed at the plain one.
    let rsc = rsc(&redis.url(), &certs.ca_file()).start();
    let ca = certs.ca_file().display().to_string();
    let out = run_rsc(
        &[
            "demo",
            "--coordinator",
            &rsc.url(),
            "--redis-url",
            &rediss_to_plain,
            "--redis-tls-ca-file",
            &ca,
            "--duration",
            "1",
            "--stream",
            "tls-demo-plain",
        ],
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("plain-text Redis port"), "{stderr}");
    assert!(stderr.contains(&rediss_to_plain), "{stderr}");
}

#[test]
fn bench_dataplane_and_heartbeat_run_over_tls() {
    let redis = TlsRedis::start(false);
    let ca = redis.certs().ca_file().display().to_string();
    let rsc = rsc(&redis.url(), &redis.certs().ca_file()).start();
    let out = run_rsc(
        &[
            "bench",
            "dataplane",
            "--coordinator",
            &rsc.url(),
            "--redis-url",
            &redis.url(),
            "--redis-tls-ca-file",
            &ca,
            "--shards",
            "2",
            "--count",
            "200",
            "--rounds",
            "1",
            "--batch",
            "10",
            "--producers",
            "1",
            "--members",
            "2",
            "--assignment-lease-ms",
            "1800",
        ],
        Duration::from_secs(180),
    );
    let s = summary(&out, "producer_ratio");
    positive(&s, "raw_xadd_per_sec");
    positive(&s, "sdk_consume_per_sec");

    // The heartbeat bench reads the coordinator's Redis (INFO commandstats) over TLS too.
    let out = run_rsc(
        &[
            "bench",
            "heartbeat",
            "--coordinator",
            &rsc.url(),
            "--redis-url",
            &redis.url(),
            "--redis-tls-ca-file",
            &ca,
            "--members",
            "4",
            "--groups",
            "1",
            "--shards",
            "2",
            "--duration",
            "1",
            "--concurrency",
            "2",
        ],
        Duration::from_secs(180),
    );
    let s = summary(&out, "heartbeats_per_sec");
    positive(&s, "heartbeats_per_sec");
    positive(&s, "redis_cmds_per_heartbeat");
}

#[test]
fn demo_and_serve_run_on_a_tls_cluster() {
    let cluster = RedisCluster::builder().tls().start();
    let certs = cluster.certs().expect("a TLS cluster has certificates");
    let nodes = cluster.node_addresses().join(",");
    let rsc = rsc("rediss://127.0.0.1:1", &certs.ca_file())
        .env("COORDINATOR_REDIS_CLUSTER_NODES", nodes.clone())
        .start();
    assert_eq!(curl(&rsc, "GET", "/readyz", None).0, 200);

    // The coordinator creates a stream and serves a heartbeat on the TLS cluster.
    let (status, body) = curl(
        &rsc,
        "POST",
        "/coord/v1/streams/tlscluster",
        Some(r#"{"initialShardCount": 3, "requestedBy": "test", "reason": "tls cluster"}"#),
    );
    assert_eq!(status, 201, "{body}");
    let (status, body) = curl(
        &rsc,
        "POST",
        "/coord/v1/streams/tlscluster/groups/tlscluster/members/m1/heartbeat",
        Some(
            r#"{"protocolVersion": 1, "requestId": "tls-1", "memberId": "m1", "memberEpoch": 0,
                "metadataVersion": 0,
                "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1},
                "ownedShards": [], "revokingShards": [], "shardProgress": []}"#,
        ),
    );
    assert_eq!(status, 200, "{body}");
    let reply: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(reply["status"], "OK", "{body}");
    assert!(
        reply["memberEpoch"].as_i64().is_some_and(|e| e > 0),
        "{body}"
    );

    let ca = certs.ca_file().display().to_string();
    let out = run_rsc(
        &[
            "demo",
            "--coordinator",
            &rsc.url(),
            "--redis-cluster-nodes",
            &nodes,
            "--redis-tls-ca-file",
            &ca,
            "--duration",
            "2",
            "--rate",
            "200",
            "--stream",
            "tls-cluster-demo",
        ],
        Duration::from_secs(180),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let last = stdout.lines().last().unwrap_or_default();
    let fields: HashMap<&str, u64> = last
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect();
    assert!(fields.get("published").is_some_and(|&n| n > 0), "{last}");
    assert_eq!(fields.get("lost"), Some(&0), "{last}");
}
