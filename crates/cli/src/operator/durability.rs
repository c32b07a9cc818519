//! `rsc durability show|dismiss|recreate <stream> <group>`: the metadata-durability repairs without curl.
//! `show` prints the group's rollback suspicion (signals, evidence, who raised it), its last dismissal and an
//! open correction round; `dismiss` dismisses the suspicion as reviewed (it sends the suspicion's `updatedAt`
//! as `expectedUpdatedAt` itself, so evidence that arrives meanwhile is not dismissed unseen); `recreate`
//! repairs the group as a new lifecycle (shard count: the group's, unless given). Both ask, or take `--yes`.

use super::attribution::Attribution;
use super::{Failure, Output, Session, Target, confirm, n, print_json, s};
use clap::{Args, Subcommand};
use rsc_client::Method;
use serde_json::{Value, json};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct DurabilityArgs {
    #[command(subcommand)]
    pub action: DurabilityAction,
}

#[derive(Subcommand, Debug)]
pub enum DurabilityAction {
    /// The group's rollback suspicion, last dismissal and correction round.
    Show(GroupArgs),
    /// Dismiss the suspicion you reviewed (refused if new evidence arrived since).
    Dismiss(RepairArgs),
    /// Repair the group as a new lifecycle (old members rejoin).
    Recreate(RecreateArgs),
}

#[derive(Args, Debug)]
pub struct GroupArgs {
    #[command(flatten)]
    pub target: Target,
    /// The stream prefix.
    pub stream: String,
    /// The consumer group.
    pub group: String,
}

#[derive(Args, Debug)]
pub struct RepairArgs {
    #[command(flatten)]
    pub group: GroupArgs,
    #[command(flatten)]
    pub why: Attribution,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub yes: bool,
}

#[derive(Args, Debug)]
pub struct RecreateArgs {
    #[command(flatten)]
    pub repair: RepairArgs,
    /// The new lifecycle's shard count (default: the group's).
    #[arg(long)]
    pub shards: Option<u32>,
    /// Start the new lifecycle's versions above this (default: above every version reported).
    #[arg(long)]
    pub minimum_metadata_version: Option<i64>,
}

pub async fn run(args: DurabilityArgs) -> Result<ExitCode, Failure> {
    match args.action {
        DurabilityAction::Show(a) => show(a).await,
        DurabilityAction::Dismiss(a) => dismiss(a).await,
        DurabilityAction::Recreate(a) => recreate(a).await,
    }
}

async fn view(session: &Session, a: &GroupArgs) -> Result<Value, Failure> {
    session
        .get(
            &[
                "coord",
                "v1",
                "monitoring",
                "streams",
                &a.stream,
                "groups",
                &a.group,
            ],
            &[],
        )
        .await
}

