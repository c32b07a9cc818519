//! coord/v1 HTTP/JSON request and response types (coord/v1 contract).
//!
//! Field names are camelCase, instants are ISO-8601 UTC strings, shard ids are objects `{"shardIndex": n}`.
//! Requests are lenient where existing clients differ (unknown fields ignored, `null` lists read as empty,
//! shard ids accepted as bare integers too); responses always carry every field the clients require.
//! Responses of the monitoring, resharding and authentication routes are in [`monitoring`],
//! [`resharding`] and [`auth`]; the Grafana routes' rows in [`grafana`]; a stream as a whole
//! (describe, history) in [`describe`].

pub mod auth;
pub mod browse;
pub mod describe;
pub mod grafana;
pub mod monitoring;
pub mod offsets;
pub mod pending;
pub mod quiesce;
pub mod resharding;

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// A shard of a stream, serialised as `{"shardIndex": n}`; a bare integer is accepted on input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardId {
    /// The shard's index, `0..shardCount`; its stream key is `<streamPrefix>:<shardIndex>`.
    pub shard_index: u32,
}

impl ShardId {
    /// The shard with index `shard_index`.
    pub fn new(shard_index: u32) -> Self {
        ShardId { shard_index }
    }
}

impl<'de> Deserialize<'de> for ShardId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Object {
            shard_index: u32,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Bare(u32),
            Object(Object),
        }
        match Either::deserialize(d) {
            Ok(Either::Bare(i)) => Ok(ShardId::new(i)),
            Ok(Either::Object(o)) => Ok(ShardId::new(o.shard_index)),
            Err(_) => Err(serde::de::Error::custom(
                "expected a shard id {\"shardIndex\": <integer 0..4294967295>} or a bare non-negative integer",
            )),
        }
    }
}

/// Reads `null` as the type's default (clients send `null` for empty lists).
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The heartbeat outcomes: the eight of the coord/v1 contract, plus rsc's `FENCED_INSTANCE_ID`, which is
/// only ever sent in answer to a request carrying rsc's optional `groupInstanceId` (clients of the contract
/// that do not send one never see it). Nothing else may ever be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum HeartbeatStatus {
    /// The heartbeat was accepted: read exactly `assignedShards`, wait for `pendingShards`, and send the
    /// returned `memberEpoch` next.
    Ok,
    /// Keep the current state and try again (defined by the contract; rsc does not send it today).
    Retry,
    /// The member's `metadataVersion` disagrees with the group's during a metadata-correction round: keep
    /// only already-owned shards that are in `assignedShards`, start no new ones, adopt the returned epochs
    /// and version.
    SyncMetadata,
    /// A metadata-correction round is open and the member is on the current version: as `SYNC_METADATA`, keep
    /// only already-owned shards that are in `assignedShards` and start no new ones.
    RevokePending,
    /// The group or the member is unknown (or a non-zero epoch for a member the group no longer has): drop
    /// every shard and join again with `memberEpoch` 0.
    UnknownMemberId,
    /// The member's epoch is stale, or it was expired or fenced (invalid ownership report, rebalance
    /// timeout): drop every shard and join again with `memberEpoch` 0.
    FencedMemberEpoch,
    /// The request's `protocolVersion` is outside the range this coordinator speaks; nothing is stored.
    UnsupportedProtocol,
    /// The request is malformed or contradicts the member's stored state (body and path `memberId` differ, an
    /// epoch below -2, -2 without a `groupInstanceId`, an epoch above the stored one, an epoch-0 join of an
    /// id that still owns shards); nothing is stored.
    InvalidRequest,
    /// Another live member holds the `groupInstanceId` this request claims (static membership): the
    /// request is refused (rejected shape, nothing stored); the member keeps nothing and may try to join
    /// again once the other one has left or its lease has lapsed.
    FencedInstanceId,
}

impl HeartbeatStatus {
    /// Every status, in the order the contract lists them (rsc's own last).
    pub const ALL: [HeartbeatStatus; 9] = [
        HeartbeatStatus::Ok,
        HeartbeatStatus::Retry,
        HeartbeatStatus::SyncMetadata,
        HeartbeatStatus::RevokePending,
        HeartbeatStatus::UnknownMemberId,
        HeartbeatStatus::FencedMemberEpoch,
        HeartbeatStatus::UnsupportedProtocol,
        HeartbeatStatus::InvalidRequest,
        HeartbeatStatus::FencedInstanceId,
    ];

