//! coord/v1 HTTP/JSON request and response types (coord/v1 contract).
//!
//! Field names are camelCase, instants are ISO-8601 UTC strings, shard ids are objects `{"shardIndex": n}`.
//! Requests are lenient where existing clients differ (unknown fields ignored, `null` lists read as empty,
//! shard ids accepted as bare integers too); responses always carry every field the clients require.
//! Responses of the monitoring, resharding and authentication routes are in [`monitoring`],
//! [`resharding`] and [`auth`]; the Grafana routes' rows in [`grafana`].

pub mod auth;
pub mod browse;
pub mod grafana;
pub mod monitoring;
pub mod quiesce;
pub mod resharding;

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// A shard of a stream, serialised as `{"shardIndex": n}`; a bare integer is accepted on input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardId {
    pub shard_index: u32,
}

impl ShardId {
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
    Ok,
    Retry,
    SyncMetadata,
    RevokePending,
    UnknownMemberId,
    FencedMemberEpoch,
    UnsupportedProtocol,
    InvalidRequest,
    /// Another live member holds the `groupInstanceId` this request claims (static membership): the
    /// request is refused (rejected shape, nothing stored); the member keeps nothing and may try to join
    /// again once the other one has left or its lease has lapsed.
    FencedInstanceId,
}

impl HeartbeatStatus {
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
    Revoking,
    Draining,
    Revoked,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RuntimeConsumerCapacity {
    pub runtime_max_concurrency: i64,
    pub available_concurrency: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RevokingShardReport {
    pub shard: ShardId,
    pub state: RevokeState,
    #[serde(default, deserialize_with = "null_as_default")]
    pub in_flight: i64,
    #[serde(default)]
    pub acked_at: Option<String>,
}

impl RevokingShardReport {
    /// REVOKED with nothing in flight: the member has released the shard.
    pub fn is_released(&self) -> bool {
        self.state == RevokeState::Revoked && self.in_flight == 0
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardProgressReport {
    pub shard: ShardId,
    #[serde(default)]
    pub stream_key: Option<String>,
    #[serde(default)]
    pub last_delivered_id: Option<String>,
    #[serde(default)]
    pub last_acked_id: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub pending_count: i64,
    #[serde(default)]
    pub updated_at: Option<String>,
}

/// Body of `POST …/members/{memberId}/heartbeat` (coord/v1 contract).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatRequest {
    pub protocol_version: i64,
    pub request_id: String,
    pub member_id: String,
    #[serde(default)]
    pub member_name: Option<String>,
    /// rsc extension, optional: the client library's name and version (e.g. `rsc-client`, `0.1.0`), recorded
    /// when the member joins so operators can check versions before an upgrade. Clients of the coord/v1
    /// contract that do not send them are unaffected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// rsc extension, optional: the member's static identity (static membership, as Kafka's
    /// `group.instance.id`). A member that stops (its lease lapses, or it leaves with `memberEpoch` -2,
    /// "temporarily") keeps its target reserved for the group's static-member grace; a member joining with
    /// the same id within it gets the same shards back. Read when a member joins (and on a `-2` leave);
    /// clients of the coord/v1 contract that do not send it are unaffected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_instance_id: Option<String>,
    pub member_epoch: i64,
    pub metadata_version: i64,
    pub runtime_consumer_capacity: RuntimeConsumerCapacity,
    #[serde(default, deserialize_with = "null_as_default")]
    pub owned_shards: Vec<ShardId>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub revoking_shards: Vec<RevokingShardReport>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub shard_progress: Vec<ShardProgressReport>,
}

/// `assignment` of a heartbeat response: what the member may read now and what is promised but blocked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AssignmentView {
    pub assigned_shards: Vec<ShardId>,
    pub pending_shards: Vec<ShardId>,
    pub metadata_version: i64,
}

/// Heartbeat response; always HTTP 200, every field always present (coord/v1 contract).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatResponse {
    pub response_to: String,
    pub status: HeartbeatStatus,
    pub member_id: String,
    pub member_epoch: i64,
    pub heartbeat_interval_ms: i64,
    pub rebalance_timeout_ms: i64,
    pub group_epoch: i64,
    pub assignment_epoch: i64,
    pub metadata_version: i64,
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
    #[serde(default)]
    pub initial_shard_count: Option<i64>,
    /// `KEY`: per-key order across scales (rsc's addition; absent or `NONE`: at-least-once only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordering: Option<crate::ordering::Ordering>,
    #[serde(default)]
    pub requested_by: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    /// What to do with shard streams an earlier stream of this prefix left in Redis (the first group of a
    /// prefix only): `REFUSE` (default), `ADOPT` or `PURGE` (`existing_records.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub existing_records: Option<crate::existing_records::ExistingRecords>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreateStreamResponse {
    pub stream_prefix: String,
    pub shard_count: u32,
    pub metadata_version: i64,
}

/// `DELETE …/groups/{g}` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteGroupRequest {
    #[serde(default)]
    pub requested_by: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub force: Option<bool>,
}

/// A resharding migration as shown to clients (coord/v1 contract).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MigrationView {
    pub resharding_id: String,
    pub from_shard_count: u32,
    pub to_shard_count: u32,
    pub state: String,
    pub created_at: String,
    pub updated_at: String,
}

/// GroupResponse (coord/v1 contract).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GroupResponse {
    pub stream_prefix: String,
    pub consumer_group: String,
    pub state: String,
    pub group_epoch: i64,
    pub assignment_epoch: i64,
    pub metadata_version: i64,
    pub shard_count: u32,
    pub active_migration: Option<MigrationView>,
    pub target_assignment_summary: BTreeMap<String, usize>,
    pub current_assignment_summary: BTreeMap<String, usize>,
}

/// One entry of producer routing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RoutingShard {
    pub shard_index: u32,
    pub stream_key: String,
    pub redis_slot: u16,
}

/// `GET …/producer-routing` (coord/v1 contract).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ProducerRoutingResponse {
    pub stream_prefix: String,
    pub consumer_group: String,
    pub metadata_version: i64,
    pub shard_count: u32,
    pub stream_key_pattern: String,
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
    #[serde(default)]
    pub target_shard_count: Option<i64>,
    #[serde(default)]
    pub requested_by: Option<String>,
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
    #[serde(default)]
    pub ordering: Option<crate::ordering::Ordering>,
    #[serde(default)]
    pub requested_by: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// Answer of `POST /coord/v1/streams/{p}/ordering`: the stream's option as now stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct OrderingResponse {
    pub stream_prefix: String,
    pub ordering: crate::ordering::Ordering,
}

/// Body of rollback and force-complete requests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MigrationActionRequest {
    #[serde(default)]
    pub requested_by: Option<String>,
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
