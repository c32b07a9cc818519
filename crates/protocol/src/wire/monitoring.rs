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
    /// The id of the replica that answered (`coordinator.id`).
    pub coordinator_id: String,
    /// Redis as the replica sees it: `UP`, `SLOW` (answered a PING later than the health timeout) or `DOWN`.
    pub redis: String,
    /// The reconciler (`loop` on the wire): `UP` (it ran recently), `STALLED` or `DISABLED`.
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
    /// Redis: did a PING come back in time.
    pub redis: RedisHealth,
    /// The background reconciler: did it run recently.
    pub reconciler: ReconcilerHealth,
    /// Whether any group is suspected of a metadata rollback.
    pub metadata_durability: DurabilityHealth,
}

/// rsc: the Redis component of health.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RedisHealth {
    /// `UP`, `SLOW` or `DOWN`.
    pub status: String,
    /// What the PING found, for people (e.g. how long it took, or the error).
    pub detail: String,
}

/// rsc: the reconciler component of health.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReconcilerHealth {
    /// `UP` (it ran within a few tick intervals), `STALLED` (it did not) or `DISABLED`.
    pub status: String,
    /// When it last completed a pass on this replica (ISO-8601 UTC); null before the first.
    pub last_run_at: Option<String>,
}

/// rsc: the metadata-durability component of health.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DurabilityHealth {
    /// `UP` (no visible group suspected), `SUSPECTED_ROLLBACK` or `UNKNOWN` (not checked: Redis down, groups
    /// unreadable, or the caller's credentials could not be checked).
    pub status: String,
    /// How the check was made, or why it was not, in words.
    pub checked_by: String,
    /// The suspected groups the caller may see (empty unless `SUSPECTED_ROLLBACK`).
    pub suspected_groups: Vec<SuspectedGroupHealth>,
}

/// A group suspected of a metadata rollback, as health lists it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SuspectedGroupHealth {
    /// The group's stream.
    pub stream_prefix: String,
    /// The group's name.
    pub consumer_group: String,
    /// The kinds of evidence seen: `MEMBER_METADATA_VERSION`, `MEMBER_EPOCH`, `PRODUCER_METADATA_VERSION`,
    /// `STORE_REVISION`, `REBALANCE_BACKWARD`.
    pub signals: Vec<String>,
    /// The latest piece of evidence, in words.
    pub last_signal: String,
}

/// `GET /coord/v1/monitoring/compatibility`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CompatibilityResponse {
    /// The coord/v1 protocol version this server prefers (1).
    pub current_coordination_version: i64,
    /// The `protocolVersion` range heartbeats may carry.
    pub supported_coordination_versions: VersionRange,
    /// Each supported protocol version with its lifecycle and timing defaults.
    pub coordination_versions: Vec<CoordinationVersion>,
    /// rsc: this server's version.
    pub coordinator_version: String,
    /// rsc: how many live members of all groups joined with each protocol version ("0": joined before rsc
    /// recorded it); null when the groups could not be read.
    pub live_members_by_protocol_version: Option<std::collections::BTreeMap<String, u64>>,
}

/// An inclusive range of protocol versions.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VersionRange {
    /// The lowest version accepted.
    pub min: i64,
    /// The highest version accepted.
    pub max: i64,
}

/// One protocol version's lifecycle (`coordinationVersions` of the compatibility view).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CoordinationVersion {
    /// The protocol version (`protocolVersion` of a heartbeat).
    pub version: i64,
    /// `ACTIVE` while it is served.
    pub status: String,
    /// The release that introduced it.
    pub introduced_in: ReleaseVersion,
    /// The release that deprecated it; null while it is not deprecated.
    pub deprecated_in: Option<ReleaseVersion>,
    /// The release up to which it stays supported at least.
    pub minimum_supported_until: ReleaseVersion,
    /// The release that removed it; null while it is served.
    pub removed_in: Option<ReleaseVersion>,
    /// The heartbeat timing this server uses with it.
    pub timing_defaults: TimingDefaults,
}

/// A release version, spelled out and as text.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReleaseVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch version.
    pub patch: u32,
    /// A pre-release qualifier (null for a release).
    pub qualifier: Option<String>,
    /// The whole version as text, e.g. `0.1.0`.
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
    /// The interval members heartbeat at (`heartbeatIntervalMs`).
    pub heartbeat_interval: String,
    /// How long an accepted heartbeat keeps a member alive.
    pub member_lease_ttl: String,
    /// How long a member has to give up a revoked shard before it is fenced.
    pub rebalance_timeout: String,
}

