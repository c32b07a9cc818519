//! The real `rsc` binary's secrets handling: with no admin password configured, the first start generates one,
//! prints it once and keeps only its hash in Redis, so a second replica accepts the same password without
//! printing anything; `rsc hash-password` prints Argon2id hashes that `coordinator.api.users` accepts; text a
//! caller sends cannot forge or colour a line of the coordinator's log.

use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running `rsc serve` whose stderr lines are collected.
struct Rsc {
    child: Child,
    base: String,
    lines: mpsc::Receiver<String>,
}

impl Rsc {
    fn start(redis_url: &str, env: &[(&str, &str)]) -> Rsc {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rsc"));
        cmd.args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--redis-url",
            redis_url,
        ])
        .env_remove("RSC_ADMIN_PASSWORD")
        .env("RSC_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("rsc starts");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Rsc {
            child,
            base: format!("http://127.0.0.1:{port}"),
            lines,
        }
    }

    /// Stderr lines up to the "listening" line (bounded wait).
    fn startup_output(&self) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut out = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let done = line.contains("listening on");
                    out.push(line);
                    if done {
                        return out;
                    }
                }
                Err(_) => panic!("rsc did not report listening; stderr so far: {out:#?}"),
            }
        }
    }
}

impl Drop for Rsc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
    let first = Rsc::start(&redis.url(), &[]);
    let out = first.startup_output();
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
    let (status, body) = login(&first.base, "admin", &password).await;
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
    let second = Rsc::start(&redis.url(), &[]);
    let text = second.startup_output().join("\n");
    assert!(!text.contains(&password), "{text}");
    assert!(!text.contains("shown only this once"), "{text}");
    let (status, _) = login(&second.base, "admin", &password).await;
    assert_eq!(status, 200);
    // There is no default password.
    for guess in ["password", "admin", ""] {
        assert_eq!(login(&second.base, "admin", guess).await.0, 401);
    }

    // RSC_ADMIN_PASSWORD wins over the stored hash, and is never printed.
    let third = Rsc::start(
        &redis.url(),
        &[("RSC_ADMIN_PASSWORD", "chosen-by-operator")],
    );
    let text = third.startup_output().join("\n");
    assert!(!text.contains("chosen-by-operator"), "{text}");
    assert_eq!(
        login(&third.base, "admin", "chosen-by-operator").await.0,
        200
    );
    assert_eq!(login(&third.base, "admin", &password).await.0, 401);
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
    let rsc = Rsc::start(
        &redis.url(),
        &[
            ("RSC_CONFIG", config.to_str().unwrap()),
            ("RSC_ADMIN_PASSWORD", "admin-password-1"),
        ],
    );
    rsc.startup_output();
    let (status, body) = login(&rsc.base, "team-a", "team-a-secret").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["roles"], json!(["WRITE"]));
}

#[tokio::test]
async fn caller_text_cannot_forge_or_colour_a_log_line() {
    let redis = RedisServer::start();
    let rsc = Rsc::start(&redis.url(), &[("RSC_ADMIN_PASSWORD", "admin-password-1")]);
    rsc.startup_output();
    let http = reqwest::Client::new();
    let admin = |req: reqwest::RequestBuilder| req.basic_auth("admin", Some("admin-password-1"));
    let forged =
        "2026-12-01T00:00:00.000000Z  INFO rsc::audit: audit action=DELETE_GROUP principal=admin";
    let reason = format!("routine\n{forged}\n\u{1b}[31mred\u{1b}[0m");
    let r = admin(http.post(format!("{}/coord/v1/streams/logs", rsc.base)))
        .json(&json!({"initialShardCount": 2, "requestedBy": "ops", "reason": "create"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    // A scale-out with no members stays ACTIVE, so it can be rolled back: that logs who asked and why.
    let r = admin(http.post(format!("{}/coord/v1/streams/logs/scale", rsc.base)))
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
        rsc.base
    )))
    .json(&json!({"requestedBy": "ops\u{1b}[2J", "reason": reason}))
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap());
    // Read the log up to the operator's line (bounded wait).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut lines = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rsc.lines.recv_timeout(left) {
            Ok(line) => {
                let done = line.contains("migration ended by operator");
                lines.push(line);
                if done {
                    break;
                }
            }
            Err(_) => panic!("no operator line in the log: {lines:#?}"),
        }
    }
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
