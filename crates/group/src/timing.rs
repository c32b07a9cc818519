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
