//! `rsc pending <stream> <group> [--shard N] [--consumer C] [--count N] [--cursor ID]`: the group's pending
//! entries (records handed to a consumer and not acknowledged) entry by entry, oldest first, through
//! `GET …/shards/{i}/pending` — every shard of the group, or one. Each entry's record opens with
//! `rsc messages <stream> --group G --shard N --from-id ID --limit 1` (which needs DATA_READ; the list needs
//! READ: it carries no payload).

use super::table::Table;
use super::{Failure, Output, Session, Target, print_json};
use clap::Args;
use serde_json::{Value, json};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct PendingArgs {
    #[command(flatten)]
    pub target: Target,
    /// The stream prefix.
    pub stream: String,
    /// The consumer group.
    pub group: String,
    /// Only this shard (default: every shard of the group).
    #[arg(long)]
    pub shard: Option<u32>,
    /// Only this Redis consumer's entries (a member's consumer name).
    #[arg(long)]
    pub consumer: Option<String>,
    /// Entries per shard (1 to 1000).
    #[arg(long, default_value_t = 100)]
    pub count: u32,
    /// Continue a shard's list: the cursor a previous answer printed (needs --shard).
    #[arg(long, requires = "shard")]
    pub cursor: Option<String>,
}

pub async fn run(a: PendingArgs) -> Result<ExitCode, Failure> {
    let session = Session::open(&a.target).await?;
    let shards: Vec<u32> = match a.shard {
        Some(s) => vec![s],
        None => {
            let group = session
                .get(
                    &["coord", "v1", "streams", &a.stream, "groups", &a.group],
                    &[],
                )
                .await?;
            let count = group["shardCount"].as_u64().unwrap_or(0);
            (0..u32::try_from(count).unwrap_or(0)).collect()
        }
    };
    let mut query = vec![("count", a.count.to_string())];
    if let Some(c) = &a.consumer {
        query.push(("consumer", c.clone()));
    }
    if let Some(c) = &a.cursor {
        query.push(("cursor", c.clone()));
    }
    let mut pages = Vec::with_capacity(shards.len());
    for s in &shards {
        let shard = s.to_string();
        let path = [
            "coord",
            "v1",
            "monitoring",
            "streams",
            &a.stream,
            "groups",
            &a.group,
            "shards",
            &shard,
            "pending",
        ];
        pages.push(session.get(&path, &query).await?);
    }
    if a.target.output == Output::Json {
        print_json(&json!({ "shards": pages }));
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new(&["SHARD", "ID", "TIME", "CONSUMER", "IDLE", "DELIVERIES"]);
    for page in &pages {
        let shard = page["shard"]["shardIndex"].to_string();
        for e in page["entries"].as_array().into_iter().flatten() {
            t.row(vec![
                shard.clone(),
                text(e, "recordId"),
                text(e, "recordTime"),
                text(e, "consumer"),
                idle(e["idleMs"].as_i64().unwrap_or(0)),
                e["deliveries"].to_string(),
            ]);
        }
    }
    if t.is_empty() {
        sayln!("nothing pending");
    } else {
        say!("{}", t.render());
        sayln!(
            "open a record: rsc messages {} --group {} --shard N --from-id ID --limit 1",
            a.stream,
            a.group
        );
    }
    for page in &pages {
        if let Some(next) = page["nextCursor"].as_str() {
            sayln!(
                "more on shard {}: continue with --shard {} --cursor {next}",
                page["shard"]["shardIndex"],
                page["shard"]["shardIndex"]
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_owned()
}

/// An idle time in the largest whole unit (`850ms`, `12s`, `3m`, `2h`).
fn idle(ms: i64) -> String {
    match ms {
        ..1_000 => format!("{ms}ms"),
        1_000..60_000 => format!("{}s", ms / 1_000),
        60_000..3_600_000 => format!("{}m", ms / 60_000),
        _ => format!("{}h", ms / 3_600_000),
    }
}

#[cfg(test)]
mod tests {
    use super::idle;

    #[test]
    fn idle_times_read_in_their_unit() {
        assert_eq!(idle(850), "850ms");
        assert_eq!(idle(12_500), "12s");
        assert_eq!(idle(180_000), "3m");
        assert_eq!(idle(7_300_000), "2h");
    }
}