    /// The wire spelling, e.g. `SYNC_METADATA`.
    pub fn as_str(self) -> &'static str {
        match self {
            HeartbeatStatus::Ok => "OK",
            HeartbeatStatus::Retry => "RETRY",
            HeartbeatStatus::SyncMetadata => "SYNC_METADATA",
            HeartbeatStatus::RevokePending => "REVOKE_PENDING",
            HeartbeatStatus::UnknownMemberId => "UNKNOWN_MEMBER_ID",
            HeartbeatStatus::FencedMemberEpoch => "FENCED_MEMBER_EPOCH",
            HeartbeatStatus::UnsupportedProtocol => "UNSUPPORTED_PROTOCOL",
            HeartbeatStatus::InvalidRequest => "INVALID_REQUEST",
            HeartbeatStatus::FencedInstanceId => "FENCED_INSTANCE_ID",
        }
    }
}

/// How far a member has got with giving up a shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RevokeState {
    /// Told to give the shard up; not yet stopped reading it.
    Revoking,
    /// Stopped reading new entries; entries already handed to the application are still in flight.
    Draining,
    /// Stopped; with `inFlight` 0 the shard is released and may be granted to its next owner.
    Revoked,
}

/// `runtimeConsumerCapacity` of a heartbeat: how much work the member can do. Shown to operators; rsc does
/// not use it for assignment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RuntimeConsumerCapacity {
    /// How many entries the member handles at once at most (at least 1).
    pub runtime_max_concurrency: i64,
    /// How many of those slots are free now (at least 0); `runtimeMaxConcurrency - availableConcurrency` is
    /// shown as the member's active workers.
    pub available_concurrency: i64,
}

/// One entry of a heartbeat's `revokingShards`: how far the member has got with giving up a shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RevokingShardReport {
    /// The shard being given up.
    pub shard: ShardId,
    /// How far the member has got.
    pub state: RevokeState,
    /// Entries of the shard handed to the application and not yet acknowledged (`null` or absent: 0).
    #[serde(default, deserialize_with = "null_as_default")]
    pub in_flight: i64,
    /// When the last in-flight entry was acknowledged (ISO-8601 UTC), if the member says.
    #[serde(default)]
    pub acked_at: Option<String>,
}

impl RevokingShardReport {
    /// REVOKED with nothing in flight: the member has released the shard.
    pub fn is_released(&self) -> bool {
        self.state == RevokeState::Revoked && self.in_flight == 0
    }
}

/// One entry of a heartbeat's `shardProgress`: where the member is in a shard, for monitoring. Every field
/// but `shard` is optional.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardProgressReport {
    /// The shard reported on (one the member owns or is revoking).
    pub shard: ShardId,
    /// The shard's stream key, `<streamPrefix>:<shardIndex>`.
    #[serde(default)]
    pub stream_key: Option<String>,
    /// The id of the last entry Redis delivered to the member on this shard.
    #[serde(default)]
    pub last_delivered_id: Option<String>,
    /// The id of the last entry the member acknowledged on this shard.
    #[serde(default)]
    pub last_acked_id: Option<String>,
    /// Entries of the shard delivered to the member and not yet acknowledged (`null` or absent: 0).
    #[serde(default, deserialize_with = "null_as_default")]
    pub pending_count: i64,
    /// When the member took these figures (ISO-8601 UTC).
    #[serde(default)]
    pub updated_at: Option<String>,
}

/// Body of `POST …/members/{memberId}/heartbeat` (coord/v1 contract).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatRequest {
    /// The coord/v1 protocol version the member speaks (at least 1; this build speaks 1).
    pub protocol_version: i64,
    /// An id of this request (not blank, at most 200 bytes), echoed as `responseTo`.
    pub request_id: String,
    /// The member's id; must equal the `memberId` of the path.
    pub member_id: String,
    /// A display name for operators; `null` keeps the previous one.
    #[serde(default)]
    pub member_name: Option<String>,
    /// rsc extension, optional: the client library's name and version (e.g. `rsc-client`, `0.1.0`), recorded
    /// when the member joins so operators can check versions before an upgrade. Clients of the coord/v1
    /// contract that do not send them are unaffected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    /// rsc extension, optional: the client library's version (see `clientName`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// rsc extension, optional: the member's static identity (static membership, as Kafka's
    /// `group.instance.id`). A member that stops (its lease lapses, or it leaves with `memberEpoch` -2,
    /// "temporarily") keeps its target reserved for the group's static-member grace; a member joining with
    /// the same id within it gets the same shards back. Read when a member joins (and on a `-2` leave);
    /// clients of the coord/v1 contract that do not send it are unaffected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_instance_id: Option<String>,
    /// `0`: join (or rejoin); `-1`: leave; `-2`: leave temporarily (a static member keeps its target
    /// reserved); positive: the `memberEpoch` of the last answer, echoed.
    pub member_epoch: i64,
    /// The last `metadataVersion` the member saw (0 before its first answer).
    pub metadata_version: i64,
    /// How much work the member can do (for monitoring).
    pub runtime_consumer_capacity: RuntimeConsumerCapacity,
    /// The shards the member reads now (`null` or absent: none).
    #[serde(default, deserialize_with = "null_as_default")]
    pub owned_shards: Vec<ShardId>,
    /// The shards the member is giving up, with how far it has got (`null` or absent: none).
    #[serde(default, deserialize_with = "null_as_default")]
    pub revoking_shards: Vec<RevokingShardReport>,
    /// Where the member is in each shard it owns or is revoking (`null` or absent: nothing reported).
    #[serde(default, deserialize_with = "null_as_default")]
    pub shard_progress: Vec<ShardProgressReport>,
}

