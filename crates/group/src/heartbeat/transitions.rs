//! The individual heartbeat transitions: join, leave, accept (with report application) and fencing.

use super::correction::{correction_round, sync_metadata};
use super::draft::{Draft, Rebalance};
use super::respond::{exhausted, member_response, rejected, response};
use super::{Decision, Outcome, Transition, probe_write};
use crate::durability::Signals;
use crate::model::{
    EpochOverflow, Group, Hold, HoldReason, Member, MemberState, Reservation, ReservationReason,
    RevokeReport, ShardSet, incremented,
};
use crate::rebalance::bumped;
use crate::timing::Timing;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatStatus, RevokingShardReport};
use std::collections::BTreeMap;

/// Join, rejoin after expiry/fencing/leave, or a restarted process reusing its id (a new incarnation: the old
/// incarnation's shards are held until its lease has certainly run out, then granted normally).
pub(super) fn join(
    g: &mut Draft<'_>,
    req: &HeartbeatRequest,
    joiner: Option<&str>,
    now_ms: i64,
    timing: &Timing,
) -> Decision {
    if let Some(instance) = &req.group_instance_id
        && g.active_instance(instance)
            .is_some_and(|m| m.member_id != req.member_id)
    {
        // Another live process claims this static identity: refused until it leaves or lapses.
        return rejected(req, timing, HeartbeatStatus::FencedInstanceId, true);
    }
    let Ok(bump) = bumped(g) else {
        return exhausted(req, timing);
    };
    let held: ShardSet = g
        .members
        .get(&req.member_id)
        .filter(|old| old.state.is_live())
        .map(|old| old.held().collect())
        .unwrap_or_default();
    let Some(next) = g.write() else {
        return probe_write(req, timing, Signals::default());
    };
    if !held.is_empty() {
        next.holds.push(Hold {
            member_id: req.member_id.clone(),
            shards: held,
            until_ms: now_ms + timing.member_lease_ttl_ms + timing.hold_margin_ms,
            reason: HoldReason::PreviousIncarnationRejoined,
            anchor_pending: false,
        });
    }
    let name = req
        .member_name
        .clone()
        .unwrap_or_else(|| req.member_id.clone());
    let mut m = Member::new(&req.member_id, &name, now_ms);
    m.owner = joiner.map(str::to_owned);
    m.protocol_version = req.protocol_version;
    m.client_name.clone_from(&req.client_name);
    m.client_version.clone_from(&req.client_version);
    m.group_instance_id.clone_from(&req.group_instance_id);
    next.members.insert(req.member_id.clone(), m);
    if let Some(instance) = &req.group_instance_id
        && let Some(i) = next
            .static_reservations
            .iter()
            .position(|r| r.group_instance_id == *instance)
    {
        // The reserved target becomes this member's previous target, so the sticky assignor keeps it.
        let r = next.static_reservations.remove(i);
        // The reserved shards the group still assigns (`Group::assignable_shards`, without building it).
        let shards: ShardSet = r
            .shards
            .iter()
            .copied()
            .filter(|s| *s < next.shard_count || next.draining_shards.contains(s))
            .collect();
        next.target_assignments
            .insert(req.member_id.clone(), shards);
    }
    bump.apply(next);
    g.rebalance(Rebalance::Target, now_ms, timing);
    let next = g.written();
    let (epoch, version) = (next.assignment_epoch, next.metadata_version);
    if let Some(m) = next.members.get_mut(&req.member_id) {
        m.member_epoch = epoch;
        m.incarnation_epoch = epoch;
        m.join_metadata_version = version;
    }
    next.updated_at_ms = now_ms;
    let response = member_response(next, &req.member_id, req, timing);
    let mut t = Transition::default();
    t.renew.push(req.member_id.clone());
    Decision {
        response,
        outcome: Outcome::Write(Box::new(t)),
        signals: Signals::default(),
    }
}

