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
        /// The member that reads.
        member_id: String,
        /// The shard index.
        shard: u32,
        /// When the loop started.
        at: SystemTime,
        /// It first reclaims the previous owner's pending entries.
        reclaim: bool,
    },
    /// The read loop for `shard` ended; no read of it by this member happens after `at`.
    ReadStopped {
        /// The member that read.
        member_id: String,
        /// The shard index.
        shard: u32,
        /// When the loop ended.
        at: SystemTime,
        /// Why it ended.
        reason: StopReason,
    },
    /// A heartbeat was answered.
    Heartbeat {
        /// The member that sent it.
        member_id: String,
        /// The answer's status.
        status: HeartbeatStatus,
        /// The epoch the answer gave the member (the one it sends next).
        member_epoch: i64,
        /// The answer's `assignedShards`: the shards the member may read.
        assigned: Vec<u32>,
        /// The answer's `pendingShards`: promised, still held by another member.
        pending: Vec<u32>,
    },
    /// A heartbeat could not be delivered to any coordinator URL.
    HeartbeatFailed {
        /// The member whose heartbeat failed.
        member_id: String,
        /// What went wrong, in words.
        error: String,
    },
    /// The assignment lease ran out: the member stopped reading every shard.
    LeaseExpired {
        /// The member whose lease ran out.
        member_id: String,
    },
}

/// A callback receiving every event; it must be quick (it runs on the consumer's tasks).
pub type EventSink = Arc<dyn Fn(&ConsumerEvent) + Send + Sync>;

/// One member as it stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberSnapshot {
    /// The member's id (also its Redis consumer name).
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
