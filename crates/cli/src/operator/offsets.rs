//! `rsc offsets reset <stream> <group> --to-earliest|--to-latest|--to-datetime T|--to-id ID|--shift-by N`:
//! moves a consumer group's position on its shard streams (`POST …/offsets/reset`). It first asks for the plan
//! (a dry run) and prints it per shard — current id → new id, records skipped or read again (`clamped` when a
//! shift met the stream's end), pending entries — then
//! asks for confirmation (`--yes` skips the question; without a terminal it refuses unless `--yes`) and
//! applies it. `--dry-run` prints the plan only.

use super::attribution::Attribution;
use super::table::Table;
use super::{Failure, Output, Session, Target, confirm, n, print_json, s};
use clap::{ArgGroup, Args, Subcommand};
use rsc_client::Method;
use serde_json::{Value, json};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct OffsetsArgs {
    #[command(subcommand)]
    pub action: OffsetsAction,
}

#[derive(Subcommand, Debug)]
pub enum OffsetsAction {
    /// Move the group's position (its consumers must be stopped): plan, confirm, apply.
    Reset(ResetArgs),
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("to").required(true).args(["to_earliest", "to_latest", "to_datetime", "to_id", "shift_by"])))]
pub struct ResetArgs {
    #[command(flatten)]
    pub target: Target,
    /// The stream prefix.
    pub stream: String,
    /// The consumer group.
    pub group: String,
    /// Read every record still in the shard streams again.
    #[arg(long)]
    pub to_earliest: bool,
    /// Skip every record not read yet.
    #[arg(long)]
    pub to_latest: bool,
    /// Read again (or skip to) the records appended at or after this RFC 3339 time.
    #[arg(long, value_name = "TIME")]
    pub to_datetime: Option<String>,
    /// Read the records after this stream id next.
    #[arg(long, value_name = "ID")]
    pub to_id: Option<String>,
    /// Move each shard's position by N records: -100 reads the last 100 delivered records again, 50 skips
    /// the next 50 (at most 10,000 either way; clamped at the stream's ends).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub shift_by: Option<i64>,
    /// Only these shards (comma-separated; default: every shard).
    #[arg(long, value_delimiter = ',')]
    pub shards: Vec<u32>,
    /// Print the plan and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Proceed although the group lists members whose lease has lapsed (never over a live lease).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub why: Attribution,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub yes: bool,
}

pub async fn run(args: OffsetsArgs) -> Result<ExitCode, Failure> {
    match args.action {
        OffsetsAction::Reset(a) => reset(a).await,
    }
}

/// The request body (without `dryRun`).
fn body(a: &ResetArgs, requested_by: String) -> Value {
    let (to, value) = if a.to_earliest {
        ("EARLIEST", None)
    } else if a.to_latest {
        ("LATEST", None)
    } else if let Some(t) = &a.to_datetime {
        ("DATETIME", Some(t.clone()))
    } else if a.shift_by.is_some() {
        ("SHIFT", None)
    } else {
        ("ID", a.to_id.clone())
    };
    let mut body = json!({"to": to, "requestedBy": requested_by, "force": a.force});
    if let Some(n) = a.shift_by {
        body["shift"] = json!(n);
    }
    if let Some(v) = value {
        body["value"] = json!(v);
    }
    if !a.shards.is_empty() {
        body["shards"] = json!(a.shards);
    }
    body["reason"] = json!(a.why.reason);
    body
}

/// The plan (or what was done) as a table, one row per shard.
pub fn plan_table(answer: &Value) -> String {
    let mut t = Table::new(&[
        "SHARD", "CURRENT", "NEW", "MOVE", "RECORDS", "PENDING", "ACKED",
    ]);
    for r in answer["shards"].as_array().into_iter().flatten() {
        let direction = s(r, "direction");
        let count = match direction {
            "SKIP" => n(r, "recordsSkipped"),
            "REREAD" => n(r, "recordsReread"),
            _ => "0".to_owned(),
        };
        let capped = if r["countCapped"] == true { "+" } else { "" };
        let clamped = if r["clamped"] == true {
            " (clamped)"
        } else {
            ""
        };
        let verb = match direction {
            "SKIP" => "skipped",
            "REREAD" => "re-read",
            _ => "",
        };
        t.row(vec![
            n(r, "shardIndex"),
            s(r, "currentId").to_owned(),
            s(r, "newId").to_owned(),
            direction.to_owned(),
            format!("{count}{capped} {verb}{clamped}").trim().to_owned(),
            format!("{} -> {}", n(r, "pendingBefore"), n(r, "pendingAfter")),
            n(r, "pendingAcknowledged"),
        ]);
    }
    t.render()
}

async fn reset(a: ResetArgs) -> Result<ExitCode, Failure> {
    let session = Session::open(&a.target).await?;
    let path = [
        "coord", "v1", "streams", &a.stream, "groups", &a.group, "offsets", "reset",
    ];
    let mut request = body(&a, a.why.requested_by(&session));
    request["dryRun"] = json!(true);
    let (plan, plan_id) = session.mutate(Method::POST, &path, &request).await?;
    let text = a.target.output == Output::Text;
    if text {
        sayln!(
            "PLAN for {}/{} (to {}{}):",
            a.stream,
            a.group,
            s(&plan, "to"),
            plan.get("value")
                .and_then(Value::as_str)
                .map(|v| format!(" {v}"))
                .or_else(|| plan
                    .get("shift")
                    .and_then(Value::as_i64)
                    .map(|n| format!(" {n:+}")))
                .unwrap_or_default()
        );
        say!("{}", plan_table(&plan));
    }
    if a.dry_run {
        if !text {
            print_json(&json!({"requestId": plan_id, "answer": plan}));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !a.yes
        && !confirm(&format!(
            "reset the position of {}/{} as above?",
            a.stream, a.group
        ))
    {
        return Err(Failure::new(
            "not confirmed: nothing was changed (answer y on a terminal, or pass --yes)",
        ));
    }
    request["dryRun"] = json!(false);
    let (done, request_id) = session.mutate(Method::POST, &path, &request).await?;
    if text {
        sayln!(
            "reset of {}/{} done (request id {request_id}):",
            a.stream,
            a.group
        );
        say!("{}", plan_table(&done));
        for note in done["notes"].as_array().into_iter().flatten() {
            sayln!("note: {}", note.as_str().unwrap_or(""));
        }
    } else {
        print_json(&json!({"requestId": request_id, "answer": done}));
    }
    Ok(ExitCode::SUCCESS)
}
