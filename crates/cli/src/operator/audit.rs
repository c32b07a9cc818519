//! `rsc audit`: the coordinator's audit records (`GET /coord/v1/monitoring/audit`), newest first, with
//! filters; `--follow` keeps printing new records as they arrive (polling once a second, oldest first).

use super::table::Table;
use super::{Failure, Output, Session, Target, n, print_json, s};
use clap::Args;
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct AuditArgs {
    #[command(flatten)]
    pub target: Target,
    #[arg(long)]
    pub stream: Option<String>,
    #[arg(long)]
    pub group: Option<String>,
    #[arg(long)]
    pub principal: Option<String>,
    /// Only this action (e.g. SCALE_STREAM, LOGIN, DELETE_GROUP).
    #[arg(long)]
    pub action: Option<String>,
    /// Only this outcome: SUCCESS, UNAUTHORIZED, FORBIDDEN or FAILED.
    #[arg(long)]
    pub outcome: Option<String>,
    /// Only the record of the request with this X-Request-Id.
    #[arg(long)]
    pub request_id: Option<String>,
    /// Only records at or after this time: ISO-8601 (2026-12-01T10:00:00Z), epoch ms, or a duration ago (15m).
    #[arg(long)]
    pub since: Option<String>,
    /// At most this many records (1..=1000).
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Keep printing new records until Ctrl-C.
    #[arg(long)]
    pub follow: bool,
}

pub async fn audit(args: AuditArgs) -> Result<ExitCode, Failure> {
    if args.limit == 0 || args.limit > 1000 {
        return Err(Failure::new(format!(
            "--limit {} is out of range: give 1 to 1000",
            args.limit
        )));
    }
    let since = args.since.as_deref().map(since_ms).transpose()?;
    let session = Session::open(&args.target)?;
    let query = |since: Option<i64>, limit: usize| {
        let mut q: Vec<(&str, String)> = vec![("limit", limit.to_string())];
        if let Some(p) = &args.stream {
            q.push(("streamPrefix", p.clone()));
        }
        if let Some(g) = &args.group {
            q.push(("consumerGroup", g.clone()));
        }
        if let Some(p) = &args.principal {
            q.push(("principal", p.clone()));
        }
        if let Some(a) = &args.action {
            q.push(("action", a.clone()));
        }
        if let Some(o) = &args.outcome {
            q.push(("outcome", o.clone()));
        }
        if let Some(r) = &args.request_id {
            q.push(("requestId", r.clone()));
        }
        if let Some(t) = since {
            q.push(("since", t.to_string()));
        }
        q
    };
    let path = ["coord", "v1", "monitoring", "audit"];
    let first = session.get(&path, &query(since, args.limit)).await?;
    let first_records = records(&first);
    if args.target.output == Output::Json && !args.follow {
        print_json(&Value::Array(first_records));
        return Ok(ExitCode::SUCCESS);
    }
    let mut seen: BTreeSet<String> = first_records.iter().map(key).collect();
    let mut newest = first_records
        .iter()
        .filter_map(|r| r.get("timestampMs").and_then(Value::as_i64))
        .max()
        .or(since);
    print_records(&args.target, &first_records, true);
    if !args.follow {
        return Ok(ExitCode::SUCCESS);
    }
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
        }
        let page = session.get(&path, &query(newest, 1000)).await?;
        let mut fresh: Vec<Value> = records(&page)
            .into_iter()
            .filter(|r| seen.insert(key(r)))
            .collect();
        fresh.reverse();
        if let Some(t) = fresh
            .iter()
            .filter_map(|r| r.get("timestampMs").and_then(Value::as_i64))
            .max()
        {
            newest = Some(newest.map_or(t, |n| n.max(t)));
        }
        print_records(&args.target, &fresh, false);
    }
}

fn records(page: &Value) -> Vec<Value> {
    page.get("records")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn key(r: &Value) -> String {
    match r.get("id").and_then(Value::as_str) {
        Some(id) => id.to_owned(),
        None => format!("{}-{}", n(r, "timestampMs"), s(r, "requestId")),
    }
}

fn print_records(target: &Target, records: &[Value], header: bool) {
    if target.output == Output::Json {
        for r in records {
            sayln!("{r}");
        }
        return;
    }
    let mut t = Table::new(&[
        "TIME",
        "ACTION",
        "OUTCOME",
        "STATUS",
        "PRINCIPAL",
        "REQUESTED-BY",
        "TARGET",
        "REQUEST-ID",
        "REASON",
    ]);
    for r in records {
        let target = match (s(r, "streamPrefix"), s(r, "consumerGroup")) {
            ("", _) => String::new(),
            (p, "") => p.to_owned(),
            (p, g) => format!("{p}/{g}"),
        };
        t.row(vec![
            s(r, "timestamp").to_owned(),
            s(r, "action").to_owned(),
            s(r, "outcome").to_owned(),
            n(r, "status"),
            s(r, "principal").to_owned(),
            s(r, "requestedBy").to_owned(),
            target,
            s(r, "requestId").to_owned(),
            s(r, "reason").to_owned(),
        ]);
    }
    if t.is_empty() {
        if header {
            esayln!("no audit records match");
        }
        return;
    }
    let text = t.render();
    if header {
        say!("{text}");
    } else {
        // Follow mode: the header was printed once already.
        say!("{}", text.split_once('\n').map_or("", |(_, rows)| rows));
    }
}

/// `--since`: ISO-8601, epoch milliseconds, or a duration before now.
fn since_ms(v: &str) -> Result<i64, Failure> {
    if let Ok(ms) = v.parse::<i64>() {
        return Ok(ms);
    }
    if let Ok(t) = humantime::parse_rfc3339_weak(v)
        && let Ok(d) = t.duration_since(std::time::UNIX_EPOCH)
    {
        return Ok(d.as_millis() as i64);
    }
    if let Ok(d) = humantime::parse_duration(v) {
        return Ok(super::now_ms() - d.as_millis() as i64);
    }
    Err(Failure::new(format!(
        "--since {v:?} is not a time: give ISO-8601 (2026-12-01T10:00:00Z), epoch ms, or a duration ago (15m)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_time_epoch_ms_or_a_duration_ago() {
        assert_eq!(since_ms("1700000000000").unwrap(), 1_700_000_000_000);
        assert_eq!(since_ms("2023-11-14T22:13:20Z").unwrap(), 1_700_000_000_000);
        let ago = since_ms("15m").unwrap();
        assert!((super::super::now_ms() - ago - 900_000).abs() < 5_000);
        assert!(
            since_ms("yesterday")
                .unwrap_err()
                .message
                .contains("ISO-8601")
        );
    }
}
