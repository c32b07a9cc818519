//! `rsc demo --ordered --scale …` against the real `rsc serve` and redis-server: SDK producers write per-key
//! sequence numbers while the stream is scaled, SDK consumers check them; the ordered run ends with
//! `lost=0 order_violations=0`.

use rsc_testkit::{RedisServer, RscBuilder};
use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

const ADMIN_PASSWORD: &str = "ordered-test-admin-password";

/// Runs the demo and returns its summary fields and stderr.
fn demo(
    rsc_url: &str,
    redis_url: &str,
    stream: &str,
    extra: &[&str],
) -> (HashMap<String, u64>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args([
            "demo",
            "--coordinator",
            rsc_url,
            "--redis-url",
            redis_url,
            "--stream",
            stream,
            "--rate",
            "400",
        ])
        .args(extra)
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", ADMIN_PASSWORD)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let last = stdout.lines().last().unwrap_or_default().to_owned();
    let fields: HashMap<String, u64> = last
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k.to_owned(), v.parse().ok()?)))
        .collect();
    assert!(
        fields.contains_key("order_violations"),
        "summary line: {last}\nstderr:\n{stderr}"
    );
    assert!(out.status.success(), "{last}\nstderr:\n{stderr}");
    (fields, stderr)
}

#[test]
fn an_ordered_demo_scaled_4_to_8_keeps_every_key_in_order() {
    let redis = RedisServer::start();
    let rsc = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .env("COORDINATOR_STREAMS_DRAIN_GRACE", "2s")
        .admin_password(ADMIN_PASSWORD)
        .start();
    let (f, stderr) = demo(
        &rsc.url(),
        &redis.url(),
        "ordered",
        &[
            "--ordered",
            "--scale",
            "4,8",
            "--scale-every",
            "3",
            "--duration",
            "12",
        ],
    );
    assert!(stderr.contains("scaled ordered to 8 shards"), "{stderr}");
    assert!(f["published"] > 0, "{f:?}");
    assert_eq!(f["lost"], 0, "{f:?}");
    assert_eq!(f["acked"], f["published"], "{f:?}");
    assert_eq!(f["order_violations"], 0, "{f:?}\n{stderr}");

    // A scale an ordered stream cannot keep order across is refused, and the demo says so.
    let (f, stderr) = demo(
        &rsc.url(),
        &redis.url(),
        "ordered",
        &[
            "--ordered",
            "--scale",
            "8,3",
            "--scale-every",
            "1",
            "--duration",
            "3",
        ],
    );
    assert!(stderr.contains("to 3 shards refused"), "{stderr}");
    assert_eq!(f["lost"], 0, "{f:?}");
}
