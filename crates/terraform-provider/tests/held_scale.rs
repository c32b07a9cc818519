//! A scale-in held by a group without consumers, through the real terraform binary and a real `rsc serve`:
//! `wait_for_convergence` fails at its timeout naming the group, the unread records and the ways out; the
//! next plan shows the unfinished change (not "No changes") with the same diagnosis; once an operator
//! force-completes the migration the plan is empty again. The runs, with username and password, mint no token.

use crate::support;

use rsc_testkit::{RedisServer, RscBuilder};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::{Workdir, rsc_binary, terraform_binary};

const ADMIN_PASSWORD: &str = "tf-held-admin-password";
const PREFIX: &str = "tf-held";

fn main_tf(url: &str) -> String {
    format!(
        r#"
terraform {{
  required_providers {{
    rsc = {{ source = "rsc/rsc" }}
  }}
}}

variable "shard_count" {{
  type    = number
  default = 4
}}

provider "rsc" {{
  endpoint       = ["{url}"]
  username       = "admin"
  default_reason = "held scale test"
}}

resource "rsc_stream" "orders" {{
  stream_prefix        = "{PREFIX}"
  shard_count          = var.shard_count
  wait_for_convergence = true
  timeouts {{
    update = "6s"
  }}
}}

resource "rsc_consumer_group" "analytics" {{
  stream_prefix  = rsc_stream.orders.stream_prefix
  consumer_group = "analytics"
}}
"#
    )
}

