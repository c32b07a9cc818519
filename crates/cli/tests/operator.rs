//! The operator verbs of the real `rsc` binary against a real `rsc serve` and redis-server: login with
//! `--password-stdin` (a private token file) and logout (the token revoked), plan → apply → plan with
//! terraform's exit codes, scale `--wait` to the end, describe (a group, and a whole stream: groups side by side with their lag) and upgrade-check showing a member's
//! protocol version, audit listing the changes, and bad input answered with one line and a non-zero exit.

use crate::operator_cli;

use operator_cli::{rsc, text};
use rsc_client::{Auth, CoordinatorClient, Credentials};
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatStatus, RuntimeConsumerCapacity};
use rsc_testkit::{RedisServer, RscBuilder, RscProcess};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const ADMIN_PASSWORD: &str = "operator-test-admin-password";

fn start_rsc(redis: &RedisServer) -> RscProcess {
    RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD)
        .start()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A redis-server, a real `rsc serve` on it, and a credentials directory of the test's own.
struct Fixture {
    _redis: RedisServer,
    _server: RscProcess,
    dir: tempfile::TempDir,
    url: String,
    redis_url: String,
}

impl Fixture {
    fn new() -> Self {
        let redis = RedisServer::start();
        let server = start_rsc(&redis);
        let url = server.url();
        Fixture {
            redis_url: redis.url(),
            _redis: redis,
            _server: server,
            dir: tempfile::tempdir().unwrap(),
            url,
        }
    }

    /// [`Fixture::new`], logged in as the bootstrap admin.
    fn logged_in() -> Self {
        let f = Fixture::new();
        login(&f.url, f.dir.path());
        f
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        rsc(&self.url, self.dir.path(), args, stdin)
    }

    /// `rsc apply` of a desired-state file given inline; asserts it succeeded.
    fn apply(&self, file: &str, reason: &str) {
        let o = self.run(
            &[
                "apply",
                "-f",
                "/dev/stdin",
                "--auto-approve",
                "--reason",
                reason,
            ],
            Some(file),
        );
        assert!(o.status.success(), "{}", text(&o));
    }
}