/// `GET /coord/v1/monitoring/groups`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GroupList {
    /// Every group, as GroupResponse.
    pub groups: Vec<GroupResponse>,
}

/// `GET …/members`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MemberList {
    /// The group's members, live and departed (until pruned), by member id.
    pub members: Vec<MemberMetadata>,
}

/// One entry of `GET …/members` (MemberMetadata).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MemberMetadata {
    /// The member's id (also its Redis consumer name).
    pub member_id: String,
    /// The display name the member sent (its id when it sent none).
    pub member_name: String,
    /// `ACTIVE`, `LEAVING`, `EXPIRED` (its lease ran out) or `FENCED`.
    pub state: String,
    /// The epoch the member must send next (-1 while leaving).
    pub member_epoch: i64,
    /// The coord/v1 protocol version the member joined with (0: joined before rsc recorded it).
    #[serde(default)]
    pub protocol_version: i64,
    /// The client library the member joined with, as it named itself (null when it did not).
    #[serde(default)]
    pub client_name: Option<String>,
    /// The client library's version the member joined with (null when it did not say).
    #[serde(default)]
    pub client_version: Option<String>,
    /// rsc: the static identity the member joined with (`groupInstanceId`; null for a dynamic member).
    #[serde(default)]
    pub group_instance_id: Option<String>,
    /// The `metadataVersion` the member last reported (0 before it has).
    pub metadata_version: i64,
    /// The member's reported `runtimeMaxConcurrency`.
    pub runtime_max_concurrency: i64,
    /// `runtimeMaxConcurrency - availableConcurrency` as last reported (at least 0).
    pub active_consumer_workers: i64,
    /// The shards the member last reported owning (`ownedShards`).
    pub current_assignment: Vec<ShardId>,
    /// The shards the coordinator last granted it (`assignedShards`).
    pub granted_assignment: Vec<ShardId>,
    /// The shards being taken from it that it has not released yet.
    pub revoking: Vec<ShardId>,
    /// When its last heartbeat was accepted (ISO-8601 UTC).
    pub last_heartbeat_at: Option<String>,
    /// When its lease runs out unless it heartbeats (ISO-8601 UTC; null when it holds no lease).
    pub member_lease_expires_at: Option<String>,
    /// The group's rebalance timeout, in milliseconds.
    pub rebalance_timeout_ms: i64,
    /// When it will be fenced unless it releases the shards being revoked (ISO-8601 UTC; null when nothing is
    /// being revoked).
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
    /// Member id → the shards the assignment gives it.
    pub target_assignment: BTreeMap<String, Vec<ShardId>>,
    /// Live member id → the shards it last reported owning.
    pub current_assignments: BTreeMap<String, Vec<ShardId>>,
    /// rsc: what the coordinator has granted each live member.
    pub granted_assignments: BTreeMap<String, Vec<ShardId>>,
    /// Live member id → the shards being taken from it, with its last report on each (members with none are
    /// left out).
    pub revoke_progress: BTreeMap<String, Vec<RevokeProgress>>,
    /// rsc: the last report of each member that is no longer live.
    pub departed_members: BTreeMap<String, DepartedMember>,
    /// rsc: shards held back from assignment until an old incarnation's lease has run out.
    pub holds: Vec<HoldView>,
    /// rsc: targets kept for static members that stopped (lease lapsed, or a temporary leave), by
    /// `groupInstanceId`: a member joining with that id before `until` gets exactly these shards back.
    pub static_reservations: Vec<ReservationView>,
    /// Broken invariants found in the group's state, in words (empty when sound).
    pub invariant_violations: Vec<String>,
}

/// A static member's reserved target (`staticReservations` of the assignments view).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReservationView {
    /// The static identity the shards are kept for.
    pub group_instance_id: String,
    /// The incarnation that stopped.
    pub member_id: String,
    /// The target kept for it.
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
    /// The shard being revoked.
    pub shard: ShardId,
    /// The member's last report on it (null when it has not reported it in `revokingShards`).
    pub state: Option<RevokeState>,
    /// Entries of the shard still in flight at the member, as last reported (0 when not reported).
    pub in_flight: i64,
}

/// A member that is no longer live (`departedMembers` of the assignments view), kept until pruned.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DepartedMember {
    /// `EXPIRED` or `FENCED`.
    pub state: String,
    /// The shards it last reported owning (it owns none now).
    pub last_reported_assignment: Vec<ShardId>,
    /// When it left the live states (ISO-8601 UTC).
    pub since: String,
}