/// Graceful leave (epoch -1): the member gives up its target; what it holds is released by its reports.
/// `temporary` (epoch -2): a static member's target is also reserved for its `groupInstanceId`.
pub(super) fn leave(
    g: &mut Draft<'_>,
    member: &Member,
    req: &HeartbeatRequest,
    now_ms: i64,
    timing: &Timing,
    temporary: bool,
) -> Decision {
    let Ok(bump) = bumped(g) else {
        return exhausted(req, timing);
    };
    let mut m = member.clone();
    m.state = MemberState::Leaving;
    m.state_changed_at_ms = now_ms;
    m.member_epoch = -1;
    for s in std::mem::take(&mut m.assigned) {
        m.revoking.insert(s, -1);
    }
    for e in m.revoking.values_mut() {
        *e = -1;
    }
    let report = apply_report(&mut m, req, -1, true);
    let holding = !m.revoking.is_empty();
    let signals = Signals {
        rebalance_regression: report.regression,
        ..Signals::default()
    };
    let Some(next) = g.write() else {
        return probe_write(req, timing, signals);
    };
    if temporary
        && timing.static_member_grace_ms > 0
        && let Some(instance) = &member.group_instance_id
    {
        reserve(
            next,
            instance,
            &member.member_id,
            now_ms + timing.static_member_grace_ms,
            ReservationReason::TemporaryLeave,
        );
    }
    next.members.insert(m.member_id.clone(), m);
    bump.apply(next);
    g.rebalance(Rebalance::Target, now_ms, timing);
    let next = g.written();
    next.updated_at_ms = now_ms;
    let empty = ShardSet::new();
    let response = response(next, req, timing, HeartbeatStatus::Ok, -1, &empty, &empty);
    let mut t = Transition::default();
    if holding {
        t.renew.push(req.member_id.clone());
    } else {
        t.remove.push(req.member_id.clone());
    }
    Decision {
        response,
        outcome: Outcome::Write(Box::new(t)),
        signals,
    }
}

/// What applying a report did to a member record.
#[derive(Debug, Default)]
pub(super) struct ReportEffect {
    /// The member reported reading a shard it does not hold: it must be fenced.
    violation: bool,
    /// A shard was reported as being revoked although its release is already recorded.
    regression: bool,
}

/// Applies a member's report made at `epoch` (-1 for a leaving member). `current`: the member has seen every
/// response we sent it, so its owned set can be validated and shown.
pub(super) fn apply_report(
    m: &mut Member,
    req: &HeartbeatRequest,
    epoch: i64,
    current: bool,
) -> ReportEffect {
    let owned: ShardSet = req.owned_shards.iter().map(|s| s.shard_index).collect();
    let reports: BTreeMap<u32, &RevokingShardReport> = req
        .revoking_shards
        .iter()
        .map(|r| (r.shard.shard_index, r))
        .collect();
    let mut effect = ReportEffect::default();

    let revoking: Vec<(u32, i64)> = m.revoking.iter().map(|(&s, &e)| (s, e)).collect();
    for (s, revoked_at) in revoking {
        if epoch < revoked_at && epoch != -1 {
            continue; // the report predates the revocation: it cannot release the shard
        }
        let released = if owned.contains(&s) {
            false
        } else {
            reports.get(&s).is_none_or(|r| r.is_released())
        };
        if released {
            m.revoking.remove(&s);
            m.reported_revoking.remove(&s);
        } else if let Some(r) = reports.get(&s) {
            m.reported_revoking.insert(
                s,
                RevokeReport {
                    state: r.state,
                    in_flight: r.in_flight,
                },
            );
        }
    }
    if m.revoking.is_empty() {
        m.rebalance_deadline_ms = None;
    }
    if current {
        effect.violation = owned.iter().any(|s| !m.holds(*s));
        effect.regression = reports
            .iter()
            .any(|(s, r)| !r.is_released() && !m.holds(*s));
        if m.state == MemberState::Active {
            m.reported_owned = owned;
        }
    }
    effect
}

