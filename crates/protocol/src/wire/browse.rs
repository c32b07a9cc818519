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
    pub stream_prefix: String,
    pub consumer_group: String,
    pub shard: ShardId,
    pub stream_key: String,
    /// `FORWARD` or `BACKWARD`.
    pub direction: String,
    pub limit: u32,
    pub records: Vec<StreamMessageRecord>,
    /// The id of the last record returned when more records lie beyond it; pass it as `cursor`.
    pub next_cursor: Option<String>,
}

/// One record of a shard stream.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StreamMessageRecord {
    pub stream_prefix: String,
    pub consumer_group: String,
    pub shard: ShardId,
    pub stream_key: String,
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
