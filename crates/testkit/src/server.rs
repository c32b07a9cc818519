//! One real `redis-server` process for a test, on its own loopback port and data directory.
//!
//! Tests of the store, the API and the SDK run against real Redis so that restarts, persistence
//! and cluster mode can be exercised. Every server gets a free port on 127.0.0.1, a fresh temp
//! directory (data, AOF, log) and no RDB snapshots; a TLS-only server has a TLS port and no plain-text
//! one (the test kit administers it over a Unix socket). It is killed when the handle is dropped, so a
//! failing test never leaves a server behind. This is test code: failures panic with a message
//! that says what went wrong, including the tail of the server's log.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::ports;
use crate::resp::{self, Reply};
use crate::watchdog::Watchdog;

/// How long a server may take to answer PING after being spawned.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a graceful shutdown may take before the process is killed.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// How often readiness and exit are polled.
const POLL_INTERVAL: Duration = Duration::from_millis(20);
/// Startup attempts on fresh ports when another process wins the race for the port.
const BIND_ATTEMPTS: usize = 5;

/// Options for starting a [`RedisServer`].
#[derive(Debug, Clone, Default)]
pub struct RedisServerBuilder {
    appendonly: bool,
    cluster_node: bool,
    tls_only: bool,
    extra_args: Vec<String>,
}

impl RedisServerBuilder {
    /// Turns the append-only file on, so data survives [`RedisServer::restart`] and even
    /// [`RedisServer::kill`] (with the default `appendfsync everysec`, up to one second may be lost
    /// on a kill; a graceful [`RedisServer::stop`] loses nothing).
    pub fn appendonly(mut self, on: bool) -> Self {
        self.appendonly = on;
        self
    }

    /// Adds raw `redis-server` arguments, e.g. `.args(["--maxmemory", "10mb"])`.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.extra_args.extend(args.into_iter().map(Into::into));
        self
    }

    /// TLS only: the server listens on a TLS port (`--tls-port`) and no plain-text TCP port (`--port 0`),
    /// so nothing reaches it over plain text by accident. `tls_args` are the certificate options
    /// (`--tls-cert-file` …, see [`crate::TlsCerts`]). [`RedisServer::port`] is then the TLS port and
    /// [`RedisServer::url`] a `rediss://` URL; the test kit itself talks to the server over a Unix socket
    /// in its data directory ([`RedisServer::unix_socket`]).
    pub fn tls_only<I, S>(mut self, tls_args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tls_only = true;
        self.args(tls_args)
    }

    /// Makes this server a cluster-enabled node (used by [`crate::RedisCluster`]).
    pub(crate) fn cluster_node(mut self) -> Self {
        self.cluster_node = true;
        self
    }

    /// Starts the server and waits until it answers PING. Panics if it cannot.
    pub fn start(self) -> RedisServer {
        let dir = tempfile::Builder::new()
            .prefix("rsc-redis-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temp dir for redis-server: {e}"));
        let mut server = RedisServer {
            port: 0,
            dir,
            child: None,
            watchdog: None,
            options: self,
        };
        let mut last_failure = String::new();
        for _ in 0..BIND_ATTEMPTS {
            server.port = if server.options.cluster_node {
                ports::free_cluster_port()
            } else {
                ports::free_port()
            };
            match server.spawn_and_wait() {
                Ok(()) => return server,
                Err(StartFailure::PortTaken(detail)) => last_failure = detail,
                Err(StartFailure::Fatal(detail)) => panic!("{detail}"),
            }
        }
        panic!(
            "redis-server could not bind a free port in {BIND_ATTEMPTS} attempts:\n{last_failure}"
        );
    }
}

enum StartFailure {
    /// Another process took the port between our probe and the server's bind.
    PortTaken(String),
    /// Anything else: a bad argument, a crash, a timeout.
    Fatal(String),
}

/// A running (or deliberately stopped) `redis-server` owned by a test.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
    watchdog: Option<Watchdog>,
    options: RedisServerBuilder,
}

