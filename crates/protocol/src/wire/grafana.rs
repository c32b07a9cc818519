//! The rows of the contract's Grafana data routes (`/coord/v1/monitoring/grafana/*`, §3.9), flat as Grafana's
//! JSON API data source expects: owner lists are comma-joined strings and shards plain indexes. The
//! `shards` row is the offsets view of one shard ([`ShardOffsetsView`], monitoring.rs) flattened, with its
//! owners ([`GrafanaShardRow::from_offsets`]); what the routes serialise is what the OpenAPI document describes.

use super::ShardId;
use super::monitoring::ShardOffsetsView;
use serde::Serialize;

/// A variable option (`options/streams`, `options/consumer-groups`, `options/shards`).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GrafanaOption {
    /// What the variable shows.
    #[serde(rename = "__text")]
    pub text: String,
    /// What the variable's value is.
    #[serde(rename = "__value")]
    pub value: String,
}

/// A row of `groups`: one per group.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GrafanaGroupRow {
    /// The group's stream.
    pub stream_prefix: String,
    /// The group's name.
    pub consumer_group: String,
    /// EMPTY, ASSIGNING, RECONCILING or STABLE.
    pub state: String,
    /// The group epoch.
    pub group_epoch: i64,
    /// The epoch of the target assignment.
    pub assignment_epoch: i64,
    /// The group's metadata version.
    pub metadata_version: i64,
    /// The group's shard count.
    pub shard_count: u32,
    /// Members in state ACTIVE.
    pub active_members: usize,
    /// Members the group lists, in any state.
    pub total_members: usize,
    /// Shards live members own now.
    pub current_shards: usize,
    /// Shards the target assignment gives live members.
    pub target_shards: usize,
    /// "current / shardCount".
    pub assigned_shard_ratio: String,
    /// Shards being revoked from live members.
    pub revoking_shards: usize,
    /// Entries in the group's shard streams.
    pub total_stream_length: i64,
    /// Entries delivered to the group and not yet acknowledged, over all shards.
    pub total_pending_count: i64,
    /// Null when Redis cannot tell.
    pub total_lag: Option<i64>,
    /// Null on the group's first observation by this coordinator.
    pub produced_per_second: Option<f64>,
    /// Entries consumed per second since the previous observation (produced minus lag growth); null on the
    /// first.
    pub consumed_per_second: Option<f64>,
    /// Redis memory of the shard streams whose usage is known, in bytes.
    pub total_memory_usage_bytes: i64,
    /// Whether `totalMemoryUsageBytes` covers every existing shard stream.
    pub memory_usage_known: bool,
}

/// A row of `members`: one per member of the group.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GrafanaMemberRow {
    /// The group's stream.
    pub stream_prefix: String,
    /// The group's name.
    pub consumer_group: String,
    /// The member's id.
    pub member_id: String,
    /// The member's name.
    pub member_name: String,
    /// The member state as the contract spells it (ACTIVE, STARTING, LEAVING, FENCED, EXPIRED, …).
    pub state: String,
    /// The member's epoch.
    pub member_epoch: i64,
    /// The group's metadata version.
    pub metadata_version: i64,
    /// Shards the member owns now.
    pub current_shard_count: usize,
    /// Shards being revoked from the member.
    pub revoking_shard_count: usize,
    /// The member's reported `runtimeMaxConcurrency`.
    pub runtime_max_concurrency: i64,
    /// `runtimeMaxConcurrency - availableConcurrency` as last reported (at least 0).
    pub active_consumer_workers: i64,
    /// When the member last heartbeated (ISO-8601 UTC).
    pub last_heartbeat_at: Option<String>,
    /// When the member's lease runs out (ISO-8601 UTC).
    pub member_lease_expires_at: Option<String>,
}

/// A row of `shards`: the offsets row of one shard of a group, plus its owners, flat.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GrafanaShardRow {
    /// The group's stream.
    pub stream_prefix: String,
    /// The group's name.
    pub consumer_group: String,
    /// The shard.
    pub shard: ShardId,
    /// The group's shard count.
    pub shard_count: u32,
    /// The shard's index.
    pub shard_index: u32,
    /// `":<index>"`.
    pub shard_label: String,
    /// The shard's stream key.
    pub stream_key: String,
    /// The Redis Cluster hash slot of `streamKey`.
    pub redis_slot: u16,
    /// `host:port` of the cluster node serving the slot.
    pub redis_node_endpoint: Option<String>,
    /// The cluster node's id.
    pub redis_node_id: Option<String>,
    /// First slot of the node's range that holds the slot.
    pub redis_slot_range_start: Option<u16>,
    /// Last slot of that range.
    pub redis_slot_range_end: Option<u16>,
    /// Whether the shard stream exists.
    pub stream_exists: bool,
    /// Entries in the stream (`XLEN`; 0 when it does not exist).
    pub stream_length: i64,
    /// Id of the oldest entry.
    pub first_record_id: Option<String>,
    /// Id of the newest entry.
    pub last_record_id: Option<String>,
    /// The stream's last generated id (XINFO STREAM `last-generated-id`).
    pub last_generated_id: Option<String>,
    /// The Redis consumer group's last-delivered id on the stream.
    pub group_last_delivered_id: Option<String>,
    /// The last delivered id the shard's consumer reported.
    pub consumer_last_delivered_id: Option<String>,
    /// The last acknowledged id the shard's consumer reported.
    pub consumer_last_acked_id: Option<String>,
    /// XINFO GROUPS `entries-read`.
    pub entries_read: Option<i64>,
    /// Entries delivered to the group and not yet acknowledged (XINFO GROUPS `pending`).
    pub pending_count: i64,
    /// Entries not yet delivered to the group (XINFO GROUPS `lag`); null when Redis cannot tell.
    pub lag: Option<i64>,
    /// Whether `lag` is known.
    pub lag_known: bool,
    /// Always null per shard (the rates are per group).
    pub produced_per_second: Option<f64>,
    /// Always null per shard (the rates are per group).
    pub consumed_per_second: Option<f64>,
    /// Redis memory of the stream (`MEMORY USAGE`), in bytes; null when unknown.
    pub memory_usage_bytes: Option<i64>,
    /// Whether `memoryUsageBytes` is known.
    pub memory_usage_known: bool,
    /// The shard is being drained by a scale-in.
    pub draining: bool,
    /// Comma-joined member ids.
    pub owner_member_ids: String,
    /// Comma-joined ids of the members the target assignment gives the shard.
    pub target_owner_member_ids: String,
    /// Comma-joined ids of the members that own the shard now.
    pub current_owner_member_ids: String,
    /// UNASSIGNED, PENDING_ACK, CURRENT or TRANSITIONING.
    pub owner_state: String,
}

