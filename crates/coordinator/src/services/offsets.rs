//! Per-shard offsets read from Redis: stream length and ids (`XINFO STREAM`), the group's pending count, lag
//! and last delivered id (`XINFO GROUPS`), and optionally memory use (`MEMORY USAGE`), all read through `rsc_store`.
//!
//! Used by `GET …/offsets` and by the metrics task. A shard stream that does not exist reads as empty with
//! unknown group fields (it is reported, not guessed). Other Redis errors are returned, not swallowed.

use crate::runtime::shown_keys;
use rsc_protocol::slot::redis_slot;
use rsc_store::{Shard, ShardObservation, Store, StoreError};
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
    /// Records ever appended to the shard stream (`entries-added`; None when unknown or absent).
    pub entries_added: Option<i64>,
    pub group_exists: bool,
    pub group_last_delivered_id: Option<String>,
    pub entries_read: Option<i64>,
    pub pending_count: Option<i64>,
    pub lag: Option<i64>,
    pub memory_usage_bytes: Option<i64>,
}

/// A shard whose stream does not exist, as [`read_shard`] reports it.
pub fn absent_shard(stream_prefix: &str, shard: u32) -> ShardOffsets {
    let key = shown_keys::shard_stream(&Shard::new(stream_prefix, shard));
    ShardOffsets {
        shard,
        redis_slot: redis_slot(key.as_bytes()),
        stream_key: key,
        exists: false,
        stream_length: 0,
        first_record_id: None,
        last_record_id: None,
        last_generated_id: None,
        entries_added: None,
        group_exists: false,
        group_last_delivered_id: None,
        entries_read: None,
        pending_count: None,
        lag: None,
        memory_usage_bytes: None,
    }
}

/// One shard from what [`Store::shard_observations`] read of it (None: the stream is not there).
pub fn from_observation(
    stream_prefix: &str,
    consumer_group: &str,
    shard: u32,
    observed: Option<&ShardObservation>,
) -> ShardOffsets {
    let mut out = absent_shard(stream_prefix, shard);
    let Some(o) = observed else {
        return out;
    };
    out.exists = true;
    out.stream_length = o.info.length;
    out.last_generated_id = o.info.last_generated_id.clone();
    out.entries_added = o.info.entries_added;
    out.first_record_id = o.info.first_entry_id.clone();
    out.last_record_id = o.info.last_entry_id.clone();
    if let Some(g) = o
        .groups
        .iter()
        .find(|g| g.name.as_deref() == Some(consumer_group))
    {
        out.group_exists = true;
        out.pending_count = g.pending;
        out.lag = g.lag;
        out.entries_read = g.entries_read;
        out.group_last_delivered_id = g.last_delivered_id.clone();
    }
    out.memory_usage_bytes = o.memory_bytes;
    out
}

/// Reads one shard. `memory`: also run `MEMORY USAGE` (one more round trip).
pub async fn read_shard(
    store: &Store,
    stream_prefix: &str,
    consumer_group: &str,
    shard: u32,
    memory: bool,
) -> Result<ShardOffsets, StoreError> {
    let mut out = absent_shard(stream_prefix, shard);
    let key = out.stream_key.clone();
    let id = Shard::new(stream_prefix, shard);
    let Some(info) = store.shard_stream_info(&id).await? else {
        return Ok(out);
    };
    out.exists = true;
    out.stream_length = info.length;
    out.last_generated_id = info.last_generated_id;
    out.entries_added = info.entries_added;
    out.first_record_id = info.first_entry_id;
    out.last_record_id = info.last_entry_id;
    // The stream existed a moment ago: a stream deleted since is an error, as any other.
    let Some(groups) = store.shard_groups(&id).await? else {
        return Err(StoreError::UnexpectedReply {
            detail: format!("XINFO GROUPS {key}: no such key (the stream vanished while read)"),
        });
    };
    if let Some(g) = groups
        .iter()
        .find(|g| g.name.as_deref() == Some(consumer_group))
    {
        out.group_exists = true;
        out.pending_count = g.pending;
        out.lag = g.lag;
        out.entries_read = g.entries_read;
        out.group_last_delivered_id = g.last_delivered_id.clone();
    }
    if memory {
        out.memory_usage_bytes = store.shard_memory_usage(&id).await?;
    }
    Ok(out)
}
