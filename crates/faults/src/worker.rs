//! One worker process lifetime (a consumer or producer incarnation of `rsc-fault-worker`): spawn, its
//! ownership log as read so far, kill, graceful stop, pauses.

use crate::check::Incarnation;
use crate::log::{Line, LogTail, now_ns};
use crate::process::send_signal;
use crate::settings::ADMIN_PASSWORD;
use std::collections::BTreeSet;
use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One worker process lifetime and what we know of it.
pub struct Worker {
    pub name: String,
    pub member: String,
    pub tail: LogTail,
    pub lines: Vec<Line>,
    /// Shards with an open read interval, from the log.
    pub open: BTreeSet<u32>,
    pub child: Option<Child>,
    pub killed_at_ns: Option<u64>,
    pub pauses: Vec<(u64, u64)>,
}

impl Worker {
    /// Starts `bin` (the `rsc-fault-worker` binary) with `args`, its log in `<dir>/<member>-<index>.jsonl`.
    pub fn spawn(bin: &Path, args: &[String], member: &str, index: usize, dir: &Path) -> Worker {
        let name = format!("{member}#{index}");
        let log = dir.join(format!("{member}-{index}.jsonl"));
        let stderr = File::create(dir.join(format!("{member}-{index}.stderr"))).unwrap();
        let child = Command::new(bin)
            .args(args)
            .arg("--log")
            .arg(&log)
            .env("RSC_USERNAME", "admin")
            .env("RSC_PASSWORD", ADMIN_PASSWORD)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("worker starts");
        Worker {
            name,
            member: member.to_owned(),
            tail: LogTail::new(&log),
            lines: Vec::new(),
            open: BTreeSet::new(),
            child: Some(child),
            killed_at_ns: None,
            pauses: Vec::new(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    pub fn poll(&mut self) {
        let new = self
            .tail
            .poll()
            .unwrap_or_else(|e| panic!("{}: {e}", self.name));
        for l in &new {
            match l {
                Line::ReadStarted { shard, .. } => {
                    self.open.insert(*shard);
                }
                Line::ReadStopped { shard, .. } => {
                    self.open.remove(shard);
                }
                _ => {}
            }
        }
        self.lines.extend(new);
    }

    /// SIGKILL; the kill time is taken after the process was reaped.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            self.killed_at_ns = Some(now_ns());
        }
    }

    /// SIGTERM and wait (bounded); SIGKILL if it does not exit. Returns whether it exited by itself.
    pub fn terminate(&mut self, timeout: Duration) -> bool {
        let Some(mut c) = self.child.take() else {
            return true;
        };
        send_signal(c.id(), libc::SIGTERM);
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = c.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
        self.killed_at_ns = Some(now_ns());
        false
    }

    pub fn incarnation(&self) -> Incarnation {
        Incarnation {
            name: self.name.clone(),
            lines: self.lines.clone(),
            killed_at_ns: self.killed_at_ns,
            pauses: self.pauses.clone(),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