/// `assignment` of a heartbeat response: what the member may read now and what is promised but blocked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AssignmentView {
    /// The shards the member may read now, ascending.
    pub assigned_shards: Vec<ShardId>,
    /// The shards promised to the member but still held by another member that is giving them up, ascending:
    /// not to be read yet.
    pub pending_shards: Vec<ShardId>,
    /// The group's `metadataVersion` this assignment belongs to.
    pub metadata_version: i64,
}

/// Heartbeat response; always HTTP 200, every field always present (coord/v1 contract).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatResponse {
    /// The request's `requestId`.
    pub response_to: String,
    /// The outcome, and what the member must do.
    pub status: HeartbeatStatus,
    /// The member id of the path.
    pub member_id: String,
    /// The epoch the member must send in its next heartbeat (-1 while leaving).
    pub member_epoch: i64,
    /// How long to wait before the next heartbeat, in milliseconds (always positive).
    pub heartbeat_interval_ms: i64,
    /// How long a member has to give up a revoked shard before it is fenced, in milliseconds.
    pub rebalance_timeout_ms: i64,
    /// The group's epoch: bumped by every membership or shard-count change (0 in rejections).
    pub group_epoch: i64,
    /// The group epoch the current target assignment was computed at (0 in rejections).
    pub assignment_epoch: i64,
    /// The group's metadata version: bumped by every change of the group's metadata, including membership
    /// changes (0 in rejections).
    pub metadata_version: i64,
    /// What the member may read now and what it must still wait for (empty in rejections).
    pub assignment: AssignmentView,
    /// For any status but `OK`: what happened and what the member should do, in words. Not part of the
    /// reference contract: absent on `OK` answers, and clients that do not know it ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Ordered streams (rsc's addition): for each assigned shard that survived a scale and still waits for
    /// other parents, its switch point (shard index → stream id). The member hands no record after it to
    /// the application until the fence is lifted (absent from a later answer). Absent when empty; clients
    /// that do not know it ignore it and keep at-least-once without per-key order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub read_fences: BTreeMap<String, String>,
    /// rsc's addition: the stream routing version this answer's group state reflects (every switch and
    /// rollback bumps it). A consumer of an ordered stream compares it with the routing boundary of the shards
    /// it reads: a boundary raised by a newer switch means the answers have not caught up with that switch
    /// yet, and the consumer fences itself at the boundary's switch point until they have
    /// (`rsc_protocol::ordering::self_fence`). Absent in rejections and from coordinators that do not send it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_version: Option<i64>,
}

/// `POST /coord/v1/streams/{p}` and the compatibility `POST …/groups/{g}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateStreamRequest {
    /// How many shards the stream starts with (1 to 16384; absent: the coordinator's configured default).
    #[serde(default)]
    pub initial_shard_count: Option<i64>,
    /// `KEY`: per-key order across scales (rsc's addition; absent or `NONE`: at-least-once only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordering: Option<crate::ordering::Ordering>,
    /// Who asks, for the audit (required, not blank, at most 1024 bytes).
    #[serde(default)]
    pub requested_by: Option<String>,
    /// Why, for the audit (free text, at most 1024 bytes).
    #[serde(default)]
    pub reason: Option<String>,
    /// What to do with shard streams an earlier stream of this prefix left in Redis (the first group of a
    /// prefix only): `REFUSE` (default), `ADOPT` or `PURGE` (`existing_records.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub existing_records: Option<crate::existing_records::ExistingRecords>,
}

/// Answer of a stream create (201, StreamCreateResponse).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreateStreamResponse {
    /// The stream created; its shard streams are `<streamPrefix>:0 … <streamPrefix>:<shardCount - 1>`.
    pub stream_prefix: String,
    /// How many shards the stream has.
    pub shard_count: u32,
    /// The new group's metadata version.
    pub metadata_version: i64,
}

