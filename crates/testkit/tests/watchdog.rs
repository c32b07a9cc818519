//! A server whose handle is never dropped (a static, a killed test process) must not outlive the
//! test binary: its watchdog kills it and removes its directory when the test process exits.
//!
//! The test re-runs its own binary as a child that starts a server, leaks the handle and exits
//! without running destructors; the parent then waits (bounded) for the server to die.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rsc_testkit::RedisServer;

const CHILD_ENV: &str = "RSC_TESTKIT_WATCHDOG_CHILD";
const MARKER: &str = "LEAKED-SERVER";

/// True if the process is gone or a zombie (dead, only waiting to be reaped by its new parent).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
    }
}

#[test]
fn a_leaked_server_dies_with_the_test_process() {
    if std::env::var_os(CHILD_ENV).is_some() {
        // Child mode: start a server, report it, and exit without dropping the handle.
        let server = RedisServer::start();
        println!(
            "{MARKER} {} {}",
            server.pid().expect("running"),
            server.dir().display()
        );
        std::process::exit(0);
    }

    let exe = std::env::current_exe().expect("test binary path");
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "watchdog::a_leaked_server_dies_with_the_test_process",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("re-run the test binary");
    let stdout = child.stdout.take().expect("piped stdout");
    let line = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find(|line| line.starts_with(MARKER))
        .expect("the child reports its server");
    let status = child.wait().expect("child exits");
    assert!(status.success(), "child failed: {status}");

    let mut parts = line.split_whitespace().skip(1);
    let pid: u32 = parts.next().and_then(|p| p.parse().ok()).expect("pid");
    let dir = PathBuf::from(parts.next().expect("dir"));

    let deadline = Instant::now() + Duration::from_secs(10);
    while !is_dead(pid) || dir.exists() {
        assert!(
            Instant::now() < deadline,
            "server {pid} still alive ({}) or dir {} still present ({}) 10 s after its test exited",
            !is_dead(pid),
            dir.display(),
            dir.exists()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
