//! `rsc backup`, `rsc restore` and `rsc doctor`: the real binary against a real `rsc serve` and real
//! redis-server processes. Backup → FLUSHALL → restore gives the same members the same shards and the same
//! routing; an older backup is refused over newer live metadata unless --force; damaged files, another key
//! prefix and an unreachable Redis are one-line errors; doctor flags `appendonly no`.

use rsc_testkit::{RedisServer, RscBuilder, RscProcess};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const PASSWORD: &str = "backup-admin-password";
const LEASE_MS: u64 = 3000;

fn start_rsc(redis_url: &str) -> RscProcess {
    RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), redis_url)
        .fast_timings(Duration::from_millis(LEASE_MS), Duration::from_secs(10))
        .admin_password(PASSWORD)
        .start()
}

fn rsc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args(args)
        .env_remove("RSC_REDIS_URL")
        .output()
        .expect("run rsc")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Asserts a failure: exit 1 and exactly one line on stderr containing `needle`.
fn assert_one_line_error(o: &Output, needle: &str) {
    let (out, err) = text(o);
    assert_eq!(o.status.code(), Some(1), "stdout: {out}\nstderr: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(needle), "{err:?} lacks {needle:?}");
}

async fn call(
    method: reqwest::Method,
    base: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .basic_auth("admin", Some(PASSWORD));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.expect("request");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// A test member speaking the heartbeat API (reports given-up shards as REVOKED at once).
#[derive(Debug, Clone)]
struct Member {
    id: String,
    stream: String,
    group: String,
    epoch: i64,
    mv: i64,
    owned: Vec<u64>,
    revoked: Vec<u64>,
    seq: u64,
}

impl Member {
    fn new(id: &str, stream: &str, group: &str) -> Member {
        Member {
            id: id.into(),
            stream: stream.into(),
            group: group.into(),
            epoch: 0,
            mv: 0,
            owned: vec![],
            revoked: vec![],
            seq: 0,
        }
    }

    async fn heartbeat(&mut self, base: &str) -> Value {
        self.seq += 1;
        let body = json!({
            "protocolVersion": 1, "requestId": format!("{}-{}", self.id, self.seq), "memberId": self.id,
            "memberEpoch": self.epoch, "metadataVersion": self.mv,
            "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1},
            "ownedShards": self.owned.iter().map(|s| json!({"shardIndex": s})).collect::<Vec<_>>(),
            "revokingShards": self.revoked.iter().map(|s| json!({"shardIndex": s, "state": "REVOKED", "inFlight": 0})).map(|v| json!({"shard": {"shardIndex": v["shardIndex"]}, "state": "REVOKED", "inFlight": 0})).collect::<Vec<_>>(),
            "shardProgress": [],
        });
        let path = format!(
            "/coord/v1/streams/{}/groups/{}/members/{}/heartbeat",
            self.stream, self.group, self.id
        );
        let (status, resp) = call(reqwest::Method::POST, base, &path, Some(body)).await;
        assert_eq!(status, 200, "{resp}");
        self.revoked.clear();
        if resp["status"] == "OK" || resp["status"] == "REVOKE_PENDING" {
            let assigned: Vec<u64> = resp["assignment"]["assignedShards"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["shardIndex"].as_u64().unwrap())
                .collect();
            self.revoked = self
                .owned
                .iter()
                .filter(|s| !assigned.contains(s))
                .copied()
                .collect();
            self.owned = assigned;
            self.epoch = resp["memberEpoch"].as_i64().unwrap();
            self.mv = resp["metadataVersion"].as_i64().unwrap();
        } else if resp["status"] == "FENCED_MEMBER_EPOCH" || resp["status"] == "UNKNOWN_MEMBER_ID" {
            self.owned.clear();
            self.epoch = 0;
        }
        resp
    }
}

/// Heartbeats until every member owns `per_member` shards with nothing to revoke.
async fn converge(base: &str, members: &mut [Member], per_member: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        for m in members.iter_mut() {
            m.heartbeat(base).await;
        }
        if members
            .iter()
            .all(|m| m.owned.len() == per_member && m.revoked.is_empty())
        {
            return;
        }
        assert!(Instant::now() < deadline, "no convergence: {members:?}");
    }
}

fn redis_cmd(url: &str, args: &[&str]) -> redis::Value {
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(&mut c).unwrap()
}

fn backup(url: &str, file: &Path) -> Output {
    rsc(&["backup", "--redis-url", url, "-o", file.to_str().unwrap()])
}

fn restore(url: &str, file: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "restore",
        "--redis-url",
        url,
        "-i",
        file.to_str().unwrap(),
        "--member-lease-ttl-ms",
        "3000",
    ];
    args.extend_from_slice(extra);
    rsc(&args)
}