fn login(url: &str, dir: &Path) {
    let o = rsc(
        url,
        dir,
        &["login", "--username", "admin", "--password-stdin"],
        Some(&format!("{ADMIN_PASSWORD}\n")),
    );
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn login_stores_a_private_token_that_later_verbs_use_and_logout_revokes_it() {
    let f = Fixture::new();
    let (dir, url) = (&f.dir, f.url.clone());
    let before = f.run(&["health"], None);
    assert_eq!(before.status.code(), Some(1), "{}", text(&before));
    assert!(stderr(&before).contains("rsc login"), "{}", text(&before));

    login(&url, dir.path());
    let file = dir.path().join("credentials");
    let stored = std::fs::read_to_string(&file).unwrap();
    assert!(
        !stored.contains(ADMIN_PASSWORD),
        "the password is never stored"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let token: serde_json::Value = serde_json::from_str(&stored).unwrap();
    let (_, login) = token["clusters"]
        .as_object()
        .and_then(|c| c.iter().next())
        .expect("a login stored under the deployment's cluster id");
    assert_eq!(login["urls"][0], url.trim_end_matches('/'), "{stored}");
    let token = login["accessToken"]
        .as_str()
        .expect("the login's token")
        .to_owned();

    let health = f.run(&["health"], None);
    assert!(health.status.success(), "{}", text(&health));
    assert!(stdout(&health).starts_with("UP"), "{}", text(&health));

    let out = f.run(&["logout"], None);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("revoked"), "{}", text(&out));
    // The token itself no longer works, and nothing is stored any more.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rsc"));
    let revoked = cmd
        .args(["health"])
        .env("RSC_COORDINATOR", &url)
        .env("RSC_CONFIG_DIR", dir.path())
        .env("RSC_TOKEN", &token)
        .output()
        .unwrap();
    assert_eq!(revoked.status.code(), Some(1), "{}", text(&revoked));
    assert!(
        stderr(&revoked).contains("RSC_TOKEN was refused"),
        "{}",
        text(&revoked)
    );

    // An expired stored token says what to do.
    std::fs::write(
        &file,
        format!(
            r#"{{"coordinators":{{"{}":{{"username":"admin","accessToken":"x","expiresAtMs":1}}}}}}"#,
            url.trim_end_matches('/')
        ),
    )
    .unwrap();
    let expired = f.run(&["groups"], None);
    assert_eq!(expired.status.code(), Some(1), "{}", text(&expired));
    assert!(
        stderr(&expired).contains("expired") && stderr(&expired).contains("run rsc login"),
        "{}",
        text(&expired)
    );
}

#[test]
fn plan_apply_plan_then_scale_wait_and_find_it_all_in_the_audit_log() {
    let f = Fixture::logged_in();
    let dir = &f.dir;
    let desired = dir.path().join("desired.toml");
    std::fs::write(
        &desired,
        "[[stream]]\nprefix = \"orders\"\nshards = 4\ngroups = [\"orders\", \"billing\"]\n",
    )
    .unwrap();
    let file = desired.to_str().unwrap();

    let plan = f.run(&["plan", "-f", file], None);
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan));
    assert!(
        stdout(&plan).contains("+ create stream orders (4 shards) with group orders/orders"),
        "{}",
        text(&plan)
    );
    assert!(
        stdout(&plan).contains("+ create group orders/billing"),
        "{}",
        text(&plan)
    );

    let no_tty = f.run(&["apply", "-f", file], None);
    assert_eq!(
        no_tty.status.code(),
        Some(1),
        "apply asks first: {}",
        text(&no_tty)
    );
    assert!(
        stderr(&no_tty).contains("--auto-approve"),
        "{}",
        text(&no_tty)
    );

    let apply = f.run(
        &[
            "apply",
            "-f",
            file,
            "--auto-approve",
            "--reason",
            "first deploy",
        ],
        None,
    );
    assert!(apply.status.success(), "{}", text(&apply));
    let ids: Vec<String> = stdout(&apply)
        .lines()
        .filter_map(|l| l.split("(request id ").nth(1))
        .map(|r| r.trim_end_matches(')').to_owned())
        .collect();
    assert_eq!(ids.len(), 2, "{}", text(&apply));

    let again = f.run(&["plan", "-f", file], None);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(stdout(&again).contains("No changes"), "{}", text(&again));

    let scale = f.run(
        &[
            "scale",
            "orders",
            "--shards",
            "6",
            "--reason",
            "peak",
            "--wait",
            "--wait-timeout",
            "60s",
        ],
        None,
    );
    assert!(scale.status.success(), "{}", text(&scale));
    assert!(
        stdout(&scale).contains("Done: every group ended the migration as asked"),
        "{}",
        text(&scale)
    );

    let groups = f.run(&["groups", "--output", "json"], None);
    assert!(groups.status.success(), "{}", text(&groups));
    let groups: serde_json::Value = serde_json::from_slice(&groups.stdout).unwrap();
    let counts: Vec<u64> = groups
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["shardCount"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [6, 6]);
    // The file now differs from the coordinator: plan shows a scale back.
    let drift = f.run(&["plan", "-f", file], None);
    assert_eq!(drift.status.code(), Some(2), "{}", text(&drift));
    assert!(
        stdout(&drift).contains("~ scale orders 6 -> 4"),
        "{}",
        text(&drift)
    );

    let audit = f.run(&["audit", "--stream", "orders", "--output", "json"], None);
    assert!(audit.status.success(), "{}", text(&audit));
    let records: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    let records = records.as_array().unwrap();
    for id in &ids {
        let r = records
            .iter()
            .find(|r| r["requestId"] == id.as_str())
            .unwrap_or_else(|| panic!("request {id} not in the audit log: {records:?}"));
        assert_eq!(r["principal"], "admin");
        assert_eq!(r["requestedBy"], "admin");
        assert_eq!(r["reason"], "first deploy");
    }
    assert!(
        records
            .iter()
            .any(|r| r["action"] == "SCALE_STREAM" && r["reason"] == "peak")
    );
}

