//! Time-driven transitions, run by the reconciler without waiting for a heartbeat.
//!
//! - lease expiry: members whose lease lapsed (by Redis time, so the caller passes them in) become EXPIRED and
//!   their shards are released at once — their client-side lease, shorter than ours, has already run out;
//! - rebalance timeout: a member that has not released revoked shards in time is FENCED and its shards are
//!   held until its last lease has certainly run out;
//! - holds whose time has come are dropped, so their shards can be granted; a hold whose end is still to be
//!   counted (`Hold::anchor_pending`) has it counted from this tick's `now` instead;
//! - a static member whose lease lapsed leaves its target reserved for its `groupInstanceId` for the
//!   static-member grace; reservations past it are dropped and their shards rebalanced;
//! - terminal members are forgotten after the retention period;
//! - a metadata-correction round with no live member left closes: nobody is left to synchronise, and while it
//!   is open every admin change of the group is refused (`METADATA_SYNC_IN_PROGRESS`).
//!
//! Every time condition is returned with the transition (`not_before_ms`, `must_be_lapsed`) so the store can
//! check it against Redis time atomically with the write.

use crate::heartbeat::{Transition, awaits_confirmation, fence_member, reserve};
use crate::migration::advance;
use crate::model::{EpochOverflow, Group, HoldReason, MemberState, ReservationReason, incremented};
use crate::rebalance::{bump_epochs, recompute_target, settle};
use crate::timing::Timing;
use std::collections::BTreeSet;

/// Counts of what a tick did, for metrics and logs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Members expired because their lease lapsed.
    pub expired: Vec<String>,
    /// Members fenced because they did not release revoked shards within the rebalance timeout.
    pub fenced: Vec<String>,
    /// (u32 with the flag below, so the report — part of every reconcile step — does not grow.)
    pub holds_released: u32,
    /// Members removed from the aggregate: expired, fenced, or left and holding nothing, for longer than the
    /// stale-member retention.
    pub pruned: Vec<String>,
    /// Static members' reservations made (lease lapsed) and dropped (grace over), by `groupInstanceId`.
    pub reserved: Vec<String>,
    /// See `reserved`.
    pub reservations_lapsed: Vec<String>,
    /// A metadata-correction round closed because no live member was left to synchronise.
    pub correction_closed: bool,
}

