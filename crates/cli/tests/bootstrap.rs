//! The real `rsc` binary's secrets handling: with no admin password configured, the first start generates one,
//! prints it once and keeps only its hash in Redis, so a second replica accepts the same password without
//! printing anything; `rsc hash-password` prints Argon2id hashes that `coordinator.api.users` accepts; text a
//! caller sends cannot forge or colour a line of the coordinator's log.

use rsc_testkit::{RedisServer, RscBuilder, RscProcess};
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A real `rsc serve` with `env` (and no admin password unless `env` sets one).
fn start_rsc(redis_url: &str, env: &[(&str, &str)]) -> RscProcess {
    let mut b = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), redis_url);
    for (k, v) in env {
        b = b.env(k, *v);
    }
    b.start()
}

/// Stderr lines up to the "listening" line (bounded wait).
fn startup_output(rsc: &mut RscProcess) -> Vec<String> {
    rsc.next_lines(Duration::from_secs(30), |l| l.contains("listening on"))
}

async fn login(base: &str, user: &str, password: &str) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{base}/coord/v1/auth/login"))
        .json(&json!({"username": user, "password": password}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_generated_admin_password_is_printed_once_and_shared_by_replicas() {
    let redis = RedisServer::start();
    let mut first = start_rsc(&redis.url(), &[]);
    let out = startup_output(&mut first);
    let text = out.join("\n");
    assert!(text.contains("shown only this once"), "{text}");
    // The password is the indented line of the message.
    let password = out
        .iter()
        .filter_map(|l| l.strip_prefix("rsc:     "))
        .map(str::trim)
        .find(|p| p.len() == 24)
        .unwrap_or_else(|| panic!("no generated password in: {text}"))
        .to_owned();
    let (status, body) = login(&first.url(), "admin", &password).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tokenType"], "Bearer");

    // Only the hash is in Redis.
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let stored: String = redis::cmd("GET")
        .arg("redis-stream:coord:auth:bootstrap-admin")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(stored.starts_with("$argon2id$") && !stored.contains(&password));

    // A second replica prints no password and accepts the first one's.
    let mut second = start_rsc(&redis.url(), &[]);
    let text = startup_output(&mut second).join("\n");
    assert!(!text.contains(&password), "{text}");
    assert!(!text.contains("shown only this once"), "{text}");
    let (status, _) = login(&second.url(), "admin", &password).await;
    assert_eq!(status, 200);
    // There is no default password.
    for guess in ["password", "admin", ""] {
        assert_eq!(login(&second.url(), "admin", guess).await.0, 401);
    }

    // RSC_ADMIN_PASSWORD wins over the stored hash, and is never printed.
    let mut third = start_rsc(
        &redis.url(),
        &[("RSC_ADMIN_PASSWORD", "chosen-by-operator")],
    );
    let text = startup_output(&mut third).join("\n");
    assert!(!text.contains("chosen-by-operator"), "{text}");
    assert_eq!(
        login(&third.url(), "admin", "chosen-by-operator").await.0,
        200
    );
    assert_eq!(login(&third.url(), "admin", &password).await.0, 401);
}

#[tokio::test]
async fn hash_password_prints_a_hash_that_configured_users_log_in_with() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .arg("hash-password")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"team-a-secret\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hash = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    assert!(!hash.contains("team-a-secret"));

    let short = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .arg("hash-password")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = short.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "an empty password is refused");

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rsc.toml");
    std::fs::write(
        &config,
        format!(
            "[[coordinator.api.users]]\nusername = \"team-a\"\npassword-hash = \"{hash}\"\nroles = [\"WRITE\"]\nstream-prefixes = [\"team-a-*\"]\n"
        ),
    )
    .unwrap();
    let redis = RedisServer::start();
    let mut rsc = start_rsc(
        &redis.url(),
        &[
            ("RSC_CONFIG", config.to_str().unwrap()),
            ("RSC_ADMIN_PASSWORD", "admin-password-1"),
        ],
    );
    startup_output(&mut rsc);
    let (status, body) = login(&rsc.url(), "team-a", "team-a-secret").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["roles"], json!(["WRITE"]));
}

#[tokio::test]
async fn caller_text_cannot_forge_or_colour_a_log_line() {
    let redis = RedisServer::start();
    let mut rsc = start_rsc(&redis.url(), &[("RSC_ADMIN_PASSWORD", "admin-password-1")]);
    startup_output(&mut rsc);
    let http = reqwest::Client::new();
    let admin = |req: reqwest::RequestBuilder| req.basic_auth("admin", Some("admin-password-1"));
    let forged =
        "2026-12-01T00:00:00.000000Z  INFO rsc::audit: audit action=DELETE_GROUP principal=admin";
    let reason = format!("routine\n{forged}\n\u{1b}[31mred\u{1b}[0m");
    let r = admin(http.post(format!("{}/coord/v1/streams/logs", rsc.url())))
        .json(&json!({"initialShardCount": 2, "requestedBy": "ops", "reason": "create"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    // A scale-out with no members stays ACTIVE, so it can be rolled back: that logs who asked and why.
    let r = admin(http.post(format!("{}/coord/v1/streams/logs/scale", rsc.url())))
        .json(&json!({"targetShardCount": 4, "requestedBy": "ops\u{1b}[2J", "reason": reason}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let scaled: Value = r.json().await.unwrap();
    let id = scaled["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = admin(http.post(format!(
        "{}/coord/v1/streams/logs/groups/logs/migrations/{id}/rollback",
        rsc.url()
    )))
    .json(&json!({"requestedBy": "ops\u{1b}[2J", "reason": reason}))
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap());
    // Read the log up to the operator's line (bounded wait).
    let lines = rsc.next_lines(Duration::from_secs(30), |l| {
        l.contains("migration ended by operator")
    });
    let operator_line = lines.last().unwrap();
    assert!(
        operator_line.contains("routine\\n2026"),
        "escaped in place: {operator_line}"
    );
    for line in &lines {
        assert!(!line.starts_with(forged), "a forged line: {line}");
        assert!(
            !line.contains('\u{1b}'),
            "an escape sequence reached the log: {line:?}"
        );
    }
}