/// `DELETE …/groups/{g}` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteGroupRequest {
    /// Who asks, for the audit (required, not blank).
    #[serde(default)]
    pub requested_by: Option<String>,
    /// Why, for the audit (required, not blank).
    #[serde(default)]
    pub reason: Option<String>,
    /// Delete even while members are active (absent: false, and a group with an active member is refused
    /// with 409 `GROUP_HAS_ACTIVE_MEMBERS`).
    #[serde(default)]
    pub force: Option<bool>,
}

/// A resharding migration as shown to clients (coord/v1 contract).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MigrationView {
    /// The migration's id (`reshard-<uuid>`).
    pub resharding_id: String,
    /// The shard count before the scale.
    pub from_shard_count: u32,
    /// The shard count the scale moves to.
    pub to_shard_count: u32,
    /// `PREPARING`, `ACTIVE`, `DRAINING`, `DEPRECATED` (complete), `ROLLED_BACK`, `FORCE_COMPLETED` or
    /// `ABORTED`.
    pub state: String,
    /// When the scale was requested (ISO-8601 UTC).
    pub created_at: String,
    /// When the migration last changed state (ISO-8601 UTC).
    pub updated_at: String,
}

/// GroupResponse (coord/v1 contract).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GroupResponse {
    /// The stream the group consumes.
    pub stream_prefix: String,
    /// The group's name (also the Redis consumer group's name on every shard stream).
    pub consumer_group: String,
    /// `EMPTY` (no live member), `RECONCILING` (a member's shards differ from its target, or a handover is
    /// under way) or `STABLE`.
    pub state: String,
    /// The group's epoch: bumped by every membership or shard-count change.
    pub group_epoch: i64,
    /// The group epoch the current target assignment was computed at (equal to `groupEpoch` in steady state).
    pub assignment_epoch: i64,
    /// The group's metadata version: bumped by every change of its metadata.
    pub metadata_version: i64,
    /// The group's current shard count.
    pub shard_count: u32,
    /// The scale under way as this group adopted it; `null` when none is (or the group has not adopted it
    /// yet).
    pub active_migration: Option<MigrationView>,
    /// Member id → how many shards its target holds, for every active member.
    pub target_assignment_summary: BTreeMap<String, usize>,
    /// Member id → how many shards it reported owning, for live members that own any.
    pub current_assignment_summary: BTreeMap<String, usize>,
}

/// One entry of producer routing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RoutingShard {
    /// The shard's index, `0..shardCount`.
    pub shard_index: u32,
    /// The shard's stream key, `<streamPrefix>:<shardIndex>`: publish with `XADD <streamKey> NOMKSTREAM …`.
    pub stream_key: String,
    /// The Redis Cluster hash slot of `streamKey` (0 to 16383).
    pub redis_slot: u16,
}

/// `GET …/producer-routing` (coord/v1 contract).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ProducerRoutingResponse {
    /// The stream, as requested.
    pub stream_prefix: String,
    /// The group whose routing this is, as requested.
    pub consumer_group: String,
    /// The group's metadata version (changes on membership changes too, not only on routing changes).
    pub metadata_version: i64,
    /// How many shards keys are routed over now (0 after a scale to zero: nothing can be published).
    pub shard_count: u32,
    /// `<streamPrefix>:{shardIndex}`, the placeholder text literal.
    pub stream_key_pattern: String,
    /// Every shard `0..shardCount`, ascending; a key's shard is picked by the contract's routing hash
    /// (`rsc_protocol::routing::shard_for_key`).
    pub shards: Vec<RoutingShard>,
    /// rsc: the stream's routing version (bumped on every switch and rollback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_version: Option<i64>,
    /// rsc: present while a scale waits for producers to quiesce (`wire::quiesce`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiesce: Option<quiesce::QuiesceNotice>,
}

/// `POST /coord/v1/streams/{p}/scale` and the compatibility `POST …/groups/{g}/scale`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScaleRequest {
    /// The shard count to move to (required; 0 to 16384, 0 drains and removes every shard).
    #[serde(default)]
    pub target_shard_count: Option<i64>,
    /// Who asks, for the audit (required, not blank).
    #[serde(default)]
    pub requested_by: Option<String>,
    /// Why, for the audit (required, not blank).
    #[serde(default)]
    pub reason: Option<String>,
    /// Informational only (coord/v1 contract).
    #[serde(default)]
    pub deprecated_after: Option<String>,
    /// rsc: switch routing only once producers have quiesced, or at this timeout (`wire::quiesce`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer_quiesce: Option<quiesce::ProducerQuiesceRequest>,
}

