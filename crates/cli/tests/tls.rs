//! TLS to Redis end to end: a real `redis-server` with a TLS port and certificates made for the test
//! (rsc-testkit's `TlsRedis`), the real `rsc` binary. `rsc serve` with a CA file serves and creates a
//! stream on the TLS Redis; `rsc demo` over mutual TLS loses nothing; start-up fails with a message
//! saying what is wrong for a wrong CA, a name the certificate does not carry, a missing file, a
//! plain-text port behind `rediss://`, and a server that wants a client certificate.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rsc_testkit::{RscBuilder, RscProcess, TlsRedis};

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

fn redis_cli(redis: &TlsRedis, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-u", &redis.plain_url()])
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
    // The shard streams and their consumer groups are on the TLS server (looked at over its plain port).
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

    let (code, log) = failed_start(rsc(&redis.rediss_url_of_plain_port(), &certs.ca_file()));
    assert!(code.is_some_and(|c| c != 0), "{log}");
    assert!(log.contains("plain-text Redis port"), "{log}");

    let (code, log) = failed_start(rsc(&redis.plain_url(), &certs.ca_file()));
    assert!(code.is_some_and(|c| c != 0), "{log}");
    assert!(log.contains("use rediss://"), "{log}");
}
