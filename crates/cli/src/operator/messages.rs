//! `rsc messages <stream> --shard N | --merged`: the message browser on the command line — a page of
//! records (newest first by default), a jump (`--from-id`, `--from-time`) and a bounded search (`--field
//! NAME=VALUE`, `--search TEXT`, `--scan-limit`, `--scan-max-bytes`) through
//! `GET …/shards/{i}/messages`; it prints how much a search scanned and the `--cursor` to continue with.
//! `--merged` reads every shard merged by time (`GET …/groups/{g}/messages`), the search included (its
//! bounds shared by the shards; the cursor holds each shard's position). Reading payloads needs DATA_READ.

use super::table::Table;
use super::{Failure, Output, Session, Target, print_json};
use clap::{Args, ValueEnum};
use serde_json::Value;
use std::process::ExitCode;

/// The walk's direction.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Oldest first.
    Forward,
    /// Newest first (the default).
    Backward,
}

#[derive(Args, Debug)]
pub struct MessagesArgs {
    #[command(flatten)]
    pub target: Target,
    /// The stream prefix.
    pub stream: String,
    /// The consumer group (default: the stream's default group, named after it).
    #[arg(long)]
    pub group: Option<String>,
    /// The shard to read (or `--merged`).
    #[arg(long, required_unless_present = "merged", conflicts_with = "merged")]
    pub shard: Option<u32>,
    /// Every shard merged, ordered by time (a search scans every shard in time order, its bounds shared).
    #[arg(long)]
    pub merged: bool,
    /// The walk's direction.
    #[arg(long, value_enum, default_value_t = Direction::Backward)]
    pub direction: Direction,
    /// Records per page (1 to 1000).
    #[arg(long, default_value_t = 25)]
    pub limit: u32,
    /// Continue a walk: the cursor a previous answer printed.
    #[arg(long, conflicts_with_all = ["from_id", "from_time"])]
    pub cursor: Option<String>,
    /// Start at this record id (`<ms>-<seq>` or `<ms>`), inclusive.
    #[arg(long, conflicts_with = "from_time")]
    pub from_id: Option<String>,
    /// Start at this RFC 3339 time (the id `<ms>-0`), inclusive.
    #[arg(long)]
    pub from_time: Option<String>,
    /// Search: keep records whose field NAME equals VALUE.
    #[arg(long, value_name = "NAME=VALUE")]
    pub field: Option<String>,
    /// Search: keep records whose payload contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub search: Option<String>,
    /// Search: records scanned at most (1 to 100000; the coordinator's default 1000).
    #[arg(long)]
    pub scan_limit: Option<u32>,
    /// Search: bytes scanned at most (1024 to 67108864; the coordinator's default 4 MiB).
    #[arg(long)]
    pub scan_max_bytes: Option<u64>,
}

fn query(a: &MessagesArgs) -> Vec<(&'static str, String)> {
    let direction = match a.direction {
        Direction::Forward => "FORWARD",
        Direction::Backward => "BACKWARD",
    };
    let mut q = vec![
        ("direction", direction.to_owned()),
        ("limit", a.limit.to_string()),
    ];
    let optional = [
        ("cursor", a.cursor.clone()),
        ("fromId", a.from_id.clone()),
        ("fromTime", a.from_time.clone()),
        ("field", a.field.clone()),
        ("search", a.search.clone()),
        ("scanLimit", a.scan_limit.map(|n| n.to_string())),
        ("scanMaxBytes", a.scan_max_bytes.map(|n| n.to_string())),
    ];
    q.extend(optional.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))));
    q
}

/// A cell of at most `max` characters.
fn cell(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

pub async fn run(a: MessagesArgs) -> Result<ExitCode, Failure> {
    let session = Session::open(&a.target).await?;
    let group = a.group.clone().unwrap_or_else(|| a.stream.clone());
    let base = [
        "coord",
        "v1",
        "monitoring",
        "streams",
        &a.stream,
        "groups",
        &group,
    ];
    let shard = a.shard.map(|s| s.to_string()).unwrap_or_default();
    let path = match a.shard {
        Some(_) => [&base[..], &["shards", &shard, "messages"]].concat(),
        None => [&base[..], &["messages"]].concat(),
    };
    let page = session.get(&path, &query(&a)).await?;
    if a.target.output == Output::Json {
        print_json(&page);
        return Ok(ExitCode::SUCCESS);
    }
    let records = page["records"].as_array().cloned().unwrap_or_default();
    let mut t = Table::new(&["SHARD", "ID", "TIME", "PAYLOAD", "FIELDS"]);
    for r in &records {
        let fields = r["fields"]
            .as_object()
            .map(|f| {
                f.iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        t.row(vec![
            r["shard"]["shardIndex"].to_string(),
            r["recordId"].as_str().unwrap_or_default().to_owned(),
            r["recordTime"].as_str().unwrap_or_default().to_owned(),
            cell(r["payload"].as_str().unwrap_or("-"), 60),
            cell(&fields, 60),
        ]);
    }
    if t.is_empty() {
        sayln!("no records");
    } else {
        say!("{}", t.render());
    }
    if let Some(s) = page["search"].as_object() {
        let scanned = s.get("scanned").and_then(Value::as_u64).unwrap_or(0);
        let bytes = s.get("scannedBytes").and_then(Value::as_u64).unwrap_or(0);
        let bound = s.get("stoppedAtBound").and_then(Value::as_bool) == Some(true);
        sayln!(
            "scanned {scanned} records ({bytes} bytes){}, {} matched",
            if bound {
                ", stopped at the scan bound"
            } else {
                ""
            },
            records.len()
        );
    }
    if let Some(next) = page["nextCursor"].as_str() {
        sayln!("more: continue with --cursor {next}");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn long_cells_are_cut() {
        assert_eq!(cell("abc", 3), "abc");
        assert_eq!(cell("abcd", 3), "ab…");
    }
}
