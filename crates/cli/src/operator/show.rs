//! Read-only verbs: `rsc health`, `rsc groups`, `rsc describe` (a group; a whole stream in `describe_stream.rs`), `rsc version` (`rsc upgrade-check` is in
//! `upgrade_check.rs`). They use only READ routes, so a monitoring principal can run them.

use super::table::Table;
use super::{Failure, Output, Session, Target, n, print_json, s};
use clap::Args;
use serde_json::{Value, json};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct DescribeArgs {
    #[command(flatten)]
    pub target: Target,
    /// The stream prefix.
    pub stream: String,
    /// The consumer group (absent: the stream as a whole — shards, groups side by side, rates).
    pub group: Option<String>,
}

/// `rsc health`: exit 0 only when the coordinator says UP.
pub async fn health(target: Target) -> Result<ExitCode, Failure> {
    let session = Session::open(&target).await?;
    let h = session
        .get(&["coord", "v1", "monitoring", "health"], &[])
        .await?;
    let status = s(&h, "status").to_owned();
    match target.output {
        Output::Json => print_json(&h),
        Output::Text => {
            sayln!("{status}  coordinator {}", s(&h, "coordinatorId"));
            let mut t = Table::new(&["COMPONENT", "STATUS", "DETAIL"]);
            if let Some(components) = h.get("components").and_then(Value::as_object) {
                for (name, c) in components {
                    let detail = match name.as_str() {
                        "reconciler" => s(c, "lastRunAt").to_owned(),
                        "metadataDurability" => c
                            .get("suspectedGroups")
                            .and_then(Value::as_array)
                            .filter(|g| !g.is_empty())
                            .map(|g| {
                                let names: Vec<String> = g
                                    .iter()
                                    .map(|x| {
                                        format!(
                                            "{}/{}",
                                            s(x, "streamPrefix"),
                                            s(x, "consumerGroup")
                                        )
                                    })
                                    .collect();
                                format!(
                                    "suspected of a metadata rollback: {} (rsc durability show <stream> <group>)",
                                    names.join(", ")
                                )
                            })
                            .unwrap_or_default(),
                        _ => s(c, "detail").to_owned(),
                    };
                    t.row(vec![name.clone(), s(c, "status").to_owned(), detail]);
                }
            }
            say!("{}", t.render());
        }
    }
    Ok(if status == "UP" {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// One group's line of `rsc groups`.
struct GroupLine {
    summary: Value,
    live: usize,
    total: usize,
    migration: Option<String>,
    lag: Option<i64>,
}

async fn group_line(session: &Session, g: &Value) -> Result<GroupLine, Failure> {
    let (p, c) = (s(g, "streamPrefix"), s(g, "consumerGroup"));
    let base = ["coord", "v1", "monitoring", "streams", p, "groups", c];
    let members = session
        .get(&[&base[..], &["members"]].concat(), &[])
        .await?;
    let members = members["members"].as_array().cloned().unwrap_or_default();
    let live = members
        .iter()
        .filter(|m| matches!(s(m, "state"), "ACTIVE" | "LEAVING"))
        .count();
    let migrations = session
        .get(&[&base[..], &["migrations"]].concat(), &[])
        .await?;
    let offsets = session
        .get(&[&base[..], &["offsets"]].concat(), &[])
        .await?;
    Ok(GroupLine {
        summary: g.clone(),
        live,
        total: members.len(),
        migration: migrations
            .get("activeReshardingId")
            .and_then(Value::as_str)
            .map(str::to_owned),
        lag: offsets.get("totalLag").and_then(Value::as_i64),
    })
}

/// `rsc groups`: one line per group.
pub async fn groups(target: Target) -> Result<ExitCode, Failure> {
    let session = Session::open(&target).await?;
    let list = session
        .get(&["coord", "v1", "monitoring", "groups"], &[])
        .await?;
    let list = list.get("groups").cloned().unwrap_or(Value::Null);
    let mut lines = Vec::new();
    for g in list.as_array().cloned().unwrap_or_default() {
        lines.push(group_line(&session, &g).await?);
    }
    // Groups suspected of a metadata rollback (their admin changes are refused): flagged on their line.
    let health = session
        .get(&["coord", "v1", "monitoring", "health"], &[])
        .await
        .unwrap_or(Value::Null);
    let suspected: std::collections::BTreeSet<(String, String)> =
        health["components"]["metadataDurability"]["suspectedGroups"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|x| {
                (
                    s(x, "streamPrefix").to_owned(),
                    s(x, "consumerGroup").to_owned(),
                )
            })
            .collect();
    let is_suspected = |l: &GroupLine| {
        suspected.contains(&(
            s(&l.summary, "streamPrefix").to_owned(),
            s(&l.summary, "consumerGroup").to_owned(),
        ))
    };
    match target.output {
        Output::Json => print_json(&Value::Array(
            lines
                .iter()
                .map(|l| {
                    json!({
                        "streamPrefix": s(&l.summary, "streamPrefix"),
                        "consumerGroup": s(&l.summary, "consumerGroup"),
                        "shardCount": l.summary.get("shardCount"),
                        "state": s(&l.summary, "state"),
                        "liveMembers": l.live,
                        "members": l.total,
                        "activeReshardingId": l.migration,
                        "totalLag": l.lag,
                        "rollbackSuspected": is_suspected(l),
                    })
                })
                .collect(),
        )),
        Output::Text => {
            let mut t = Table::new(&[
                "STREAM",
                "GROUP",
                "SHARDS",
                "MEMBERS",
                "STATE",
                "MIGRATION",
                "LAG",
                "DURABILITY",
            ]);
            for l in &lines {
                t.row(vec![
                    s(&l.summary, "streamPrefix").to_owned(),
                    s(&l.summary, "consumerGroup").to_owned(),
                    n(&l.summary, "shardCount"),
                    format!("{}/{}", l.live, l.total),
                    s(&l.summary, "state").to_owned(),
                    l.migration.clone().unwrap_or_default(),
                    l.lag.map(|x| x.to_string()).unwrap_or_default(),
                    if is_suspected(l) {
                        "SUSPECTED".to_owned()
                    } else {
                        "ok".to_owned()
                    },
                ]);
            }
            if t.is_empty() {
                esayln!("no consumer groups (or none this principal may see)");
            } else {
                say!("{}", t.render());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `rsc describe <stream> [group]`: without a group, the stream as a whole (`describe_stream.rs`).
pub async fn describe(args: DescribeArgs) -> Result<ExitCode, Failure> {
    let Some(group) = args.group.as_deref() else {
        return super::describe_stream::describe_stream(&args.target, &args.stream).await;
    };
    let session = Session::open(&args.target).await?;
    let (p, g) = (args.stream.as_str(), group);
    let base = ["coord", "v1", "monitoring", "streams", p, "groups", g];
    let group = session.get(&base, &[]).await?;
    let members = session
        .get(&[&base[..], &["members"]].concat(), &[])
        .await?;
    let offsets = session
        .get(&[&base[..], &["offsets"]].concat(), &[])
        .await?;
    let migrations = session
        .get(&[&base[..], &["migrations"]].concat(), &[])
        .await?;
    let active = migrations
        .get("activeReshardingId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let migration = match &active {
        Some(id) => Some(
            session
                .get(
                    &["coord", "v1", "streams", p, "groups", g, "migrations", id],
                    &[],
                )
                .await?,
        ),
        None => None,
    };
    if args.target.output == Output::Json {
        print_json(&json!({
            "group": group, "members": members, "offsets": offsets, "activeMigration": migration,
        }));
        return Ok(ExitCode::SUCCESS);
    }
    let now = super::now_ms();
    sayln!(
        "GROUP {p}/{g}  state {}  shards {}  metadataVersion {}  groupEpoch {}  total lag {}",
        s(&group, "state"),
        n(&group, "shardCount"),
        n(&group, "metadataVersion"),
        n(&group, "groupEpoch"),
        n(&offsets, "totalLag")
    );
    if let Some(d) = group.get("metadataDurability")
        && d.get("rollbackSuspicion").is_some_and(|r| !r.is_null())
    {
        sayln!(
            "ROLLBACK SUSPECTED: admin mutations are blocked; see GET /coord/v1/monitoring/streams/{p}/groups/{g} \
             metadataDurability and the runbook's durability section"
        );
    }
    sayln!();
    let mut t = Table::new(&[
        "MEMBER",
        "STATE",
        "EPOCH",
        "PROTOCOL",
        "CLIENT",
        "HEARTBEAT-AGE",
        "LEASE-LEFT",
        "OWNED",
        "REVOKING",
    ]);
    // A member whose lease ended (EXPIRED, FENCED) holds nothing, whatever it was last assigned.
    let mut gone = std::collections::BTreeSet::new();
    for m in members["members"].as_array().cloned().unwrap_or_default() {
        let live = matches!(s(&m, "state"), "ACTIVE" | "LEAVING");
        if !live {
            gone.insert(s(&m, "memberId").to_owned());
        }
        let held = |field: &str| {
            if live {
                shards_text(m.get(field))
            } else {
                String::new()
            }
        };
        t.row(vec![
            s(&m, "memberId").to_owned(),
            s(&m, "state").to_owned(),
            n(&m, "memberEpoch"),
            n(&m, "protocolVersion"),
            client_text(&m),
            age(now, s(&m, "lastHeartbeatAt")),
            left(now, s(&m, "memberLeaseExpiresAt")),
            held("currentAssignment"),
            held("revoking"),
        ]);
    }
    if t.is_empty() {
        sayln!("no members");
    } else {
        say!("{}", t.render());
    }
    sayln!();
    // NODE: the Redis Cluster master serving the shard stream (shard streams spread over the masters);
    // empty on a standalone Redis.
    let mut t = Table::new(&[
        "SHARD",
        "STREAM-KEY",
        "NODE",
        "OWNER",
        "PENDING",
        "LAG",
        "DRAINING",
    ]);
    for sh in offsets
        .get("shards")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
    {
        let owners = sh
            .get("ownerMemberIds")
            .and_then(Value::as_array)
            .map(|o| {
                o.iter()
                    .filter_map(Value::as_str)
                    .filter(|id| !gone.contains(*id))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
        t.row(vec![
            shards_text(Some(&Value::Array(vec![
                sh.get("shard").cloned().unwrap_or(Value::Null),
            ]))),
            s(&sh, "streamKey").to_owned(),
            sh.get("redisNodeEndpoint")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            owners,
            n(&sh, "pendingCount"),
            n(&sh, "lag"),
            if sh.get("draining").and_then(Value::as_bool) == Some(true) {
                "yes".into()
            } else {
                String::new()
            },
        ]);
    }
    say!("{}", t.render());
    if let Some(m) = migration {
        sayln!();
        sayln!(
            "MIGRATION {}  {} -> {} shards  state {}  requested by {} ({})",
            s(&m, "reshardingId"),
            n(&m, "fromShardCount"),
            n(&m, "toShardCount"),
            s(&m, "state"),
            s(&m, "requestedBy"),
            s(&m, "reason")
        );
        // Ordered streams: which child shards wait for which parents, and what is left in each.
        for gate in m["orderingGates"].as_array().into_iter().flatten() {
            sayln!("{}", gate_line(gate));
        }
        for line in migration_summary(&m) {
            println!("{line}");
        }
        println!("(the whole migration view: rsc describe {p} {g} --output json)");
    }
    Ok(ExitCode::SUCCESS)
}

/// The migration view in a few lines: age, routing, the removed shards' drain, and why it has not ended
/// (`heldBy`) with the ways out.
fn migration_summary(m: &Value) -> Vec<String> {
    let mut out = vec![format!(
        "  age {:.0}s  routing {} shards  consumers converged {}  rollback allowed {}",
        m["ageSeconds"].as_f64().unwrap_or(0.0),
        n(m, "routingShardCount"),
        m["consumersConverged"].as_bool().unwrap_or(false),
        m["rollbackAllowed"].as_bool().unwrap_or(false),
    )];
    let removed = m["removedShards"].as_array().cloned().unwrap_or_default();
    if !removed.is_empty() {
        let unread: Vec<String> = removed
            .iter()
            .filter_map(|r| {
                let left = r["lag"].as_i64().unwrap_or(0) + r["pending"].as_i64().unwrap_or(0);
                (left > 0).then(|| format!("{} ({left} unread)", r["shardIndex"]))
            })
            .collect();
        out.push(format!(
            "  removed shards {}: {}; drain evidence counts from {}",
            removed.len(),
            if unread.is_empty() {
                "all read".to_owned()
            } else {
                unread.join(", ")
            },
            s(m, "drainEvidenceFrom")
        ));
    }
    if m["producerQuiesce"]["waiting"].as_bool() == Some(true) {
        out.push("  routing waits for producers to quiesce".to_owned());
    }
    if let Some(h) = m.get("heldBy").filter(|h| h.is_object()) {
        out.push(format!("  HELD ({}): {}", s(h, "reason"), s(h, "detail")));
        for w in h["waysOut"].as_array().into_iter().flatten() {
            out.push(format!(
                "    way out {}: {}  — {}",
                s(w, "action"),
                s(w, "how"),
                s(w, "effect")
            ));
        }
    }
    out
}

/// One ordering gate of the migration view as a line: the child, how it is read meanwhile, and what each
/// parent it waits for still holds from before the switch for this group.
fn gate_line(gate: &Value) -> String {
    let parents: Vec<String> = gate["waitingFor"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let delivered = match p["deliveredToSwitchPoint"].as_bool() {
                Some(true) => "all delivered",
                Some(false) => "not all delivered",
                None => "delivery unknown",
            };
            format!(
                "{} (switch point {}, {} pending before it, {delivered})",
                p["shardIndex"],
                p["switchPoint"].as_str().unwrap_or("unknown"),
                p["pendingBeforeSwitch"]
            )
        })
        .collect();
    let how = match gate["readFence"].as_str() {
        Some(fence) => format!("read up to {fence}"),
        None => "read by no member".to_owned(),
    };
    format!(
        "GATED shard {} ({how}) waits for {}",
        gate["childShard"],
        parents.join(", ")
    )
}

#[derive(Args, Debug)]
pub struct VersionArgs {
    #[command(flatten)]
    pub target: Target,
    /// Ask every URL of --coordinator, one by one, and list each replica's version (a rolling upgrade's
    /// progress); exit 1 when one does not answer.
    #[arg(long)]
    pub all: bool,
}

/// `rsc version`: this binary, the protocol versions it speaks, and the coordinator's (`--all`: each
/// replica's).
pub async fn version(args: VersionArgs) -> Result<ExitCode, Failure> {
    let target = args.target;
    if args.all {
        return every_version(&target).await;
    }
    let local = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "protocolVersions": {"min": rsc_protocol::PROTOCOL_VERSION_MIN, "max": rsc_protocol::PROTOCOL_VERSION_MAX},
    });
    let session = Session::open(&target).await?;
    let remote = session
        .get(&["coord", "v1", "monitoring", "compatibility"], &[])
        .await;
    match target.output {
        Output::Json => print_json(&json!({
            "rsc": local,
            "coordinator": remote.as_ref().ok(),
        })),
        Output::Text => {
            sayln!(
                "rsc {}  coord/v1 protocol versions {}..={}",
                env!("CARGO_PKG_VERSION"),
                rsc_protocol::PROTOCOL_VERSION_MIN,
                rsc_protocol::PROTOCOL_VERSION_MAX
            );
            if let Ok(c) = &remote {
                let range = c
                    .get("supportedCoordinationVersions")
                    .cloned()
                    .unwrap_or(Value::Null);
                sayln!(
                    "coordinator {}  coord/v1 protocol versions {}..={}",
                    version_text(c.get("coordinatorVersion")),
                    n(&range, "min"),
                    n(&range, "max")
                );
                if let Some(counts) = c
                    .get("liveMembersByProtocolVersion")
                    .and_then(Value::as_object)
                {
                    let text: Vec<String> =
                        counts.iter().map(|(v, c)| format!("v{v}: {c}")).collect();
                    sayln!(
                        "live members by protocol version: {}",
                        if text.is_empty() {
                            "none".to_owned()
                        } else {
                            text.join(", ")
                        }
                    );
                }
            }
        }
    }
    remote.map(|_| ExitCode::SUCCESS)
}

/// `rsc version --all`: each `--coordinator` URL asked on its own (no fail-over), with the same credentials.
async fn every_version(target: &Target) -> Result<ExitCode, Failure> {
    let mut rows = Vec::new();
    let mut failed = 0;
    for url in &target.coordinator {
        let one = Target {
            coordinator: vec![url.clone()],
            output: target.output,
        };
        let answer = match Session::open(&one).await {
            Ok(session) => {
                session
                    .get(&["coord", "v1", "monitoring", "compatibility"], &[])
                    .await
            }
            Err(f) => Err(f),
        };
        match answer {
            Ok(c) => {
                let range = c
                    .get("supportedCoordinationVersions")
                    .cloned()
                    .unwrap_or(Value::Null);
                rows.push(json!({
                    "url": url, "coordinatorVersion": version_text(c.get("coordinatorVersion")),
                    "protocolVersions": {"min": range.get("min"), "max": range.get("max")},
                }));
            }
            Err(f) => {
                failed += 1;
                rows.push(json!({"url": url, "error": f.message}));
            }
        }
    }
    match target.output {
        Output::Json => print_json(&json!({"replicas": rows})),
        Output::Text => {
            let mut t = Table::new(&["URL", "VERSION", "PROTOCOL", "ERROR"]);
            for r in &rows {
                let p = &r["protocolVersions"];
                t.row(vec![
                    s(r, "url").to_owned(),
                    s(r, "coordinatorVersion").to_owned(),
                    if p.is_null() {
                        String::new()
                    } else {
                        format!("{}..={}", n(p, "min"), n(p, "max"))
                    },
                    s(r, "error").to_owned(),
                ]);
            }
            say!("{}", t.render());
        }
    }
    if failed > 0 {
        return Err(Failure::new(format!(
            "{failed} of {} coordinator URL(s) did not answer",
            rows.len()
        )));
    }
    Ok(ExitCode::SUCCESS)
}

fn version_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => o
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned(),
        _ => "?".to_owned(),
    }
}

/// `name/version` of the client library a member joined with ("" when it did not say).
pub(super) fn client_text(m: &Value) -> String {
    match (s(m, "clientName"), s(m, "clientVersion")) {
        ("", _) => String::new(),
        (name, "") => name.to_owned(),
        (name, v) => format!("{name}/{v}"),
    }
}

fn shards_text(v: Option<&Value>) -> String {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| {
                    x.as_u64()
                        .or_else(|| x.get("shardIndex").and_then(Value::as_u64))
                })
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

fn parse_iso(t: &str) -> Option<i64> {
    humantime::parse_rfc3339(t)
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_millis() as i64)
}

/// How long ago an ISO time was, e.g. `2.1s`.
fn age(now: i64, t: &str) -> String {
    parse_iso(t).map_or_else(String::new, |at| {
        format!("{:.1}s", (now - at) as f64 / 1000.0)
    })
}

/// How long until an ISO time, e.g. `12.9s` (`expired` once past).
fn left(now: i64, t: &str) -> String {
    parse_iso(t).map_or_else(String::new, |at| {
        if at <= now {
            "expired".to_owned()
        } else {
            format!("{:.1}s", (at - now) as f64 / 1000.0)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_line_names_the_child_how_it_is_read_and_what_each_parent_holds() {
        let gate = json!({"childShard": 1, "readFence": "100-0", "waitingFor": [
            {"shardIndex": 0, "switchPoint": "90-1", "pendingBeforeSwitch": 3, "deliveredToSwitchPoint": false},
            {"shardIndex": 5, "switchPoint": "95-0", "pendingBeforeSwitch": 0, "deliveredToSwitchPoint": true}]});
        assert_eq!(
            gate_line(&gate),
            "GATED shard 1 (read up to 100-0) waits for 0 (switch point 90-1, 3 pending before it, not all \
             delivered), 5 (switch point 95-0, 0 pending before it, all delivered)"
        );
        let withheld = json!({"childShard": 6, "waitingFor": [{"shardIndex": 2, "pendingBeforeSwitch": null}]});
        assert_eq!(
            gate_line(&withheld),
            "GATED shard 6 (read by no member) waits for 2 (switch point unknown, null pending before it, \
             delivery unknown)"
        );
    }
}
