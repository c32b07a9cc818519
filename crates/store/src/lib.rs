//! rsc-store: the Redis store, the coordinator's only door to Redis.
//!
//! Group metadata is the source of truth for every coordinator group: one hash per group holds the
//! cold aggregate and its revision; a sorted set holds member leases judged by Redis server time; a
//! hash holds per-member progress. All three share the group's hash tag, so every change is one
//! atomic Lua script (compare-and-set by revision) in standalone Redis and in Redis Cluster alike.
//! The hot path, a heartbeat, is one EVALSHA that never touches the aggregate. See `store.rs` for
//! those operations.
//!
//! Every other kind of record the coordinator keeps in Redis has its own typed API here, one module
//! each: the group index (`index.rs`), stream records (`streams.rs`), shard streams (`shards.rs`) and their
//! records page by page (`messages.rs`), a consumer group's position on a shard stream (`group_position.rs`)
//! and its pending entries (`pending_entries.rs`), the cluster's slot map (`topology.rs`), the
//! routing boundary of a shard stream for guarded publish (`routing_floor.rs`),
//! bearer tokens (`tokens.rs`), the audit streams (`audit.rs`), rate-limit windows and the sign-in
//! throttle (`limits.rs`), the bootstrap admin hash (`bootstrap.rs`), the replica registry and change feed (`cluster.rs`), backup and restore of the records
//! that define groups and streams (`backup.rs`) and what Redis says about itself for `rsc doctor`
//! (`diagnostics.rs`), with every shape of key the coordinator writes (`key_shapes.rs`). A group's aggregate
//! is stored whole (`aggregate_codec.rs`) or split into a header and per-member entries (`split_layout.rs`,
//! layoutVersion "4"). Every Lua script is in
//! `lua/`. Key names are the store's: the methods take ids (a [`GroupName`], a stream prefix, a user …) and a
//! [`Keyspace`] built from the key prefix (`keyspace.rs`, spelled by `rsc_protocol::names`) names the keys.
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod aggregate_codec;
mod audit;
mod backup;
mod bootstrap;
mod cluster;
mod connection;
mod data_key;
mod diagnostics;
mod error;
mod group_name;
mod group_position;
mod index;
mod json;
mod key_shapes;
mod keys;
mod keyspace;
mod limits;
mod messages;
mod metadata;
mod outcome;
mod pending_entries;
mod producers;
mod reply;
mod routing_floor;
mod scripts;
mod shard;
mod shards;
pub mod split_layout;
mod store;
mod streams;
mod tokens;
mod topology;

pub use audit::AuditEntry;
pub use backup::{RestoreOutcome, RestoredHash};
pub use cluster::{ChangeEntry, LiveReplicas};
pub use connection::{RedisConn, RedisTopology};
pub use data_key::DataKey;
pub use diagnostics::AclAnswer;
pub use error::StoreError;
pub use group_name::GroupName;
pub use group_position::{Walk, Walked};
pub use index::{IndexEntry, IndexState};
pub use json::to_json;
pub use key_shapes::{KeyShape, coordinator_key_kind, coordinator_key_shapes};
pub use keys::{
    AuditStream, GroupKeys, LimitWindow, LoginAttempt, ProducerKeys, ThrottleKeys, aggregate_key,
    aggregate_staging_key,
};
pub use keyspace::{DEFAULT_KEY_PREFIX, Keyspace};
pub use limits::{ThrottleBudgets, ThrottleReason, ThrottleVerdict, WindowCount};
pub use messages::{PageDirection, StreamRecord};
pub use metadata::{LAYOUT_VERSION, SCHEMA_VERSION};
pub use outcome::{
    CasOutcome, CasWrite, CreateOutcome, DeleteOutcome, HeartbeatOutcome, PeerLease, StoredGroup,
    Watch,
};
pub use pending_entries::PendingEntry;
pub use producers::{ProducerEntry, Sighting, SightingLimits};
pub use routing_floor::{RaisedBoundary, SwitchPoint};
// Guarded publish and the boundary's read are the SDK's too: they live in rsc-scripts (crates/scripts).
pub use rsc_redis_connect::RedisTls;
pub use rsc_scripts::{AppendReply, BoundaryFields, ScriptError, guarded_append, read_boundary};
pub use shard::Shard;
pub use shards::{ConsumerGroupInfo, RetireOutcome, ShardObservation, StreamInfo, parse_stream_id};
pub use split_layout::{LAYOUT_SPLIT, SplitAggregate, SplitEntry};
pub use store::{REVISIONS_PAGE, Store};
pub use topology::{SlotOwner, owner_of};
