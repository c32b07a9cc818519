//! `rsc plan` and `rsc apply`: compare a desired-state file (`desired.rs`) with what the coordinator's read
//! APIs report, print the changes, and (apply) make them with a WRITE principal — each with a fresh
//! `X-Request-Id`, `requestedBy` and a reason, printing the request ids so the audit log can be searched.
//!
//! Exit codes follow terraform's `-detailed-exitcode`: plan 0 = no changes, 2 = changes, 1 = error.

use super::desired::{self, Change, CurrentGroup, Plan};
use super::{Failure, Output, Session, Target, confirm, print_json, s};
use clap::Args;
use rsc_client::Method;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(flatten)]
    pub target: Target,
    /// The desired-state file (TOML; see docs/cli.md, "Operating with the `rsc` CLI": GitOps admin mutation).
    #[arg(short = 'f', long = "file")]
    pub file: PathBuf,
}

#[derive(Args, Debug)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub target: Target,
    #[arg(short = 'f', long = "file")]
    pub file: PathBuf,
    /// Why (recorded with every change; default: "rsc apply <file>").
    #[allow(rustdoc::invalid_html_tags)] // the doc is the option's --help text, shown as written
    #[arg(long)]
    pub reason: Option<String>,
    /// Who asks (default: the logged-in user).
    #[arg(long)]
    pub requested_by: Option<String>,
    /// Apply without asking.
    #[arg(long)]
    pub auto_approve: bool,
    /// What a stream creation does with records an earlier stream of the same prefix left in Redis:
    /// refuse (default), adopt them (consume what was not read) or purge them.
    #[arg(long, value_enum)]
    pub existing_records: Option<ExistingRecordsArg>,
}

/// `--existing-records` (the API's `existingRecords`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExistingRecordsArg {
    Refuse,
    Adopt,
    Purge,
}

impl ExistingRecordsArg {
    fn wire(self) -> &'static str {
        match self {
            ExistingRecordsArg::Refuse => "REFUSE",
            ExistingRecordsArg::Adopt => "ADOPT",
            ExistingRecordsArg::Purge => "PURGE",
        }
    }
}

/// Reads the file and the coordinator's groups, and compares them.
async fn make_plan(session: &Session, file: &PathBuf) -> Result<Plan, Failure> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let wanted = desired::parse(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    let list = session
        .get(&["coord", "v1", "monitoring", "groups"], &[])
        .await?;
    let mut current = Vec::new();
    for g in list["groups"].as_array().cloned().unwrap_or_default() {
        let (p, c) = (s(&g, "streamPrefix"), s(&g, "consumerGroup"));
        // Only the groups of streams the file names need their members and migrations looked up.
        let named = wanted.stream.iter().any(|st| st.prefix == p);
        let (live, migration) = if named {
            let base = ["coord", "v1", "monitoring", "streams", p, "groups", c];
            let members = session
                .get(&[&base[..], &["members"]].concat(), &[])
                .await?;
            let live = members["members"].as_array().map_or(0, |m| {
                m.iter()
                    .filter(|m| matches!(s(m, "state"), "ACTIVE" | "LEAVING"))
                    .count()
            });
            let migrations = session
                .get(&[&base[..], &["migrations"]].concat(), &[])
                .await?;
            (
                live as u64,
                migrations
                    .get("activeReshardingId")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            )
        } else {
            (0, None)
        };
        current.push(CurrentGroup {
            stream_prefix: p.to_owned(),
            consumer_group: c.to_owned(),
            shard_count: g.get("shardCount").and_then(Value::as_u64).unwrap_or(0) as u32,
            live_members: live,
            active_migration: migration,
        });
    }
    Ok(desired::plan(&wanted, &current))
}

