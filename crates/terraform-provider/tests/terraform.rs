//! End to end: the real terraform binary (dev_overrides, no `terraform init`, no network) drives the
//! provider built for this test against a real `rsc serve` and its own redis-server. One scenario, in the
//! order an operator lives it: create a stream and a group; the `rsc_stream` data source's lengths and lags;
//! an empty re-plan; a scale 4 → 8 that routing
//! shows; a scale done outside Terraform showing as drift; import of both resources into an empty state;
//! bad input and wrong credentials as diagnostics; destroy refused, then forced, while a member heartbeats;
//! and the audit naming the provider's requests with principal, requestedBy, reason and request id.

use crate::support;

use rsc_client::{AdminClient, Consumer, ConsumerConfig, CoordinatorClient, Credentials, Delivery};
use rsc_testkit::{RedisServer, RscBuilder};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{Workdir, rsc_binary, terraform_binary};

const ADMIN_PASSWORD: &str = "tf-e2e-admin-password";
const DEPLOYER_PASSWORD: &str = "tf-e2e-deployer-password";
const PREFIX: &str = "tf-orders";
const REASON: &str = "e2e: managed by the provider test";

/// The configuration under test; `shard_count` and `force_destroy` come from `-var`. With `converge`, scales
/// wait for the consumers to converge (bounded by a `timeouts` block).
fn main_tf(url: &str, converge: bool) -> String {
    let wait = if converge {
        "wait_for_convergence = true\n  timeouts {\n    update = \"60s\"\n  }"
    } else {
        ""
    };
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

variable "force_destroy" {{
  type    = bool
  default = false
}}

provider "rsc" {{
  endpoint       = ["{url}"]
  username       = "deployer"
  default_reason = "{REASON}"
}}

resource "rsc_stream" "orders" {{
  stream_prefix = "{PREFIX}"
  shard_count   = var.shard_count
  {wait}
}}

resource "rsc_consumer_group" "billing" {{
  stream_prefix  = rsc_stream.orders.stream_prefix
  consumer_group = "billing"
  force_destroy  = var.force_destroy
}}

data "rsc_stream" "orders" {{
  stream_prefix = rsc_stream.orders.stream_prefix
}}

output "billing_shards" {{
  value = rsc_consumer_group.billing.shard_count
}}
"#
    )
}