/// Terraform may wrap a diagnostic and prefix each line with a box-drawing bar: the words, single-spaced.
fn words(text: &str) -> String {
    text.replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn a_scale_in_held_by_a_group_without_consumers_is_named_and_stays_planned() {
    let terraform = terraform_binary();
    let provider = env!("CARGO_BIN_EXE_terraform-provider-rsc");
    let provider_dir = Path::new(provider).parent().expect("provider dir");
    let rsc = rsc_binary();
    let redis = RedisServer::start();
    let server = RscBuilder::new(&rsc, &redis.url())
        .admin_password(ADMIN_PASSWORD)
        .fast_timings(Duration::from_secs(3), Duration::from_secs(5))
        .env("COORDINATOR_STREAMS_DRAIN_GRACE", "1s")
        .start();
    let url = server.url();
    let mut a = Workdir::new(&terraform, provider_dir, &main_tf(&url));
    a.env("RSC_PASSWORD", ADMIN_PASSWORD);
    a.ok(&["apply", "-auto-approve", "-input=false", "-no-color"]);

    // Records on the shards a scale to 2 removes; no group has a consumer to read them.
    for shard in [2, 3] {
        for n in 0..5 {
            let out = Command::new("redis-cli")
                .args(["-p", &redis.port().to_string(), "XADD"])
                .arg(format!("{PREFIX}:{shard}"))
                .args(["*", "n", &n.to_string()])
                .output()
                .expect("redis-cli runs");
            assert!(out.status.success());
        }
    }

    let scaled = a.run(
        &[
            "apply",
            "-auto-approve",
            "-input=false",
            "-no-color",
            "-var",
            "shard_count=2",
        ],
        &[],
    );
    assert_ne!(scaled.code, 0, "{}", scaled.text());
    let text = words(&scaled.text());
    for needed in [
        "held by group \"analytics\"",
        "NO_LIVE_CONSUMER",
        "no live consumer and 10 unread record(s) on removed shard(s) 2, 3",
        "rsc force-complete tf-held",
        "rsc rollback tf-held",
    ] {
        assert!(
            text.contains(needed) || text.contains(&needed.replace('"', "")),
            "missing {needed:?}:\n{}",
            scaled.text()
        );
    }

    // The next plan shows the change that has not happened, and why.
    let plan = a.run(
        &[
            "plan",
            "-detailed-exitcode",
            "-input=false",
            "-no-color",
            "-var",
            "shard_count=2",
        ],
        &[],
    );
    assert_eq!(plan.code, 2, "{}", plan.text());
    assert!(plan.stdout.contains("shard_count"), "{}", plan.text());
    assert!(
        words(&plan.text()).contains("has not ended"),
        "{}",
        plan.text()
    );
    assert!(
        words(&plan.text()).contains("held by group analytics"),
        "{}",
        plan.text()
    );

    // Three runs with username and password left no token behind (HTTP Basic, no login).
    let tokens = Command::new("redis-cli")
        .args(["-p", &redis.port().to_string(), "--scan", "--pattern"])
        .arg("redis-stream:coord:auth:token:*")
        .output()
        .expect("redis-cli runs");
    assert_eq!(
        String::from_utf8_lossy(&tokens.stdout).trim(),
        "",
        "the provider minted tokens"
    );

    // An operator takes a way out; then there is nothing left to do.
    let forced = Command::new(&rsc)
        .args([
            "force-complete",
            PREFIX,
            "--reason",
            "nobody reads analytics",
            "--yes",
            "--wait",
            "--wait-timeout",
            "60s",
        ])
        .env("RSC_COORDINATOR", &url)
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", ADMIN_PASSWORD)
        .env_remove("RSC_TOKEN")
        .output()
        .expect("rsc runs");
    assert!(
        forced.status.success(),
        "{}{}",
        String::from_utf8_lossy(&forced.stdout),
        String::from_utf8_lossy(&forced.stderr)
    );
    let plan = a.run(
        &[
            "plan",
            "-detailed-exitcode",
            "-input=false",
            "-no-color",
            "-var",
            "shard_count=2",
        ],
        &[],
    );
    assert_eq!(plan.code, 0, "{}", plan.text());
}

/// The default group (named like the stream) is the stream: importing it as an `rsc_consumer_group` is refused
/// with a message naming `rsc_stream`, and deleting it outside Terraform while another group exists is drift
/// that the next plan shows and the apply repairs.
#[test]
fn the_default_group_is_managed_as_the_stream() {
    let terraform = terraform_binary();
    let provider = env!("CARGO_BIN_EXE_terraform-provider-rsc");
    let provider_dir = Path::new(provider).parent().expect("provider dir");
    let rsc = rsc_binary();
    let redis = RedisServer::start();
    let server = RscBuilder::new(&rsc, &redis.url())
        .admin_password(ADMIN_PASSWORD)
        .fast_timings(Duration::from_secs(3), Duration::from_secs(5))
        .start();
    let url = server.url();
    let mut a = Workdir::new(&terraform, provider_dir, &main_tf(&url));
    a.env("RSC_PASSWORD", ADMIN_PASSWORD);
    a.ok(&["apply", "-auto-approve", "-input=false", "-no-color"]);

    let import_tf = format!(
        "{}\nresource \"rsc_consumer_group\" \"default\" {{\n  stream_prefix  = \"{PREFIX}\"\n  consumer_group = \"{PREFIX}\"\n}}\n",
        main_tf(&url)
    );
    let mut b = Workdir::new(&terraform, provider_dir, &import_tf);
    b.env("RSC_PASSWORD", ADMIN_PASSWORD);
    let imported = b.run(
        &[
            "import",
            "-input=false",
            "-no-color",
            "rsc_consumer_group.default",
            &format!("{PREFIX}/{PREFIX}"),
        ],
        &[],
    );
    assert_ne!(imported.code, 0, "{}", imported.text());
    assert!(
        words(&imported.text()).contains("manage it as an rsc_stream"),
        "{}",
        imported.text()
    );

    // Deleted outside Terraform while analytics keeps the stream record: drift, repaired by the apply.
    let deleted = Command::new("curl")
        .args([
            "-sS",
            "-f",
            "-u",
            &format!("admin:{ADMIN_PASSWORD}"),
            "-X",
            "DELETE",
        ])
        .args(["-H", "Content-Type: application/json"])
        .args([
            "-d",
            r#"{"requestedBy":"ops","reason":"out of band","force":true}"#,
        ])
        .arg(format!("{url}/coord/v1/streams/{PREFIX}/groups/{PREFIX}"))
        .output()
        .expect("curl runs");
    assert!(
        deleted.status.success(),
        "{}",
        String::from_utf8_lossy(&deleted.stderr)
    );
    let plan = a.run(
        &["plan", "-detailed-exitcode", "-input=false", "-no-color"],
        &[],
    );
    assert_eq!(plan.code, 2, "{}", plan.text());
    assert!(
        words(&plan.text()).contains("lost its default group"),
        "{}",
        plan.text()
    );
    a.ok(&["apply", "-auto-approve", "-input=false", "-no-color"]);
    let plan = a.run(
        &["plan", "-detailed-exitcode", "-input=false", "-no-color"],
        &[],
    );
    assert_eq!(plan.code, 0, "{}", plan.text());
}

/// `XLEN` of `key` on `port`, through redis-cli.
fn xlen(port: u16, key: &str) -> i64 {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "XLEN", key])
        .output()
        .expect("redis-cli runs");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(-1)
}

