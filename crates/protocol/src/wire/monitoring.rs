//! coord/v1 monitoring responses (READ routes): health, compatibility, the group list, members,
//! assignments, consumption and offsets. Fields the reference contract lacks but rsc adds (health's
//! `components`, assignments' `grantedAssignments`, `departedMembers`, `holds`, offsets' `draining`, …) are
//! marked as such; clients that do not know them ignore them.

use super::{GroupResponse, RevokeState, ShardId};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// `GET /coord/v1/monitoring/health`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HealthResponse {
    /// `UP`, `DEGRADED` or `DOWN`.
    pub status: String,
    pub coordinator_id: String,
    pub redis: String,
    #[serde(rename = "loop")]
    pub loop_state: String,
    /// rsc: whether this replica is shutting down.
    pub terminating: bool,
    /// rsc: each checked component.
    pub components: HealthComponents,
}

/// rsc: the components health checks.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HealthComponents {
    pub redis: RedisHealth,
    pub reconciler: ReconcilerHealth,
    pub metadata_durability: DurabilityHealth,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RedisHealth {
    pub status: String,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReconcilerHealth {
    pub status: String,
    pub last_run_at: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DurabilityHealth {
    pub status: String,
    pub checked_by: String,
    pub suspected_groups: Vec<SuspectedGroupHealth>,
}

/// A group suspected of a metadata rollback, as health lists it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SuspectedGroupHealth {
    pub stream_prefix: String,
    pub consumer_group: String,
    pub signals: Vec<String>,
    pub last_signal: String,
}

/// `GET /coord/v1/monitoring/compatibility`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CompatibilityResponse {
    pub current_coordination_version: i64,
    pub supported_coordination_versions: VersionRange,
    pub coordination_versions: Vec<CoordinationVersion>,
    /// rsc: this server's version.
    pub coordinator_version: String,
    /// rsc: how many live members of all groups joined with each protocol version ("0": joined before rsc
    /// recorded it); null when the groups could not be read.
    pub live_members_by_protocol_version: Option<std::collections::BTreeMap<String, u64>>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VersionRange {
    pub min: i64,
    pub max: i64,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CoordinationVersion {
    pub version: i64,
    pub status: String,
    pub introduced_in: ReleaseVersion,
    pub deprecated_in: Option<ReleaseVersion>,
    pub minimum_supported_until: ReleaseVersion,
    pub removed_in: Option<ReleaseVersion>,
    pub timing_defaults: TimingDefaults,
}

/// A release version, spelled out and as text.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReleaseVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    pub qualifier: Option<String>,
    pub version: String,
}

impl ReleaseVersion {
    /// `major.minor.patch` without a qualifier.
    pub fn new(major: u32, minor: u32, patch: u32) -> Self {
        ReleaseVersion {
            major,
            minor,
            patch,
            qualifier: None,
            version: format!("{major}.{minor}.{patch}"),
        }
    }
}

/// Durations as ISO-8601 (`PT3S`).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TimingDefaults {
    pub heartbeat_interval: String,
    pub member_lease_ttl: String,
    pub rebalance_timeout: String,
}

/// `GET /coord/v1/monitoring/groups`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GroupList {
    pub groups: Vec<GroupResponse>,
}

/// `GET …/members`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MemberList {
    pub members: Vec<MemberMetadata>,
}

/// One entry of `GET …/members` (MemberMetadata).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MemberMetadata {
    pub member_id: String,
    pub member_name: String,
    pub state: String,
    pub member_epoch: i64,
    /// The coord/v1 protocol version the member joined with (0: joined before rsc recorded it).
    #[serde(default)]
    pub protocol_version: i64,
    /// The client library the member joined with, as it named itself (null when it did not).
    #[serde(default)]
    pub client_name: Option<String>,
    #[serde(default)]
    pub client_version: Option<String>,
    /// rsc: the static identity the member joined with (`groupInstanceId`; null for a dynamic member).
    #[serde(default)]
    pub group_instance_id: Option<String>,
    pub metadata_version: i64,
    pub runtime_max_concurrency: i64,
    pub active_consumer_workers: i64,
    pub current_assignment: Vec<ShardId>,
    pub granted_assignment: Vec<ShardId>,
    pub revoking: Vec<ShardId>,
    pub last_heartbeat_at: Option<String>,
    pub member_lease_expires_at: Option<String>,
    pub rebalance_timeout_ms: i64,
    pub rebalance_deadline_at: Option<String>,
    /// The member's last `shardProgress` report, as it sent it.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<Object>>))]
    pub shard_progress: Value,
}

