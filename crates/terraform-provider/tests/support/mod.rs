//! Support of the provider's end-to-end test: the binaries it runs (terraform, the provider built for this
//! test, `rsc`), a Terraform working directory with a CLI configuration whose `dev_overrides` point at the
//! provider (no `terraform init`, no network), and one Terraform command's outcome.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

/// The terraform binary: `TERRAFORM_BIN`, else `terraform` on PATH, else /usr/local/bin/terraform. Fails the
/// test, saying so, when there is none (CI's machine has terraform 1.11).
pub fn terraform_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("TERRAFORM_BIN") {
        return PathBuf::from(p);
    }
    let on_path = std::env::var_os("PATH")
        .map(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("terraform"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain([PathBuf::from("/usr/local/bin/terraform")])
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "terraform is not installed: this end-to-end test runs the real terraform binary (1.11; it is \
                 installed on CI's machine). Install it on PATH or point TERRAFORM_BIN at it."
            )
        })
}

/// The `rsc` binary of this workspace: `RSC_BIN` if set; else target/<profile>/rsc, built first with
/// `cargo build -p rsc-cli --bin rsc` when it is missing or older than the sources of the crates it is built
/// from (`cargo test --workspace` has already built it).
pub fn rsc_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("RSC_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/terraform-<hash> → target/<profile>/rsc
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executable lives in target/<profile>/deps");
    let path = profile_dir.join("rsc");
    if stale(&path) {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let target_dir = profile_dir.parent().expect("target dir");
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "rsc-cli", "--bin", "rsc", "--target-dir"])
            .arg(target_dir)
            .current_dir(workspace_root());
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo to build rsc");
        assert!(status.success(), "cargo build -p rsc-cli failed: {status}");
    }
    assert!(
        path.is_file(),
        "the rsc binary {} is missing even after building it",
        path.display()
    );
    path
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether `bin` is missing or older than any source of the crates `rsc` is built from.
fn stale(bin: &Path) -> bool {
    let Ok(built) = std::fs::metadata(bin).and_then(|m| m.modified()) else {
        return true;
    };
    let root = workspace_root();
    ["cli", "coordinator", "store", "group", "protocol", "client"]
        .iter()
        .any(|k| newer_file(&root.join("crates").join(k).join("src"), built))
}

fn newer_file(dir: &Path, than: SystemTime) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let p = entry.path();
        if p.is_dir() {
            newer_file(&p, than)
        } else {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|m| m > than)
        }
    })
}

/// The outcome of one terraform command.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// stdout and stderr together.
    pub fn text(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }

    /// The plugin crashed or panicked: never acceptable, whatever the exit code.
    pub fn assert_no_crash(&self) {
        let text = self.text();
        for bad in [
            "panic",
            "Plugin did not respond",
            "plugin crashed",
            "unexpected EOF",
        ] {
            assert!(
                !text.contains(bad),
                "the provider crashed ({bad:?}):\n{text}"
            );
        }
    }
}

/// A Terraform working directory using the provider built for this test.
pub struct Workdir {
    pub dir: tempfile::TempDir,
    terraform: PathBuf,
    cli_config: PathBuf,
    env: Vec<(String, String)>,
}

impl Workdir {
    /// A new directory holding `main_tf`, whose CLI configuration overrides `rsc/rsc` with the provider
    /// binary in `provider_dir`.
    pub fn new(terraform: &Path, provider_dir: &Path, main_tf: &str) -> Workdir {
        let dir = tempfile::tempdir().expect("terraform working dir");
        let cli_config = dir.path().join("dev.tfrc");
        std::fs::write(
            &cli_config,
            format!(
                "provider_installation {{\n  dev_overrides {{\n    \"registry.terraform.io/rsc/rsc\" = \"{}\"\n  }}\n  direct {{}}\n}}\n",
                provider_dir.display()
            ),
        )
        .expect("write the CLI configuration");
        std::fs::write(dir.path().join("main.tf"), main_tf).expect("write main.tf");
        Workdir {
            dir,
            terraform: terraform.to_owned(),
            cli_config,
            env: Vec::new(),
        }
    }

    /// Sets an environment variable for every later command.
    pub fn env(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_owned()));
    }

    /// Runs `terraform <args>` here (no colour, no input) and returns its outcome; never a crash.
    pub fn run(&self, args: &[&str], extra_env: &[(&str, &str)]) -> Outcome {
        let mut cmd = Command::new(&self.terraform);
        cmd.args(args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .env("TF_CLI_CONFIG_FILE", &self.cli_config)
            .env("CHECKPOINT_DISABLE", "1")
            .env("TF_IN_AUTOMATION", "1")
            .env_remove("TF_LOG")
            .env_remove("TF_LOG_PATH")
            .env_remove("RSC_TOKEN")
            .env_remove("RSC_USERNAME")
            .env_remove("RSC_COORDINATOR");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run terraform");
        let outcome = Outcome {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        outcome.assert_no_crash();
        outcome
    }

    /// Runs a command that must succeed (exit 0).
    pub fn ok(&self, args: &[&str]) -> Outcome {
        let o = self.run(args, &[]);
        assert_eq!(o.code, 0, "terraform {args:?} failed:\n{}", o.text());
        o
    }
}