/// Shards of a dead or fenced incarnation held back from assignment until its client-side lease has certainly
/// run out (`holds` of the assignments view).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HoldView {
    /// The incarnation the shards are held for.
    pub member_id: String,
    /// The shards held back.
    pub shards: Vec<ShardId>,
    /// When the hold ends and the shards may be granted (ISO-8601 UTC); while `endPending`, the earliest it
    /// can end.
    pub until: String,
    /// The hold's end is still to be counted: it was placed by a decision that may have paused before its write
    /// (a member fenced for reporting a shard outside its grants), so the next reconciler pass counts it again
    /// from its own clock (a lease TTL and the hold margin from then) before it can end. Normally for a moment.
    pub end_pending: bool,
    /// Why they are held, in words.
    pub reason: String,
}

/// `GET …/consumption`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConsumptionResponse {
    /// One row per member and shard reported, by member then shard.
    pub progress: Vec<ConsumerShardProgress>,
}

/// One member's progress on one shard, as the member reported it (values it did not send are `null`).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ConsumerShardProgress {
    /// The group's stream.
    pub stream_prefix: String,
    /// The group's name.
    pub consumer_group: String,
    /// The reporting member.
    pub member_id: String,
    /// The member's display name.
    pub member_name: String,
    /// The member's state (`ACTIVE`, `LEAVING`, `EXPIRED`, `FENCED`; `UNKNOWN` once the group no longer lists
    /// it).
    pub member_state: String,
    /// The shard reported on.
    pub shard: ShardId,
    /// The shard's stream key, as reported.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub stream_key: Value,
    /// The last entry id delivered to the member on this shard, as reported.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub last_delivered_id: Value,
    /// The last entry id the member acknowledged on this shard, as reported.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub last_acked_id: Value,
    /// Entries delivered to the member and not yet acknowledged, as reported.
    pub pending_count: i64,
    /// When the member took these figures, as reported.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub updated_at: Value,
}

/// `GET …/offsets`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct StreamShardOffsetsResponse {
    /// The group's stream.
    pub stream_prefix: String,
    /// The group's name.
    pub consumer_group: String,
    /// One row per shard the group reads (draining shards of a scale-in included).
    pub shards: Vec<ShardOffsetsView>,
    /// Entries in all the shard streams together.
    pub total_stream_length: i64,
    /// Entries delivered and not yet acknowledged, over all shards.
    pub total_pending_count: i64,
    /// Entries not yet delivered to the group, over all shards; null when any shard's lag is unknown.
    pub total_lag: Option<i64>,
    /// Redis memory of the shard streams whose usage is known, in bytes.
    pub total_memory_usage_bytes: i64,
    /// Whether `totalMemoryUsageBytes` covers every existing shard stream.
    pub memory_usage_known: bool,
}

/// One shard of `GET …/offsets`. The Redis node fields come from `CLUSTER SLOTS` in cluster mode (`null` on
/// standalone Redis); the consumer-side ids are those the shard's owner last reported (`null` until it has).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardOffsetsView {
    /// The group's stream.
    pub stream_prefix: String,
    /// The group's name.
    pub consumer_group: String,
    /// The shard.
    pub shard: ShardId,
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
    /// rsc: whether the shard stream exists.
    pub stream_exists: bool,
    /// Entries in the stream (`XLEN`; 0 when it does not exist).
    pub stream_length: i64,
    /// Id of the oldest entry.
    pub first_record_id: Option<String>,
    /// Id of the newest entry.
    pub last_record_id: Option<String>,
    /// The stream's last generated id (XINFO STREAM `last-generated-id`), also after the entry was trimmed or
    /// deleted.
    pub last_generated_id: Option<String>,
    /// The Redis consumer group's last-delivered id on the stream.
    pub group_last_delivered_id: Option<String>,
    /// The last delivered id the shard's consumer reported.
    pub consumer_last_delivered_id: Option<String>,
    /// The last acknowledged id the shard's consumer reported.
    pub consumer_last_acked_id: Option<String>,
    /// rsc: XINFO GROUPS `entries-read`.
    pub entries_read: Option<i64>,
    /// Entries delivered to the group and not yet acknowledged (XINFO GROUPS `pending`).
    pub pending_count: i64,
    /// Entries not yet delivered to the group (XINFO GROUPS `lag`); null when Redis cannot tell.
    pub lag: Option<i64>,
    /// Redis memory of the stream (`MEMORY USAGE`), in bytes; null when unknown.
    pub memory_usage_bytes: Option<i64>,
    /// Live members that report owning the shard.
    pub owner_member_ids: Vec<String>,
    /// rsc: the shard is being drained by a scale-in.
    pub draining: bool,
}
