//! `rsc upgrade-check`: whether every live member speaks a protocol version inside a target release's range.
//! READ routes only, like the other read-only verbs (`show.rs`). It also says how to roll the store layout
//! (`coordinator.store.layout`) through a replica-by-replica upgrade.

use super::show::client_text;
use super::table::Table;
use super::{Failure, Output, Session, Target, n, print_json, s};
use clap::Args;
use serde_json::{Value, json};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct UpgradeCheckArgs {
    #[command(flatten)]
    pub target: Target,
    /// The protocol versions the target coordinator release supports, `MIN..MAX` (default: what the
    /// running coordinator's compatibility view says).
    #[arg(long)]
    pub target_version_range: Option<String>,
}

/// What a rolling upgrade to this release must do about the store layout: replicas of earlier releases cannot
/// read layout 4, which this release writes by default.
pub const STORE_LAYOUT_NOTE: &str = "store layout: this release writes group metadata in layoutVersion 4 \
    (coordinator.store.layout = 4), which releases before it cannot read; while replicas of an earlier release \
    still run against the same Redis, start the upgraded ones with coordinator.store.layout = 3 \
    (COORDINATOR_STORE_LAYOUT=3), and set 4 once every replica runs this release";

/// `rsc upgrade-check`: whether every live member speaks a protocol version inside the target range.
pub async fn upgrade_check(args: UpgradeCheckArgs) -> Result<ExitCode, Failure> {
    let session = Session::open(&args.target).await?;
    let (min, max) = match &args.target_version_range {
        Some(r) => parse_range(r)?,
        None => {
            let c = session
                .get(&["coord", "v1", "monitoring", "compatibility"], &[])
                .await?;
            let r = c
                .get("supportedCoordinationVersions")
                .cloned()
                .unwrap_or(Value::Null);
            (
                r.get("min").and_then(Value::as_i64).unwrap_or(1),
                r.get("max").and_then(Value::as_i64).unwrap_or(1),
            )
        }
    };
    let list = session
        .get(&["coord", "v1", "monitoring", "groups"], &[])
        .await?;
    let list = list.get("groups").cloned().unwrap_or(Value::Null);
    let mut outside = Vec::new();
    let mut by_version: std::collections::BTreeMap<i64, usize> = Default::default();
    let mut live_total = 0;
    for g in list.as_array().cloned().unwrap_or_default() {
        let (p, c) = (s(&g, "streamPrefix"), s(&g, "consumerGroup"));
        let members = session
            .get(
                &[
                    "coord",
                    "v1",
                    "monitoring",
                    "streams",
                    p,
                    "groups",
                    c,
                    "members",
                ],
                &[],
            )
            .await?;
        for m in members["members"].as_array().cloned().unwrap_or_default() {
            if !matches!(s(&m, "state"), "ACTIVE" | "LEAVING") {
                continue;
            }
            live_total += 1;
            let v = m
                .get("protocolVersion")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            *by_version.entry(v).or_default() += 1;
            if v < min || v > max {
                outside.push(json!({
                    "streamPrefix": p, "consumerGroup": c, "memberId": s(&m, "memberId"),
                    "protocolVersion": v, "client": client_text(&m),
                }));
            }
        }
    }
    let ok = outside.is_empty();
    match args.target.output {
        Output::Json => print_json(&json!({
            "targetRange": {"min": min, "max": max}, "liveMembers": live_total,
            "membersByProtocolVersion": by_version, "outsideRange": outside, "compatible": ok,
            "storeLayout": STORE_LAYOUT_NOTE,
        })),
        Output::Text => {
            let counts: Vec<String> = by_version
                .iter()
                .map(|(v, c)| format!("v{v}: {c}"))
                .collect();
            sayln!(
                "{live_total} live members ({}); target supports protocol versions {min}..={max}",
                if counts.is_empty() {
                    "none".to_owned()
                } else {
                    counts.join(", ")
                }
            );
            if ok {
                sayln!("COMPATIBLE: every live member speaks a version the target supports");
            } else {
                sayln!("NOT COMPATIBLE: upgrade these clients first");
                let mut t = Table::new(&["STREAM", "GROUP", "MEMBER", "PROTOCOL", "CLIENT"]);
                for o in &outside {
                    t.row(vec![
                        s(o, "streamPrefix").into(),
                        s(o, "consumerGroup").into(),
                        s(o, "memberId").into(),
                        n(o, "protocolVersion"),
                        s(o, "client").into(),
                    ]);
                }
                say!("{}", t.render());
            }
            println!("{STORE_LAYOUT_NOTE}");
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn parse_range(r: &str) -> Result<(i64, i64), Failure> {
    let bad = || {
        Failure::new(format!(
            "--target-version-range {r:?} is not MIN..MAX (e.g. 1..2)"
        ))
    };
    let (a, b) = r.split_once("..").ok_or_else(bad)?;
    let b = b.trim_start_matches('=');
    let (a, b): (i64, i64) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a > b || a < 0 {
        return Err(bad());
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_range_is_min_dot_dot_max() {
        assert_eq!(parse_range("1..2").unwrap(), (1, 2));
        assert_eq!(parse_range("1..=3").unwrap(), (1, 3));
        assert!(parse_range("2..1").is_err());
        assert!(parse_range("x").unwrap_err().message.contains("MIN..MAX"));
    }
}
