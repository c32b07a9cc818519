//! Counters the coordinator keeps while it works, read by health and, at scrape time, by `/metrics`.
//! Plain atomics: incrementing one must never contend on the heartbeat path.

use rsc_protocol::wire::HeartbeatStatus;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Stats {
    heartbeats: [AtomicU64; HeartbeatStatus::ALL.len()],
    pub state_conflicts: AtomicU64,
    pub member_expired: AtomicU64,
    pub members_fenced: AtomicU64,
    pub metadata_regressions: AtomicU64,
    pub revision_regressions: AtomicU64,
    pub rebalance_regressions: AtomicU64,
    pub invariant_violations: AtomicU64,
    pub routing_success: AtomicU64,
    pub routing_error: AtomicU64,
    pub redis_errors: AtomicU64,
    /// New evidence of a metadata rollback recorded in a group's aggregate (see `durability.rs`).
    pub rollback_suspicions: AtomicU64,
    /// Rollback evidence not recorded: from a principal that may not raise a suspicion, or over its budget, or
    /// not written (the group kept changing, was replaced, or Redis failed: `durability.rs`).
    pub rollback_observations_ignored: AtomicU64,
    /// Heartbeat writes committed as batches (`batch.rs`), and the transitions they carried.
    pub transition_batches: AtomicU64,
    pub batched_transitions: AtomicU64,
    /// Failover hints (`coordinator/lapse_forecasts.rs`): answers that asked a member back just after a
    /// peer's lease deadline, and heartbeats answered with the grant of a peer that had just lapsed.
    pub failover_intervals_shortened: AtomicU64,
    pub failover_grants_in_answer: AtomicU64,
    /// Answers that asked a member waiting for a shard back just after its holder is due to release it
    /// (`rsc_group::heartbeat::release_forecast`).
    pub release_intervals_shortened: AtomicU64,
    /// Answers that asked a member to acknowledge at once a revocation of a shard it never started reading
    /// (`Timing::acknowledge_interval_ms`).
    pub acknowledgements_requested: AtomicU64,
}

impl Stats {
    pub fn count_heartbeat(&self, status: HeartbeatStatus) {
        if let Some(i) = HeartbeatStatus::ALL.iter().position(|s| *s == status) {
            self.heartbeats[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn heartbeats(&self, status: HeartbeatStatus) -> u64 {
        HeartbeatStatus::ALL
            .iter()
            .position(|s| *s == status)
            .map_or(0, |i| self.heartbeats[i].load(Ordering::Relaxed))
    }

    pub fn observe_batch(&self, transitions: usize) {
        Stats::bump(&self.transition_batches);
        self.batched_transitions
            .fetch_add(transitions as u64, Ordering::Relaxed);
    }

    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
