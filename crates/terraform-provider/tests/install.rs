//! The provider installs like a normal one. `scripts/install-terraform-provider` puts the provider built for
//! this test into Terraform's implied local mirror (`~/.terraform.d/plugins`, under a HOME of the test's);
//! then the real terraform, with no CLI configuration and every proxy pointing at a closed port (so any
//! registry or network access fails), runs `init` on the shipped example: it must install rsc/rsc from the
//! mirror and write a lock file with the provider's hash, and `plan` must run the installed provider against
//! a real `rsc serve`. The installed provider's schema (`terraform providers schema -json`) is checked
//! against the provider's `docs/` pages: one per resource and data source, naming every attribute and block.

#[allow(dead_code)]
// this test uses the shared support's binaries and outcome, not its dev_overrides workdir
use crate::support;

use rsc_testkit::{RedisServer, RscBuilder};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::{Outcome, rsc_binary, terraform_binary};

const ADMIN_PASSWORD: &str = "tf-install-admin-password";
const PROVIDER: &str = "registry.terraform.io/rsc/rsc";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `program args` in `dir` with only the environment a fresh user would have: this HOME, no Terraform
/// CLI configuration or plugin cache, and proxies at a closed loopback port.
fn offline(program: &Path, args: &[&str], dir: &Path, home: &Path, proxy: &str) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env("HOME", home)
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_IN_AUTOMATION", "1")
        .env_remove("TF_CLI_CONFIG_FILE")
        .env_remove("TF_PLUGIN_CACHE_DIR")
        .env_remove("TF_LOG")
        .env_remove("XDG_DATA_HOME")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .env_remove("RSC_TOKEN")
        .env_remove("RSC_USERNAME")
        .env_remove("RSC_PASSWORD")
        .env_remove("RSC_COORDINATOR");
    for var in ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"] {
        cmd.env(var, proxy);
    }
    cmd
}

fn outcome(mut cmd: Command) -> Outcome {
    let out = cmd.output().expect("run the command");
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The names of a schema block's attributes and nested blocks.
fn names(block: &Value) -> Vec<String> {
    ["attributes", "block_types"]
        .iter()
        .filter_map(|k| block.get(*k).and_then(Value::as_object))
        .flat_map(|m| m.keys().cloned())
        .collect()
}

/// Problems of one doc page: missing, or not naming (as `name`) one of `names`.
fn check_page(page: &Path, what: &str, names: &[String], problems: &mut Vec<String>) {
    let Ok(text) = std::fs::read_to_string(page) else {
        problems.push(format!("{what} has no page {}", page.display()));
        return;
    };
    for n in names {
        if n != "id" && !text.contains(&format!("`{n}`")) {
            problems.push(format!(
                "{} does not document `{n}` of {what}",
                page.display()
            ));
        }
    }
}

#[test]
fn the_install_script_makes_terraform_init_work_offline_and_the_docs_cover_the_schema() {
    let terraform = terraform_binary();
    let provider = env!("CARGO_BIN_EXE_terraform-provider-rsc");
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let proxy = format!("http://127.0.0.1:{}", rsc_testkit::free_port());
    let root = repo_root();

    // 1. The script installs the built provider into the implied mirror of this HOME.
    let installed = outcome(offline(
        Path::new("bash"),
        &[
            root.join("scripts/install-terraform-provider")
                .to_str()
                .unwrap(),
            "--binary",
            provider,
        ],
        &root,
        home.path(),
        &proxy,
    ));
    assert_eq!(
        installed.code,
        0,
        "the install script failed:\n{}",
        installed.text()
    );
    let plugins = home.path().join(".terraform.d/plugins").join(PROVIDER);
    assert!(
        plugins.is_dir(),
        "nothing installed in {}",
        plugins.display()
    );

    // 2. `terraform init` on the shipped example: from the mirror, offline, writing the lock file.
    std::fs::copy(
        root.join("examples/terraform/main.tf"),
        work.path().join("main.tf"),
    )
    .expect("copy examples/terraform/main.tf");
    let init = outcome(offline(
        &terraform,
        &["init", "-input=false", "-no-color"],
        work.path(),
        home.path(),
        &proxy,
    ));
    assert_eq!(init.code, 0, "terraform init failed:\n{}", init.text());
    init.assert_no_crash();
    let lock = std::fs::read_to_string(work.path().join(".terraform.lock.hcl"))
        .unwrap_or_else(|e| panic!("no lock file ({e}):\n{}", init.text()));
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        lock.contains(&format!("provider \"{PROVIDER}\""))
            && lock.contains(&format!("version     = \"{version}\""))
            && lock.contains("\"h1:"),
        "the lock file does not pin rsc/rsc {version} by hash:\n{lock}"
    );
    // The lock file holds: a second init (as CI runs it) installs the same build again.
    let again = outcome(offline(
        &terraform,
        &["init", "-input=false", "-no-color", "-lockfile=readonly"],
        work.path(),
        home.path(),
        &proxy,
    ));
    assert_eq!(again.code, 0, "a second init failed:\n{}", again.text());

    // 3. The installed provider plans the example against a real coordinator.
    let redis = RedisServer::start();
    let rsc = RscBuilder::new(rsc_binary(), &redis.url())
        .admin_password(ADMIN_PASSWORD)
        .start();
    let mut plan = offline(
        &terraform,
        &["plan", "-input=false", "-no-color"],
        work.path(),
        home.path(),
        &proxy,
    );
    plan.env("RSC_COORDINATOR", rsc.url())
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", ADMIN_PASSWORD)
        // the coordinator is on loopback: not through the (closed) proxy
        .env("NO_PROXY", "127.0.0.1");
    let plan = outcome(plan);
    plan.assert_no_crash();
    assert_eq!(plan.code, 0, "terraform plan failed:\n{}", plan.text());
    assert!(
        plan.stdout.contains("Plan: 3 to add"),
        "the example's plan:\n{}",
        plan.text()
    );

    // 4. The docs name everything the installed provider's schema has.
    let schema = outcome(offline(
        &terraform,
        &["providers", "schema", "-json"],
        work.path(),
        home.path(),
        &proxy,
    ));
    assert_eq!(
        schema.code,
        0,
        "providers schema failed:\n{}",
        schema.text()
    );
    let schema: Value = serde_json::from_str(&schema.stdout).expect("schema JSON");
    let ours = &schema["provider_schemas"][PROVIDER];
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut problems = Vec::new();
    check_page(
        &docs.join("index.md"),
        "the provider",
        &names(&ours["provider"]["block"]),
        &mut problems,
    );
    for (kind, dir) in [
        ("resource_schemas", "resources"),
        ("data_source_schemas", "data-sources"),
    ] {
        let entries = ours[kind].as_object().expect(kind);
        assert!(!entries.is_empty(), "the provider has no {kind}");
        for (name, s) in entries {
            let short = name.strip_prefix("rsc_").expect("rsc_ names");
            check_page(
                &docs.join(dir).join(format!("{short}.md")),
                name,
                &names(&s["block"]),
                &mut problems,
            );
        }
        // and no page for something the provider does not have
        for page in std::fs::read_dir(docs.join(dir))
            .expect("docs dir")
            .flatten()
        {
            let file = page.file_name().to_string_lossy().into_owned();
            let name = format!("rsc_{}", file.trim_end_matches(".md"));
            if !entries.contains_key(&name) {
                problems.push(format!(
                    "docs/{dir}/{file} documents {name}, which the provider does not have"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