fn print_plan(target: &Target, plan: &Plan) {
    if target.output == Output::Json {
        print_json(&json!({
            "changes": plan.changes.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "untouched": plan.untouched, "problems": plan.problems, "notes": plan.notes,
        }));
        return;
    }
    if plan.changes.is_empty() {
        sayln!("No changes: the coordinator matches the file.");
    } else {
        for c in &plan.changes {
            sayln!("{c}");
        }
        sayln!("Plan: {} to change.", plan.changes.len());
    }
    for n in &plan.notes {
        sayln!("note: {n}");
    }
    if !plan.untouched.is_empty() {
        sayln!("Not in the file, left alone: {}", plan.untouched.join(", "));
    }
    for p in &plan.problems {
        esayln!("problem: {p}");
    }
}

pub async fn plan(args: PlanArgs) -> Result<ExitCode, Failure> {
    let session = Session::open(&args.target).await?;
    let plan = make_plan(&session, &args.file).await?;
    print_plan(&args.target, &plan);
    if !plan.problems.is_empty() {
        return Err(Failure::new(format!(
            "{} problem(s): apply would refuse this plan",
            plan.problems.len()
        )));
    }
    Ok(if plan.changes.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

pub async fn apply(args: ApplyArgs) -> Result<ExitCode, Failure> {
    let session = Session::open(&args.target).await?;
    let plan = make_plan(&session, &args.file).await?;
    print_plan(&args.target, &plan);
    if !plan.problems.is_empty() {
        return Err(Failure::new(format!(
            "{} problem(s): nothing was applied",
            plan.problems.len()
        )));
    }
    if plan.changes.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    if !args.auto_approve && !confirm("Apply these changes?") {
        return Err(Failure::new(
            "not confirmed: nothing was applied (answer y on a terminal, or pass --auto-approve)",
        ));
    }
    let requested_by = session.requested_by(args.requested_by.as_deref());
    let reason = args
        .reason
        .clone()
        .unwrap_or_else(|| format!("rsc apply {}", args.file.display()));
    let mut applied = Vec::new();
    for change in &plan.changes {
        let (method, segments, body): (Method, Vec<&str>, Value) = match change {
            Change::CreateStream {
                prefix,
                shards,
                group,
            } => {
                let mut body = json!({"initialShardCount": shards, "requestedBy": requested_by, "reason": reason});
                if let Some(choice) = args.existing_records {
                    body["existingRecords"] = choice.wire().into();
                }
                (
                    Method::POST,
                    vec!["coord", "v1", "streams", prefix, "groups", group],
                    body,
                )
            }
            Change::CreateGroup { prefix, group } => (
                Method::POST,
                vec!["coord", "v1", "streams", prefix, "groups", group],
                json!({"requestedBy": requested_by, "reason": reason}),
            ),
            Change::Scale { prefix, to, .. } => (
                Method::POST,
                vec!["coord", "v1", "streams", prefix, "scale"],
                json!({"targetShardCount": to, "requestedBy": requested_by, "reason": reason}),
            ),
            Change::DeleteGroup {
                prefix,
                group,
                force,
                ..
            } => (
                Method::DELETE,
                vec!["coord", "v1", "streams", prefix, "groups", group],
                json!({"requestedBy": requested_by, "reason": reason, "force": force}),
            ),
        };
        match session.mutate(method, &segments, &body).await {
            Ok((_, request_id)) => {
                if args.target.output == Output::Text {
                    sayln!("{change}: done (request id {request_id})");
                }
                applied.push(json!({"change": change.to_string(), "requestId": request_id}));
            }
            Err(f) => {
                if args.target.output == Output::Json {
                    print_json(
                        &json!({"applied": applied, "failed": change.to_string(), "error": f.message}),
                    );
                }
                return Err(Failure::new(format!(
                    "{change}: {}; {} change(s) before it were applied, the rest were not",
                    f.message,
                    applied.len()
                )));
            }
        }
    }
    if args.target.output == Output::Json {
        print_json(&json!({"applied": applied}));
    } else {
        sayln!(
            "Apply complete: {} change(s). Find them with: rsc audit --since 15m",
            applied.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}
