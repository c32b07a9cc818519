//! The packaging's command lines, run against the real `rsc` binary and a real redis-server (images cannot
//! be built or pulled on the test machines, so the container itself is not run):
//!
//! - the Dockerfile's final stage: its ENTRYPOINT (+ CMD) with its ENV, configured as
//!   deploy/kubernetes/deployment.yaml configures it (RSC_CONFIG naming the mounted deploy/kubernetes/rsc.toml,
//!   COORDINATOR_* overrides), must become healthy by its own HEALTHCHECK command, answer /readyz and
//!   serve /metrics on the scrape port without credentials, exit 0 on SIGTERM, and the HEALTHCHECK must then
//!   fail;
//! - deploy/systemd/rsc.service: its ExecStart with its Environment= and deploy/systemd/rsc.toml.
//!
//! Substituted, and only these: the binary's path (`/usr/local/bin/rsc`), the configuration file's path, the
//! listen addresses (a free 127.0.0.1 port instead of 0.0.0.0:8080 / 9464, in the health check's URL too)
//! and the Redis URL (this test's redis-server, through COORDINATOR_REDIS_URL as a deployment would set it).
//! scripts/check-deploy checks the manifests and the unit themselves.

use rsc_testkit::{RedisServer, free_port};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a start, or a graceful stop, may take on a busy 2-core machine.
const BOUND: Duration = Duration::from_secs(40);
const ADMIN_PASSWORD: &str = "packaging-test-admin-password";
const IMAGE_BINARY: &str = "/usr/local/bin/rsc";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The instructions of a Dockerfile's last stage, continuation lines joined: (instruction, arguments).
fn final_stage(dockerfile: &str) -> Vec<(String, String)> {
    let joined = dockerfile.replace("\\\n", " ");
    let mut stage = Vec::new();
    for line in joined.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (instr, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let instr = instr.to_ascii_uppercase();
        if instr == "FROM" {
            stage.clear();
        }
        stage.push((instr, args.trim().to_owned()));
    }
    stage
}

/// The exec (JSON array) form of ENTRYPOINT / CMD / HEALTHCHECK … CMD.
fn exec_form(args: &str) -> Vec<String> {
    serde_json::from_str(args)
        .unwrap_or_else(|e| panic!("not the exec (JSON array) form: {args}: {e}"))
}

struct Image {
    env: BTreeMap<String, String>,
    command: Vec<String>,
    health: Vec<String>,
    user: String,
}

fn image() -> Image {
    let text = std::fs::read_to_string(repo().join("Dockerfile")).expect("Dockerfile");
    let stage = final_stage(&text);
    let one = |name: &str| {
        let found: Vec<&String> = stage
            .iter()
            .filter(|(i, _)| i == name)
            .map(|(_, a)| a)
            .collect();
        assert!(found.len() <= 1, "several {name} in the final stage");
        found.first().map(|s| s.to_string())
    };
    let mut env = BTreeMap::new();
    for (_, args) in stage.iter().filter(|(i, _)| i == "ENV") {
        for kv in args.split_whitespace() {
            let (k, v) = kv
                .split_once('=')
                .unwrap_or_else(|| panic!("ENV in the key=value form: {kv}"));
            assert!(!v.contains('"'), "unquoted ENV values only: {kv}");
            env.insert(k.to_owned(), v.to_owned());
        }
    }
    let mut command = exec_form(&one("ENTRYPOINT").expect("an ENTRYPOINT"));
    if let Some(cmd) = one("CMD") {
        command.extend(exec_form(&cmd));
    }
    let health = one("HEALTHCHECK").expect("a HEALTHCHECK");
    let health = exec_form(
        health
            .split_once("CMD")
            .expect("HEALTHCHECK … CMD")
            .1
            .trim(),
    );
    Image {
        env,
        command,
        health,
        user: one("USER").expect("a USER"),
    }
}