#[tokio::test]
async fn backup_flushall_restore_gives_the_same_members_the_same_shards() {
    let redis = RedisServer::start();
    let url = redis.url();
    let rsc_serve = start_rsc(&url);
    let base = rsc_serve.url();
    let (s, b) = call(
        reqwest::Method::POST,
        &base,
        "/coord/v1/streams/orders",
        Some(json!({"initialShardCount": 4, "requestedBy": "test"})),
    )
    .await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = call(
        reqwest::Method::POST,
        &base,
        "/coord/v1/streams/orders/groups/billing",
        Some(json!({"requestedBy": "test"})),
    )
    .await;
    assert!(s == 201 || s == 200, "{s} {b}");
    let mut orders = [
        Member::new("a", "orders", "orders"),
        Member::new("b", "orders", "orders"),
    ];
    let mut billing = [Member::new("x", "orders", "billing")];
    converge(&base, &mut orders, 2).await;
    converge(&base, &mut billing, 4).await;
    let routing = |base: String| async move {
        call(
            reqwest::Method::GET,
            &base,
            "/coord/v1/streams/orders/producer-routing",
            None,
        )
        .await
        .1
    };
    let routing_before = routing(base.clone()).await;

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("coord.backup");
    let out = backup(&url, &file);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("1 stream record(s), 2 group(s), 2 index entries"),
        "{stdout}"
    );

    // Lose everything, then restore.
    redis_cmd(&url, &["FLUSHALL"]);
    let out = restore(&url, &file, &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("restored 3 key(s)"), "{stdout}");

    // The same members carry on with the same shards, and routing is identical.
    for m in orders.iter_mut().chain(billing.iter_mut()) {
        let before = m.owned.clone();
        let resp = m.heartbeat(&base).await;
        assert_eq!(resp["status"], "OK", "{resp}");
        assert_eq!(m.owned, before, "{} lost its shards: {resp}", m.id);
    }
    assert_eq!(routing(base.clone()).await, routing_before);
    // A restore of the current state raises no rollback suspicion.
    let (_, view) = call(
        reqwest::Method::GET,
        &base,
        "/coord/v1/monitoring/streams/orders/groups/orders",
        None,
    )
    .await;
    assert_eq!(view["metadataDurability"]["status"], "OK", "{view}");
    // The shard streams and Redis consumer groups exist again, so producers and readers work.
    let groups = redis_cmd(&url, &["XINFO", "GROUPS", "orders:3"]);
    assert!(format!("{groups:?}").contains("billing"), "{groups:?}");

    // Move the live group past the backup: an older backup is refused, nothing written...
    let mut c = Member::new("c", "orders", "orders");
    let mut all = [orders[0].clone(), orders[1].clone(), c.clone()];
    let deadline = Instant::now() + Duration::from_secs(20);
    while all.iter().map(|m| m.owned.len()).sum::<usize>() != 4 || all[2].owned.is_empty() {
        for m in all.iter_mut() {
            m.heartbeat(&base).await;
        }
        assert!(Instant::now() < deadline, "c never got a shard: {all:?}");
    }
    c = all[2].clone();
    let meta = "redis-stream:coord:{orders:orders}:metadata";
    let live_before = redis_cmd(&url, &["HGET", meta, "revision"]);
    let out = restore(&url, &file, &[]);
    assert_one_line_error(&out, "newer than the backup");
    assert_eq!(redis_cmd(&url, &["HGET", meta, "revision"]), live_before);

    // ...and replaced with --force, saying what follows.
    let out = restore(&url, &file, &["--force"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("WARNING") && stdout.contains("rollback suspicion"),
        "{stdout}"
    );
    assert_ne!(redis_cmd(&url, &["HGET", meta, "revision"]), live_before);

    // What the warning said: a member that saw the newer version reports it, and the group is suspected.
    c.heartbeat(&base).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, view) = call(
            reqwest::Method::GET,
            &base,
            "/coord/v1/monitoring/streams/orders/groups/orders",
            None,
        )
        .await;
        if !view["metadataDurability"]["rollbackSuspicion"].is_null() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no rollback suspicion after a forced restore: {view}"
        );
        c.heartbeat(&base).await;
    }
}