/// Issue #33 points 8 and 10: a non-whole `shard_count` is a diagnostic on the attribute (no crash, no
/// backtrace); a destroyed stream keeps its records; creating it again fails pointing at `existing_records`
/// (not at an import that cannot work), and `existing_records = "ADOPT"` creates it keeping them. The
/// destroy's audit record carries that run's reason.
#[test]
fn a_destroyed_stream_is_created_again_by_choosing_what_to_do_with_its_records() {
    const AGAIN: &str = "tf-again";
    let terraform = terraform_binary();
    let provider = env!("CARGO_BIN_EXE_terraform-provider-rsc");
    let provider_dir = Path::new(provider).parent().expect("provider dir");
    let rsc = rsc_binary();
    let redis = RedisServer::start();
    let server = RscBuilder::new(&rsc, &redis.url())
        .admin_password(ADMIN_PASSWORD)
        .fast_timings(Duration::from_secs(3), Duration::from_secs(5))
        .start();
    let url = server.url();
    let config = format!(
        r#"
terraform {{
  required_providers {{
    rsc = {{ source = "rsc/rsc" }}
  }}
}}

variable "shard_count" {{
  type    = number
  default = 2
}}

variable "existing_records" {{
  type    = string
  default = null
}}

variable "reason" {{
  type    = string
  default = "first run"
}}

provider "rsc" {{
  endpoint       = ["{url}"]
  username       = "admin"
  default_reason = var.reason
}}

resource "rsc_stream" "again" {{
  stream_prefix    = "{AGAIN}"
  shard_count      = var.shard_count
  existing_records = var.existing_records
}}
"#
    );
    let mut a = Workdir::new(&terraform, provider_dir, &config);
    a.env("RSC_PASSWORD", ADMIN_PASSWORD);
    let tf = |extra: &[&str]| {
        let mut args = vec!["apply", "-auto-approve", "-input=false", "-no-color"];
        args.extend_from_slice(extra);
        a.run(&args, &[])
    };

    // A shard count that is not a whole number: a diagnostic naming the attribute, before anything is sent.
    let fractional = a.run(
        &[
            "plan",
            "-input=false",
            "-no-color",
            "-var",
            "shard_count=2.5",
        ],
        &[],
    );
    assert_eq!(fractional.code, 1, "{}", fractional.text());
    let text = words(&fractional.text());
    assert!(
        text.contains("shard_count") && text.contains("whole number"),
        "{}",
        fractional.text()
    );
    for bad in [
        "backtrace",
        "RUST_BACKTRACE",
        "Internal error",
        "invalid type",
    ] {
        assert!(!text.contains(bad), "{bad}: {}", fractional.text());
    }
    let choice = a.run(
        &[
            "plan",
            "-input=false",
            "-no-color",
            "-var",
            "existing_records=KEEP",
        ],
        &[],
    );
    assert_eq!(choice.code, 1, "{}", choice.text());
    assert!(
        words(&choice.text()).contains("REFUSE (the default), ADOPT"),
        "{}",
        choice.text()
    );

    let created = tf(&[]);
    assert_eq!(created.code, 0, "{}", created.text());
    for n in 0..4 {
        let out = Command::new("redis-cli")
            .args(["-p", &redis.port().to_string(), "XADD"])
            .arg(format!("{AGAIN}:1"))
            .args(["*", "n", &n.to_string()])
            .output()
            .expect("redis-cli runs");
        assert!(out.status.success());
    }
    let destroyed = a.run(
        &[
            "destroy",
            "-auto-approve",
            "-input=false",
            "-no-color",
            "-var",
            "reason=retire tf-again",
        ],
        &[],
    );
    assert_eq!(destroyed.code, 0, "{}", destroyed.text());
    assert_eq!(
        xlen(redis.port(), &format!("{AGAIN}:1")),
        4,
        "destroy keeps the records"
    );

    let refused = tf(&[]);
    assert_ne!(refused.code, 0, "{}", refused.text());
    let text = words(&refused.text());
    assert!(
        text.contains("STREAM_PREFIX_ALREADY_EXISTS"),
        "{}",
        refused.text()
    );
    assert!(
        text.contains("existing_records = \"ADOPT\"") || text.contains("existing_records = ADOPT"),
        "{}",
        refused.text()
    );
    assert!(
        !text.contains("terraform import"),
        "an import cannot work here: {}",
        refused.text()
    );

    let adopted = tf(&["-var", "existing_records=ADOPT"]);
    assert_eq!(adopted.code, 0, "{}", adopted.text());
    assert_eq!(
        xlen(redis.port(), &format!("{AGAIN}:1")),
        4,
        "ADOPT keeps the records"
    );
    let plan = a.run(
        &[
            "plan",
            "-detailed-exitcode",
            "-input=false",
            "-no-color",
            "-var",
            "existing_records=ADOPT",
        ],
        &[],
    );
    assert_eq!(plan.code, 0, "{}", plan.text());

    // The destroy's record carries the reason of the run that destroyed, not the one that created.
    let audit = Command::new("curl")
        .args(["-sS", "-f", "-u", &format!("admin:{ADMIN_PASSWORD}")])
        .arg(format!(
            "{url}/coord/v1/monitoring/audit?streamPrefix={AGAIN}&action=DELETE_GROUP"
        ))
        .output()
        .expect("curl runs");
    let audit: serde_json::Value =
        serde_json::from_slice(&audit.stdout).expect("the audit page is JSON");
    let reasons: Vec<&str> = audit["records"]
        .as_array()
        .expect("records")
        .iter()
        .filter_map(|r| r["reason"].as_str())
        .collect();
    assert_eq!(reasons, ["retire tf-again"], "{audit:#}");
}
