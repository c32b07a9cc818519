//! The timing parameters the state machine needs, passed in by the caller (never read from a clock).

/// Durations in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Returned as `heartbeatIntervalMs`.
    pub heartbeat_interval_ms: i64,
    /// A member whose lease is not renewed within this is expired.
    pub member_lease_ttl_ms: i64,
    /// A member that has not released revoked shards within this is fenced. Returned as `rebalanceTimeoutMs`.
    pub rebalance_timeout_ms: i64,
    /// Terminal members (expired, fenced, left) are forgotten this long after their last state change.
    pub stale_member_retention_ms: i64,
    /// Extra time a fenced incarnation's shards stay held beyond its lease TTL, covering the error of the
    /// coordinator's estimate of Redis time.
    pub hold_margin_ms: i64,
    /// How long a static member's target stays reserved for its `groupInstanceId` after it stopped (its
    /// lease lapsed, or it left with epoch -2). 0 = no reservations.
    pub static_member_grace_ms: i64,
}

/// The longest a member is asked to wait before acknowledging an answer that revoked a shard it holds nothing
/// of ([`Timing::acknowledge_interval_ms`]).
pub const MAX_ACKNOWLEDGE_INTERVAL_MS: i64 = 100;

impl Timing {
    /// The `heartbeatIntervalMs` of an answer that revokes a shard the member holds nothing of (a grant it has
    /// not heard of, moved on before its heartbeat): a tenth of the heartbeat interval, at most
    /// [`MAX_ACKNOWLEDGE_INTERVAL_MS`], at least 1 ms. The shard is released only by a report at the answer's
    /// epoch; asking for it at once (KIP-848's acknowledgement) hands the shard over in one interval instead
    /// of two. Only the cadence changes: what releases a shard does not.
    pub fn acknowledge_interval_ms(&self) -> i64 {
        (self.heartbeat_interval_ms / 10).clamp(1, MAX_ACKNOWLEDGE_INTERVAL_MS)
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            heartbeat_interval_ms: 3_000,
            member_lease_ttl_ms: 15_000,
            rebalance_timeout_ms: 60_000,
            stale_member_retention_ms: 600_000,
            hold_margin_ms: 1_000,
            static_member_grace_ms: 30_000,
        }
    }
}
