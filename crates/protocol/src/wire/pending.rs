//! A consumer group's pending entries on one shard, entry by entry (rsc's addition to coord/v1): the answer
//! of `GET /coord/v1/monitoring/streams/{p}/groups/{g}/shards/{i}/pending`. Ids, consumers, idle times and
//! delivery counts only — no payload; each entry names where the message browser shows its record.

use serde::Serialize;

use super::ShardId;

/// One pending entry: a record a consumer of the group was handed and has not acknowledged.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PendingEntryView {
    /// The record's stream id (`<ms>-<seq>`).
    pub record_id: String,
    /// The millisecond part of the id as an ISO-8601 UTC instant (when the record was appended).
    pub record_time: String,
    /// The Redis consumer the entry was last delivered to (the SDK's consumer name of a member).
    pub consumer: String,
    /// Milliseconds since it was last delivered.
    pub idle_ms: i64,
    /// How many times it was delivered (more than 1: it was claimed or read again).
    pub deliveries: i64,
    /// The message-browser page that starts at this record: the shard messages route with
    /// `fromId=<recordId>&direction=FORWARD&limit=1` (DATA_READ: reading the payload needs more than READ).
    pub messages_path: String,
}

/// `GET …/shards/{i}/pending`: one page of the group's pending entries on the shard, oldest first.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PendingEntriesResponse {
    /// The group's stream.
    pub stream_prefix: String,
    /// The group's name.
    pub consumer_group: String,
    /// The shard.
    pub shard: ShardId,
    /// The shard's stream key.
    pub stream_key: String,
    /// Only this consumer's entries (the `consumer` asked for), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer: Option<String>,
    /// The page size asked for (`count`, 1 to 1,000, default 100).
    pub count: u32,
    /// The entries, oldest first.
    pub entries: Vec<PendingEntryView>,
    /// Pass as `cursor` for the next page; null when this page is the last.
    pub next_cursor: Option<String>,
}