/// A heartbeat from the current incarnation of an active (or leaving, epoch -1) member.
pub(super) fn accept(
    g: &mut Draft<'_>,
    member: &Member,
    req: &HeartbeatRequest,
    now_ms: i64,
    timing: &Timing,
    join_retry: bool,
) -> Decision {
    let leaving = member.state == MemberState::Leaving;
    let epoch = if join_retry {
        member.incarnation_epoch
    } else {
        req.member_epoch
    };
    let mut m = member.clone();
    let mut signals = Signals::default();

    if !leaving && epoch > member.member_epoch {
        // A member has seen a newer epoch than Redis holds: metadata rolled back.
        signals.metadata_regression = true;
        return sync_metadata(g, member, req, now_ms, timing, signals);
    }
    if req.metadata_version > g.metadata_version {
        signals.metadata_regression = true;
        return sync_metadata(g, member, req, now_ms, timing, signals);
    }

    let current = leaving || epoch == member.member_epoch;
    let effect = if join_retry {
        ReportEffect::default()
    } else {
        apply_report(&mut m, req, epoch, current)
    };
    signals.rebalance_regression = effect.regression;
    if !leaving && !join_retry && epoch >= m.incarnation_epoch {
        m.join_confirmed = true;
    }
    if let Some(name) = &req.member_name
        && !name.is_empty()
        && *name != m.member_name
    {
        m.member_name = name.clone();
    }

    if effect.violation {
        signals.fenced = true;
        return fence(
            g,
            member,
            req,
            now_ms,
            timing,
            signals,
            HoldReason::OwnershipReportOutsideGrants,
        );
    }
    // Past its rebalance deadline with shards still to release: fenced now, as the reconciler's tick would.
    // Never renewed: a renewal after the deadline would outlive the hold a tick decided a moment earlier
    // (now + lease + margin from a `now` just past the deadline), and a steady renewal does not change the
    // revision, so that tick's write would still land and the hold would end while this member reads.
    if let Some(deadline) = m.rebalance_deadline_ms.filter(|d| *d <= now_ms)
        && !m.revoking.is_empty()
    {
        signals.fenced = true;
        let mut d = fence(
            g,
            member,
            req,
            now_ms,
            timing,
            signals,
            HoldReason::RebalanceTimeout,
        );
        if let Outcome::Write(t) = &mut d.outcome {
            t.not_before_ms = t.not_before_ms.max(deadline);
        }
        return d;
    }

    if let Some(correction) = g.metadata_correction.clone() {
        return correction_round(g, &m, &correction, req, now_ms, timing, signals);
    }

    if m == *member {
        let response = if leaving {
            let empty = ShardSet::new();
            response(g, req, timing, HeartbeatStatus::Ok, -1, &empty, &empty)
        } else {
            member_response(g, &member.member_id, req, timing)
        };
        // A leave that already released everything has no lease left to renew (it was removed with the
        // last release): a retry after a lost answer gets the same OK, and nothing is stored.
        let outcome = if leaving && m.assigned.is_empty() && m.revoking.is_empty() {
            Outcome::Rejected {
                needs_fresh_state: true,
            }
        } else {
            Outcome::Steady
        };
        return Decision {
            response,
            outcome,
            signals,
        };
    }

    let holding = !m.revoking.is_empty() || !m.assigned.is_empty();
    let Some(next) = g.write() else {
        return probe_write(req, timing, signals);
    };
    next.members.insert(m.member_id.clone(), m);
    g.rebalance(Rebalance::Grants, now_ms, timing);
    let next = g.written();
    next.updated_at_ms = now_ms;
    let response = if leaving {
        let empty = ShardSet::new();
        response(next, req, timing, HeartbeatStatus::Ok, -1, &empty, &empty)
    } else {
        member_response(next, &req.member_id, req, timing)
    };
    let mut t = Transition::default();
    if leaving && !holding {
        t.remove.push(req.member_id.clone());
    } else {
        t.must_be_live.push(req.member_id.clone());
        t.renew.push(req.member_id.clone());
    }
    Decision {
        response,
        outcome: Outcome::Write(Box::new(t)),
        signals,
    }
}

/// Fences a member whose report shows it reading shards it does not hold.
fn fence(
    g: &mut Draft<'_>,
    member: &Member,
    req: &HeartbeatRequest,
    now_ms: i64,
    timing: &Timing,
    signals: Signals,
    reason: HoldReason,
) -> Decision {
    let (Ok(fenced_epoch), Ok(bump)) = (fenced_epoch(g, member), bumped(g)) else {
        return exhausted(req, timing);
    };
    let Some(next) = g.write() else {
        return probe_write(req, timing, signals);
    };
    fence_member_at(
        next,
        &member.member_id,
        fenced_epoch,
        now_ms,
        timing,
        reason,
    );
    bump.apply(next);
    g.rebalance(Rebalance::Target, now_ms, timing);
    let next = g.written();
    next.updated_at_ms = now_ms;
    let fenced_epoch = next
        .members
        .get(&member.member_id)
        .map_or(0, |m| m.member_epoch);
    let empty = ShardSet::new();
    let response = response(
        next,
        req,
        timing,
        HeartbeatStatus::FencedMemberEpoch,
        fenced_epoch,
        &empty,
        &empty,
    );
    let mut t = Transition::default();
    t.remove.push(member.member_id.clone());
    Decision {
        response,
        outcome: Outcome::Write(Box::new(t)),
        signals,
    }
}

