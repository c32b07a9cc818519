//! The group aggregate: everything the coordinator knows about one consumer group, as stored (JSON) in the
//! `aggregate` field of the group's Redis metadata hash.
//!
//! This is the *cold* part of a group's state: membership, epochs, target assignment, grants, revocations and
//! holds. Hot per-member data (lease deadlines, progress) lives in separate Redis keys so that a steady
//! heartbeat never rewrites this document. All instants are milliseconds of Redis server time.
//!
//! Every record type the aggregate stores is here, so the rules (`heartbeat`, `migration`, `ordering`,
//! `durability`, …) depend on the model and never the other way round: `migration` the resharding
//! migration record, `durability` the rollback suspicion and its dismissal, `gates` the read-only
//! queries of an ordered stream's gates; `stored` the aggregate split into a header and per-member entries,
//! as the store's layout 4 keeps it, and `write_form` whether one write is stored as its changes, every entry
//! or the whole document; `catch_up` brings a copy of one revision to the next by the members it changed.

mod catch_up;
mod durability;
mod gates;
mod hold_reason;
mod migration;
mod stored;
mod write_form;

pub use durability::{Dismissal, Evidence, MAX_EVIDENCE, RollbackSuspicion, SignalKind};
pub use hold_reason::HoldReason;
pub use migration::{MAX_HISTORY, Migration, MigrationState};
pub use stored::{PART_MEMBERS, PART_TARGETS, SPLIT_PARTS, SplitEntry, SplitWrite};
pub use write_form::{WHOLE_MIN_ENTRIES, WriteForm};

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The aggregate schema this build reads and writes; anything else fails closed.
pub const SCHEMA_VERSION: u32 = 1;

/// An epoch or version that cannot be incremented: a typed error, never a wrap or a panic. Epochs and
/// versions stay within [`MAX_EPOCH`] (2^53 − 1, the largest integer JSON clients represent exactly, and far
/// from `i64::MAX`); clients' reports above it are refused at the API. A group gets here only when a recreate
/// had to start right below it (a client reported a version that high) or its document was tampered with; a
/// transition that would need it fails closed instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{field} {value} cannot be incremented: epochs and versions stay at most {MAX_EPOCH} (2^53 - 1, the \
     largest integer JSON clients represent exactly), so this group's epochs are exhausted"
)]
pub struct EpochOverflow {
    /// The epoch or version that could not grow (`groupEpoch`, `metadataVersion`, …).
    pub field: &'static str,
    /// Its value, which already is [`MAX_EPOCH`] (or above, in a tampered document).
    pub value: i64,
}

pub use rsc_protocol::validate::MAX_EPOCH;

/// `value + 1`, checked against [`MAX_EPOCH`]: every epoch and version increment of the state machine goes
/// through here.
pub fn incremented(field: &'static str, value: i64) -> Result<i64, EpochOverflow> {
    value
        .checked_add(1)
        .filter(|v| *v <= MAX_EPOCH)
        .ok_or(EpochOverflow { field, value })
}

/// A set of shard indexes, kept sorted so that every derived view is deterministic.
pub type ShardSet = BTreeSet<u32>;

/// Lifecycle of one member incarnation. `STARTING` exists on the wire but is never persisted: a join is
/// ACTIVE as soon as it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MemberState {
    /// A live member taking part in assignment (`STARTING` on the wire is never stored: a join is ACTIVE at
    /// once).
    Active,
    /// Left with epoch -1 (or -2): out of assignment, but still holds what it has not released.
    Leaving,
    /// Its lease ran out; it holds nothing and must join again.
    Expired,
    /// Fenced (an ownership report outside its authority, or a rebalance timeout); what it held is on hold
    /// until its lease has certainly run out, and it must join again.
    Fenced,
}

impl MemberState {
    /// Members that may still hold shards (and so block others).
    pub fn is_live(self) -> bool {
        matches!(self, MemberState::Active | MemberState::Leaving)
    }

    /// The wire spelling, e.g. `ACTIVE`.
    pub fn as_str(self) -> &'static str {
        match self {
            MemberState::Active => "ACTIVE",
            MemberState::Leaving => "LEAVING",
            MemberState::Expired => "EXPIRED",
            MemberState::Fenced => "FENCED",
        }
    }
}

