//! When a group next needs its reconciler: the earliest moment at which [`crate::tick::tick`] could change it,
//! computed from the aggregate and the earliest member lease end (which lives in Redis, beside the aggregate).
//!
//! The owner of a group keeps these deadlines in a schedule and visits a group only when its deadline comes or
//! when its revision moved (a write anywhere may bring a deadline forward). Between the two, `tick` has nothing
//! to do: every time condition it acts on — a lease lapsed, a rebalance deadline passed, a hold or a static
//! member's reservation ran out, a terminal member's retention ended — is one of the instants below. A group
//! in the middle of a resharding migration is visited every tick (its steps wait on Redis evidence, not on
//! time alone). A group with no live member, no hold, no reservation and nothing to prune has no deadline:
//! it costs nothing until something writes it.
//!
//! Like ownership, deadlines decide only *when* work is done, never whether it is safe: the tick's time
//! conditions are checked by Redis in the same script as its write.

use crate::heartbeat::awaits_confirmation;
use crate::model::{Group, HoldReason, MemberState};
use crate::timing::Timing;

/// What the member leases in Redis say, for [`next_visit`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeaseView {
    /// The earliest lease end in the group's lease set (Redis ms), if it has any entry.
    pub earliest_end_ms: Option<i64>,
    /// How many lease entries there are.
    pub entries: usize,
}

/// When to visit a group next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextVisit {
    /// At this Redis time (ms) or when the group is written, whichever is first.
    At(i64),
    /// Every tick: a migration is in flight, or a live member has no lease entry (the tick treats it as
    /// lapsed).
    EveryTick,
    /// Only when the group is written: nothing in it is waiting on time.
    OnChange,
}

/// The next visit `g` needs, given its leases.
pub fn next_visit(g: &Group, leases: LeaseView, timing: &Timing) -> NextVisit {
    if g.active_migration_id.is_some()
        || !g.draining_shards.is_empty()
        || !g.ordering_gates.is_empty()
    {
        return NextVisit::EveryTick;
    }
    let live = g.members.values().filter(|m| m.state.is_live()).count();
    if leases.entries < live {
        return NextVisit::EveryTick;
    }
    let mut due: Option<i64> = None;
    let mut at = |t: i64| due = Some(due.map_or(t, |d| d.min(t)));
    if live > 0
        && let Some(end) = leases.earliest_end_ms
    {
        at(end);
    }
    for m in g.members.values() {
        if m.state.is_live()
            && let Some(d) = m.rebalance_deadline_ms
        {
            at(d);
        }
        let prunable = match m.state {
            MemberState::Expired | MemberState::Fenced => true,
            MemberState::Leaving => m.revoking.is_empty() && m.assigned.is_empty(),
            MemberState::Active => false,
        };
        if prunable && timing.stale_member_retention_ms > 0 {
            at(m.state_changed_at_ms
                .saturating_add(timing.stale_member_retention_ms));
        }
    }
    for h in &g.holds {
        // A rejoin's hold waits for the joined incarnation's confirmation, a write (or its lease end) that
        // makes the group due anyway.
        let awaiting = h.reason == HoldReason::PreviousIncarnationRejoined
            && g.members.get(&h.member_id).is_some_and(awaits_confirmation);
        if h.anchor_pending {
            // Its end is counted by the next tick: due at once.
            at(0);
        } else if !awaiting {
            at(h.until_ms);
        }
    }
    for r in &g.static_reservations {
        at(r.until_ms);
    }
    due.map_or(NextVisit::OnChange, NextVisit::At)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Hold, Member};
    use std::collections::BTreeSet;

    fn group() -> Group {
        Group::new("p", "g", 4, 1_000, "life")
    }

    fn member(id: &str, state: MemberState, changed_at: i64) -> Member {
        let mut m = Member::new(id, id, 1_000);
        m.state = state;
        m.state_changed_at_ms = changed_at;
        m
    }

    #[test]
    fn an_empty_group_waits_for_a_change() {
        let t = Timing::default();
        assert_eq!(
            next_visit(&group(), LeaseView::default(), &t),
            NextVisit::OnChange
        );
        // A stray lease entry with no live member is not a deadline (nothing to expire).
        let stray = LeaseView {
            earliest_end_ms: Some(5),
            entries: 1,
        };
        assert_eq!(next_visit(&group(), stray, &t), NextVisit::OnChange);
    }

    #[test]
    fn the_earliest_of_lease_rebalance_hold_and_pruning_wins() {
        let t = Timing::default();
        let mut g = group();
        let mut a = member("a", MemberState::Active, 1_000);
        a.rebalance_deadline_ms = Some(40_000);
        g.members.insert("a".into(), a);
        let leases = LeaseView {
            earliest_end_ms: Some(16_000),
            entries: 1,
        };
        assert_eq!(next_visit(&g, leases, &t), NextVisit::At(16_000));
        g.holds.push(Hold {
            member_id: "x".into(),
            shards: BTreeSet::from([1]),
            until_ms: 9_000,
            reason: "test".into(),
            anchor_pending: false,
        });
        assert_eq!(next_visit(&g, leases, &t), NextVisit::At(9_000));
        g.members
            .insert("e".into(), member("e", MemberState::Expired, 500));
        assert_eq!(
            next_visit(&g, leases, &t),
            NextVisit::At(9_000),
            "retention 600 s"
        );
        let short = Timing {
            stale_member_retention_ms: 1_000,
            ..t
        };
        assert_eq!(next_visit(&g, leases, &short), NextVisit::At(1_500));
    }

    #[test]
    fn a_live_member_without_lease_or_a_migration_needs_every_tick() {
        let t = Timing::default();
        let mut g = group();
        g.members
            .insert("a".into(), member("a", MemberState::Active, 1_000));
        assert_eq!(
            next_visit(&g, LeaseView::default(), &t),
            NextVisit::EveryTick
        );
        let mut g = group();
        g.active_migration_id = Some("m".into());
        assert_eq!(
            next_visit(&g, LeaseView::default(), &t),
            NextVisit::EveryTick
        );
    }
}
