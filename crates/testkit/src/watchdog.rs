//! A guard process that kills a test's `redis-server` if the test binary itself dies.
//!
//! `Drop` does not run for handles kept in statics (a cluster shared by a whole test binary) or
//! when the test process is killed, and an orphaned `redis-server` would keep its port and temp
//! directory forever. So every server gets a tiny `sh` companion that blocks reading a pipe from
//! the test process; when the test process exits for any reason the pipe closes, `read` returns,
//! and the companion kills the server and removes its directory. On a normal stop the companion
//! is disarmed (killed) first, so it can never act on a reused process id.

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Blocks until stdin closes, then SIGKILLs `$1` and removes directory `$2`.
const SCRIPT: &str = "read _line; kill -9 \"$1\" 2>/dev/null; rm -rf \"$2\"";

/// The companion process; disarm it before stopping the server.
#[derive(Debug)]
pub(crate) struct Watchdog {
    child: Child,
}

impl Watchdog {
    /// Starts a companion for the server process `pid` with data directory `dir`.
    pub(crate) fn arm(pid: u32, dir: &Path) -> Watchdog {
        let child = Command::new("sh")
            .arg("-c")
            .arg(SCRIPT)
            .arg("rsc-redis-watchdog")
            .arg(pid.to_string())
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the watchdog shell (sh): {e}"));
        Watchdog { child }
    }

    /// Stops the companion without letting it touch the server.
    pub(crate) fn disarm(mut self) {
        // SIGKILL: the shell dies inside `read`, before its kill/rm line can run.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
