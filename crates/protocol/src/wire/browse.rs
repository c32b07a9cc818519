//! coord/v1 message browsing: one page of a shard stream's records
//! (`GET /coord/v1/monitoring/streams/{p}/groups/{g}/shards/{i}/messages`).

use super::ShardId;
use serde::Serialize;
use std::collections::BTreeMap;

/// One page of records, newest first (`BACKWARD`, the default) or oldest first (`FORWARD`).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StreamMessagesPageResponse {
    /// The group's stream.
    pub stream_prefix: String,
    /// The group's name.
    pub consumer_group: String,
    /// The shard read.
    pub shard: ShardId,
    /// The shard's stream key.
    pub stream_key: String,
    /// `FORWARD` or `BACKWARD`.
    pub direction: String,
    /// The page size asked for (`limit`, 1 to 1000, default 25); a page may hold fewer records (it also has a
    /// byte budget).
    pub limit: u32,
    /// The page's records, in `direction` order.
    pub records: Vec<StreamMessageRecord>,
    /// The id of the last record returned when more records lie beyond it; pass it as `cursor`.
    pub next_cursor: Option<String>,
}

/// One record of a shard stream.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StreamMessageRecord {
    /// The group's stream.
    pub stream_prefix: String,
    /// The group's name.
    pub consumer_group: String,
    /// The shard the record is in.
    pub shard: ShardId,
    /// The shard's stream key.
    pub stream_key: String,
    /// The record's stream id (`<ms>-<seq>`).
    pub record_id: String,
    /// Every field of the record (a field repeated in the record keeps its last value).
    pub fields: BTreeMap<String, String>,
    /// The `payload` field, if the record has one.
    pub payload: Option<String>,
    /// The millisecond part of the record id.
    pub record_timestamp_ms: i64,
    /// `recordTimestampMs` as an ISO-8601 UTC instant.
    pub record_time: String,
}