fn hash_password(rsc: &Path, password: &str) -> String {
    use std::io::Write;
    let mut child = Command::new(rsc)
        .arg("hash-password")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run rsc hash-password");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(password.as_bytes())
        .expect("write the password");
    let out = child.wait_with_output().expect("rsc hash-password");
    assert!(out.status.success(), "rsc hash-password failed");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

/// Polls `check` every 100 ms until it gives `Some`, for at most `bound`.
fn wait_for<T>(bound: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            start.elapsed() < bound,
            "timed out after {bound:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn terraform_manages_streams_and_groups() {
    let terraform = terraform_binary();
    let provider = env!("CARGO_BIN_EXE_terraform-provider-rsc");
    let provider_dir = Path::new(provider).parent().expect("provider dir");
    let rsc = rsc_binary();

    let redis = RedisServer::start();
    let config_dir = tempfile::tempdir().expect("config dir");
    let config = config_dir.path().join("rsc.toml");
    std::fs::write(
        &config,
        format!(
            "[[coordinator.api.users]]\nusername = \"deployer\"\npassword-hash = \"{}\"\nroles = [\"WRITE\"]\n",
            hash_password(&rsc, DEPLOYER_PASSWORD)
        ),
    )
    .expect("write rsc.toml");
    let server = RscBuilder::new(&rsc, &redis.url())
        .admin_password(ADMIN_PASSWORD)
        .fast_timings(Duration::from_secs(3), Duration::from_secs(5))
        .env("RSC_CONFIG", config.display().to_string())
        .env("COORDINATOR_STREAMS_DRAIN_GRACE", "1s")
        .start();
    let url = server.url();

    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let coord = CoordinatorClient::builder([url.clone()])
        .auth(rsc_client::Auth::Basic(Credentials::new(
            "admin",
            ADMIN_PASSWORD,
        )))
        .build()
        .expect("admin client");
    let admin = AdminClient::new(coord.clone(), "e2e-operator");
    let shard_count_of = |group: &str| -> Option<u32> {
        rt.block_on(admin.group(PREFIX, group))
            .expect("read the group")
            .map(|g| g.shard_count)
    };

    // The shipped example is a valid configuration for this provider.
    let example = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/terraform/main.tf"),
    )
    .expect("examples/terraform/main.tf");
    let checked = Workdir::new(&terraform, provider_dir, &example).ok(&["validate", "-no-color"]);
    assert!(
        checked.stdout.contains("The configuration is valid"),
        "{}",
        checked.text()
    );

    let mut a = Workdir::new(&terraform, provider_dir, &main_tf(&url, true));
    a.env("RSC_PASSWORD", DEPLOYER_PASSWORD);

    // 1. Create the stream and a group.
    let created = a.ok(&["apply", "-auto-approve", "-input=false", "-no-color"]);
    assert!(
        created
            .stdout
            .contains("Apply complete! Resources: 2 added"),
        "{}",
        created.text()
    );
    assert_eq!(
        shard_count_of(PREFIX),
        Some(4),
        "the stream's default group"
    );
    assert_eq!(shard_count_of("billing"), Some(4), "the billing group");
    assert!(
        created.stdout.contains("billing_shards = 4"),
        "{}",
        created.stdout
    );

    // The `rsc_stream` data source reads the stream's state: routing version, lengths and lags (nothing
    // produced yet: 0 everywhere), in a configuration of its own so that the main one's plans stay empty.
    let stats = Workdir::new(
        &terraform,
        provider_dir,
        &format!(
            r#"
terraform {{
  required_providers {{
    rsc = {{ source = "rsc/rsc" }}
  }}
}}

provider "rsc" {{
  endpoint = ["{url}"]
  username = "deployer"
}}

data "rsc_stream" "s" {{
  stream_prefix = "{PREFIX}"
}}

output "total_length" {{
  value = data.rsc_stream.s.total_length
}}

output "shard_lengths" {{
  value = data.rsc_stream.s.shard_lengths
}}

output "billing_lag" {{
  value = data.rsc_stream.s.group_lags["billing"]
}}

output "routing_version" {{
  value = data.rsc_stream.s.routing_version
}}
"#
        ),
    );
    let mut stats = stats;
    stats.env("RSC_PASSWORD", DEPLOYER_PASSWORD);
    let read = stats.ok(&["apply", "-auto-approve", "-input=false", "-no-color"]);
    for wanted in [
        "total_length = 0",
        "billing_lag = 0",
        "routing_version = ",
        "shard_lengths = tolist([",
    ] {
        assert!(read.stdout.contains(wanted), "{wanted}: {}", read.text());
    }

    // 2. Right after, nothing to do.
    let plan = a.run(
        &["plan", "-detailed-exitcode", "-input=false", "-no-color"],
        &[],
    );
    assert_eq!(
        plan.code,
        0,
        "a re-plan after apply must be empty:\n{}",
        plan.text()
    );

    // A member of billing heartbeats from here on (the SDK's consumer).
    let consumer = rt
        .block_on(Consumer::start(
            coord.clone(),
            ConsumerConfig::new(PREFIX, redis.url())
                .consumer_group("billing")
                .member_id("tf-e2e-member")
                .concurrency(1),
            |d: Delivery| async move {
                let _ = d.ack().await;
            },
        ))
        .expect("start a consumer of billing");
    wait_for(Duration::from_secs(30), "the member to be ACTIVE", || {
        let members = rt
            .block_on(coord.get_json(&[
                "coord",
                "v1",
                "monitoring",
                "streams",
                PREFIX,
                "groups",
                "billing",
                "members",
            ]))
            .ok()?;
        members["members"]
            .as_array()?
            .iter()
            .any(|m| m["state"] == "ACTIVE")
            .then_some(())
    });

    // 3. Scale 4 → 8 in place, waiting until the member converged; routing shows 8; the provider logs its
    //    request id.
    let log = a.dir.path().join("provider.log");
    let log_path = log.display().to_string();
    let scaled = a.run(
        &[
            "apply",
            "-auto-approve",
            "-input=false",
            "-no-color",
            "-var",
            "shard_count=8",
        ],
        &[("TF_LOG_PROVIDER", "INFO"), ("TF_LOG_PATH", &log_path)],
    );
    assert_eq!(scaled.code, 0, "{}", scaled.text());
    assert!(
        scaled.stdout.contains("1 changed, 0 destroyed"),
        "an in-place update, not a replacement:\n{}",
        scaled.stdout
    );
    let routing = rt
        .block_on(coord.producer_routing(PREFIX, "billing"))
        .expect("producer routing");
    assert_eq!(routing.shard_count, 8);
    assert_eq!(routing.shards.len(), 8);
    let billing = rt
        .block_on(admin.group(PREFIX, "billing"))
        .expect("read billing")
        .expect("billing exists");
    assert_eq!(
        billing.current_assignment_summary.get("tf-e2e-member"),
        Some(&8),
        "wait_for_convergence: the apply returned before the member held all 8 shards: {billing:?}"
    );
    let log_text = std::fs::read_to_string(&log).expect("provider log");
    let scale_request_id = log_text
        .lines()
        .filter(|l| l.contains("scale accepted by the coordinator"))
        .find_map(|l| {
            // Terraform re-renders the provider's JSON line as `message: key=value …`.
            let start = l.find("request_id=")? + "request_id=".len();
            Some(l[start..].split_whitespace().next()?.to_owned())
        })
        .unwrap_or_else(|| panic!("no scale request id in the provider's log:\n{log_text}"));
    assert!(
        scale_request_id.starts_with("terraform-"),
        "{scale_request_id}"
    );
    assert!(
        !log_text.contains(DEPLOYER_PASSWORD),
        "the password reached the log"
    );

    // 4. A scale to 6 outside Terraform (once the 4 → 8 migration ended) shows as drift back to 8.
    wait_for(
        Duration::from_secs(30),
        "the API scale to 6 to be accepted",
        || match rt.block_on(admin.scale_stream(PREFIX, 6, "e2e: drift made outside Terraform")) {
            Ok(_) => Some(()),
            Err(e) if e.error.error_code() == Some("ACTIVE_MIGRATION_EXISTS") => None,
            Err(e) => panic!("scale through the API: {e}"),
        },
    );
    let drift = a.run(
        &[
            "plan",
            "-detailed-exitcode",
            "-input=false",
            "-no-color",
            "-var",
            "shard_count=8",
        ],
        &[],
    );
    assert_eq!(
        drift.code,
        2,
        "drift must show as a change:\n{}",
        drift.text()
    );
    assert!(
        drift
            .stdout
            .lines()
            .any(|l| l.contains("~ shard_count") && l.ends_with("= 6 -> 8")),
        "{}",
        drift.stdout
    );
    assert!(
        drift.stdout.contains("updated in-place"),
        "{}",
        drift.stdout
    );

    // 5. Import both resources into an empty state; the plan is then empty. (A configuration that also sets
    //    provider-side settings — wait_for_convergence, timeouts, reason — would plan them as an in-place
    //    update that sends nothing: an import cannot know them.)
    let b = {
        let mut b = Workdir::new(&terraform, provider_dir, &main_tf(&url, false));
        b.env("RSC_PASSWORD", DEPLOYER_PASSWORD);
        b
    };
    let imported = b.ok(&[
        "import",
        "-input=false",
        "-no-color",
        "-var",
        "shard_count=6",
        "rsc_stream.orders",
        PREFIX,
    ]);
    assert!(
        imported.stdout.contains("Import successful"),
        "{}",
        imported.text()
    );
    b.ok(&[
        "import",
        "-input=false",
        "-no-color",
        "-var",
        "shard_count=6",
        "rsc_consumer_group.billing",
        &format!("{PREFIX}/billing"),
    ]);
    let state = b.ok(&["state", "show", "-no-color", "rsc_consumer_group.billing"]);
    assert!(
        state.stdout.contains("shard_count") && state.stdout.contains("= 6"),
        "{}",
        state.stdout
    );
    let plan = b.run(
        &[
            "plan",
            "-detailed-exitcode",
            "-input=false",
            "-no-color",
            "-var",
            "shard_count=6",
        ],
        &[],
    );
    assert_eq!(
        plan.code,
        0,
        "after import the plan must be empty:\n{}",
        plan.text()
    );
    let bad_id = b.run(
        &[
            "import",
            "-input=false",
            "-no-color",
            "rsc_consumer_group.other",
            "no-slash",
        ],
        &[],
    );
    assert_eq!(bad_id.code, 1, "{}", bad_id.text());

    // 6. Bad input and wrong credentials: diagnostics naming the attribute and the coordinator's errorCode.
    for (var, expect) in [
        (
            "shard_count=0",
            "initialShardCount: must be between 1 and 16384 (got 0)",
        ),
        (
            "shard_count=20000",
            "initialShardCount: must be between 1 and 16384 (got 20000)",
        ),
    ] {
        let bad = b.run(&["plan", "-input=false", "-no-color", "-var", var], &[]);
        assert_eq!(bad.code, 1, "{}", bad.text());
        let text = bad.text();
        assert!(
            text.contains("INVALID_REQUEST") && text.contains(expect),
            "{text}"
        );
        assert!(
            text.contains("with rsc_stream.orders")
                && text.contains("shard_count   = var.shard_count"),
            "the diagnostic points at the attribute:\n{text}"
        );
    }
    let bad_prefix_dir = Workdir::new(
        &terraform,
        provider_dir,
        &main_tf(&url, false).replace(&format!("\"{PREFIX}\""), "\"bad{prefix}\""),
    );
    let bad = bad_prefix_dir.run(
        &["plan", "-input=false", "-no-color"],
        &[("RSC_PASSWORD", DEPLOYER_PASSWORD)],
    );
    assert_eq!(bad.code, 1, "{}", bad.text());
    assert!(
        bad.text()
            .contains("INVALID_REQUEST: streamPrefix: must not contain '{' or '}'"),
        "{}",
        bad.text()
    );
    let wrong = b.run(
        &["plan", "-input=false", "-no-color", "-var", "shard_count=6"],
        &[("RSC_PASSWORD", "wrong-password")],
    );
    assert_eq!(wrong.code, 1, "{}", wrong.text());
    assert!(wrong.text().contains("UNAUTHORIZED"), "{}", wrong.text());

    // 7. Destroy while the member heartbeats: refused without force_destroy (state kept), done with it.
    let refused = a.run(
        &[
            "destroy",
            "-auto-approve",
            "-input=false",
            "-no-color",
            "-var",
            "shard_count=8",
        ],
        &[],
    );
    assert_eq!(refused.code, 1, "{}", refused.text());
    assert!(
        refused.text().contains("GROUP_HAS_ACTIVE_MEMBERS"),
        "{}",
        refused.text()
    );
    assert!(
        shard_count_of("billing").is_some(),
        "the group must still exist"
    );
    let listed = a.ok(&["state", "list"]);
    assert!(
        listed.stdout.contains("rsc_consumer_group.billing"),
        "a failed destroy keeps the state:\n{}",
        listed.stdout
    );
    // The apply that sets force_destroy also scales the drifted stream back to 8, once the API's scale to 6
    // has ended (a second migration is refused while one is active).
    wait_for(Duration::from_secs(30), "the scale to 6 to end", || {
        let view = rt
            .block_on(coord.get_json(&[
                "coord",
                "v1",
                "monitoring",
                "streams",
                PREFIX,
                "groups",
                "billing",
                "migrations",
            ]))
            .ok()?;
        view["activeReshardingId"].is_null().then_some(())
    });
    let forced_vars = ["-var", "shard_count=8", "-var", "force_destroy=true"];
    let mut args = vec!["apply", "-auto-approve", "-input=false", "-no-color"];
    args.extend(forced_vars);
    a.ok(&args);
    assert_eq!(shard_count_of("billing"), Some(8), "apply undid the drift");
    // A group no configuration manages keeps the stream: its destroy is refused, naming the group.
    rt.block_on(admin.create_group(PREFIX, "outsider", None, "e2e: a group outside Terraform"))
        .expect("create a group through the API");
    let mut args = vec!["destroy", "-auto-approve", "-input=false", "-no-color"];
    args.extend(forced_vars);
    let kept = a.run(&args, &[]);
    assert_eq!(kept.code, 1, "{}", kept.text());
    assert!(
        kept.text()
            .contains("stream \"tf-orders\" still has consumer groups: outsider"),
        "{}",
        kept.text()
    );
    let listed = a.ok(&["state", "list"]);
    assert!(
        listed.stdout.contains("rsc_stream.orders")
            && !listed.stdout.contains("rsc_consumer_group.billing"),
        "the group was destroyed, the stream kept:\n{}",
        listed.stdout
    );
    rt.block_on(admin.delete_group(PREFIX, "outsider", false, "e2e: remove the outsider"))
        .expect("delete the outsider");
    let destroyed = a.ok(&args);
    assert!(
        destroyed
            .stdout
            .contains("Destroy complete! Resources: 1 destroyed"),
        "{}",
        destroyed.text()
    );
    assert!(
        rt.block_on(admin.stream_groups(PREFIX))
            .expect("groups")
            .is_empty(),
        "the stream is gone"
    );
    rt.block_on(consumer.shutdown());

    // Deleted outside a configuration (here by the other working directory's destroy): planned as creates.
    let gone = b.run(
        &[
            "plan",
            "-detailed-exitcode",
            "-input=false",
            "-no-color",
            "-var",
            "shard_count=6",
        ],
        &[],
    );
    assert_eq!(gone.code, 2, "{}", gone.text());
    for created in [
        "rsc_stream.orders will be created",
        "rsc_consumer_group.billing will be created",
    ] {
        assert!(
            gone.stdout.contains(created),
            "{created:?} missing:\n{}",
            gone.stdout
        );
    }

    // 8. The audit lists the provider's requests: principal, requestedBy, reason, request id.
    let audit = rt
        .block_on(coord.get_json(&["coord", "v1", "monitoring", "audit"]))
        .expect("audit");
    let ours: Vec<&Value> = audit["records"]
        .as_array()
        .expect("records")
        .iter()
        .filter(|r| r["principal"] == "deployer" && r["streamPrefix"] == PREFIX)
        .collect();
    let actions: Vec<(&str, &str)> = ours
        .iter()
        .map(|r| {
            (
                r["action"].as_str().unwrap_or(""),
                r["outcome"].as_str().unwrap_or(""),
            )
        })
        .collect();
    for expected in [
        ("CREATE_STREAM", "SUCCESS"),
        ("CREATE_GROUP", "SUCCESS"),
        ("SCALE_STREAM", "SUCCESS"),
        ("DELETE_GROUP", "FAILED"),
        ("DELETE_GROUP", "SUCCESS"),
    ] {
        assert!(
            actions.contains(&expected),
            "audit lacks {expected:?}: {actions:?}"
        );
    }
    for r in &ours {
        assert_eq!(r["requestedBy"], "terraform", "{r}");
        assert_eq!(r["reason"], REASON, "{r}");
        assert!(
            r["requestId"]
                .as_str()
                .is_some_and(|id| id.starts_with("terraform-")),
            "{r}"
        );
    }
    assert!(
        ours.iter()
            .any(|r| r["requestId"] == scale_request_id.as_str() && r["action"] == "SCALE_STREAM"),
        "the request id the provider logged is in the audit"
    );
}
