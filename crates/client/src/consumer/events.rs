//! What a consumer tells the application about itself: ownership events (for audits and tests of the
//! one-reader-per-shard promise) and point-in-time snapshots of its members (for dashboards).

use rsc_protocol::wire::HeartbeatStatus;
use std::sync::Arc;
use std::time::SystemTime;

/// Why a read loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The shard was revoked, the member was fenced or reset, or the consumer is shutting down.
    Stopped,
    /// No heartbeat was accepted within the assignment lease (fail closed).
    LeaseExpired,
}

/// Something a consumer member did.
#[derive(Debug, Clone)]
pub enum ConsumerEvent {
    /// A read loop for `shard` started; no read of it by this member happens before `at`.
    ReadStarted {
        member_id: String,
        shard: u32,
        at: SystemTime,
        /// It first reclaims the previous owner's pending entries.
        reclaim: bool,
    },
    /// The read loop for `shard` ended; no read of it by this member happens after `at`.
    ReadStopped {
        member_id: String,
        shard: u32,
        at: SystemTime,
        reason: StopReason,
    },
    /// A heartbeat was answered.
    Heartbeat {
        member_id: String,
        status: HeartbeatStatus,
        member_epoch: i64,
        assigned: Vec<u32>,
        pending: Vec<u32>,
    },
    /// A heartbeat could not be delivered to any coordinator URL.
    HeartbeatFailed { member_id: String, error: String },
    /// The assignment lease ran out: the member stopped reading every shard.
    LeaseExpired { member_id: String },
}

/// A callback receiving every event; it must be quick (it runs on the consumer's tasks).
pub type EventSink = Arc<dyn Fn(&ConsumerEvent) + Send + Sync>;

/// One member as it stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberSnapshot {
    pub member_id: String,
    /// The epoch it sends next (0 = joining, -1 = leaving).
    pub member_epoch: i64,
    /// Shards of its latest assignment that it keeps.
    pub owned: Vec<u32>,
    /// Shards it is giving up and still finishing.
    pub draining: Vec<u32>,
    /// Shards with a running read loop.
    pub reading: Vec<u32>,
    /// Whether its assignment lease is valid.
    pub lease_valid: bool,
    /// The status of its latest answered heartbeat.
    pub last_status: Option<HeartbeatStatus>,
    /// Entries its handler has finished.
    pub handled: u64,
}