/// Group state as the contract reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum GroupState {
    /// No active member.
    Empty,
    /// Not stable: some grant, report or revocation is still moving towards the target, or a hold is open.
    Reconciling,
    /// Every active member is granted exactly its target, reports owning it and revokes nothing; no leaving
    /// member still revokes and no hold is open.
    Stable,
}

impl GroupState {
    /// The wire spelling, e.g. `STABLE`.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupState::Empty => "EMPTY",
            GroupState::Reconciling => "RECONCILING",
            GroupState::Stable => "STABLE",
        }
    }
}

/// What a member last told us about a shard it is giving up (for revokeProgress).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevokeReport {
    /// How far the member said it had got.
    pub state: rsc_protocol::wire::RevokeState,
    /// Entries it said were still in flight on the shard.
    pub in_flight: i64,
}

/// One member incarnation.
///
/// Grants are the unit of safety: a shard in `assigned` or `revoking` is *held* by this member and is never
/// granted to anyone else until it is released (REVOKED report, lease expiry, or a hold that outlives the
/// member's last possible lease).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    /// The member's id (also its Redis consumer name).
    pub member_id: String,
    /// Its display name (its id when it sent none).
    pub member_name: String,
    /// Where the incarnation is in its lifecycle.
    pub state: MemberState,
    /// The epoch handed to this member in its latest response; it echoes it back.
    pub member_epoch: i64,
    /// The epoch this incarnation started with. A request carrying an epoch in
    /// `incarnation_epoch..=member_epoch` comes from this incarnation (possibly a retry after a lost response).
    pub incarnation_epoch: i64,
    /// Whether this incarnation has echoed its join epoch once; until then an epoch-0 request is a join retry.
    pub join_confirmed: bool,
    /// The group's metadataVersion this incarnation joined at (its join response carried it). A leave carries
    /// no epoch; one carrying an older metadataVersion was sent by a previous process with this id and must
    /// not release this incarnation's shards. 0 (aggregates written before this field) = no check.
    #[serde(default)]
    pub join_metadata_version: i64,
    /// The coord/v1 protocol version this incarnation joined with (0: joined before it was recorded).
    #[serde(default)]
    pub protocol_version: i64,
    /// The client library's name and version the joining request named (rsc's optional fields), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    /// See `client_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// The static identity (`groupInstanceId`) this incarnation joined with; None for a dynamic member (and
    /// in aggregates written before static membership). See [`Reservation`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_instance_id: Option<String>,
    /// Shards the member may read now.
    pub assigned: ShardSet,
    /// Shards taken from the member that it has not released yet, with the member epoch at which the
    /// revocation was handed out. Only a report from that epoch or later can release the shard.
    pub revoking: BTreeMap<u32, i64>,
    /// The owned set from the member's latest current-epoch report (monitoring only).
    pub reported_owned: ShardSet,
    /// The member's latest report for each shard it is revoking (monitoring only).
    pub reported_revoking: BTreeMap<u32, RevokeReport>,
    /// When the member must have released its revoking shards, or be fenced.
    pub rebalance_deadline_ms: Option<i64>,
    /// When this incarnation joined.
    pub joined_at_ms: i64,
    /// When `state` last changed (pruning of departed members counts from it).
    pub state_changed_at_ms: i64,
    /// The principal (username) that joined this incarnation; only it (or an ADMIN) may send its heartbeats.
    /// None when heartbeats are unauthenticated (`authenticate-member-api = false`) and in aggregates written
    /// before this field existed: then any caller the route admits may.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

impl Member {
    /// A new ACTIVE incarnation at epoch 0 that holds nothing, joined at `now_ms`.
    pub fn new(member_id: &str, member_name: &str, now_ms: i64) -> Self {
        Member {
            member_id: member_id.to_owned(),
            member_name: member_name.to_owned(),
            state: MemberState::Active,
            member_epoch: 0,
            incarnation_epoch: 0,
            join_confirmed: false,
            join_metadata_version: 0,
            protocol_version: 0,
            client_name: None,
            client_version: None,
            group_instance_id: None,
            assigned: ShardSet::new(),
            revoking: BTreeMap::new(),
            reported_owned: ShardSet::new(),
            reported_revoking: BTreeMap::new(),
            rebalance_deadline_ms: None,
            joined_at_ms: now_ms,
            state_changed_at_ms: now_ms,
            owner: None,
        }
    }

