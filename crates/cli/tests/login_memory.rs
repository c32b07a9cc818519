//! Failed logins must not make the coordinator hold memory. Each Argon2id check needs
//! 19 MiB of working memory; allocated afresh per check, glibc kept it (40 sequential wrong logins left
//! 220 MB resident, 200 concurrent ones 1.13 GB). Checks now compute in at most two reused areas.
//!
//! Measured on the real `rsc serve` process (its /proc/<pid>/status), not on the test process.

use rsc_testkit::{RedisServer, RscBuilder, RscProcess};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const ADMIN_PASSWORD: &str = "memory-test-admin-password";
/// Failed logins sent.
const FAILED_LOGINS: usize = 1_000;
/// Concurrent senders, each from its own client address (so that both Argon2 permits stay busy).
const SENDERS: usize = 8;
/// The bound asserted on the coordinator's resident memory afterwards.
const MAX_RSS_KB: u64 = 100 * 1024;

fn start(redis_url: &str) -> RscProcess {
    RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), redis_url)
        .admin_password(ADMIN_PASSWORD)
        // X-Forwarded-For from the test (127.0.0.1) names the client address.
        .env("COORDINATOR_API_TRUSTED_PROXIES", "127.0.0.1")
        // A generous throttle: this test is about memory, not about delays.
        .env(
            "COORDINATOR_API_LOGIN_THROTTLE_FAILURES_BEFORE_DELAY",
            "100000",
        )
        .env(
            "COORDINATOR_API_LOGIN_THROTTLE_MAX_FAILURES_PER_ADDRESS",
            "100000",
        )
        .env(
            "COORDINATOR_API_LOGIN_THROTTLE_MAX_FAILURES_PER_USERNAME",
            "4000000000",
        )
        .start()
}

/// (VmRSS, VmHWM) of a process in KiB.
fn memory_kb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

async fn login(http: &reqwest::Client, base: &str, addr: &str, user: &str, password: &str) -> u16 {
    http.post(format!("{base}/coord/v1/auth/login"))
        .header("x-forwarded-for", addr)
        .json(&json!({"username": user, "password": password}))
        .send()
        .await
        .expect("the coordinator answers")
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_failed_logins_leave_resident_memory_under_100_mb() {
    let redis = RedisServer::start();
    let rsc = start(&redis.url());
    let pid = rsc.pid().expect("running");
    let http = reqwest::Client::new();
    // One good login first: the working areas exist from here on.
    assert_eq!(
        login(&http, &rsc.url(), "192.0.2.1", "admin", ADMIN_PASSWORD).await,
        200
    );
    let (before, _) = memory_kb(pid);

    let next = Arc::new(AtomicUsize::new(0));
    let mut senders = Vec::new();
    for s in 0..SENDERS {
        let (next, http, base) = (next.clone(), http.clone(), rsc.url());
        senders.push(tokio::spawn(async move {
            let mut statuses = Vec::new();
            while next.fetch_add(1, Ordering::SeqCst) < FAILED_LOGINS {
                // Known and unknown usernames alike (an unknown one costs the same check).
                let user = if statuses.len() % 2 == 0 {
                    "admin"
                } else {
                    "nobody"
                };
                let n = statuses.len();
                let (addr, password) = (format!("10.0.0.{s}"), format!("wrong-{s}-{n}"));
                statuses.push(login(&http, &base, &addr, user, &password).await);
            }
            statuses
        }));
    }
    let mut failed = 0;
    for s in senders {
        for status in s.await.unwrap() {
            assert_eq!(status, 401, "every attempt is checked and refused");
            failed += 1;
        }
    }
    assert_eq!(failed, FAILED_LOGINS);
    let (after, peak) = memory_kb(pid);
    eprintln!(
        "rsc serve resident memory: {before} KiB after one login, {after} KiB after {FAILED_LOGINS} failed \
         logins (peak {peak} KiB)"
    );
    assert!(
        after < MAX_RSS_KB,
        "resident memory after {FAILED_LOGINS} failed logins: {after} KiB (before: {before} KiB, peak {peak} KiB)"
    );
    assert!(peak < MAX_RSS_KB, "peak resident memory: {peak} KiB");
    // Still serving.
    assert_eq!(
        login(&http, &rsc.url(), "192.0.2.2", "admin", ADMIN_PASSWORD).await,
        200
    );
}