/// Advances `g` to `now_ms`. `lapsed`: members whose lease has lapsed according to Redis.
/// Returns None when nothing is due, and an error (nothing to write) when an epoch would overflow.
pub fn tick(
    g: &Group,
    now_ms: i64,
    lapsed: &BTreeSet<String>,
    timing: &Timing,
) -> Result<Option<(Transition, TickReport)>, EpochOverflow> {
    let mut next = g.clone();
    let mut t = Transition::default();
    let mut report = TickReport::default();
    let mut membership_changed = false;

    for id in lapsed {
        let Some(m) = next.members.get_mut(id) else {
            continue;
        };
        if !m.state.is_live() {
            continue;
        }
        let instance = m
            .group_instance_id
            .clone()
            .filter(|_| m.state == MemberState::Active && timing.static_member_grace_ms > 0);
        if let Some(instance) = instance {
            reserve(
                &mut next,
                &instance,
                id,
                now_ms + timing.static_member_grace_ms,
                ReservationReason::LeaseLapsed,
            );
            if next
                .static_reservations
                .iter()
                .any(|r| r.group_instance_id == instance)
            {
                report.reserved.push(instance);
            }
        }
        let Some(m) = next.members.get_mut(id) else {
            continue;
        };
        m.state = MemberState::Expired;
        m.state_changed_at_ms = now_ms;
        m.member_epoch = incremented("memberEpoch", m.member_epoch)?;
        m.assigned.clear();
        m.revoking.clear();
        m.reported_revoking.clear();
        m.rebalance_deadline_ms = None;
        t.must_be_lapsed.push(id.clone());
        t.remove.push(id.clone());
        report.expired.push(id.clone());
        membership_changed = true;
    }

    let overdue: Vec<(String, i64)> = next
        .members
        .values()
        .filter(|m| m.state.is_live())
        .filter_map(|m| {
            m.rebalance_deadline_ms
                .filter(|d| *d <= now_ms)
                .map(|d| (m.member_id.clone(), d))
        })
        .collect();
    for (id, deadline) in overdue {
        fence_member(&mut next, &id, now_ms, timing, HoldReason::RebalanceTimeout)?;
        t.not_before_ms = t.not_before_ms.max(deadline);
        t.remove.push(id.clone());
        report.fenced.push(id);
        membership_changed = true;
    }

    // A hold whose end is still to be counted (a fence decided on a heartbeat, `Hold::anchor_pending`): this
    // tick read it written, so every renewal of its member that can have landed before that write landed
    // before `now` (give or take the clock's error, which the margin covers); its client lease ends by
    // `now` + lease TTL.
    for h in &mut next.holds {
        if h.anchor_pending {
            h.until_ms = h
                .until_ms
                .max(now_ms + timing.member_lease_ttl_ms + timing.hold_margin_ms);
            h.anchor_pending = false;
        }
    }

    let before = next.holds.len();
    // A rejoin's hold is kept while the joined incarnation has not confirmed its join: its end is counted
    // again when it does (or leaves, or is fenced), from a decision after the join's write
    // (`heartbeat::anchor_rejoin_holds`). An expiry of that incarnation above waited for its lease, renewed
    // by the join's write, to lapse.
    let members = &next.members;
    let awaiting = |h: &crate::model::Hold| {
        h.reason == HoldReason::PreviousIncarnationRejoined
            && members.get(&h.member_id).is_some_and(awaits_confirmation)
    };
    let kept: Vec<bool> = next.holds.iter().map(awaiting).collect();
    let mut kept = kept.into_iter();
    next.holds.retain(|h| {
        if kept.next().unwrap_or(false) {
            true
        } else if h.until_ms <= now_ms {
            t.not_before_ms = t.not_before_ms.max(h.until_ms);
            false
        } else {
            true
        }
    });
    report.holds_released = u32::try_from(before - next.holds.len()).unwrap_or(u32::MAX);

    next.static_reservations.retain(|r| {
        if r.until_ms <= now_ms {
            t.not_before_ms = t.not_before_ms.max(r.until_ms);
            report.reservations_lapsed.push(r.group_instance_id.clone());
            false
        } else {
            true
        }
    });
    // The grace is over: the shards are rebalanced over the active members, as for any departure.
    membership_changed |= !report.reservations_lapsed.is_empty();

    // A correction round waits for live members to report the store's version; with none left it would stay
    // open for ever (until some member joined), refusing every admin change meanwhile.
    if next.metadata_correction.is_some() && !next.members.values().any(|m| m.state.is_live()) {
        next.metadata_correction = None;
        report.correction_closed = true;
    }

    let retention = timing.stale_member_retention_ms;
    let prunable: Vec<(String, i64)> = next
        .members
        .values()
        .filter(|m| match m.state {
            MemberState::Expired | MemberState::Fenced => true,
            MemberState::Leaving => m.revoking.is_empty() && m.assigned.is_empty(),
            MemberState::Active => false,
        })
        .filter(|m| retention > 0 && m.state_changed_at_ms + retention <= now_ms)
        .map(|m| (m.member_id.clone(), m.state_changed_at_ms + retention))
        .collect();
    for (id, due) in prunable {
        next.members.remove(&id);
        next.target_assignments.remove(&id);
        t.not_before_ms = t.not_before_ms.max(due);
        if !t.remove.contains(&id) {
            t.remove.push(id.clone());
        }
        report.pruned.push(id);
    }

    if membership_changed {
        bump_epochs(&mut next)?;
        recompute_target(&mut next, now_ms, timing);
    } else {
        if !report.pruned.is_empty() {
            next.metadata_version = incremented("metadataVersion", next.metadata_version)?;
        }
        settle(&mut next, now_ms, timing);
    }
    advance(&mut next, now_ms)?;
    if next == *g {
        return Ok(None);
    }
    next.updated_at_ms = now_ms;
    t.group = Some(next);
    Ok(Some((t, report)))
}