    /// Every shard this member holds (assigned or still revoking).
    pub fn held(&self) -> impl Iterator<Item = u32> + '_ {
        self.assigned
            .iter()
            .copied()
            .chain(self.revoking.keys().copied())
    }

    /// Whether this member holds `shard` (assigned or still revoking).
    pub fn holds(&self, shard: u32) -> bool {
        self.assigned.contains(&shard) || self.revoking.contains_key(&shard)
    }
}

/// Shards of a dead or fenced incarnation that must not be granted before `until_ms`: by then the
/// incarnation's client-side lease has certainly run out, so it has stopped reading.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hold {
    /// The incarnation whose shards are held.
    pub member_id: String,
    /// The shards held back.
    pub shards: ShardSet,
    /// When the hold ends and the shards may be granted.
    pub until_ms: i64,
    /// Why (stored and shown to operators in words).
    pub reason: HoldReason,
    /// The end is still to be counted again, by the first tick that reads the hold written
    /// ([`crate::tick::tick`]: `until_ms` becomes at least that tick's `now` + lease TTL + margin), and until
    /// then the hold does not end whatever `until_ms` says. Set by a fence decided on a member's report of
    /// owning a shard outside its grants: that write may land long after its decision, behind steady
    /// renewals of the same member through other replicas (they do not move the revision), so only a
    /// decision that reads the fence written bounds the member's last client lease (ARCHITECTURE.md,
    /// invariant 1). Absent from the stored JSON when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub anchor_pending: bool,
}

impl Hold {
    /// Whether the hold still keeps its shards at `now_ms` (Redis time).
    pub fn in_effect_at(&self, now_ms: i64) -> bool {
        self.anchor_pending || self.until_ms > now_ms
    }
}

/// Why a static member's target is reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReservationReason {
    /// The member's lease lapsed (it crashed or was cut off) and it was expired.
    LeaseLapsed,
    /// The member left with `memberEpoch` -2 ("temporarily", e.g. for a restart).
    TemporaryLeave,
}

impl ReservationReason {
    /// The wire spelling, e.g. `LEASE_LAPSED`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReservationReason::LeaseLapsed => "LEASE_LAPSED",
            ReservationReason::TemporaryLeave => "TEMPORARY_LEAVE",
        }
    }
}

