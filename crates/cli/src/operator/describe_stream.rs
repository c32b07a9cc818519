//! `rsc describe <stream>` (no group): a stream as a whole from `GET /coord/v1/streams/{p}/describe` — its
//! groups side by side (state, members, lag, consume rate, active migration), its shards (length, memory,
//! produce rate, the hottest marked), the routing version and the rate window. `--output json` prints the
//! answer as the coordinator gave it.

use super::table::Table;
use super::{Failure, Output, Session, Target, n, print_json, s};
use serde_json::Value;
use std::process::ExitCode;

/// A rate (records/s) as text: `-` when the coordinator has none yet.
fn rate(v: &Value, key: &str) -> String {
    match v.get(key).and_then(Value::as_f64) {
        Some(r) => format!("{r:.2}/s"),
        None => String::new(),
    }
}

/// `rsc describe <stream>`.
pub async fn describe_stream(target: &Target, stream: &str) -> Result<ExitCode, Failure> {
    let session = Session::open(target).await?;
    let d = session
        .get(&["coord", "v1", "streams", stream, "describe"], &[])
        .await?;
    if target.output == Output::Json {
        print_json(&d);
        return Ok(ExitCode::SUCCESS);
    }
    let routing = match d.get("routingVersion").and_then(Value::as_i64) {
        Some(v) => v.to_string(),
        None => "-".to_owned(),
    };
    sayln!(
        "STREAM {stream}  shards {}  routingVersion {routing}  ordering {}  records {}  produce {}",
        n(&d, "shardCount"),
        s(&d, "ordering"),
        n(&d, "totalLength"),
        match rate(&d, "produceRate") {
            r if r.is_empty() => "-".to_owned(),
            r => r,
        },
    );
    match d.get("rateWindowSeconds").and_then(Value::as_f64) {
        Some(w) => sayln!(
            "rates over the last {w:.0} s (samples every {} s by coordinator {})",
            n(&d, "sampleIntervalSeconds"),
            s(&d, "coordinatorId")
        ),
        None => sayln!(
            "rates: collecting — the coordinator derives them from two samples; next sample in {} s",
            n(&d, "nextSampleInSeconds")
        ),
    }
    sayln!();
    let mut groups = Table::new(&[
        "GROUP",
        "STATE",
        "MEMBERS",
        "SHARDS",
        "LAG",
        "PENDING",
        "CONSUME",
        "MIGRATION",
    ]);
    let mut unsampled = Vec::new();
    for g in d["groups"].as_array().into_iter().flatten() {
        let migration = match g.get("activeMigration") {
            Some(m) if m.is_object() => format!(
                "{} {} {}→{}",
                s(m, "reshardingId"),
                s(m, "state"),
                n(m, "fromShardCount"),
                n(m, "toShardCount")
            ),
            _ => String::new(),
        };
        if g.get("sampled") == Some(&Value::Bool(false)) {
            unsampled.push(s(g, "consumerGroup").to_owned());
        }
        groups.row(vec![
            s(g, "consumerGroup").to_owned(),
            s(g, "state").to_owned(),
            format!("{}/{}", n(g, "activeMembers"), n(g, "memberCount")),
            n(g, "shardCount"),
            n(g, "lag"),
            n(g, "pendingCount"),
            rate(g, "consumeRate"),
            migration,
        ]);
    }
    say!("{}", groups.render());
    if !unsampled.is_empty() {
        sayln!(
            "(consume rates of {} are sampled by the replica that owns them)",
            unsampled.join(", ")
        );
    }
    sayln!();
    let mut shards = Table::new(&["SHARD", "STREAM KEY", "LENGTH", "MEMORY", "PRODUCE", "HOT"]);
    for sh in d["shards"].as_array().into_iter().flatten() {
        shards.row(vec![
            n(sh, "shard"),
            s(sh, "streamKey").to_owned(),
            if sh.get("exists") == Some(&Value::Bool(false)) {
                "(none)".to_owned()
            } else {
                n(sh, "length")
            },
            n(sh, "memoryBytes"),
            rate(sh, "produceRate"),
            if sh.get("hot") == Some(&Value::Bool(true)) {
                "*".to_owned()
            } else {
                String::new()
            },
        ]);
    }
    say!("{}", shards.render());
    let hottest: Vec<String> = d["hottestShards"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_u64)
        .map(|x| x.to_string())
        .collect();
    if !hottest.is_empty() {
        sayln!("hottest shards: {}", hottest.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}
