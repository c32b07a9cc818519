//! A real `rsc serve` process for end-to-end tests: spawned with the environment a test asks for on a
//! loopback port that stays the same across restarts, waited for until `/healthz` answers, killed on drop.
//! Its stderr goes to a log file (in a temp directory unless the test names one), which tests read line by
//! line, with bounded waits, or name in their failure messages.

use crate::ports;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a start may take before the test fails (a 2-core machine running other tests).
const START_BOUND: Duration = Duration::from_secs(30);

/// How to start an `rsc serve`.
#[derive(Debug, Clone)]
pub struct RscBuilder {
    bin: PathBuf,
    redis_url: String,
    port: Option<u16>,
    env: Vec<(String, String)>,
    log: Option<PathBuf>,
    /// Pass `--listen` and `--redis-url` (off when the environment gives the addresses).
    address_flags: bool,
}

impl RscBuilder {
    /// `bin` is the `rsc` binary (`env!("CARGO_BIN_EXE_rsc")` in the cli crate's tests). The process gets
    /// `RSC_LOG=warn` and no inherited `RSC_ADMIN_PASSWORD` unless the test sets them.
    pub fn new(bin: impl AsRef<Path>, redis_url: &str) -> Self {
        RscBuilder {
            bin: bin.as_ref().to_owned(),
            redis_url: redis_url.to_owned(),
            port: None,
            env: vec![("RSC_LOG".into(), "warn".into())],
            log: None,
            address_flags: true,
        }
    }

    /// Sets an environment variable (replacing an earlier value of the same name).
    pub fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.into()));
        self
    }

    /// The bootstrap admin's password (`RSC_ADMIN_PASSWORD`).
    pub fn admin_password(self, password: &str) -> Self {
        self.env("RSC_ADMIN_PASSWORD", password)
    }

    /// Test timings: heartbeats every 200 ms, reconciler tick 100 ms, a 1 s replica lease renewed every
    /// 200 ms with a sweep every second, and the given member lease and rebalance timeout.
    pub fn fast_timings(self, member_lease_ttl: Duration, rebalance_timeout: Duration) -> Self {
        self.env("COORDINATOR_HEARTBEAT_INTERVAL", "200ms")
            .env(
                "COORDINATOR_MEMBER_LEASE_TTL",
                format!("{}ms", member_lease_ttl.as_millis()),
            )
            .env(
                "COORDINATOR_REBALANCE_TIMEOUT",
                format!("{}ms", rebalance_timeout.as_millis()),
            )
            .env("COORDINATOR_LOOP_TICK_INTERVAL", "100ms")
            .env("COORDINATOR_CLUSTER_REPLICA_LEASE", "1s")
            .env("COORDINATOR_CLUSTER_RENEW_INTERVAL", "200ms")
            .env("COORDINATOR_CLUSTER_SWEEP_INTERVAL", "1s")
    }

    /// Pass neither `--listen` nor `--redis-url`: the test's environment gives both addresses, and must make
    /// the process listen on 127.0.0.1 at [`RscProcess::port`] (set with [`RscBuilder::port`]).
    pub fn address_by_env(mut self) -> Self {
        self.address_flags = false;
        self
    }

    /// Listen on this port (default: a free one).
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// Append stderr to this file (default: a file in a temp directory owned by the process handle).
    pub fn log_file(mut self, path: &Path) -> Self {
        self.log = Some(path.to_owned());
        self
    }

    /// Spawns the process and waits until `/healthz` answers 200 (panics, with the log, if it does not).
    pub fn start(self) -> RscProcess {
        let mut p = self.spawn();
        p.wait_healthy();
        p
    }

    /// Spawns the process without waiting for it (for tests of start-up failures and output).
    pub fn spawn(self) -> RscProcess {
        let (log, dir) = match &self.log {
            Some(path) => (path.clone(), None),
            None => {
                let dir = tempfile::tempdir().expect("temp dir for the rsc log");
                (dir.path().join("rsc.log"), Some(dir))
            }
        };
        let port = self.port.unwrap_or_else(ports::free_port);
        let mut p = RscProcess {
            builder: self,
            port,
            log,
            _dir: dir,
            child: None,
            read_offset: 0,
            starts: 0,
        };
        p.spawn_child();
        p
    }
}

/// A running (or stopped, restartable) `rsc serve`.
pub struct RscProcess {
    builder: RscBuilder,
    port: u16,
    log: PathBuf,
    _dir: Option<tempfile::TempDir>,
    child: Option<Child>,
    /// How far [`RscProcess::next_lines`] has read the log.
    read_offset: u64,
    starts: usize,
}

impl RscProcess {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// How many times the process was started.
    pub fn starts(&self) -> usize {
        self.starts
    }

    /// The file its stderr goes to.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The whole log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Starts it again on the same port after [`RscProcess::kill`], and waits until it is healthy.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn_child();
        self.wait_healthy();
    }

    /// SIGKILL, and reap.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Waits for the process to exit on its own (bounded); returns its exit code.
    pub fn wait_exit(&mut self, bound: Duration) -> Option<i32> {
        let deadline = Instant::now() + bound;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return status.code();
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Log lines not returned before, up to and including the first that satisfies `until` (bounded wait);
    /// panics with what it read when no such line comes.
    pub fn next_lines(&mut self, bound: Duration, until: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = Instant::now() + bound;
        let mut out = Vec::new();
        let mut partial = String::new();
        loop {
            if let Ok(mut file) = File::open(&self.log) {
                use std::io::Seek;
                let _ = file.seek(std::io::SeekFrom::Start(self.read_offset));
                let mut reader = BufReader::new(file);
                loop {
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if !line.ends_with('\n') {
                                // A line still being written: read it again next time.
                                partial = line;
                                break;
                            }
                            self.read_offset += n as u64;
                            let line = line.trim_end_matches('\n').to_owned();
                            let done = until(&line);
                            out.push(line);
                            if done {
                                return out;
                            }
                        }
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "rsc on port {} wrote no matching line within {bound:?}; read: {out:#?} {partial:?}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn spawn_child(&mut self) {
        self.starts += 1;
        let stderr = File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("rsc log file");
        let mut cmd = Command::new(&self.builder.bin);
        cmd.arg("serve");
        if self.builder.address_flags {
            cmd.args([
                "--listen",
                &format!("127.0.0.1:{}", self.port),
                "--redis-url",
                &self.builder.redis_url,
            ]);
        }
        cmd.env_remove("RSC_ADMIN_PASSWORD")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        for (k, v) in &self.builder.env {
            cmd.env(k, v);
        }
        self.child = Some(cmd.spawn().expect("the rsc binary starts"));
    }

    fn wait_healthy(&mut self) {
        let deadline = Instant::now() + START_BOUND;
        while !healthy(self.port) {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                panic!(
                    "rsc on port {} exited ({status}) before it was healthy; its log:\n{}",
                    self.port,
                    self.log_text()
                );
            }
            assert!(
                Instant::now() < deadline,
                "rsc on port {} did not become healthy within {START_BOUND:?}; its log:\n{}",
                self.port,
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for RscProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether `GET /healthz` on 127.0.0.1:`port` answers 200 (a plain blocking socket, usable anywhere).
pub fn healthy(port: u16) -> bool {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    if s.write_all(b"GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.ends_with(b"200")
}