/// The epoch a fenced member is given: above the group epoch and above its own.
pub(super) fn fenced_epoch(g: &Group, member: &Member) -> Result<i64, EpochOverflow> {
    Ok(incremented("groupEpoch", g.group_epoch)?
        .max(incremented("memberEpoch", member.member_epoch)?))
}

/// Marks a member FENCED and holds whatever it held until its last lease has certainly run out. Nothing
/// changes when its new epoch would overflow.
pub fn fence_member(
    g: &mut Group,
    member_id: &str,
    now_ms: i64,
    timing: &Timing,
    reason: HoldReason,
) -> Result<(), EpochOverflow> {
    let Some(m) = g.members.get(member_id) else {
        return Ok(());
    };
    let epoch = fenced_epoch(g, m)?;
    fence_member_at(g, member_id, epoch, now_ms, timing, reason);
    Ok(())
}

/// [`fence_member`] with the new epoch already computed.
pub(super) fn fence_member_at(
    g: &mut Group,
    member_id: &str,
    epoch: i64,
    now_ms: i64,
    timing: &Timing,
    reason: HoldReason,
) {
    let Some(m) = g.members.get_mut(member_id) else {
        return;
    };
    let unconfirmed = awaits_confirmation(m);
    let held: ShardSet = m.held().collect();
    if !held.is_empty() {
        g.holds.push(Hold {
            member_id: member_id.to_owned(),
            shards: held,
            until_ms: now_ms + timing.member_lease_ttl_ms + timing.hold_margin_ms,
            anchor_pending: reason == HoldReason::OwnershipReportOutsideGrants,
            reason,
        });
    }
    m.state = MemberState::Fenced;
    m.state_changed_at_ms = now_ms;
    m.member_epoch = epoch;
    m.assigned.clear();
    m.revoking.clear();
    m.reported_revoking.clear();
    m.rebalance_deadline_ms = None;
    if unconfirmed {
        anchor_rejoin_holds(g, member_id, now_ms, timing);
    }
}

/// Whether `m` is an incarnation that joined and has not yet confirmed its join (no heartbeat at its new
/// epoch): a hold its join placed on the previous incarnation's shards is not lifted while it is (`tick`).
pub fn awaits_confirmation(m: &Member) -> bool {
    m.state == MemberState::Active && !m.join_confirmed
}

/// Counts the holds a rejoin of `member_id` placed on its previous incarnation's shards from `now_ms`, a
/// decision made on a group that already holds the rejoin (so after the rejoin's write, whenever that landed):
/// they end no earlier than `now_ms + lease TTL + margin`. The rejoin's own `now` may be long before its write
/// (a paused replica), and a steady renewal of the old incarnation decided on the group before the rejoin may
/// land in between (it does not move the revision); the old incarnation's client lease, counted from a send
/// before the rejoin's write, has certainly run out by then (ARCHITECTURE.md, invariant 1).
pub fn anchor_rejoin_holds(g: &mut Group, member_id: &str, now_ms: i64, timing: &Timing) {
    let until = now_ms + timing.member_lease_ttl_ms + timing.hold_margin_ms;
    for h in &mut g.holds {
        if h.member_id == member_id && h.reason == HoldReason::PreviousIncarnationRejoined {
            h.until_ms = h.until_ms.max(until);
        }
    }
}

/// Reserves `member_id`'s current target for `instance` until `until_ms` (replacing an older reservation of
/// the same instance). The caller recomputes the target, which then leaves these shards out.
pub fn reserve(
    g: &mut Group,
    instance: &str,
    member_id: &str,
    until_ms: i64,
    reason: ReservationReason,
) {
    let shards = g.target_of(member_id);
    let owner = g.members.get(member_id).and_then(|m| m.owner.clone());
    g.static_reservations
        .retain(|r| r.group_instance_id != instance);
    if shards.is_empty() {
        return;
    }
    g.static_reservations.push(Reservation {
        group_instance_id: instance.to_owned(),
        member_id: member_id.to_owned(),
        shards,
        until_ms,
        reason,
        owner,
    });
}