#[tokio::test]
async fn damaged_files_other_prefixes_and_bad_input_are_one_line_errors() {
    let redis = RedisServer::start();
    let url = redis.url();
    let rsc_serve = start_rsc(&url);
    let (s, b) = call(
        reqwest::Method::POST,
        &rsc_serve.url(),
        "/coord/v1/streams/pay",
        Some(json!({"initialShardCount": 2, "requestedBy": "test"})),
    )
    .await;
    assert_eq!(s, 201, "{b}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("b.backup");
    let out = rsc(&[
        "backup",
        "--redis-url",
        &url,
        "-o",
        file.to_str().unwrap(),
        "--output",
        "json",
    ]);
    assert!(out.status.success(), "{:?}", text(&out));
    let summary: Value = serde_json::from_str(&text(&out).0).unwrap();
    assert_eq!(
        (summary["streams"].as_u64(), summary["groups"].as_u64()),
        (Some(1), Some(1)),
        "{summary}"
    );
    let good = std::fs::read_to_string(&file).unwrap();

    let damaged = dir.path().join("damaged");
    std::fs::write(&damaged, &good[..good.len() - 20]).unwrap();
    assert_one_line_error(&restore(&url, &damaged, &[]), "truncated");
    std::fs::write(&damaged, good.replacen("pay", "paz", 3)).unwrap();
    assert_one_line_error(&restore(&url, &damaged, &[]), "checksum");
    std::fs::write(&damaged, "garbage").unwrap();
    assert_one_line_error(&restore(&url, &damaged, &[]), "not a usable rsc backup");
    assert_one_line_error(
        &restore(&url, &dir.path().join("missing"), &[]),
        "cannot read",
    );

    // A backup of another key prefix needs that prefix named.
    let out = restore(&url, &file, &["--key-prefix", "other:coord"]);
    assert_one_line_error(&out, "pass --key-prefix \"redis-stream:coord\"");

    // Unreachable Redis: the password is never printed.
    let out = rsc(&[
        "backup",
        "--redis-url",
        "redis://app:hunter22@127.0.0.1:1",
        "-o",
        dir.path().join("x").to_str().unwrap(),
    ]);
    assert_one_line_error(&out, "redis://app:***@127.0.0.1:1");
    assert!(!text(&out).1.contains("hunter22"));
    assert!(!dir.path().join("x").exists());

    // Restoring the same backup over an unchanged Redis writes nothing and succeeds.
    let out = restore(&url, &file, &["--output", "json"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["written"], json!([]));
    assert_eq!(summary["unchanged"].as_array().unwrap().len(), 2);
}

#[test]
fn doctor_flags_appendonly_no_and_passes_a_good_redis() {
    let bad = RedisServer::start(); // testkit default: appendonly no, no save points
    let out = rsc(&["doctor", "--redis-url", &bad.url()]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("FAIL  persistence") && l.contains("appendonly no")),
        "{stdout}"
    );

    let good = RedisServer::builder().appendonly(true).start();
    let out = rsc(&["doctor", "--redis-url", &good.url()]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for check in [
        "redis version",
        "persistence",
        "maxmemory-policy",
        "key prefix",
        "clock redis",
        "acl",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("PASS") && l.contains(check)),
            "{check}: {stdout}"
        );
    }

    // An application key under the coordinator's prefix, and an evicting policy: FAIL.
    redis_cmd(&good.url(), &["SET", "redis-stream:coord:session:1", "x"]);
    redis_cmd(
        &good.url(),
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    );
    let out = rsc(&["doctor", "--redis-url", &good.url(), "--output", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_str(&text(&out).0).unwrap();
    let failed: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["result"] == "FAIL")
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["maxmemory-policy", "key prefix"], "{report}");
}