impl RedisServer {
    /// Starts a standalone server with default options (no AOF).
    pub fn start() -> RedisServer {
        RedisServerBuilder::default().start()
    }

    /// Options for a server, e.g. `RedisServer::builder().appendonly(true).start()`.
    pub fn builder() -> RedisServerBuilder {
        RedisServerBuilder::default()
    }

    /// `redis://127.0.0.1:PORT` (`rediss://` for a TLS-only server).
    pub fn url(&self) -> String {
        let scheme = if self.options.tls_only {
            "rediss"
        } else {
            "redis"
        };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The Unix socket of a TLS-only server (plain text, for looking at the data from a test without
    /// TLS, e.g. `redis-cli -s`); `None` for a plain-text server.
    pub fn unix_socket(&self) -> Option<PathBuf> {
        self.options.tls_only.then(|| self.socket_path())
    }

    /// A URL the test kit's own administration uses: the Unix socket of a TLS-only server, else
    /// [`Self::url`].
    pub(crate) fn admin_url(&self) -> String {
        match self.unix_socket() {
            Some(path) => format!("unix://{}", path.display()),
            None => self.url(),
        }
    }

    /// One command from the test kit on a fresh connection (over the Unix socket when TLS-only).
    pub(crate) fn query(&self, args: &[&str], timeout: Duration) -> Result<Reply, String> {
        match self.unix_socket() {
            Some(path) => resp::query_unix(&path, args, timeout),
            None => resp::query(self.port, args, timeout),
        }
    }

    /// The loopback port the server listens on (the TLS port of a TLS-only server; stable across
    /// [`Self::restart`]).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's data directory (AOF, log, `nodes.conf`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The OS process id, while the process is running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is still alive.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Kills the process with SIGKILL (a crash: nothing is flushed) and reaps it.
    pub fn kill(&mut self) {
        self.disarm_watchdog();
        if let Some(mut child) = self.child.take() {
            // Errors mean the process already exited; wait() reaps it either way.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Shuts the server down gracefully (`SHUTDOWN NOSAVE`: the AOF, if on, is flushed) and waits
    /// for the process to exit; kills it if it does not exit within 10 s.
    pub fn stop(&mut self) {
        self.disarm_watchdog();
        let Some(mut child) = self.child.take() else {
            return;
        };
        // The server closes the connection instead of replying, so an error here is expected.
        let _ = self.query(&["SHUTDOWN", "NOSAVE"], Duration::from_secs(2));
        let deadline = Instant::now() + SHUTDOWN_TIMEOUT;
        while Instant::now() < deadline {
            if !matches!(child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(POLL_INTERVAL);
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Starts the server again on the same port and data directory (stopping it first if it is
    /// still running), so AOF data and cluster `nodes.conf` survive. Panics if it cannot start.
    pub fn restart(&mut self) {
        self.stop();
        // The port is normally free again at once; if another process grabbed it meanwhile,
        // retry for a bounded time before giving up with the log.
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            match self.spawn_and_wait() {
                Ok(()) => return,
                Err(StartFailure::PortTaken(detail)) if Instant::now() >= deadline => {
                    panic!(
                        "redis-server could not re-bind port {}:\n{detail}",
                        self.port
                    )
                }
                Err(StartFailure::PortTaken(_)) => std::thread::sleep(Duration::from_millis(100)),
                Err(StartFailure::Fatal(detail)) => panic!("{detail}"),
            }
        }
    }

    /// The last `lines` lines of the server log (and of anything it printed to stderr).
    pub fn log_tail(&self, lines: usize) -> String {
        let mut out = String::new();
        for path in [self.log_path(), self.stderr_path()] {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let all: Vec<&str> = text.lines().collect();
            let start = all.len().saturating_sub(lines);
            if start < all.len() {
                out.push_str(&format!("--- {} ---\n", path.display()));
                for line in &all[start..] {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        out
    }

    fn disarm_watchdog(&mut self) {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.disarm();
        }
    }

    /// Log text written after byte `offset`, plus anything printed to stderr by this attempt.
    fn log_since(&self, offset: u64) -> String {
        let log = std::fs::read(self.log_path()).unwrap_or_default();
        let start = usize::try_from(offset).map_or(log.len(), |o| o.min(log.len()));
        let mut text = String::from_utf8_lossy(&log[start..]).into_owned();
        text.push_str(&std::fs::read_to_string(self.stderr_path()).unwrap_or_default());
        text
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("redis.log")
    }

    fn socket_path(&self) -> PathBuf {
        self.dir.path().join("redis.sock")
    }

    fn stderr_path(&self) -> PathBuf {
        self.dir.path().join("stderr.log")
    }

    fn command_args(&self) -> Vec<String> {
        let dir = self.dir.path().display().to_string();
        let (plain_port, tls_port) = if self.options.tls_only {
            (0, self.port)
        } else {
            (self.port, 0)
        };
        let mut args: Vec<String> = vec![
            "--port".into(),
            plain_port.to_string(),
            "--bind".into(),
            "127.0.0.1".into(),
            "--dir".into(),
            dir,
            "--save".into(),
            String::new(),
            "--appendonly".into(),
            if self.options.appendonly { "yes" } else { "no" }.into(),
            "--logfile".into(),
            self.log_path().display().to_string(),
            "--daemonize".into(),
            "no".into(),
        ];
        if self.options.tls_only {
            args.extend([
                "--tls-port".into(),
                tls_port.to_string(),
                "--unixsocket".into(),
                self.socket_path().display().to_string(),
                "--unixsocketperm".into(),
                "700".into(),
            ]);
        }
        if self.options.cluster_node {
            args.extend(
                [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "5000",
                ]
                .map(String::from),
            );
        }
        args.extend(self.options.extra_args.iter().cloned());
        args
    }

    fn spawn_and_wait(&mut self) -> Result<(), StartFailure> {
        let stderr = File::create(self.stderr_path()).map_err(|e| {
            StartFailure::Fatal(format!(
                "cannot create {}: {e}",
                self.stderr_path().display()
            ))
        })?;
        // Only log lines written by this attempt decide whether the port was taken.
        let log_start = std::fs::metadata(self.log_path()).map_or(0, |m| m.len());
        let child = Command::new("redis-server")
            .args(self.command_args())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StartFailure::Fatal(
                    "redis-server was not found on PATH; these tests need a real Redis \
                     (install it, e.g. `apt-get install -y redis-server`)"
                        .to_string(),
                ));
            }
            Err(e) => {
                return Err(StartFailure::Fatal(format!(
                    "cannot spawn redis-server: {e}"
                )));
            }
        };
        self.watchdog = Some(Watchdog::arm(child.id(), self.dir.path()));
        self.child = Some(child);
        match self.wait_ready() {
            Ok(()) => Ok(()),
            Err(status) => {
                self.kill();
                let tail = self.log_tail(30);
                let detail = format!(
                    "redis-server on port {} failed to start ({status}); log tail:\n{tail}",
                    self.port
                );
                if self.log_since(log_start).contains("Address already in use") {
                    Err(StartFailure::PortTaken(detail))
                } else {
                    Err(StartFailure::Fatal(detail))
                }
            }
        }
    }

    /// Polls PING until the server answers PONG, the process exits, or the timeout passes.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let mut last = String::from("no reply yet");
        while Instant::now() < deadline {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                return Err(describe_exit(status));
            }
            match self.query(&["PING"], Duration::from_millis(500)) {
                Ok(Reply::Text(pong)) if pong == "PONG" => return Ok(()),
                Ok(other) => last = format!("{other:?}"),
                Err(e) => last = e,
            }
            std::thread::sleep(POLL_INTERVAL);
        }
        Err(format!(
            "no PONG within {STARTUP_TIMEOUT:?}, last reply: {last}"
        ))
    }
}

fn describe_exit(status: ExitStatus) -> String {
    format!("process exited: {status}")
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