/// The target of a static member that stopped, kept for its `groupInstanceId` until `until_ms` (static
/// membership, as Kafka's KIP-345): no other member's target contains these shards meanwhile, and a member
/// that joins with the same `groupInstanceId` before then gets them back as its target, so a restart moves
/// no shard. Grants still go through revoke-before-assign: a shard the stopped incarnation may still read
/// (a temporary leave not yet released) is granted only once released, and a lapsed incarnation has
/// stopped reading before it was expired (invariant 4). Past `until_ms` the shards are rebalanced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reservation {
    /// The static identity the shards are kept for.
    pub group_instance_id: String,
    /// The incarnation that stopped.
    pub member_id: String,
    /// The stopped incarnation's target, kept.
    pub shards: ShardSet,
    /// When the reservation lapses and the shards are rebalanced.
    pub until_ms: i64,
    /// Why the incarnation stopped.
    pub reason: ReservationReason,
    /// The principal that joined the stopped incarnation: only it (or an ADMIN) may claim the instance id
    /// back (None without authentication, and in documents written before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// An open metadata-correction round (a member saw a newer metadataVersion than Redis holds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetadataCorrection {
    /// The metadataVersion every participant must report before the round closes.
    pub target_metadata_version: i64,
    /// The highest metadataVersion a member reported (above what Redis held).
    pub observed_metadata_version: i64,
    /// When the round opened.
    pub requested_at_ms: i64,
    /// When it was last extended or acknowledged.
    pub updated_at_ms: i64,
    /// Members that have reported the target version since the round opened.
    pub acknowledged_members: BTreeSet<String>,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// The group aggregate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    /// The stream the group consumes.
    pub stream_prefix: String,
    /// The group's name (also the Redis consumer group's name on every shard stream).
    pub consumer_group: String,
    /// Random id of this group's lifecycle: a group deleted and created again gets a new one, so revision
    /// numbers of different lifecycles are never compared.
    #[serde(default)]
    pub lifecycle_id: String,
    /// The document's schema, [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Mirrors the store's `revision` field of the hash this document was written with.
    pub store_revision: u64,
    /// Bumped by every membership or shard-count change (join, leave, expiry, fencing, scale, rollback).
    pub group_epoch: i64,
    /// Bumped by every change of the group's metadata (a superset of `group_epoch`'s changes); members and
    /// producers echo it, which is how a metadata rollback is noticed.
    pub metadata_version: i64,
    /// The `group_epoch` at which the target assignment was last computed.
    pub assignment_epoch: i64,
    /// The group's state as the contract reports it.
    pub state: GroupState,
    /// The group's shard count (the stream's, once the group has adopted its latest switch).
    pub shard_count: u32,
    /// Every member incarnation by member id, live and departed (until pruned).
    pub members: BTreeMap<String, Member>,
    /// Member id → the shards the assignment gives it (active members only).
    pub target_assignments: BTreeMap<String, ShardSet>,
    /// Shards of dead or fenced incarnations not grantable yet.
    #[serde(default)]
    pub holds: Vec<Hold>,
    /// Targets reserved for static members that stopped (at most one per `groupInstanceId`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_reservations: Vec<Reservation>,
    /// The open metadata-correction round, if any.
    #[serde(default)]
    pub metadata_correction: Option<MetadataCorrection>,
    /// Shards beyond `shard_count` that a scale-in (or a rolled-back scale-out) removed from routing but that
    /// stay assigned until Redis shows their backlog consumed and acknowledged.
    #[serde(default)]
    pub draining_shards: ShardSet,
    /// Ordered streams only: child shards no member may be granted yet, each with the parents that may
    /// still hold records from before the switch for this group (see `ordering.rs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ordering_gates: BTreeMap<u32, ShardSet>,
    /// Ordered streams only, while gates are closed: the switch points (the shard's last stream id at the
    /// routing switch) of the old shards that still matter: gated children that survive the scale, which are
    /// granted with a read fence there (`ordering::read_fences`), and parents still waited for, whose drain
    /// evidence counts only the records up to it. (`orderingFences` in documents written before: always empty.)
    #[serde(
        default,
        alias = "orderingFences",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub ordering_switch_points: BTreeMap<u32, String>,
    /// The stream routing version this group's state reflects: set when the group adopts a migration's switch
    /// (or its rollback) in the same write, and sent in heartbeat answers as `routingVersion`, so a consumer
    /// can tell a shard's routing boundary raised by a switch its answers do not reflect yet (0: not known,
    /// in documents written before; nothing is sent then).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub routing_version: i64,
    /// The group's resharding migrations, oldest first (bounded history; see `migration.rs`).
    #[serde(default)]
    pub migrations: Vec<Migration>,
    /// The id of the migration in `migrations` under way for this group, if any.
    #[serde(default)]
    pub active_migration_id: Option<String>,
    /// Set when the stored metadata is suspected of having rolled back; admin mutations fail closed until an
    /// operator repairs the group (see `durability.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_suspicion: Option<RollbackSuspicion>,
    /// The latest suspicion an operator dismissed, and why; evidence it covered raises no new suspicion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_dismissal: Option<Dismissal>,
    /// When the group last left STABLE/EMPTY for RECONCILING (None while it is not reconciling): the start
    /// of the rebalance in progress, for the rebalance duration metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciling_since_ms: Option<i64>,
    /// When the group was created.
    pub created_at_ms: i64,
    /// When the document was last written.
    pub updated_at_ms: i64,
}