/// `POST /coord/v1/streams/{p}/ordering` (rsc's addition): change a stream's ordering option.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrderingRequest {
    /// The new option (required).
    #[serde(default)]
    pub ordering: Option<crate::ordering::Ordering>,
    /// Who asks, for the audit (required, not blank).
    #[serde(default)]
    pub requested_by: Option<String>,
    /// Why, for the audit (required, not blank).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Answer of `POST /coord/v1/streams/{p}/ordering`: the stream's option as now stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct OrderingResponse {
    /// The stream changed.
    pub stream_prefix: String,
    /// The stream's ordering option now.
    pub ordering: crate::ordering::Ordering,
}

/// Body of rollback and force-complete requests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MigrationActionRequest {
    /// Who asks, for the audit (required, not blank).
    #[serde(default)]
    pub requested_by: Option<String>,
    /// Why, for the audit (required, not blank).
    #[serde(default)]
    pub reason: Option<String>,
}

/// A body of an admin mutation: a JSON object of exactly these fields (the server refuses unknown ones,
/// so a misspelt field is an error rather than a silent default). Heartbeat bodies are not admin bodies:
/// they accept unknown fields, for newer clients.
pub trait AdminBody {
    /// The wire names of the fields, in the order the documentation lists them.
    const FIELDS: &'static [&'static str];
}

impl AdminBody for CreateStreamRequest {
    const FIELDS: &'static [&'static str] = &[
        "initialShardCount",
        "requestedBy",
        "reason",
        "ordering",
        "existingRecords",
    ];
}

impl AdminBody for DeleteGroupRequest {
    const FIELDS: &'static [&'static str] = &["requestedBy", "reason", "force"];
}

impl AdminBody for ScaleRequest {
    const FIELDS: &'static [&'static str] = &[
        "targetShardCount",
        "requestedBy",
        "reason",
        "deprecatedAfter",
        "producerQuiesce",
    ];
}

impl AdminBody for OrderingRequest {
    const FIELDS: &'static [&'static str] = &["ordering", "requestedBy", "reason"];
}

impl AdminBody for MigrationActionRequest {
    const FIELDS: &'static [&'static str] = &["requestedBy", "reason"];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeat_request_accepts_python_and_spring_shapes() {
        let python = r#"{"protocolVersion":1,"requestId":"r1","memberId":"m","memberName":"m","memberEpoch":0,
            "metadataVersion":0,"runtimeConsumerCapacity":{"runtimeMaxConcurrency":1,"availableConcurrency":1},
            "ownedShards":[],"revokingShards":[],"shardProgress":[],"extra":"ignored"}"#;
        let req: HeartbeatRequest = serde_json::from_str(python).unwrap();
        assert_eq!(req.member_epoch, 0);
        let spring = r#"{"protocolVersion":1,"requestId":"r2","memberId":"m","memberName":null,"memberEpoch":3,
            "metadataVersion":2,"runtimeConsumerCapacity":{"runtimeMaxConcurrency":4,"availableConcurrency":2},
            "ownedShards":[{"shardIndex":1},2],"revokingShards":[{"shard":{"shardIndex":3},"state":"DRAINING","inFlight":1,"ackedAt":null}],
            "shardProgress":null}"#;
        let req: HeartbeatRequest = serde_json::from_str(spring).unwrap();
        assert_eq!(req.owned_shards, vec![ShardId::new(1), ShardId::new(2)]);
        assert!(!req.revoking_shards[0].is_released());
        assert!(req.shard_progress.is_empty());
    }

    #[test]
    fn negative_shard_index_is_rejected_with_a_readable_message() {
        let err = serde_json::from_str::<ShardId>(r#"{"shardIndex":-1}"#).unwrap_err();
        assert!(err.to_string().contains("shardIndex"), "{err}");
    }

    #[test]
    fn response_statuses_are_exactly_the_eight_contract_strings_and_fenced_instance_id() {
        let names: Vec<String> = HeartbeatStatus::ALL
            .iter()
            .map(|s| {
                serde_json::to_value(s)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            names,
            [
                "OK",
                "RETRY",
                "SYNC_METADATA",
                "REVOKE_PENDING",
                "UNKNOWN_MEMBER_ID",
                "FENCED_MEMBER_EPOCH",
                "UNSUPPORTED_PROTOCOL",
                "INVALID_REQUEST",
                "FENCED_INSTANCE_ID"
            ]
        );
        for s in HeartbeatStatus::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
