//! `rsc scale`, `rsc rollback`, `rsc force-complete`: admin mutations with a fresh `X-Request-Id`,
//! `requestedBy` (default: the logged-in user) and a required reason. With `--wait`, a progress bar per
//! affected group (indicatif; plain lines when stdout is not a terminal) until every group reports the
//! migration ended as asked; Ctrl-C stops waiting, never the migration. `rsc scale --quiesce-timeout` asks
//! for producer quiesce (`producerQuiesce: {timeoutMs}`).

use super::attribution::Attribution;
use super::{Failure, Output, Session, Target, confirm, now_ms, print_json, s};
use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use rsc_client::Method;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ScaleArgs {
    #[command(flatten)]
    pub target: Target,
    /// The stream prefix.
    pub stream: String,
    /// The new shard count (every consumer group of the stream follows).
    #[arg(long)]
    pub shards: u32,
    #[command(flatten)]
    pub why: Attribution,
    /// Wait until every group reports the migration complete, showing progress.
    #[arg(long)]
    pub wait: bool,
    /// Give up waiting after this long (e.g. 10m); the migration goes on.
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
    pub wait_timeout: Duration,
    /// Quiesce SDK producers before switching routing (`producerQuiesce`): the switch waits until every
    /// producer seen has quiesced, or this long at most (e.g. 30s; 1 ms to 10 min), then is forced.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub quiesce_timeout: Option<Duration>,
}

/// The scale request's body: `producerQuiesce.timeoutMs` only with `--quiesce-timeout`.
fn scale_body(args: &ScaleArgs, requested_by: &str) -> Result<Value, Failure> {
    let mut body = json!({
        "targetShardCount": args.shards,
        "requestedBy": requested_by,
        "reason": args.why.reason,
    });
    if let Some(t) = args.quiesce_timeout {
        let ms = t.as_millis();
        if ms == 0 || ms > 600_000 {
            return Err(Failure::new(format!(
                "--quiesce-timeout {} must be between 1ms and 10m",
                humantime::format_duration(t)
            )));
        }
        body["producerQuiesce"] = json!({ "timeoutMs": ms as u64 });
    }
    Ok(body)
}

#[derive(Args, Debug)]
pub struct EndMigrationArgs {
    #[command(flatten)]
    pub target: Target,
    /// The stream prefix.
    pub stream: String,
    /// The migration (default: the stream's active one).
    #[arg(long)]
    pub migration: Option<String>,
    #[command(flatten)]
    pub why: Attribution,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub yes: bool,
    /// Wait until every group reports the migration ended.
    #[arg(long)]
    pub wait: bool,
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
    pub wait_timeout: Duration,
}

/// Which end a wait is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Goal {
    Complete,
    RolledBack,
    ForceCompleted,
}

impl Goal {
    fn reached(self, state: &str) -> Option<bool> {
        let ok = match self {
            Goal::Complete => state == "DEPRECATED",
            Goal::RolledBack => matches!(state, "ROLLED_BACK" | "ABORTED"),
            Goal::ForceCompleted => matches!(state, "FORCE_COMPLETED" | "ABORTED"),
        };
        let ended = matches!(
            state,
            "DEPRECATED" | "ROLLED_BACK" | "FORCE_COMPLETED" | "ABORTED"
        );
        ended.then_some(ok)
    }
}

