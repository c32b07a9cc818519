//! Processes the orchestrator drives: signals (SIGSTOP/SIGCONT/SIGTERM), the `rsc` binary under test
//! (refused when older than its sources) and the suite's `rsc serve` replicas.

use crate::settings::{ADMIN_PASSWORD, MEMBER_LEASE_TTL};
use rsc_testkit::{RscBuilder, RscProcess};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Sends `sig` to `pid`. The crate's one unsafe item: std can only SIGKILL a child, not stop or resume it.
#[allow(unsafe_code)]
pub fn send_signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) with a pid of a child we own; no memory is shared.
    let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
}

/// Waits until /proc shows the process stopped (state T), so the pause is in effect when we timestamp it.
pub fn wait_stopped(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Field 3, after the parenthesised command name.
        let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
        if matches!(state, Some(Some('T' | 't'))) {
            return;
        }
        assert!(Instant::now() < deadline, "process {pid} did not stop");
        std::thread::sleep(Duration::from_millis(2));
    }
}

pub fn rsc_binary() -> PathBuf {
    // An explicitly named binary is trusted as it is.
    if let Some(path) = std::env::var_os("RSC_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/faults-<hash> → target/<profile>/rsc
    let path = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executable lives in target/<profile>/deps")
        .join("rsc");
    let built = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| {
            panic!(
                "the rsc binary {} is missing: build it with `cargo build -p rsc-cli` \
                 (cargo test --workspace does) or point RSC_BIN at one",
                path.display()
            )
        });
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for krate in ["cli", "coordinator", "store", "group", "protocol"] {
        if let Some(newer) = newer_file(&root.join("crates").join(krate).join("src"), built) {
            panic!(
                "the rsc binary {} is older than {}: rebuild it with `cargo build -p rsc-cli` \
                 (or point RSC_BIN at the binary to test)",
                path.display(),
                newer.display()
            );
        }
    }
    path
}

pub fn newer_file(dir: &Path, than: SystemTime) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let p = entry.path();
        if p.is_dir() {
            if let Some(found) = newer_file(&p, than) {
                return Some(found);
            }
        } else if entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|m| m > than)
        {
            return Some(p);
        }
    }
    None
}

/// One `rsc serve` replica with the suite's timings, its stderr in `<dir>/<name>.log`; restarts keep its port.
pub fn start_rsc(bin: &Path, redis_url: &str, dir: &Path, name: &str) -> RscProcess {
    RscBuilder::new(bin, redis_url)
        .fast_timings(MEMBER_LEASE_TTL, Duration::from_secs(6))
        // Longer than the producer's routing lease (4 s): no drain evidence counts while it may still
        // write to a removed shard with the routing it cached.
        .env("COORDINATOR_STREAMS_DRAIN_GRACE", "5s")
        .admin_password(ADMIN_PASSWORD)
        .log_file(&dir.join(format!("{name}.log")))
        .start()
}