/// `GET …/assignments`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AssignmentsResponse {
    pub target_assignment: BTreeMap<String, Vec<ShardId>>,
    pub current_assignments: BTreeMap<String, Vec<ShardId>>,
    /// rsc: what the coordinator has granted each live member.
    pub granted_assignments: BTreeMap<String, Vec<ShardId>>,
    pub revoke_progress: BTreeMap<String, Vec<RevokeProgress>>,
    /// rsc: the last report of each member that is no longer live.
    pub departed_members: BTreeMap<String, DepartedMember>,
    /// rsc: shards held back from assignment until an old incarnation's lease has run out.
    pub holds: Vec<HoldView>,
    /// rsc: targets kept for static members that stopped (lease lapsed, or a temporary leave), by
    /// `groupInstanceId`: a member joining with that id before `until` gets exactly these shards back.
    pub static_reservations: Vec<ReservationView>,
    pub invariant_violations: Vec<String>,
}

/// A static member's reserved target (`staticReservations` of the assignments view).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReservationView {
    pub group_instance_id: String,
    /// The incarnation that stopped.
    pub member_id: String,
    pub shards: Vec<ShardId>,
    /// When the reservation lapses and its shards are rebalanced over the other members.
    pub until: String,
    /// `LEASE_LAPSED` or `TEMPORARY_LEAVE`.
    pub reason: String,
}

/// A shard being revoked from a member, with what the member last reported about it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RevokeProgress {
    pub shard: ShardId,
    pub state: Option<RevokeState>,
    pub in_flight: i64,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DepartedMember {
    pub state: String,
    pub last_reported_assignment: Vec<ShardId>,
    pub since: String,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HoldView {
    pub member_id: String,
    pub shards: Vec<ShardId>,
    pub until: String,
    pub reason: String,
}

/// `GET …/consumption`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConsumptionResponse {
    pub progress: Vec<ConsumerShardProgress>,
}

/// One member's progress on one shard, as the member reported it (values it did not send are `null`).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ConsumerShardProgress {
    pub stream_prefix: String,
    pub consumer_group: String,
    pub member_id: String,
    pub member_name: String,
    pub member_state: String,
    pub shard: ShardId,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub stream_key: Value,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub last_delivered_id: Value,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub last_acked_id: Value,
    pub pending_count: i64,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub updated_at: Value,
}

/// `GET …/offsets`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StreamShardOffsetsResponse {
    pub stream_prefix: String,
    pub consumer_group: String,
    pub shards: Vec<ShardOffsetsView>,
    pub total_stream_length: i64,
    pub total_pending_count: i64,
    pub total_lag: Option<i64>,
    pub total_memory_usage_bytes: i64,
    pub memory_usage_known: bool,
}

/// One shard of `GET …/offsets`. The Redis node fields come from `CLUSTER SLOTS` in cluster mode (`null` on
/// standalone Redis); the consumer-side ids are those the shard's owner last reported (`null` until it has).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardOffsetsView {
    pub stream_prefix: String,
    pub consumer_group: String,
    pub shard: ShardId,
    pub stream_key: String,
    pub redis_slot: u16,
    pub redis_node_endpoint: Option<String>,
    pub redis_node_id: Option<String>,
    pub redis_slot_range_start: Option<u16>,
    pub redis_slot_range_end: Option<u16>,
    /// rsc: whether the shard stream exists.
    pub stream_exists: bool,
    pub stream_length: i64,
    pub first_record_id: Option<String>,
    pub last_record_id: Option<String>,
    pub last_generated_id: Option<String>,
    pub group_last_delivered_id: Option<String>,
    pub consumer_last_delivered_id: Option<String>,
    pub consumer_last_acked_id: Option<String>,
    /// rsc: XINFO GROUPS `entries-read`.
    pub entries_read: Option<i64>,
    pub pending_count: i64,
    pub lag: Option<i64>,
    pub memory_usage_bytes: Option<i64>,
    pub owner_member_ids: Vec<String>,
    /// rsc: the shard is being drained by a scale-in.
    pub draining: bool,
}