impl Group {
    /// A new, empty group at epoch 1 (coord/v1 contract).
    pub fn new(
        stream_prefix: &str,
        consumer_group: &str,
        shard_count: u32,
        now_ms: i64,
        lifecycle_id: &str,
    ) -> Self {
        Group {
            stream_prefix: stream_prefix.to_owned(),
            consumer_group: consumer_group.to_owned(),
            lifecycle_id: lifecycle_id.to_owned(),
            schema_version: SCHEMA_VERSION,
            store_revision: 1,
            group_epoch: 1,
            metadata_version: 1,
            assignment_epoch: 1,
            state: GroupState::Empty,
            shard_count,
            members: BTreeMap::new(),
            target_assignments: BTreeMap::new(),
            holds: Vec::new(),
            static_reservations: Vec::new(),
            metadata_correction: None,
            draining_shards: ShardSet::new(),
            ordering_gates: BTreeMap::new(),
            ordering_switch_points: BTreeMap::new(),
            routing_version: 0,
            migrations: Vec::new(),
            active_migration_id: None,
            rollback_suspicion: None,
            rollback_dismissal: None,
            reconciling_since_ms: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        }
    }

    /// Shards the group assigns: `0..shard_count` plus shards still draining after a scale-in.
    pub fn assignable_shards(&self) -> ShardSet {
        let mut shards: ShardSet = (0..self.shard_count).collect();
        shards.extend(self.draining_shards.iter().copied());
        shards
    }

    /// Shards reserved for static members that stopped: in no member's target until claimed or lapsed.
    pub fn reserved_shards(&self) -> ShardSet {
        self.static_reservations
            .iter()
            .flat_map(|r| r.shards.iter().copied())
            .collect()
    }

    /// The active member that holds `group_instance_id`, if any.
    pub fn active_instance(&self, group_instance_id: &str) -> Option<&Member> {
        self.members.values().find(|m| {
            m.state == MemberState::Active
                && m.group_instance_id.as_deref() == Some(group_instance_id)
        })
    }

    /// The target set of a member (empty if it has none).
    pub fn target_of(&self, member_id: &str) -> ShardSet {
        self.target_assignments
            .get(member_id)
            .cloned()
            .unwrap_or_default()
    }

    /// Members that take part in assignment.
    pub fn active_member_ids(&self) -> BTreeSet<String> {
        self.members
            .values()
            .filter(|m| m.state == MemberState::Active)
            .map(|m| m.member_id.clone())
            .collect()
    }

    /// Every shard that is held by some live member or by a hold, i.e. not grantable.
    pub fn held_shards(&self) -> ShardSet {
        let mut held = ShardSet::new();
        for m in self.members.values().filter(|m| m.state.is_live()) {
            held.extend(m.held());
        }
        for h in &self.holds {
            held.extend(h.shards.iter().copied());
        }
        held
    }

    /// Parses an aggregate document, refusing unknown schema versions.
    pub fn from_json(json: &str) -> Result<Group, AggregateError> {
        /// Only the schema version; every other field is skipped without being built (a big group's
        /// document is parsed twice, but never into a `serde_json::Value` tree).
        #[derive(Deserialize)]
        struct Schema {
            #[serde(rename = "schemaVersion", default)]
            schema_version: Option<serde_json::Value>,
        }
        let probe: Schema =
            serde_json::from_str(json).map_err(|e| AggregateError::Malformed(e.to_string()))?;
        let schema = probe.schema_version.as_ref().and_then(|v| v.as_u64());
        if schema != Some(u64::from(SCHEMA_VERSION)) {
            return Err(AggregateError::UnknownSchema(format!(
                "{:?}",
                probe.schema_version
            )));
        }
        serde_json::from_str(json).map_err(|e| AggregateError::Malformed(e.to_string()))
    }

    /// The document as stored in the `aggregate` field.
    pub fn to_json(&self) -> String {
        // Serialising plain structs of strings, integers and maps with string keys cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Why an aggregate document could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AggregateError {
    /// The document is not valid JSON of the aggregate's shape.
    #[error("aggregate JSON is malformed: {0}")]
    Malformed(String),
    /// The document's `schemaVersion` is missing or not [`SCHEMA_VERSION`].
    #[error("aggregate schemaVersion {0} is not supported (expected {SCHEMA_VERSION})")]
    UnknownSchema(String),
}