#[test]
fn describe_and_upgrade_check_show_the_protocol_version_members_joined_with() {
    let f = Fixture::logged_in();
    let url = f.url.clone();
    f.apply(
        "[[stream]]\nprefix = \"pay\"\nshards = 2\ngroups = [\"pay\"]\n",
        "test set-up",
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = CoordinatorClient::builder([url.clone()])
            .auth(Auth::Login(Credentials::new("admin", ADMIN_PASSWORD)))
            .build()
            .unwrap();
        let req = HeartbeatRequest {
            protocol_version: 1,
            request_id: "join-1".into(),
            member_id: "worker-1".into(),
            member_name: None,
            client_name: Some("ops-test".into()),
            client_version: Some("9.9.9".into()),
            group_instance_id: None,
            member_epoch: 0,
            metadata_version: 0,
            runtime_consumer_capacity: RuntimeConsumerCapacity {
                runtime_max_concurrency: 1,
                available_concurrency: 1,
            },
            owned_shards: vec![],
            revoking_shards: vec![],
            shard_progress: vec![],
        };
        let r = client
            .heartbeat("pay", "pay", "worker-1", &req, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(r.status, HeartbeatStatus::Ok);
    });
    let describe = f.run(&["describe", "pay", "pay"], None);
    assert!(describe.status.success(), "{}", text(&describe));
    let line = stdout(&describe)
        .lines()
        .find(|l| l.starts_with("worker-1"))
        .unwrap_or_else(|| panic!("no member line: {}", text(&describe)))
        .to_owned();
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        &cells[1..4],
        ["ACTIVE", cells[2], "1"],
        "state and protocol version: {line}"
    );

    let ok = f.run(&["upgrade-check"], None);
    assert!(ok.status.success(), "{}", text(&ok));
    assert!(
        stdout(&ok).contains("1 live members (v1: 1)"),
        "{}",
        text(&ok)
    );
    assert!(
        stdout(&ok).contains("coordinator.store.layout = 3"),
        "the rolling upgrade of the store layout is said: {}",
        text(&ok)
    );
    let not_ok = f.run(&["upgrade-check", "--target-version-range", "2..3"], None);
    assert_eq!(not_ok.status.code(), Some(1), "{}", text(&not_ok));
    assert!(
        stdout(&not_ok).contains("NOT COMPATIBLE") && stdout(&not_ok).contains("worker-1"),
        "{}",
        text(&not_ok)
    );

    let version = f.run(&["version"], None);
    assert!(version.status.success(), "{}", text(&version));
    assert!(
        stdout(&version).contains("coordinator 0.1.0"),
        "{}",
        text(&version)
    );

    // worker-1 stops heartbeating: once its lease ended it is shown holding nothing (issue #33).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let expired = loop {
        let d = f.run(&["describe", "pay", "pay"], None);
        let line = stdout(&d)
            .lines()
            .find(|l| l.starts_with("worker-1"))
            .map(str::to_owned)
            .unwrap_or_default();
        if line.contains("EXPIRED") || line.contains("FENCED") {
            break stdout(&d);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "worker-1 never expired: {}",
            text(&d)
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    let line = expired.lines().find(|l| l.starts_with("worker-1")).unwrap();
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        &cells[cells.len() - 2..],
        ["-", "-"],
        "owns nothing: {expired}"
    );
    let shard_rows = expired
        .lines()
        .skip_while(|l| !l.starts_with("SHARD"))
        .skip(1)
        .take_while(|l| !l.is_empty());
    for row in shard_rows {
        assert!(!row.contains("worker-1"), "an expired owner: {expired}");
    }
}

#[test]
fn bad_input_gets_one_line_and_a_non_zero_exit() {
    let f = Fixture::logged_in();
    let dir = &f.dir;
    let cases: [(&str, &str); 3] = [
        (
            "[[stream]]\nprefix = \"o\"\nshard = 8\ngroups = [\"o\"]\n",
            "line 3",
        ),
        (
            "[[stream]]\nprefix = \"o\"\nshards = 0\ngroups = [\"o\"]\n",
            "shards = 0 is out of range",
        ),
        (
            "[[stream]]\nprefix = \"o\"\nshards = 99999\ngroups = [\"o\"]\n",
            "from 1 to 16384",
        ),
    ];
    for (file, expected) in cases {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, file).unwrap();
        let o = f.run(&["plan", "-f", path.to_str().unwrap()], None);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(stderr(&o).contains(expected), "{expected}: {}", text(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "one line: {}", text(&o));
    }
    let big = f.run(&["scale", "o", "--shards", "20000", "--reason", "x"], None);
    assert_eq!(big.status.code(), Some(1), "{}", text(&big));
    assert!(stderr(&big).contains("maximum"), "{}", text(&big));
    let missing = f.run(&["scale", "nope", "--shards", "2", "--reason", "x"], None);
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    assert!(stderr(&missing).contains("HTTP 404"), "{}", text(&missing));
    assert!(
        stderr(&missing).contains("with rsc: rsc groups lists what exists"),
        "the hint names rsc verbs: {}",
        text(&missing)
    );

    let down = format!("http://127.0.0.1:{}", rsc_testkit::free_port());
    let o = rsc(&down, dir.path(), &["groups"], None);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stderr(&o).contains("no coordinator answered"),
        "{}",
        text(&o)
    );
    assert_eq!(stderr(&o).lines().count(), 1, "{}", text(&o));
}

