//! When a member that waits for a shard should heartbeat again: the release forecast.
//!
//! An answer can name pending shards: targeted to the member, still held by another member until that
//! member's report releases them (revoke before assign). The new owner learns of the grant only at its own
//! next heartbeat, a whole interval later, although the holder reports at its own cadence, which its lease
//! tells: a lease renewed to end at `d` was renewed by a heartbeat at `d - lease TTL`. Two cases:
//! - the holder heartbeated within the last [`release_margin_ms`], and at least an acknowledgement interval
//!   after its revocations began (its rebalance deadline less the rebalance timeout, a replica's estimate of
//!   Redis time): that answer told it to give the shard up (in a join storm
//!   the holders are told in the same moments as their successors ask), and the release follows within a
//!   moment (a shard with nothing in flight is reported drained at once; a revoked grant the holder never heard
//!   of is acknowledged at once, `Timing::acknowledge_interval_ms`), so the waiting member is asked back a
//!   margin from now;
//! - otherwise the holder's next heartbeat is due an interval after its last, and the release follows it
//!   within a moment, so the waiting member is asked back a margin after that.
//!
//! Either is used only when sooner than the waiting member's interval: one heartbeat more for it, and it
//! reads the shard a round sooner ([`back_for_release_ms`]).
//!
//! A hint and nothing else: no state is decided from it, and a wrong one (the shard was revoked after the
//! holder's other revocations began and after it heartbeated, or its drain was slow, or the holder changed
//! since [`Holders`] was built) costs one heartbeat, at most one for each of the holder's own heartbeats. It never asks a member back sooner than the margin, nor at all once the holder
//! is overdue (a holder that stopped heartbeating is not waited for at a faster cadence: its lease runs out
//! instead).

use crate::model::Group;
use crate::timing::Timing;
use std::collections::HashMap;

/// The live member holding a shard, as the forecast needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The holding member.
    pub member_id: String,
    /// When the member's revocations began (its rebalance deadline less the rebalance timeout), when it is
    /// revoking the shard; None when the shard is still assigned to it.
    pub revoking_since_ms: Option<i64>,
}

/// Which live member holds each shard (assigned or still revoking), for one aggregate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holders(HashMap<u32, Holder>);

impl Holders {
    /// Walks `g`'s live members once. A shard two members hold (never, by the invariants) is named once.
    pub fn of(g: &Group, timing: &Timing) -> Self {
        let mut by_shard = HashMap::new();
        for m in g.members.values().filter(|m| m.state.is_live()) {
            let revoking_since_ms = m
                .rebalance_deadline_ms
                .map(|deadline| deadline - timing.rebalance_timeout_ms);
            for &s in &m.assigned {
                let holder = Holder {
                    member_id: m.member_id.clone(),
                    revoking_since_ms: None,
                };
                by_shard.insert(s, holder);
            }
            for &s in m.revoking.keys() {
                let holder = Holder {
                    member_id: m.member_id.clone(),
                    revoking_since_ms,
                };
                by_shard.insert(s, holder);
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
    ) -> Option<&Holder> {
        let mut pending: Vec<u32> = pending.into_iter().collect();
        pending.sort_unstable();
        pending
            .into_iter()
            .filter_map(|s| self.0.get(&s))
            .find(|holder| holder.member_id != member_id)
    }

    /// The holder of `shard`, if a live member holds it.
    pub fn of_shard(&self, shard: u32) -> Option<&str> {
        self.0.get(&shard).map(|h| h.member_id.as_str())
    }
}

/// How long after the holder's expected heartbeat its release is waited for: twice an acknowledgement.
pub fn release_margin_ms(timing: &Timing) -> i64 {
    2 * timing.acknowledge_interval_ms()
}

/// The `heartbeatIntervalMs` for a member waiting for a shard held by `holder`, whose lease ends at
/// `holder_lease_deadline_ms`, at `now_ms` (both Redis time): a margin from now when the holder heartbeated
/// within the last margin and an acknowledgement or more after its revocations began (that answer told it to
/// give the shard up), else
/// a margin after the holder's next heartbeat is due; never sooner than [`release_margin_ms`]. None when that
/// is not sooner than the interval, or when the holder is overdue (its heartbeat and margin have passed).
pub fn back_for_release_ms(
    timing: &Timing,
    now_ms: i64,
    holder: &Holder,
    holder_lease_deadline_ms: i64,
) -> Option<i64> {
    let margin = release_margin_ms(timing);
    let holder_heard_at = holder_lease_deadline_ms - timing.member_lease_ttl_ms;
    // The start is the deciding replica's estimate of Redis time, which lags it by up to a reply's way back: a
    // heartbeat less than an acknowledgement after it may have come before it.
    let told = holder
        .revoking_since_ms
        .is_some_and(|since| holder_heard_at >= since + timing.acknowledge_interval_ms());
    let release_expected = if told && now_ms - holder_heard_at < margin {
        holder_heard_at + margin
    } else {
        holder_heard_at + timing.heartbeat_interval_ms + margin
    };
    let back_in = release_expected - now_ms;
    if back_in <= 0 {
        return None;
    }
    let back_in = back_in.max(margin);
    (back_in < timing.heartbeat_interval_ms).then_some(back_in)
}