/// A row of `assignments`: the owners of one shard of a group (live members, comma-joined).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GrafanaAssignmentRow {
    /// The group's stream.
    pub stream_prefix: String,
    /// The group's name.
    pub consumer_group: String,
    /// The shard's index.
    pub shard_index: u32,
    /// Comma-joined ids of the members the target assignment gives the shard.
    pub target_owners: String,
    /// Comma-joined ids of the members that own the shard now.
    pub current_owners: String,
    /// Comma-joined ids of the members the shard is being revoked from.
    pub revoking_owners: String,
}

/// A row of `messages`: one record of a shard (or of every shard, merged), with the page it is on.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GrafanaMessageRow {
    /// The group's stream.
    pub stream_prefix: String,
    /// The group's name.
    pub consumer_group: String,
    /// The shard the record is on.
    pub shard_index: u32,
    /// The `shardIndex` parameter as given (an index, or the "all shards" selector).
    pub shard_selector: String,
    /// `":<index>"`.
    pub shard_label: String,
    /// The shard's stream key.
    pub stream_key: String,
    /// The record's stream id.
    pub record_id: String,
    /// The record's `payload` field, null when it has none.
    pub payload: Option<String>,
    /// Every field of the record as a JSON object, serialised.
    pub fields_json: String,
    /// FORWARD or BACKWARD.
    pub page_direction: String,
    /// The page size asked for.
    pub page_limit: usize,
    /// The cursor of the next page, null on the last one.
    pub page_next_cursor: Option<String>,
    /// Entries in the shard streams read.
    pub page_total_messages: i64,
    /// The record's time: the milliseconds part of its id.
    pub record_timestamp_ms: i64,
    /// The record's time, ISO-8601 UTC.
    pub record_time: String,
}

/// Who owns a shard, as the `shards` row tells it ([`GrafanaShardRow::from_offsets`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardOwners {
    /// Comma-joined member ids of the target assignment.
    pub target: String,
    /// Comma-joined member ids that own the shard now.
    pub current: String,
    /// UNASSIGNED, PENDING_ACK, CURRENT or TRANSITIONING.
    pub state: String,
}

impl GrafanaShardRow {
    /// The row of one shard: its offsets view flattened (owner ids comma-joined, `lagKnown` and
    /// `memoryUsageKnown` from whether Redis told them; the rates are per group, so null here), with the
    /// group's shard count and the shard's owners.
    pub fn from_offsets(view: &ShardOffsetsView, shard_count: u32, owners: ShardOwners) -> Self {
        let i = view.shard.shard_index;
        GrafanaShardRow {
            stream_prefix: view.stream_prefix.clone(),
            consumer_group: view.consumer_group.clone(),
            shard: view.shard,
            shard_count,
            shard_index: i,
            shard_label: format!(":{i}"),
            stream_key: view.stream_key.clone(),
            redis_slot: view.redis_slot,
            redis_node_endpoint: view.redis_node_endpoint.clone(),
            redis_node_id: view.redis_node_id.clone(),
            redis_slot_range_start: view.redis_slot_range_start,
            redis_slot_range_end: view.redis_slot_range_end,
            stream_exists: view.stream_exists,
            stream_length: view.stream_length,
            first_record_id: view.first_record_id.clone(),
            last_record_id: view.last_record_id.clone(),
            last_generated_id: view.last_generated_id.clone(),
            group_last_delivered_id: view.group_last_delivered_id.clone(),
            consumer_last_delivered_id: view.consumer_last_delivered_id.clone(),
            consumer_last_acked_id: view.consumer_last_acked_id.clone(),
            entries_read: view.entries_read,
            pending_count: view.pending_count,
            lag: view.lag,
            lag_known: view.lag.is_some(),
            produced_per_second: None,
            consumed_per_second: None,
            memory_usage_bytes: view.memory_usage_bytes,
            memory_usage_known: view.memory_usage_bytes.is_some(),
            draining: view.draining,
            owner_member_ids: view.owner_member_ids.join(","),
            target_owner_member_ids: owners.target,
            current_owner_member_ids: owners.current,
            owner_state: owners.state,
        }
    }
}
