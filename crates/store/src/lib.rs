//! rsc-store: the Redis metadata store, the source of truth for every coordinator group.
//!
//! One hash per group holds the cold aggregate and its revision; a sorted set holds member leases
//! judged by Redis server time; a hash holds per-member progress. All three share the group's hash
//! tag, so every change is one atomic Lua script (compare-and-set by revision) in standalone Redis
//! and in Redis Cluster alike. The hot path, a heartbeat, is one EVALSHA that never touches the
//! aggregate. See `store.rs` for the operations and `lua/` for the scripts.

mod audit;
mod bootstrap;
mod connection;
mod error;
mod index;
mod keys;
mod limits;
mod metadata;
mod outcome;
mod reply;
mod scripts;
mod shards;
mod store;
mod streams;
mod tokens;

pub use audit::AuditEntry;
pub use connection::{RedisConn, RedisTopology};
pub use error::StoreError;
pub use index::{IndexEntry, IndexState};
pub use keys::GroupKeys;
pub use limits::{ThrottleBudgets, ThrottleKeys, ThrottleReason, ThrottleVerdict, WindowCount};
pub use metadata::{LAYOUT_VERSION, SCHEMA_VERSION};
pub use outcome::{
    CasOutcome, CasWrite, CreateOutcome, DeleteOutcome, HeartbeatOutcome, StoredGroup,
};
pub use shards::{ConsumerGroupInfo, RetireOutcome, StreamInfo, parse_stream_id};
pub use store::Store;