#[test]
fn rollback_and_force_complete_ask_first_then_end_the_migration_and_wait_for_it() {
    let f = Fixture::logged_in();
    f.apply(
        "[[stream]]\nprefix = \"inv\"\nshards = 4\ngroups = [\"inv\", \"audit\"]\n",
        "test set-up",
    );
    let none = f.run(&["rollback", "inv", "--reason", "x", "--yes"], None);
    assert_eq!(none.status.code(), Some(1), "{}", text(&none));
    assert!(
        stderr(&none).contains("no active migration"),
        "{}",
        text(&none)
    );

    // A scale-in stays in progress for the drain grace (60 s), so it can be ended by hand.
    let scale = f.run(
        &["scale", "inv", "--shards", "3", "--reason", "too many"],
        None,
    );
    assert!(scale.status.success(), "{}", text(&scale));
    let unconfirmed = f.run(&["rollback", "inv", "--reason", "wrong count"], None);
    assert_eq!(unconfirmed.status.code(), Some(1), "{}", text(&unconfirmed));
    assert!(
        stderr(&unconfirmed).contains("nothing was sent"),
        "{}",
        text(&unconfirmed)
    );
    let rollback = f.run(
        &[
            "rollback",
            "inv",
            "--reason",
            "wrong count",
            "--yes",
            "--wait",
            "--wait-timeout",
            "60s",
        ],
        None,
    );
    assert!(rollback.status.success(), "{}", text(&rollback));
    assert!(
        stdout(&rollback).contains("ROLLED_BACK"),
        "{}",
        text(&rollback)
    );

    let scale = f.run(
        &["scale", "inv", "--shards", "2", "--reason", "shrink"],
        None,
    );
    assert!(scale.status.success(), "{}", text(&scale));
    let forced = f.run(
        &[
            "force-complete",
            "inv",
            "--reason",
            "abandon",
            "--yes",
            "--wait",
            "--wait-timeout",
            "60s",
            "--output",
            "json",
        ],
        None,
    );
    assert!(forced.status.success(), "{}", text(&forced));
    let answer: serde_json::Value = serde_json::from_slice(&forced.stdout).unwrap();
    assert_eq!(answer["ended"], true, "{answer}");
    assert_eq!(answer["answer"]["state"], "FORCE_COMPLETED", "{answer}");
    let groups = f.run(&["groups", "--output", "json"], None);
    let groups: serde_json::Value = serde_json::from_slice(&groups.stdout).unwrap();
    assert!(
        groups
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["shardCount"] == 2),
        "{groups}"
    );
}

#[test]
fn audit_follow_prints_records_as_they_arrive() {
    let f = Fixture::logged_in();
    let (dir, url) = (&f.dir, f.url.clone());
    // Records that exist when following starts come first, oldest first, like the ones that follow.
    f.apply(
        "[[stream]]\nprefix = \"live\"\nshards = 2\ngroups = [\"live\"]\n",
        "first",
    );
    f.apply(
        "[[stream]]\nprefix = \"live\"\nshards = 2\ngroups = [\"live\", \"mid\"]\n",
        "second",
    );
    let mut follow = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args(["audit", "--stream", "live", "--follow", "--output", "json"])
        .env("RSC_COORDINATOR", &url)
        .env("RSC_CONFIG_DIR", dir.path())
        .env_remove("RSC_TOKEN")
        .env_remove("RSC_USERNAME")
        .env_remove("RSC_PASSWORD")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = follow.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next_with_reason = |reason: &str| -> serde_json::Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no record with reason {reason:?} within 20 s"));
            let r: serde_json::Value =
                serde_json::from_str(&line).expect("one JSON record per line");
            if r["reason"] == reason {
                return r;
            }
        }
    };
    let first = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the existing records are printed");
    let first: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["reason"], "first", "oldest first: {first}");
    next_with_reason("second");
    // The follower has printed what existed; a record made now must arrive through its polling.
    f.apply(
        "[[stream]]\nprefix = \"live\"\nshards = 2\ngroups = [\"live\", \"mid\", \"late\"]\n",
        "followed",
    );
    let record = next_with_reason("followed");
    let _ = follow.kill();
    let _ = follow.wait();
    assert_eq!(record["action"], "CREATE_GROUP", "{record}");
    assert_eq!(record["consumerGroup"], "late", "{record}");
}