pub async fn scale(args: ScaleArgs) -> Result<ExitCode, Failure> {
    if args.shards > rsc_protocol::validate::MAX_SHARD_COUNT {
        return Err(Failure::new(format!(
            "--shards {} is above the maximum of {}",
            args.shards,
            rsc_protocol::validate::MAX_SHARD_COUNT
        )));
    }
    let session = Session::open(&args.target).await?;
    let body = scale_body(&args, &args.why.requested_by(&session))?;
    let (answer, request_id) = session
        .mutate(
            Method::POST,
            &["coord", "v1", "streams", &args.stream, "scale"],
            &body,
        )
        .await?;
    let migrations: Vec<(String, String)> = answer
        .get("migrations")
        .and_then(Value::as_array)
        .map(|ms| {
            ms.iter()
                .map(|m| {
                    (
                        s(m, "consumerGroup").to_owned(),
                        s(m, "reshardingId").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    match args.target.output {
        Output::Json if !args.wait => {
            print_json(&json!({"requestId": request_id, "answer": answer}))
        }
        Output::Json => {}
        Output::Text => sayln!(
            "Scale of {} to {} shards accepted (request id {request_id}); migrations: {}",
            args.stream,
            args.shards,
            migrations
                .iter()
                .map(|(g, id)| format!("{g} {id}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
    if !args.wait {
        return Ok(ExitCode::SUCCESS);
    }
    let code = wait(
        &session,
        &args.stream,
        &migrations,
        Goal::Complete,
        args.wait_timeout,
    )
    .await?;
    if args.target.output == Output::Json {
        print_json(
            &json!({"requestId": request_id, "answer": answer, "completed": code == ExitCode::SUCCESS}),
        );
    }
    Ok(code)
}

pub async fn rollback(args: EndMigrationArgs) -> Result<ExitCode, Failure> {
    end_migration(args, "rollback", Goal::RolledBack).await
}

pub async fn force_complete(args: EndMigrationArgs) -> Result<ExitCode, Failure> {
    end_migration(args, "force-complete", Goal::ForceCompleted).await
}

async fn end_migration(
    args: EndMigrationArgs,
    verb: &str,
    goal: Goal,
) -> Result<ExitCode, Failure> {
    let session = Session::open(&args.target).await?;
    let groups = stream_groups(&session, &args.stream).await?;
    let Some(first) = groups.first() else {
        return Err(Failure::new(format!(
            "stream {:?} has no consumer group this principal may see",
            args.stream
        )));
    };
    let id = match &args.migration {
        Some(id) => id.clone(),
        None => {
            let m = session
                .get(
                    &[
                        "coord",
                        "v1",
                        "monitoring",
                        "streams",
                        &args.stream,
                        "groups",
                        first,
                        "migrations",
                    ],
                    &[],
                )
                .await?;
            m.get("activeReshardingId")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    Failure::new(format!(
                        "stream {:?} has no active migration to {verb}",
                        args.stream
                    ))
                })?
        }
    };
    if !args.yes
        && !confirm(&format!(
            "{verb} migration {id} of stream {:?} ({} groups: {})?",
            args.stream,
            groups.len(),
            groups.join(", ")
        ))
    {
        return Err(Failure::new(
            "not confirmed: nothing was sent (answer y on a terminal, or pass --yes)",
        ));
    }
    let body = json!({
        "requestedBy": args.why.requested_by(&session),
        "reason": args.why.reason,
    });
    let (answer, request_id) = session
        .mutate(
            Method::POST,
            &[
                "coord",
                "v1",
                "streams",
                &args.stream,
                "groups",
                first,
                "migrations",
                &id,
                verb,
            ],
            &body,
        )
        .await?;
    match args.target.output {
        Output::Json if !args.wait => {
            print_json(&json!({"requestId": request_id, "answer": answer}))
        }
        Output::Json => {}
        Output::Text => sayln!(
            "{verb} of migration {id} of {} accepted (request id {request_id}); state {}",
            args.stream,
            s(&answer, "state")
        ),
    }
    if !args.wait {
        return Ok(ExitCode::SUCCESS);
    }
    let migrations: Vec<(String, String)> =
        groups.iter().map(|g| (g.clone(), id.clone())).collect();
    let code = wait(&session, &args.stream, &migrations, goal, args.wait_timeout).await?;
    if args.target.output == Output::Json {
        print_json(
            &json!({"requestId": request_id, "answer": answer, "ended": code == ExitCode::SUCCESS}),
        );
    }
    Ok(code)
}

/// The consumer groups of a stream, as the monitoring list shows them.
pub async fn stream_groups(session: &Session, stream: &str) -> Result<Vec<String>, Failure> {
    let list = session
        .get(&["coord", "v1", "monitoring", "groups"], &[])
        .await?;
    let list = list.get("groups").cloned().unwrap_or(Value::Null);
    Ok(list
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|g| s(g, "streamPrefix") == stream)
        .map(|g| s(g, "consumerGroup").to_owned())
        .collect())
}

/// One group's progress, as a line.
struct Progress {
    state: String,
    converged: u64,
    target: u64,
    /// A scale-in: removed shards drain (a scale-out has none, and no drain fields are shown).
    scale_in: bool,
    draining_left: usize,
    grace_left_ms: i64,
    /// The coordinator's `heldBy`: why the migration has not ended in this group, and the ways out.
    held: Option<Value>,
}

impl Progress {
    fn message(&self) -> String {
        let mut msg = self.state.clone();
        if self.scale_in {
            msg.push_str(&format!(
                "  draining shards left {}  drain grace left {:.0}s",
                self.draining_left,
                self.grace_left_ms as f64 / 1000.0
            ));
        }
        if let Some(h) = &self.held
            && matches!(s(h, "reason"), "NO_LIVE_CONSUMER")
        {
            msg.push_str(&format!("  HELD: {}", s(h, "detail")));
        }
        msg
    }
}

/// A held migration's diagnosis and ways out, in one paragraph (`heldBy` of the migration detail).
pub fn hold_text(h: &Value) -> String {
    let ways: Vec<String> = h
        .get("waysOut")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|w| format!("{} ({})", s(w, "how"), s(w, "effect")))
        .collect();
    format!(
        "held by group {} ({}): {}. Ways out: {}",
        s(h, "consumerGroup"),
        s(h, "reason"),
        s(h, "detail"),
        ways.join("; ")
    )
}

async fn progress(
    session: &Session,
    stream: &str,
    group: &str,
    id: &str,
) -> Result<Progress, Failure> {
    let m = session
        .get(
            &[
                "coord",
                "v1",
                "streams",
                stream,
                "groups",
                group,
                "migrations",
                id,
            ],
            &[],
        )
        .await?;
    let target = m.get("toShardCount").and_then(Value::as_u64).unwrap_or(0);
    let members = session
        .get(
            &[
                "coord",
                "v1",
                "monitoring",
                "streams",
                stream,
                "groups",
                group,
                "members",
            ],
            &[],
        )
        .await?;
    let mut owned = std::collections::BTreeSet::new();
    for mm in members["members"].as_array().cloned().unwrap_or_default() {
        if !matches!(s(&mm, "state"), "ACTIVE" | "LEAVING") {
            continue;
        }
        for sh in mm
            .get("currentAssignment")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
        {
            if let Some(i) = sh
                .get("shardIndex")
                .and_then(Value::as_u64)
                .or_else(|| sh.as_u64())
                && i < target
            {
                owned.insert(i);
            }
        }
    }
    let draining_left = m
        .get("removedShards")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter(|x| {
                    x.get("draining").and_then(Value::as_bool) == Some(true)
                        || x.get("lag").and_then(Value::as_i64).unwrap_or(0) > 0
                        || x.get("pending").and_then(Value::as_i64).unwrap_or(0) > 0
                })
                .count()
        })
        .unwrap_or(0);
    let grace_left_ms = humantime::parse_rfc3339(s(&m, "drainEvidenceFrom"))
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| (d.as_millis() as i64 - now_ms()).max(0));
    let from = m.get("fromShardCount").and_then(Value::as_u64).unwrap_or(0);
    Ok(Progress {
        state: s(&m, "state").to_owned(),
        converged: owned.len() as u64,
        target,
        scale_in: from > target,
        draining_left,
        grace_left_ms,
        held: m.get("heldBy").filter(|h| h.is_object()).cloned(),
    })
}

/// Polls every group's migration once a second until each has ended as `goal` asks.
async fn wait(
    session: &Session,
    stream: &str,
    migrations: &[(String, String)],
    goal: Goal,
    timeout: Duration,
) -> Result<ExitCode, Failure> {
    let tty = std::io::stdout().is_terminal() && session.target.output == Output::Text;
    let bars = MultiProgress::new();
    let style =
        ProgressStyle::with_template("{prefix:>16} [{bar:30}] {pos}/{len} shards owned  {msg}")
            .map_err(|e| e.to_string())?
            .progress_chars("=> ");
    let mut shown: BTreeMap<&str, ProgressBar> = BTreeMap::new();
    let mut last_line: BTreeMap<&str, String> = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut ended: BTreeMap<&str, bool> = BTreeMap::new();
    let mut holds: BTreeMap<&str, Value> = BTreeMap::new();
    loop {
        for (group, id) in migrations {
            if ended.contains_key(group.as_str()) {
                continue;
            }
            let p = progress(session, stream, group, id).await?;
            let msg = p.message();
            match &p.held {
                Some(h) => holds.insert(group, h.clone()),
                None => holds.remove(group.as_str()),
            };
            if tty {
                let bar = shown.entry(group).or_insert_with(|| {
                    let b = bars.add(ProgressBar::new(p.target));
                    b.set_style(style.clone());
                    b.set_prefix(group.clone());
                    b
                });
                bar.set_length(p.target);
                bar.set_position(p.converged);
                bar.set_message(msg.clone());
            } else if session.target.output == Output::Text {
                let line = format!("{group}: {}/{} shards owned  {msg}", p.converged, p.target);
                if last_line.get(group.as_str()) != Some(&line) {
                    sayln!("{line}");
                    last_line.insert(group, line);
                }
            }
            if let Some(ok) = goal.reached(&p.state) {
                if let Some(bar) = shown.get(group.as_str()) {
                    bar.finish();
                }
                ended.insert(group, ok);
            }
        }
        if ended.len() == migrations.len() {
            let failed: Vec<&str> = ended
                .iter()
                .filter(|(_, ok)| !**ok)
                .map(|(g, _)| *g)
                .collect();
            if failed.is_empty() {
                if session.target.output == Output::Text {
                    sayln!("Done: every group ended the migration as asked");
                }
                return Ok(ExitCode::SUCCESS);
            }
            return Err(Failure::new(format!(
                "the migration ended otherwise than asked in groups {}: see rsc describe {stream} <group>",
                failed.join(", ")
            )));
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = tokio::signal::ctrl_c() => {
                return Err(Failure {
                    message: format!("stopped waiting; the migration goes on (rsc describe {stream} <group>)"),
                    code: 130,
                });
            }
        }
        if tokio::time::Instant::now() >= deadline {
            let why: Vec<String> = holds
                .iter()
                .filter(|(g, _)| !ended.contains_key(*g))
                .map(|(_, h)| hold_text(h))
                .collect();
            return Err(Failure::new(format!(
                "still not ended after {}; the migration goes on (rsc describe {stream} <group>){}",
                humantime::format_duration(timeout),
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {}", why.join(" | "))
                }
            )));
        }
    }
}