/// The durability view as lines.
pub fn describe(d: &Value) -> Vec<String> {
    let mut out = vec![format!(
        "metadata durability {}  lifecycle {}  store revision {}",
        s(d, "status"),
        s(d, "lifecycleId"),
        n(d, "storeRevision")
    )];
    if let Some(r) = d.get("rollbackSuspicion").filter(|r| r.is_object()) {
        let signals: Vec<&str> = r["signals"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        out.push(format!(
            "SUSPECTED ROLLBACK: {}; stored metadataVersion {}, highest observed {}; detected {}, updated {} \
             (admin changes are refused until it is dismissed or repaired)",
            signals.join(", "),
            n(r, "storedMetadataVersion"),
            n(r, "highestObservedMetadataVersion"),
            s(r, "detectedAt"),
            s(r, "updatedAt")
        ));
        for e in r["evidence"].as_array().into_iter().flatten() {
            out.push(format!(
                "  evidence {}: observed {} stored {} from {} ({}) at {}",
                s(e, "signal"),
                n(e, "observed"),
                n(e, "stored"),
                s(e, "source"),
                e["principal"].as_str().unwrap_or("-"),
                s(e, "at")
            ));
        }
    }
    if let Some(x) = d.get("lastDismissal").filter(|x| x.is_object()) {
        out.push(format!(
            "last dismissal {} by {} ({}): {}",
            s(x, "at"),
            s(x, "principal"),
            s(x, "requestedBy"),
            s(x, "reason")
        ));
    }
    if let Some(c) = d.get("metadataCorrection").filter(|c| c.is_object()) {
        out.push(format!(
            "correction round open since {}: members sync to metadataVersion {} (observed {}); scale, rollback \
             and force-complete answer METADATA_SYNC_IN_PROGRESS until every live member has, or none is left",
            s(c, "requestedAt"),
            n(c, "targetMetadataVersion"),
            n(c, "observedMetadataVersion")
        ));
    }
    out
}

async fn show(a: GroupArgs) -> Result<ExitCode, Failure> {
    let session = Session::open(&a.target).await?;
    let v = view(&session, &a).await?;
    let d = v.get("metadataDurability").cloned().unwrap_or(Value::Null);
    match a.target.output {
        Output::Json => print_json(&d),
        Output::Text => {
            println!("GROUP {}/{}", a.stream, a.group);
            for line in describe(&d) {
                println!("{line}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn send(
    session: &Session,
    a: &GroupArgs,
    tail: &[&str],
    body: &Value,
    verb: &str,
) -> Result<ExitCode, Failure> {
    let mut path = vec!["coord", "v1", "streams", &a.stream, "groups", &a.group];
    path.extend_from_slice(tail);
    let (answer, request_id) = session.mutate(Method::POST, &path, body).await?;
    match a.target.output {
        Output::Json => print_json(&json!({"requestId": request_id, "answer": answer})),
        Output::Text => {
            println!(
                "{verb} of {}/{} done (request id {request_id})",
                a.stream, a.group
            );
            if let Some(d) = answer.get("metadataDurability") {
                for line in describe(d) {
                    println!("{line}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn dismiss(a: RepairArgs) -> Result<ExitCode, Failure> {
    let session = Session::open(&a.group.target).await?;
    let v = view(&session, &a.group).await?;
    let d = &v["metadataDurability"];
    let Some(suspicion) = d.get("rollbackSuspicion").filter(|r| r.is_object()) else {
        return Err(Failure::new(format!(
            "group {}/{} is not suspected of a metadata rollback: nothing to dismiss",
            a.group.stream, a.group.group
        )));
    };
    if a.group.target.output == Output::Text {
        for line in describe(d) {
            println!("{line}");
        }
    }
    if !a.yes
        && !confirm(&format!(
            "dismiss this suspicion of {}/{} (the evidence above)?",
            a.group.stream, a.group.group
        ))
    {
        return Err(Failure::new(
            "not confirmed: nothing was sent (answer y on a terminal, or pass --yes)",
        ));
    }
    let body = json!({
        "requestedBy": a.why.requested_by(&session),
        "reason": a.why.reason,
        "expectedUpdatedAt": suspicion["updatedAt"],
    });
    send(
        &session,
        &a.group,
        &["durability", "dismiss"],
        &body,
        "dismissal",
    )
    .await
}

async fn recreate(a: RecreateArgs) -> Result<ExitCode, Failure> {
    let r = &a.repair;
    let session = Session::open(&r.group.target).await?;
    let shards = match a.shards {
        Some(n) => n,
        None => view(&session, &r.group).await?["shardCount"]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                Failure::new(
                    "the group's shard count is unknown (its metadata is lost): pass --shards N",
                )
            })?,
    };
    if !r.yes
        && !confirm(&format!(
            "recreate {}/{} as a new lifecycle with {shards} shards (members rejoin)?",
            r.group.stream, r.group.group
        ))
    {
        return Err(Failure::new(
            "not confirmed: nothing was sent (answer y on a terminal, or pass --yes)",
        ));
    }
    let mut body = json!({
        "requestedBy": r.why.requested_by(&session),
        "reason": r.why.reason,
        "shardCount": shards,
    });
    if let Some(v) = a.minimum_metadata_version {
        body["minimumMetadataVersion"] = json!(v);
    }
    send(&session, &r.group, &["recreate"], &body, "recreate").await
}