/// `XLEN` of `key` (0 when it does not exist).
fn xlen(redis_url: &str, key: &str) -> i64 {
    let mut c = redis::Client::open(redis_url)
        .unwrap()
        .get_connection()
        .unwrap();
    redis::cmd("XLEN").arg(key).query(&mut c).unwrap()
}

/// Deletes a stream through the API (its only group), as Terraform's destroy does.
fn delete_stream(url: &str, prefix: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = CoordinatorClient::builder([url.to_owned()])
            .auth(Auth::Login(Credentials::new("admin", ADMIN_PASSWORD)))
            .build()
            .unwrap();
        client
            .send_json(
                rsc_client::Method::DELETE,
                &["coord", "v1", "streams", prefix, "groups", prefix],
                &[],
                Some(&serde_json::json!({"requestedBy": "test", "reason": "tear down"})),
                None,
            )
            .await
            .expect("the stream's only group is deleted");
    });
}

/// Issue #33 point 8: deleting a stream keeps its records; creating the prefix again is refused naming the
/// keys and the choices, `--existing-records adopt` keeps the records (the default group reads what it had
/// not read), `--existing-records purge` deletes them; each create is audited as CREATE_STREAM with the choice.
#[test]
fn a_deleted_stream_keeps_its_records_and_is_created_again_by_adopting_or_purging_them() {
    let f = Fixture::logged_in();
    let file = "[[stream]]\nprefix = \"again\"\nshards = 2\ngroups = [\"again\"]\n";
    f.apply(file, "first life");
    let mut c = redis::Client::open(f.redis_url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    for shard in 0..2 {
        for i in 0..3 {
            let _: String = redis::cmd("XADD")
                .arg(format!("again:{shard}"))
                .arg("*")
                .arg("n")
                .arg(i)
                .query(&mut c)
                .unwrap();
        }
    }
    delete_stream(&f.url, "again");
    assert_eq!(
        xlen(&f.redis_url, "again:0"),
        3,
        "deleting a stream keeps its records"
    );

    let apply = |extra: &[&str]| {
        let mut args = vec![
            "apply",
            "-f",
            "/dev/stdin",
            "--auto-approve",
            "--reason",
            "second life",
        ];
        args.extend_from_slice(extra);
        f.run(&args, Some(file))
    };
    let refused = apply(&[]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let why = stderr(&refused);
    for part in [
        "STREAM_PREFIX_ALREADY_EXISTS",
        "again:0, again:1",
        "ADOPT",
        "PURGE",
        "--existing-records",
    ] {
        assert!(why.contains(part), "{part} missing: {}", text(&refused));
    }
    // The SDK's create_stream (here through `rsc demo`, with the stored login) does not take leftover
    // records for an existing stream either: the refusal and the choices reach the user, nothing changes.
    let demo = f.run(
        &[
            "demo",
            "--redis-url",
            &f.redis_url,
            "--stream",
            "again",
            "--duration",
            "1",
        ],
        None,
    );
    assert!(!demo.status.success(), "{}", text(&demo));
    assert!(
        !stdout(&demo).contains("using existing stream"),
        "{}",
        text(&demo)
    );
    for part in ["STREAM_PREFIX_ALREADY_EXISTS", "--existing-records adopt"] {
        assert!(
            stderr(&demo).contains(part),
            "{part} missing: {}",
            text(&demo)
        );
    }
    assert_eq!(
        xlen(&f.redis_url, "again:0"),
        3,
        "the refused demo changed nothing"
    );

    let adopted = apply(&["--existing-records", "adopt"]);
    assert!(adopted.status.success(), "{}", text(&adopted));
    assert_eq!(xlen(&f.redis_url, "again:0"), 3, "ADOPT keeps the records");
    // The default group's Redis consumer group was kept with its position: the records are still unread.
    let unread: redis::streams::StreamReadReply = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("again")
        .arg("reader")
        .arg("COUNT")
        .arg(10)
        .arg("STREAMS")
        .arg("again:1")
        .arg(">")
        .query(&mut c)
        .unwrap();
    let delivered: usize = unread.keys.iter().map(|k| k.ids.len()).sum();
    assert_eq!(
        delivered, 3,
        "the adopted records are delivered: {unread:?}"
    );

    delete_stream(&f.url, "again");
    let purged = apply(&["--existing-records", "purge"]);
    assert!(purged.status.success(), "{}", text(&purged));
    assert_eq!(
        xlen(&f.redis_url, "again:0"),
        0,
        "PURGE deletes the records"
    );
    assert_eq!(
        xlen(&f.redis_url, "again:1"),
        0,
        "PURGE deletes the records"
    );

    let audit = f.run(
        &[
            "audit",
            "--stream",
            "again",
            "--action",
            "CREATE_STREAM",
            "--output",
            "json",
        ],
        None,
    );
    assert!(audit.status.success(), "{}", text(&audit));
    let records: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    let choices: Vec<(String, String)> = records
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["outcome"].as_str().unwrap_or("").to_owned(),
                r["requestSummary"]["existingRecords"]
                    .as_str()
                    .unwrap_or("-")
                    .to_owned(),
            )
        })
        .collect();
    // Newest first: the purge, the adoption, the demo's refused create, the apply's refusal, the first create
    // (the group route's creates of a new prefix are audited as CREATE_STREAM).
    assert_eq!(
        choices,
        [
            ("SUCCESS".to_owned(), "PURGE".to_owned()),
            ("SUCCESS".to_owned(), "ADOPT".to_owned()),
            ("FAILED".to_owned(), "-".to_owned()),
            ("FAILED".to_owned(), "-".to_owned()),
            ("SUCCESS".to_owned(), "-".to_owned()),
        ],
        "{records:#}"
    );
}

