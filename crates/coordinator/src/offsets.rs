//! Per-shard offsets read from Redis: stream length and ids (`XINFO STREAM`), the group's pending count, lag
//! and last delivered id (`XINFO GROUPS`), and optionally memory use (`MEMORY USAGE`).
//!
//! Used by `GET …/offsets` and by the metrics task. A shard stream that does not exist reads as empty with
//! unknown group fields (it is reported, not guessed). Other Redis errors are returned, not swallowed.

use crate::provision::{field, field_i64};
use redis::Value;
use redis::aio::ConnectionLike;
use rsc_protocol::names::shard_stream_key;
use rsc_protocol::slot::redis_slot;
use serde::Serialize;

/// What Redis says about one shard stream and the group's consumer group on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardOffsets {
    pub shard: u32,
    pub stream_key: String,
    pub redis_slot: u16,
    pub exists: bool,
    pub stream_length: i64,
    pub first_record_id: Option<String>,
    pub last_record_id: Option<String>,
    pub last_generated_id: Option<String>,
    pub group_exists: bool,
    pub group_last_delivered_id: Option<String>,
    pub entries_read: Option<i64>,
    pub pending_count: Option<i64>,
    pub lag: Option<i64>,
    pub memory_usage_bytes: Option<i64>,
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}

/// The id of an XINFO `first-entry`/`last-entry` value (`[id, [field, value, …]]` or nil).
fn entry_id(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Array(items) => items.first().and_then(text),
        _ => None,
    }
}

fn is_missing_key(e: &redis::RedisError) -> bool {
    e.to_string().to_ascii_lowercase().contains("no such key")
}

/// Reads one shard. `memory`: also run `MEMORY USAGE` (one more round trip).
pub async fn read_shard<C: ConnectionLike + Send>(
    conn: &mut C,
    stream_prefix: &str,
    consumer_group: &str,
    shard: u32,
    memory: bool,
) -> redis::RedisResult<ShardOffsets> {
    let key = shard_stream_key(stream_prefix, shard);
    let mut out = ShardOffsets {
        shard,
        redis_slot: redis_slot(key.as_bytes()),
        stream_key: key.clone(),
        exists: false,
        stream_length: 0,
        first_record_id: None,
        last_record_id: None,
        last_generated_id: None,
        group_exists: false,
        group_last_delivered_id: None,
        entries_read: None,
        pending_count: None,
        lag: None,
        memory_usage_bytes: None,
    };
    let info: Value = match redis::cmd("XINFO")
        .arg("STREAM")
        .arg(&key)
        .query_async(conn)
        .await
    {
        Ok(v) => v,
        Err(e) if is_missing_key(&e) => return Ok(out),
        Err(e) => return Err(e),
    };
    out.exists = true;
    out.stream_length = field_i64(&info, "length").unwrap_or(0);
    out.last_generated_id = field(&info, "last-generated-id").and_then(text);
    out.first_record_id = entry_id(field(&info, "first-entry"));
    out.last_record_id = entry_id(field(&info, "last-entry"));
    let groups: Value = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(&key)
        .query_async(conn)
        .await?;
    if let Value::Array(items) = &groups {
        let ours = items
            .iter()
            .find(|g| field(g, "name").and_then(text).as_deref() == Some(consumer_group));
        if let Some(g) = ours {
            out.group_exists = true;
            out.pending_count = field_i64(g, "pending");
            out.lag = field_i64(g, "lag");
            out.entries_read = field_i64(g, "entries-read");
            out.group_last_delivered_id = field(g, "last-delivered-id").and_then(text);
        }
    }
    if memory {
        let used: Option<i64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&key)
            .query_async(conn)
            .await?;
        out.memory_usage_bytes = used;
    }
    Ok(out)
}
