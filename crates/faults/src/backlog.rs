//! Redis evidence: what Redis says is left for the group on the current shards (pending entries,
//! entries never delivered, XINFO `lag`).

use crate::STREAM;
use std::collections::BTreeMap;

/// What Redis says is left for the group on the current shards.
#[derive(Debug, Default)]
pub struct Backlog {
    pub pending: i64,
    /// Shards with entries after the group's last-delivered id.
    pub undelivered: Vec<String>,
    /// Shards whose XINFO `lag` is not 0 (reported, not judged: Redis' entries-read counter is an estimate).
    pub lag: Vec<String>,
}

impl Backlog {
    pub fn is_empty(&self) -> bool {
        self.pending == 0 && self.undelivered.is_empty()
    }
}

/// An XINFO reply entry (flat name/value pairs) as a map.
fn fields(pairs: &[redis::Value]) -> BTreeMap<String, redis::Value> {
    pairs
        .chunks(2)
        .filter_map(|kv| match (&kv[0], kv.get(1)) {
            (redis::Value::BulkString(k), Some(v)) => {
                Some((String::from_utf8_lossy(k).into_owned(), v.clone()))
            }
            _ => None,
        })
        .collect()
}

fn text(v: Option<&redis::Value>) -> Option<String> {
    match v {
        Some(redis::Value::BulkString(b)) => Some(String::from_utf8_lossy(b).into_owned()),
        Some(redis::Value::SimpleString(s)) => Some(s.clone()),
        _ => None,
    }
}

/// A stream id as (ms, seq) for ordering.
fn stream_id(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    (ms.parse().unwrap_or(0), seq.parse().unwrap_or(0))
}

/// Per shard `0..shards` of the Redis at `redis_url`: entries pending in the group, whether entries exist
/// past the group's last-delivered id (never delivered), and Redis' own `lag` figure. `Err` if Redis cannot
/// say.
pub async fn redis_backlog(redis_url: &str, shards: u32) -> Result<Backlog, String> {
    let client = redis::Client::open(redis_url).map_err(|e| e.to_string())?;
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Backlog::default();
    for shard in 0..shards {
        let key = format!("{STREAM}:{shard}");
        let groups: Vec<Vec<redis::Value>> = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        let group = groups
            .iter()
            .map(|g| fields(g))
            .find(|f| text(f.get("name")) == Some(STREAM.to_owned()))
            .ok_or_else(|| format!("{key}: no consumer group {STREAM}"))?;
        let last: Vec<(String, Vec<(String, String)>)> = redis::cmd("XREVRANGE")
            .arg(&key)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1)
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        let delivered = text(group.get("last-delivered-id")).unwrap_or_default();
        if let Some((last_id, _)) = last.first()
            && stream_id(last_id) > stream_id(&delivered)
        {
            out.undelivered
                .push(format!("{key}: last {last_id}, delivered {delivered}"));
        }
        match group.get("pending") {
            Some(redis::Value::Int(p)) => out.pending += p,
            other => return Err(format!("{key}: pending {other:?}")),
        }
        match group.get("lag") {
            Some(redis::Value::Int(0)) => {}
            other => out.lag.push(format!("{key}: {other:?}")),
        }
    }
    Ok(out)
}