/// Issue #33 point 11: a login is stored for the deployment (the cluster id its replicas share), not for a URL
/// string: a login whose first URL is down reports the URL that answered; it serves the other replica alone and
/// in a fail-over list; another deployment's coordinator does not get it; logout through either replica ends it.
#[test]
fn a_login_through_one_replica_serves_every_replica_of_that_deployment_and_no_other() {
    let redis = RedisServer::start();
    let a = start_rsc(&redis);
    let b = start_rsc(&redis);
    let other_redis = RedisServer::start();
    let other = start_rsc(&other_redis);
    let dir = tempfile::tempdir().unwrap();
    let dead = format!("http://127.0.0.1:{}", rsc_testkit::free_port());
    let (a_url, b_url) = (
        a.url().trim_end_matches('/').to_owned(),
        b.url().trim_end_matches('/').to_owned(),
    );

    let list = format!("{dead},{a_url}");
    let o = rsc(
        &list,
        dir.path(),
        &["login", "--username", "admin", "--password-stdin"],
        Some(&format!("{ADMIN_PASSWORD}\n")),
    );
    assert!(o.status.success(), "{}", text(&o));
    let said = stdout(&o);
    assert!(
        said.starts_with(&format!("Logged in to {a_url} (cluster ")),
        "the URL that answered: {}",
        text(&o)
    );
    assert!(!said.contains(&dead), "{}", text(&o));

    for target in [
        b_url.clone(),
        format!("{dead},{b_url}"),
        format!("{b_url},{a_url}"),
    ] {
        let groups = rsc(&target, dir.path(), &["groups"], None);
        assert!(groups.status.success(), "{target}: {}", text(&groups));
    }
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("credentials")).unwrap()).unwrap();
    let clusters = stored["clusters"]
        .as_object()
        .expect("logins by cluster id");
    assert_eq!(clusters.len(), 1, "{stored:#}");
    let urls = &clusters.values().next().unwrap()["urls"];
    assert_eq!(urls, &serde_json::json!([a_url, b_url]), "{stored:#}");

    let elsewhere = rsc(&other.url(), dir.path(), &["groups"], None);
    assert_eq!(elsewhere.status.code(), Some(1), "{}", text(&elsewhere));
    assert!(
        stderr(&elsewhere).contains("needs credentials: run rsc login"),
        "another deployment does not get the login: {}",
        text(&elsewhere)
    );

    // `rsc version --all` asks each replica on its own (a rolling upgrade's progress).
    let both = format!("{a_url},{b_url}");
    let versions = rsc(&both, dir.path(), &["version", "--all", "-o", "json"], None);
    assert!(versions.status.success(), "{}", text(&versions));
    let listed: serde_json::Value = serde_json::from_slice(&versions.stdout).unwrap();
    let urls: Vec<&str> = listed["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["coordinatorVersion"], env!("CARGO_PKG_VERSION"), "{r}");
            r["url"].as_str().unwrap()
        })
        .collect();
    assert_eq!(urls, [a_url.as_str(), b_url.as_str()]);
    let with_dead = format!("{a_url},{dead}");
    let versions = rsc(&with_dead, dir.path(), &["version", "--all"], None);
    assert_eq!(versions.status.code(), Some(1), "{}", text(&versions));
    assert!(stdout(&versions).contains(&a_url), "{}", text(&versions));
    assert!(
        stderr(&versions).contains("1 of 2 coordinator URL(s) did not answer"),
        "{}",
        text(&versions)
    );

    let out = rsc(&b_url, dir.path(), &["logout"], None);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("revoked"), "{}", text(&out));
    let after = rsc(&a_url, dir.path(), &["groups"], None);
    assert_eq!(after.status.code(), Some(1), "{}", text(&after));
    assert!(stderr(&after).contains("run rsc login"), "{}", text(&after));
}

