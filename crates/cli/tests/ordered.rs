//! `rsc demo --ordered --scale 4,8,3,6` against the real `rsc serve` and redis-server: SDK producers write
//! per-key sequence numbers while the stream is scaled out, in and out again (between counts that are not
//! powers of two, so surviving shards receive moved keys), SDK consumers that start behind (a backlog) check
//! them. The ordered run ends
//! with `lost=0 order_violations=0`; the same run without `--ordered` shows the violations ordering prevents;
//! with `--quiesce` too the ordered run publishes no duplicate.

use rsc_testkit::{RedisServer, RscBuilder};
use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

const ADMIN_PASSWORD: &str = "ordered-test-admin-password";

/// What one demo run printed: its summary fields and stderr.
struct Run {
    fields: HashMap<String, u64>,
    stderr: String,
    summary: String,
}

/// Runs the demo on `stream` and returns what it printed.
fn demo(rsc_url: &str, redis_url: &str, stream: &str, extra: &[&str]) -> Run {
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
    let summary = stdout.lines().last().unwrap_or_default().to_owned();
    let fields: HashMap<String, u64> = summary
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k.to_owned(), v.parse().ok()?)))
        .collect();
    assert!(
        fields.contains_key("order_violations"),
        "summary line: {summary}\nstderr:\n{stderr}"
    );
    Run {
        fields,
        stderr,
        summary,
    }
}

/// The scales, made while the consumers are still catching up on a backlog (they start 3 s after the
/// producer), so the first scale finds records of moved keys unread in their parents.
const SCALES: [&str; 8] = [
    "--scale",
    "4,8,3,6",
    "--scale-every",
    "4",
    "--backlog",
    "3",
    "--duration",
    "30",
];

/// Every scale of the plan was made and its migration ended.
fn assert_scaled_through(stream: &str, r: &Run) {
    for n in [8, 3, 6] {
        assert!(
            r.stderr.contains(&format!("scaled {stream} to {n} shards")),
            "{}\n{}",
            r.summary,
            r.stderr
        );
        assert!(
            r.stderr
                .contains(&format!("migration of {stream} to {n} shards ended")),
            "{}\n{}",
            r.summary,
            r.stderr
        );
    }
}

#[test]
fn scaled_4_8_3_6_an_ordered_demo_keeps_every_key_in_order_and_an_unordered_one_does_not() {
    let redis = RedisServer::start();
    let rsc = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .env("COORDINATOR_STREAMS_DRAIN_GRACE", "2s")
        .admin_password(ADMIN_PASSWORD)
        .start();
    let (url, redis_url) = (rsc.url(), redis.url());
    let (ordered, unordered) = std::thread::scope(|s| {
        let ordered = s.spawn(|| {
            let args = [&["--ordered"][..], &SCALES[..]].concat();
            demo(&url, &redis_url, "ordered", &args)
        });
        let unordered = s.spawn(|| demo(&url, &redis_url, "unordered", &SCALES));
        (ordered.join().unwrap(), unordered.join().unwrap())
    });

    let f = &ordered.fields;
    assert_scaled_through("ordered", &ordered);
    assert!(f["published"] > 0, "{}", ordered.summary);
    assert_eq!(f["lost"], 0, "{}\n{}", ordered.summary, ordered.stderr);
    assert_eq!(f["acked"], f["published"], "{}", ordered.summary);
    assert_eq!(
        f["order_violations"], 0,
        "{}\n{}",
        ordered.summary, ordered.stderr
    );

    // The same scales without ordering keep every record but not per-key order: the check can fail.
    let f = &unordered.fields;
    assert_scaled_through("unordered", &unordered);
    assert_eq!(f["lost"], 0, "{}\n{}", unordered.summary, unordered.stderr);
    assert!(
        f["order_violations"] > 0,
        "consumers with a backlog see moved keys out of order without --ordered: {}",
        unordered.summary
    );
}

#[test]
fn an_ordered_demo_with_producer_quiesce_keeps_order_and_publishes_no_duplicate() {
    let redis = RedisServer::start();
    let rsc = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .env("COORDINATOR_STREAMS_DRAIN_GRACE", "2s")
        .admin_password(ADMIN_PASSWORD)
        .start();
    let args = [&["--ordered", "--quiesce"][..], &SCALES[..]].concat();
    let r = demo(&rsc.url(), &redis.url(), "quiesced", &args);
    assert!(
        r.stderr
            .contains("scaled quiesced to 3 shards (producers quiesced)"),
        "{}",
        r.stderr
    );
    assert_scaled_through("quiesced", &r);
    let f = &r.fields;
    assert_eq!(f["lost"], 0, "{}\n{}", r.summary, r.stderr);
    assert_eq!(f["duplicates"], 0, "{}", r.summary);
    assert_eq!(f["order_violations"], 0, "{}", r.summary);
}
