//! The real `rsc` binary while its Redis is down: `rsc health` reads the coordinator's answer (DOWN, Redis
//! DOWN) instead of claiming that no coordinator answered, the API port's `/metrics` still answers with
//! `redis_up 0` and `health{status="DOWN"} 1` (so `RscCoordinatorDown` can fire), and a verb that needs Redis
//! says that the coordinator answered but cannot reach Redis.

use crate::operator_cli;

use operator_cli::{rsc, text};
use rsc_testkit::{RedisServer, RscBuilder};
use std::process::Command;
use std::time::{Duration, Instant};

const ADMIN_PASSWORD: &str = "redis-down-admin-password";

#[test]
fn health_and_metrics_answer_while_redis_is_down() {
    let mut redis = RedisServer::start();
    let server = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD)
        .start();
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let login = rsc(
        &url,
        dir.path(),
        &["login", "--username", "admin", "--password-stdin"],
        Some(&format!("{ADMIN_PASSWORD}\n")),
    );
    assert!(login.status.success(), "{}", text(&login));
    let up = rsc(&url, dir.path(), &["health"], None);
    assert!(
        String::from_utf8_lossy(&up.stdout).starts_with("UP"),
        "{}",
        text(&up)
    );

    redis.stop();
    // The coordinator notices at its next PING; wait for the answer to say so (bounded).
    let deadline = Instant::now() + Duration::from_secs(30);
    let down = loop {
        let o = rsc(&url, dir.path(), &["health"], None);
        if String::from_utf8_lossy(&o.stdout).starts_with("DOWN") || Instant::now() > deadline {
            break o;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let out = String::from_utf8_lossy(&down.stdout).into_owned();
    assert!(out.starts_with("DOWN"), "{}", text(&down));
    assert!(
        out.lines()
            .any(|l| l.starts_with("redis") && l.contains("DOWN")),
        "{}",
        text(&down)
    );
    assert_eq!(down.status.code(), Some(1), "{}", text(&down));
    assert!(
        !String::from_utf8_lossy(&down.stderr).contains("no coordinator answered"),
        "{}",
        text(&down)
    );

    // The API port's /metrics, with credentials the coordinator cannot check now.
    let metrics = Command::new("curl")
        .args(["-sS", "-f", "-u", "admin:not-in-any-cache"])
        .arg(format!("{url}/metrics"))
        .output()
        .expect("curl runs");
    assert!(metrics.status.success(), "{}", text(&metrics));
    let body = String::from_utf8_lossy(&metrics.stdout).into_owned();
    let value = |series: &str| -> Option<f64> {
        body.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    };
    assert_eq!(value("redis_stream_coord_redis_up"), Some(0.0), "{body}");
    assert_eq!(
        value("redis_stream_coord_health{status=\"DOWN\"}"),
        Some(1.0),
        "{body}"
    );

    // A verb that needs Redis: the coordinator answered, and the message says what is wrong.
    let groups = rsc(&url, dir.path(), &["groups"], None);
    assert_eq!(groups.status.code(), Some(1), "{}", text(&groups));
    let err = String::from_utf8_lossy(&groups.stderr);
    assert!(err.contains("cannot reach Redis"), "{}", text(&groups));
}