/// Rough edge of #33: `rsc plan` reports every problem of a file, not the first only (the file is read before
/// any coordinator is asked).
#[test]
fn plan_reports_every_problem_of_a_file_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let dead = format!("http://127.0.0.1:{}", rsc_testkit::free_port());
    let o = rsc(
        &dead,
        dir.path(),
        &["plan", "-f", "/dev/stdin"],
        Some(
            "[[stream]]\nprefix = \"o\"\nshards = 0\ngroups = [\"a:b\"]\n[[stream]]\nprefix = \"p\"\nshards = 2\ngroups = []\n",
        ),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "one line: {}", text(&o));
    for part in [
        "3 problems",
        "shards = 0",
        "\"a:b\"",
        "stream \"p\": list at least one",
    ] {
        assert!(e.contains(part), "{part} missing: {}", text(&o));
    }
}

#[test]
fn describe_of_a_stream_shows_its_groups_side_by_side_and_its_shards() {
    let f = Fixture::logged_in();
    f.apply(
        "[[stream]]\nprefix = \"flow\"\nshards = 2\ngroups = [\"flow\", \"audit\"]\n",
        "test set-up",
    );
    for i in 0..3 {
        let o = f.run(
            &[
                "produce",
                "flow",
                "--key",
                &format!("k{i}"),
                "--field",
                "n=1",
                "--redis-url",
                &f.redis_url,
            ],
            None,
        );
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = f.run(&["describe", "flow", "--output", "json"], None);
    assert!(o.status.success(), "{}", text(&o));
    let d: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(d["streamPrefix"], "flow");
    assert_eq!(d["totalLength"], 3, "{d}");
    assert_eq!(d["shards"].as_array().unwrap().len(), 2);
    for g in d["groups"].as_array().unwrap() {
        assert_eq!(g["lag"], 3, "nobody read: {g}");
    }
    let o = f.run(&["describe", "flow"], None);
    assert!(o.status.success(), "{}", text(&o));
    let out = stdout(&o);
    assert!(out.starts_with("STREAM flow  shards 2"), "{out}");
    for group in ["audit", "flow"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{group} ")))
            .unwrap_or_else(|| panic!("no line of group {group}: {out}"));
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[4], "3", "LAG column of {group}: {line}");
    }
    assert!(out.contains("SHARD  STREAM KEY"), "{out}");
    let unknown = f.run(&["describe", "nosuch"], None);
    assert!(!unknown.status.success());
    assert!(
        stderr(&unknown).contains("STREAM_NOT_FOUND"),
        "{}",
        text(&unknown)
    );
}