/// The backup file's text with its content changed by `edit` and the checksum and length made to match, as
/// someone who edits a backup without the HMAC key would do (issue #32, finding 15).
fn forge(good: &str, edit: impl FnOnce(&mut Value)) -> String {
    use sha2::{Digest, Sha256};
    let (header, body) = good.trim_end().split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(header).unwrap();
    let mut content: Value = serde_json::from_str(body).unwrap();
    edit(&mut content);
    let body = content.to_string();
    let sha: String = Sha256::digest(body.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    header["contentSha256"] = json!(sha);
    header["contentBytes"] = json!(body.len());
    format!("{header}\n{body}\n")
}

/// Changes the first group's document (a JSON string inside the content).
fn edit_group(content: &mut Value, edit: impl FnOnce(&mut Value)) {
    let doc = content["groups"][0]["document"].as_str().unwrap();
    let mut doc: Value = serde_json::from_str(doc).unwrap();
    edit(&mut doc);
    content["groups"][0]["document"] = json!(doc.to_string());
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[cfg(unix)]
#[tokio::test]
async fn a_forged_backup_is_refused_before_anything_is_written_and_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let redis = RedisServer::start();
    let url = redis.url();
    let rsc_serve = start_rsc(&url);
    let (s, b) = call(
        reqwest::Method::POST,
        &rsc_serve.url(),
        "/coord/v1/streams/pay",
        Some(json!({"initialShardCount": 2, "requestedBy": "test"})),
    )
    .await;
    assert_eq!(s, 201, "{b}");
    let dir = tempfile::tempdir().unwrap();

    // Files are written 0600, even over a file that was world-readable.
    let plain = dir.path().join("plain.backup");
    std::fs::write(&plain, "old").unwrap();
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = backup(&url, &plain);
    assert!(out.status.success(), "{:?}", text(&out));
    assert_eq!(mode(&plain), 0o600);
    let good = std::fs::read_to_string(&plain).unwrap();

    let metadata = "redis-stream:coord:{pay:pay}:metadata";
    let live_before = format!("{:?}", redis_cmd(&url, &["HGETALL", metadata]));
    let index_before = format!(
        "{:?}",
        redis_cmd(&url, &["HGETALL", "redis-stream:coord:group-index"])
    );
    let forged = dir.path().join("forged.backup");
    let refused = |text: String, needle: &str| {
        std::fs::write(&forged, text).unwrap();
        // Even --force does not write invalid metadata.
        assert_one_line_error(&restore(&url, &forged, &["--force"]), needle);
    };
    // An epoch of 2^63 - 1 (the group would answer RETRY forever).
    refused(
        forge(&good, |c| {
            edit_group(c, |g| g["groupEpoch"] = json!(i64::MAX));
        }),
        "groupEpoch 9223372036854775807 is outside",
    );
    // 100,000 shards.
    refused(
        forge(&good, |c| {
            edit_group(c, |g| g["shardCount"] = json!(100_000))
        }),
        "shardCount 100000 is outside",
    );
    // A member epoch out of range.
    refused(
        forge(&good, |c| {
            edit_group(c, |g| {
                g["assignmentEpoch"] = json!(1_i64 << 60);
            })
        }),
        "assignmentEpoch",
    );
    // A phantom index entry: a LIVE group that the file does not hold.
    refused(
        forge(&good, |c| {
            c["index"].as_array_mut().unwrap().push(json!({
                "key": "redis-stream:coord:{pay:ghost}:metadata",
                "value": "{\"streamPrefix\":\"pay\",\"consumerGroup\":\"ghost\",\"state\":\"LIVE\"}",
            }));
        }),
        "phantom",
    );
    assert_eq!(
        format!("{:?}", redis_cmd(&url, &["HGETALL", metadata])),
        live_before,
        "nothing written"
    );
    assert_eq!(
        format!(
            "{:?}",
            redis_cmd(&url, &["HGETALL", "redis-stream:coord:group-index"])
        ),
        index_before
    );

    // With a key, the file carries an HMAC: an edit that fixes the checksum is still detected.
    let key = dir.path().join("backup.key");
    std::fs::write(&key, "k3y-of-more-than-thirty-two-bytes-0123456789\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let signed = dir.path().join("signed.backup");
    let key_arg = key.to_str().unwrap();
    let backup_signed = || {
        rsc(&[
            "backup",
            "--redis-url",
            &url,
            "-o",
            signed.to_str().unwrap(),
            "--key-file",
            key_arg,
        ])
    };
    assert_one_line_error(&backup_signed(), "readable by others");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = backup_signed();
    assert!(out.status.success(), "{:?}", text(&out));
    assert_eq!(mode(&signed), 0o600);
    let signed_text = std::fs::read_to_string(&signed).unwrap();
    assert!(
        signed_text
            .lines()
            .next()
            .unwrap()
            .contains("contentHmacSha256")
    );
    // A harmless-looking edit (a reason), re-checksummed.
    let edited = forge(&signed_text, |c| {
        edit_group(c, |g| g["consumerGroup"] = json!("pay"));
        c["groups"][0]["updatedAt"] = json!("2020-01-01T00:00:00Z");
    });
    std::fs::write(&forged, edited).unwrap();
    assert_one_line_error(
        &restore(&url, &forged, &["--key-file", key_arg]),
        "HMAC mismatch",
    );
    assert_one_line_error(&restore(&url, &forged, &[]), "carries an HMAC");
    assert_one_line_error(&restore(&url, &plain, &["--key-file", key_arg]), "no HMAC");
    // The untouched signed backup restores (over identical live metadata: nothing to write).
    let out = restore(&url, &signed, &["--key-file", key_arg, "--output", "json"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["written"], json!([]));
}
