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
    /// The id of the last record returned (or, in a search, scanned) when more records lie beyond it; pass it
    /// as `cursor`.
    pub next_cursor: Option<String>,
    /// Where the page started when `fromId` or `fromTime` was given: the id `<ms>-<seq>` (inclusive).
    pub from_id: Option<String>,
    /// What a search (`field` or `search`) scanned; null for a plain page.
    pub search: Option<MessageSearchSummary>,
}

/// One page of the merged view: every shard of a group's stream, ordered by time (record id, then shard).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MergedMessagesPageResponse {
    /// The group's stream.
    pub stream_prefix: String,
    /// The group's name.
    pub consumer_group: String,
    /// The shards merged.
    pub shards: Vec<ShardId>,
    /// `FORWARD` or `BACKWARD`.
    pub direction: String,
    /// The page size asked for (`limit`, 1 to 1000, default 25).
    pub limit: u32,
    /// The page's records, in `direction` order; each names its shard.
    pub records: Vec<StreamMessageRecord>,
    /// Each shard's position, `<shard>=<id>,…`, when more records follow (in a search: each shard's last
    /// record scanned); pass it as `cursor`.
    pub next_cursor: Option<String>,
    /// Where every shard started when `fromId` or `fromTime` was given: the id `<ms>-<seq>` (inclusive).
    pub from_id: Option<String>,
    /// What a search (`field` or `search`) scanned over every shard together (one budget, spent in time
    /// order); null for a plain page. With a search, `nextCursor` holds each shard's last record scanned.
    pub search: Option<MessageSearchSummary>,
}

/// How far a bounded search scanned.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MessageSearchSummary {
    /// Records scanned (matching or not).
    pub scanned: u64,
    /// Bytes scanned: ids, field names and values.
    pub scanned_bytes: u64,
    /// Whether the scan stopped at `scanLimit` or `scanMaxBytes`; `nextCursor` continues it (absent when no
    /// record follows the last one scanned).
    pub stopped_at_bound: bool,
    /// The records bound in force (`scanLimit`, 1 to 100000, default 1000).
    pub scan_limit: u32,
    /// The bytes bound in force (`scanMaxBytes`, 1024 to 67108864, default 4194304).
    pub scan_max_bytes: u64,
    /// The `field` condition, `<name>=<value>`, if given.
    pub field: Option<String>,
    /// The `search` text, if given.
    pub payload_contains: Option<String>,
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