/// A started command line, killed on drop.
struct Running {
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Running {
    fn start(command: &[String], env: &BTreeMap<String, String>) -> Running {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("rsc.log");
        let mut cmd = Command::new(&command[0]);
        cmd.args(&command[1..])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap());
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{command:?} starts: {e}"));
        Running {
            child,
            log,
            _dir: dir,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Runs `check` until it exits 0 (bounded); panics with the log if the process exits first.
    fn wait_until_passes(&mut self, check: &[String]) {
        let deadline = Instant::now() + BOUND;
        loop {
            if passes(check) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "exited ({status}) before {check:?} passed; log:\n{}",
                    self.log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "{check:?} did not pass within {BOUND:?}; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGTERM, then the exit code (bounded).
    fn terminate(&mut self) -> Option<i32> {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let deadline = Instant::now() + BOUND;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a command exits 0 (its output discarded).
fn passes(command: &[String]) -> bool {
    Command::new(&command[0])
        .args(&command[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("{command:?} runs ({e}); curl must be installed (.ci/run does)"))
        .success()
}

/// `GET url` status code, without credentials.
fn status_of(url: &str) -> u16 {
    let out = Command::new("curl")
        .args([
            "--silent",
            "--output",
            "/dev/null",
            "--write-out",
            "%{http_code}",
            "--max-time",
            "5",
            url,
        ])
        .output()
        .expect("curl runs");
    String::from_utf8_lossy(&out.stdout).parse().unwrap_or(0)
}

fn port_of(listen: &str) -> u16 {
    listen
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {listen}"))
}

#[test]
fn the_images_entry_point_serves_and_its_health_check_follows_it() {
    let image = image();
    assert_ne!(
        image.user.split(':').next(),
        Some("0"),
        "the image runs as a non-root user"
    );
    assert_ne!(image.user.split(':').next(), Some("root"));
    assert_eq!(
        image.command[..2],
        [IMAGE_BINARY.to_owned(), "serve".to_owned()]
    );

    let image_listen = image
        .env
        .get("COORDINATOR_LISTEN")
        .expect("the image sets COORDINATOR_LISTEN")
        .clone();
    let image_port = port_of(&image_listen);
    let redis = RedisServer::start();
    let port = free_port();
    let metrics_port = free_port();

    // The image's environment, then what deploy/kubernetes/deployment.yaml adds (the mounted TOML, the
    // admin password from the Secret, JSON logs), then this machine's addresses.
    let mut env = image.env.clone();
    env.insert("COORDINATOR_LISTEN".into(), format!("127.0.0.1:{port}"));
    env.insert(
        "RSC_CONFIG".into(),
        repo()
            .join("deploy/kubernetes/rsc.toml")
            .display()
            .to_string(),
    );
    env.insert("RSC_ADMIN_PASSWORD".into(), ADMIN_PASSWORD.into());
    env.insert("RSC_LOG_FORMAT".into(), "json".into());
    env.insert("COORDINATOR_REDIS_URL".into(), redis.url());
    env.insert(
        "COORDINATOR_METRICS_LISTEN".into(),
        format!("127.0.0.1:{metrics_port}"),
    );

    let mut command = image.command.clone();
    command[0] = env!("CARGO_BIN_EXE_rsc").to_owned();
    let health: Vec<String> = image
        .health
        .iter()
        .map(|a| {
            a.replace(
                &format!("127.0.0.1:{image_port}"),
                &format!("127.0.0.1:{port}"),
            )
        })
        .collect();
    assert!(
        health
            .iter()
            .any(|a| a == &format!("http://127.0.0.1:{port}/healthz")),
        "the HEALTHCHECK probes /healthz on the listen port: {:?}",
        image.health
    );
    assert!(
        !passes(&health),
        "nothing listens yet, so the health check fails"
    );

    let mut rsc = Running::start(&command, &env);
    rsc.wait_until_passes(&health);
    assert_eq!(
        status_of(&format!("http://127.0.0.1:{port}/readyz")),
        200,
        "{}",
        rsc.log()
    );
    // The scrape target of the annotations / ServiceMonitor: /metrics without credentials.
    assert_eq!(
        status_of(&format!("http://127.0.0.1:{metrics_port}/metrics")),
        200,
        "{}",
        rsc.log()
    );
    // The API itself still wants credentials.
    assert_eq!(
        status_of(&format!(
            "http://127.0.0.1:{port}/coord/v1/monitoring/groups"
        )),
        401
    );

    assert_eq!(
        rsc.terminate(),
        Some(0),
        "SIGTERM ends it gracefully; log:\n{}",
        rsc.log()
    );
    assert!(
        !passes(&health),
        "the health check fails once the coordinator is gone"
    );
}

#[test]
fn the_systemd_units_command_line_serves_with_its_configuration() {
    let unit =
        std::fs::read_to_string(repo().join("deploy/systemd/rsc.service")).expect("rsc.service");
    let mut exec = None;
    let mut env = BTreeMap::new();
    for line in unit.lines().map(str::trim) {
        if let Some(v) = line.strip_prefix("ExecStart=") {
            exec = Some(v.split_whitespace().map(str::to_owned).collect::<Vec<_>>());
        } else if let Some(v) = line.strip_prefix("Environment=") {
            for kv in v.split_whitespace() {
                let (k, v) = kv.split_once('=').expect("Environment=K=V");
                env.insert(k.to_owned(), v.to_owned());
            }
        }
    }
    let mut command = exec.expect("an ExecStart");
    assert_eq!(command[0], IMAGE_BINARY);
    command[0] = env!("CARGO_BIN_EXE_rsc").to_owned();
    let config = command
        .iter()
        .position(|a| a == "--config")
        .expect("ExecStart names its --config");
    assert_eq!(command[config + 1], "/etc/rsc/rsc.toml");
    command[config + 1] = repo().join("deploy/systemd/rsc.toml").display().to_string();

    // What /etc/rsc/rsc.env would hold on this machine: the password and this test's addresses.
    let redis = RedisServer::start();
    let port = free_port();
    env.insert("RSC_ADMIN_PASSWORD".into(), ADMIN_PASSWORD.into());
    env.insert("COORDINATOR_REDIS_URL".into(), redis.url());
    env.insert("COORDINATOR_LISTEN".into(), format!("127.0.0.1:{port}"));
    env.insert(
        "COORDINATOR_METRICS_LISTEN".into(),
        format!("127.0.0.1:{}", free_port()),
    );

    let mut rsc = Running::start(&command, &env);
    let probe = |path: &str| {
        vec![
            "curl".to_owned(),
            "--fail".to_owned(),
            "--silent".to_owned(),
            "--output".to_owned(),
            "/dev/null".to_owned(),
            format!("http://127.0.0.1:{port}{path}"),
        ]
    };
    rsc.wait_until_passes(&probe("/healthz"));
    assert!(passes(&probe("/readyz")), "{}", rsc.log());
    assert_eq!(rsc.terminate(), Some(0), "log:\n{}", rsc.log());
}
