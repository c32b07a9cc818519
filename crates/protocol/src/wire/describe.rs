//! A stream as a whole (rsc's addition to coord/v1): `GET /coord/v1/streams/{p}/describe` — shards, groups
//! side by side, hottest shards, rates — and `GET /coord/v1/streams/{p}/history` — lag and rates over the
//! last minutes, from the samples the answering coordinator replica keeps (one per metrics refresh).
//!
//! Rates are records per second, rounded to 2 decimals, and `null` while the replica has fewer than two
//! samples to derive them from. Lengths, memory and lag in `describe` are read from Redis at the request.

use crate::wire::MigrationView;
use serde::{Deserialize, Serialize};

/// The answer of `GET /coord/v1/streams/{p}/describe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StreamDescribeResponse {
    /// The stream.
    pub stream_prefix: String,
    /// The stream's shard count (its stream record's; the first group's while it has none).
    pub shard_count: u32,
    /// The stream's routing version (bumped by every routing switch and rollback); `null` while the stream
    /// has no stream record.
    pub routing_version: Option<i64>,
    /// `NONE` (at-least-once) or `KEY` (per-key order across scales).
    pub ordering: String,
    /// The coordinator replica that answered: rates come from its samples.
    pub coordinator_id: String,
    /// When Redis was read for this answer (ISO-8601 UTC, Redis time).
    pub observed_at: String,
    /// Seconds between two samples (`coordinator.metrics.refresh-interval`).
    pub sample_interval_seconds: f64,
    /// The span the rates were derived over, in seconds (the newest sample and the oldest one at most 60 s
    /// before it); `null` while there are fewer than two samples (then every rate is `null`).
    pub rate_window_seconds: Option<f64>,
    /// Seconds until this replica takes its next sample (0 when it is due).
    pub next_sample_in_seconds: f64,
    /// Records in every shard stream together (XLEN summed).
    pub total_length: i64,
    /// Bytes of every shard stream together (MEMORY USAGE summed); `null` when Redis did not say for some
    /// shard stream that exists.
    pub total_memory_bytes: Option<i64>,
    /// Records appended per second to the whole stream over the rate window (XINFO STREAM entries-added).
    pub produce_rate: Option<f64>,
    /// Every shard, ascending: `0..shardCount`, and the shards being drained after a scale-down that a
    /// group still reads.
    pub shards: Vec<DescribedShard>,
    /// Up to 3 shard indexes, hottest first: by produce rate, then by length; only shards holding records
    /// or receiving them.
    pub hottest_shards: Vec<u32>,
    /// Every live consumer group of the stream, by name.
    pub groups: Vec<DescribedGroup>,
}

/// One shard of [`StreamDescribeResponse`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DescribedShard {
    /// The shard index.
    pub shard: u32,
    /// The shard's Redis stream key.
    pub stream_key: String,
    /// Whether the shard stream exists in Redis (it is created with its first record or group).
    pub exists: bool,
    /// Records in the shard stream (XLEN; 0 when it does not exist).
    pub length: i64,
    /// Bytes the shard stream takes (MEMORY USAGE); `null` when unknown or when it does not exist.
    pub memory_bytes: Option<i64>,
    /// Records appended per second to this shard over the rate window; `null` without two samples.
    pub produce_rate: Option<f64>,
    /// The id of the shard's newest record; `null` when it holds none.
    pub last_record_id: Option<String>,
    /// Whether the shard is one of `hottestShards`.
    pub hot: bool,
}

/// One consumer group of [`StreamDescribeResponse`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DescribedGroup {
    /// The group's name.
    pub consumer_group: String,
    /// `EMPTY` (no live member), `RECONCILING` or `STABLE`, as `GET …/groups/{g}` says.
    pub state: String,
    /// Members the group records, whatever their state.
    pub member_count: usize,
    /// Members in state `ACTIVE`.
    pub active_members: usize,
    /// The group's shard count.
    pub shard_count: u32,
    /// Records not yet delivered to the group, summed over its shards (Redis' lag); `null` when Redis cannot
    /// tell for some shard (after an XGROUP SETID to an arbitrary id, or deletions).
    pub lag: Option<i64>,
    /// Records delivered to the group's consumers and not yet acknowledged, summed over its shards.
    pub pending_count: i64,
    /// Records read by the group per second over the rate window (XINFO GROUPS entries-read); `null` without
    /// two samples of the group.
    pub consume_rate: Option<f64>,
    /// Whether the answering replica samples this group (it owns it); `false`: its rates are on the replica
    /// that owns it.
    pub sampled: bool,
    /// The group's active migration, or `null`.
    pub active_migration: Option<MigrationView>,
}

/// The answer of `GET /coord/v1/streams/{p}/history?minutes=`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StreamHistoryResponse {
    /// The stream.
    pub stream_prefix: String,
    /// The coordinator replica whose samples these are.
    pub coordinator_id: String,
    /// The minutes asked for (1 to 15).
    pub minutes: u32,
    /// Seconds between two samples (`coordinator.metrics.refresh-interval`).
    pub sample_interval_seconds: f64,
    /// How far back the replica keeps samples, in seconds (900).
    pub retained_seconds: u32,
    /// Seconds until the replica takes its next sample (0 when it is due).
    pub next_sample_in_seconds: f64,
    /// Every group that appears in some point, sorted: one series per name.
    pub groups: Vec<String>,
    /// The samples of the last `minutes`, oldest first; empty before the first.
    pub points: Vec<HistoryPoint>,
}

/// One sample of [`StreamHistoryResponse`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HistoryPoint {
    /// When the sample was taken (ISO-8601 UTC, Redis time).
    pub at: String,
    /// The same instant in milliseconds since the epoch.
    pub at_ms: i64,
    /// Records in every shard stream together at that time.
    pub total_length: i64,
    /// Records appended per second since the previous sample; `null` on the first sample.
    pub produce_rate: Option<f64>,
    /// The groups sampled at that time (those the replica owned), by name.
    pub groups: Vec<HistoryGroupPoint>,
}

/// One group in a [`HistoryPoint`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HistoryGroupPoint {
    /// The group's name.
    pub consumer_group: String,
    /// Its lag at that time (summed over its shards); `null` when Redis could not tell.
    pub lag: Option<i64>,
    /// Records read by the group per second since the previous sample; `null` when the group is not in the
    /// previous sample.
    pub consume_rate: Option<f64>,
}
