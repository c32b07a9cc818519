//! When a member that waits for a shard should heartbeat again: the release forecast.
//!
//! An answer can name pending shards: targeted to the member, still held by another member until that
//! member's report releases them (revoke before assign). The new owner learns of the grant only at its own
//! next heartbeat, a whole interval later, although the holder reports at its own cadence, which its lease
//! tells: a lease renewed to end at `d` was renewed by a heartbeat at `d - lease TTL`, so the holder's next
//! heartbeat is due an interval after that, and the release follows it within a moment (a shard with nothing
//! in flight is reported drained at once; a revoked grant the holder never heard of is acknowledged at once,
//! `Timing::acknowledge_interval_ms`). The waiting member is asked back just after that ([`back_for_release_ms`])
//! when it is sooner than its interval: one heartbeat more for it, and it reads the shard a round sooner.
//!
//! A hint and nothing else: no state is decided from it, and a wrong one (the holder was slow, or the holder
//! changed since [`Holders`] was built) costs one heartbeat. It never asks a member back sooner than an
//! acknowledgement, nor at all once the holder is overdue (a holder that stopped heartbeating is not waited
//! for at a faster cadence: its lease runs out instead).

use crate::model::Group;
use crate::timing::Timing;
use std::collections::HashMap;

/// Which live member holds each shard (assigned or still revoking), for one aggregate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holders(HashMap<u32, String>);

impl Holders {
    /// Walks `g`'s live members once. A shard two members hold (never, by the invariants) is named once.
    pub fn of(g: &Group) -> Self {
        let mut by_shard = HashMap::new();
        for m in g.members.values().filter(|m| m.state.is_live()) {
            for s in m.held() {
                by_shard.insert(s, m.member_id.clone());
            }
        }
        Holders(by_shard)
    }

    /// The member whose release `member_id` waits for first: the holder of the lowest of `pending` (the
    /// answer's pending shards) that another member holds. None when no other member holds any (a shard kept
    /// by a hold, a gate or a reservation is not released by a heartbeat).
    pub fn awaited_by(
        &self,
        member_id: &str,
        pending: impl IntoIterator<Item = u32>,
    ) -> Option<&str> {
        let mut pending: Vec<u32> = pending.into_iter().collect();
        pending.sort_unstable();
        pending
            .into_iter()
            .filter_map(|s| self.0.get(&s))
            .find(|holder| holder.as_str() != member_id)
            .map(String::as_str)
    }

    /// The holder of `shard`, if a live member holds it.
    pub fn of_shard(&self, shard: u32) -> Option<&str> {
        self.0.get(&shard).map(String::as_str)
    }
}

/// How long after the holder's expected heartbeat its release is waited for: twice an acknowledgement.
pub fn release_margin_ms(timing: &Timing) -> i64 {
    2 * timing.acknowledge_interval_ms()
}

/// The `heartbeatIntervalMs` for a member waiting for a shard whose holder's lease ends at
/// `holder_lease_deadline_ms`, at `now_ms` (both Redis time): just after the holder's next heartbeat is due
/// plus [`release_margin_ms`], at least an acknowledgement away. None when that is not sooner than the
/// interval, or when the holder is overdue (its heartbeat and margin have passed).
pub fn back_for_release_ms(
    timing: &Timing,
    now_ms: i64,
    holder_lease_deadline_ms: i64,
) -> Option<i64> {
    let holder_heard_at = holder_lease_deadline_ms - timing.member_lease_ttl_ms;
    let release_expected =
        holder_heard_at + timing.heartbeat_interval_ms + release_margin_ms(timing);
    let back_in = release_expected - now_ms;
    if back_in <= 0 {
        return None;
    }
    let back_in = back_in.max(timing.acknowledge_interval_ms());
    (back_in < timing.heartbeat_interval_ms).then_some(back_in)
}
