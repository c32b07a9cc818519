//! A member fenced by its own heartbeat (`heartbeat/transitions.rs::accept`: a report of owning a shard
//! outside its grants, or a heartbeat past its rebalance deadline) while another heartbeat of the same member,
//! through another replica, is renewed on the group as it was before the fence (`heartbeat.lua`: one EVALSHA
//! that checks the revision and the lease, not the time). The fence's hold counts from the fence decision's
//! `now`; these examples ask whether the renewal's OK can let the member read past the hold (invariant 1).

use crate::rebalance_timeout::{
    AtRevision, Redis, T, a_draining_up_to_its_deadline, beat, request,
};
use rsc_group::heartbeat::{Caller, Outcome, Transition, decide};
use rsc_group::model::{HoldReason, MemberState};
use rsc_group::replica::Snapshot;
use rsc_group::replica::heartbeat::{Confirmation, HeartbeatFlow, Renewal, Step};
use rsc_group::tick::tick;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatStatus};
use std::collections::BTreeSet;

/// Members a and b each read one of two shards (a's other shard was revoked, released and granted to b); both
/// leases live in Redis. Returns Redis, a's epoch, the shard a keeps and the shard b took from it.
fn a_and_b_reading() -> (Redis, i64, u32, u32) {
    let mut now = 1_000_000;
    let mut g = rsc_group::model::Group::new("s", "g", 2, now, "lc");
    let (_, a_epoch, _) = beat(&mut g, &request("a", 0, &[], &[]), now);
    beat(&mut g, &request("a", a_epoch, &[0, 1], &[]), now);
    now += 1_000;
    let (_, b_epoch, _) = beat(&mut g, &request("b", 0, &[], &[]), now);
    let (_, a_epoch, a_assigned) = beat(&mut g, &request("a", a_epoch, &[0, 1], &[]), now);
    let kept = a_assigned[0];
    let taken = 1 - kept;
    beat(&mut g, &request("a", a_epoch, &[kept], &[]), now);
    let (_, b_epoch, b_assigned) = beat(&mut g, &request("b", b_epoch, &[], &[]), now);
    assert_eq!(b_assigned, vec![taken]);
    beat(&mut g, &request("b", b_epoch, &[taken], &[]), now);
    let (status, a_epoch, a_assigned) = beat(&mut g, &request("a", a_epoch, &[kept], &[]), now);
    assert_eq!((status, a_assigned), (HeartbeatStatus::Ok, vec![kept]));
    let leases = [
        ("a".to_owned(), now + T.member_lease_ttl_ms),
        ("b".to_owned(), now + T.member_lease_ttl_ms),
    ];
    let redis = Redis {
        group: g,
        revision: 1,
        leases: leases.into_iter().collect(),
    };
    (redis, a_epoch, kept, taken)
}

/// a's faulty heartbeat (it reports owning b's shard) decided at `decided` by replica A: a fence, written by
/// A later. Returns the fence's transition and the revision it was decided on.
fn faulty_report_fenced(
    redis: &Redis,
    a_epoch: i64,
    kept: u32,
    taken: u32,
    decided: i64,
) -> Transition {
    let faulty = request("a", a_epoch, &[kept, taken], &[]);
    let d = decide(Some(&redis.group), "a", &faulty, decided, &T);
    assert_eq!(d.response.status, HeartbeatStatus::FencedMemberEpoch);
    let Outcome::Write(t) = d.outcome else {
        panic!("a self-fence is a write: {:?}", d.outcome);
    };
    let g = t.group.as_ref().expect("a write carries the group");
    assert_eq!(g.members["a"].state, MemberState::Fenced);
    assert_eq!(g.holds.len(), 1);
    assert_eq!(g.holds[0].reason, HoldReason::OwnershipReportOutsideGrants);
    assert_eq!(g.holds[0].shards, [kept].into_iter().collect());
    assert_eq!(
        g.holds[0].until_ms,
        decided + T.member_lease_ttl_ms + T.hold_margin_ms
    );
    *t
}

/// A steady heartbeat of a through replica B at `now` (Redis time and B's clock alike), on the group as Redis
/// holds it: the flow's step after the renewal was tried.
fn steady_through_b(
    redis: &mut Redis,
    req: &HeartbeatRequest,
    now: i64,
) -> (Renewal, Step<AtRevision>) {
    let (mut flow, _) = HeartbeatFlow::<AtRevision>::start("a", Caller::ANONYMOUS, &T);
    let Step::Renew(base) = flow.on_read(req, Ok(Some(redis.read())), false, now) else {
        panic!("a's unchanged report is a steady renewal");
    };
    let renewal = redis.renew(base.revision(), "a", now);
    let step = flow.on_renewed(req, renewal);
    (renewal, step)
}

/// The fence lands first, then a's clean heartbeat decided on the group before it: the fence moved the
/// revision, `heartbeat.lua` renews nothing (CONFLICT), and the flow decides again on the group read afresh,
/// where a is FENCED: answered FENCED_MEMBER_EPOCH, its lease entry gone. a's client lease still counts from
/// its last OK, sent before the fence was decided, so it ends before the hold. Pins the revision check of
/// `heartbeat.lua` (without it the renewal finds no lease: the fence's removal of a's lease entry is a second
/// guard) and the FENCED arm of `decide_existing` (a fenced member's heartbeat decided as a live one's is no
/// FENCED answer).
#[test]
fn a_clean_heartbeat_decided_before_a_self_fence_and_landing_after_it_renews_nothing() {
    let (mut redis, a_epoch, kept, taken) = a_and_b_reading();
    let decided = 1_002_000;
    let clean = request("a", a_epoch, &[kept], &[]);
    let (mut flow, _) = HeartbeatFlow::<AtRevision>::start("a", Caller::ANONYMOUS, &T);
    let Step::Renew(base) = flow.on_read(&clean, Ok(Some(redis.read())), false, decided) else {
        panic!("a's clean report is a steady renewal");
    };
    let fence = faulty_report_fenced(&redis, a_epoch, kept, taken, decided);
    assert!(redis.cas(redis.revision, &fence, decided + 1));
    assert!(
        !redis.leases.contains_key("a"),
        "the fence removed a's lease"
    );

    let renewal = redis.renew(base.revision(), "a", decided + 100);
    assert_eq!(renewal, Renewal::Conflict);
    assert!(!redis.leases.contains_key("a"), "nothing was renewed");
    let mut step = flow.on_renewed(&clean, renewal);
    let status = loop {
        step = match step {
            Step::Answer(answer) => break answer.status,
            Step::ConfirmCurrent(_) => flow.on_confirmed(&clean, Confirmation::Current),
            Step::Read | Step::Reload => {
                flow.on_read(&clean, Ok(Some(redis.read())), true, decided + 100)
            }
            Step::Renew(_) => panic!("a fenced member is never renewed"),
            other => panic!("unexpected step {other:?}"),
        };
    };
    assert_eq!(status, HeartbeatStatus::FencedMemberEpoch);
    assert!(!redis.leases.contains_key("a"), "nothing was renewed");
}

/// Replica A decides a's faulty heartbeat at `decided` (a fence holding a's shard) and pauses before writing.
/// a gets no answer (A answers only once the write lands); its client lease still counts from its last OK,
/// but its next heartbeats, clean reports sent through replica B, are steady renewals on the group as Redis
/// still holds it (a fence not written moves no revision) and answered OK, each moving a's client lease on.
/// A's write then lands (a renewal leaves the revision). Nothing bounds those renewals' sends from the
/// decision, so the fence's hold is written with its end still to be counted (`Hold::anchor_pending`): the
/// first tick that reads it written counts it from its own `now`, after every renewal that landed before the
/// write, and the shard goes to b only once a's last client lease has run out (ARCHITECTURE.md, invariant 1).
/// Fails without the pending end (the hold would end at the decision's clock, before the write landed: the
/// shard went to b at once while a read it) or without the tick's counting (the hold would never end).
#[test]
fn a_self_fence_paused_behind_clean_renewals_holds_the_shard_from_the_first_tick_that_reads_it() {
    let (mut redis, a_epoch, kept, taken) = a_and_b_reading();
    let decided = 1_002_000;
    let fence = faulty_report_fenced(&redis, a_epoch, kept, taken, decided);
    let base = redis.revision;
    let hold = fence.group.as_ref().unwrap().holds[0].clone();
    assert!(
        hold.anchor_pending,
        "written with its end still to be counted"
    );

    // a heartbeats every interval through B while A is paused, each renewed and answered OK.
    let clean = request("a", a_epoch, &[kept], &[]);
    let mut sent = decided;
    while sent < decided + 2 * T.member_lease_ttl_ms {
        sent += T.heartbeat_interval_ms;
        let (renewal, step) = steady_through_b(&mut redis, &clean, sent);
        assert_eq!(renewal, Renewal::Renewed);
        let Step::Answer(answer) = step else {
            panic!("a renewal is answered");
        };
        assert_eq!(answer.status, HeartbeatStatus::Ok);
    }
    let a_reads_until = sent + T.member_lease_ttl_ms;

    // A's write lands: the renewals left the revision as it was. The decision's clock is long past.
    let landed = sent + 1;
    assert!(redis.cas(base, &fence, landed), "the fence's write lands");
    assert!(hold.until_ms <= landed);
    assert!(redis.group.holds[0].in_effect_at(landed));
    assert_eq!(
        rsc_group::deadline::next_visit(
            &redis.group,
            rsc_group::deadline::LeaseView {
                earliest_end_ms: redis.leases.values().min().copied(),
                entries: redis.leases.len(),
            },
            &T
        ),
        rsc_group::deadline::NextVisit::At(0),
        "a hold whose end is to be counted makes its group due at once"
    );

    // The first tick that reads it counts its end from its own clock, and lifts nothing.
    let (anchor, report) = tick(&redis.group, landed, &BTreeSet::new(), &T)
        .unwrap()
        .expect("the hold's end is counted");
    assert_eq!(report.holds_released, 0);
    let at = redis.revision;
    assert!(redis.cas(at, &anchor, landed));
    let counted = &redis.group.holds[0];
    assert!(!counted.anchor_pending);
    assert_eq!(
        counted.until_ms,
        landed + T.member_lease_ttl_ms + T.hold_margin_ms
    );
    assert!(
        a_reads_until <= counted.until_ms,
        "a may read until {a_reads_until}; its shard is held until {}",
        counted.until_ms
    );
    let until = counted.until_ms;

    // b is not granted a's shard while a may read it.
    let b_epoch = redis.group.members["b"].member_epoch;
    let (_, _, b_assigned) = beat(
        &mut redis.group,
        &request("b", b_epoch, &[taken], &[]),
        a_reads_until,
    );
    assert!(!b_assigned.contains(&kept), "still held at {a_reads_until}");
    assert!(
        tick(&redis.group, until - 1, &BTreeSet::new(), &T)
            .unwrap()
            .is_none_or(|(_, r)| r.holds_released == 0)
    );

    // Once it ends, the shard moves on.
    let (lift, report) = tick(&redis.group, until, &BTreeSet::new(), &T)
        .unwrap()
        .expect("the hold runs out");
    assert_eq!(report.holds_released, 1);
    let lifted = redis.revision;
    assert!(redis.cas(lifted, &lift, until));
    let b_epoch = redis.group.members["b"].member_epoch;
    let (_, _, b_assigned) = beat(
        &mut redis.group,
        &request("b", b_epoch, &[taken], &[]),
        until,
    );
    assert!(b_assigned.contains(&kept), "b is granted a's shard");
    assert!(rsc_group::invariants::check(&redis.group).is_empty());
}

/// The deadline fence a member gets from its own heartbeat, decided by replica A at the deadline and paused
/// before its write, against a's next heartbeat renewed through replica B, whose clock is the whole margin
/// behind Redis (so B still reads a time before the deadline while Redis is past it), landing late.
///
/// Safe, by the argument for the reconciler's fence (rebalance_timeout.rs): B renews only while its clock is
/// before the deadline (at or past it, a's heartbeat is its own fence, a write that moves the revision), so the
/// renewal's send, before B read its clock, was before `deadline + margin`; a's client lease, counted from
/// it, ends before `deadline + margin + lease TTL`; the self-fence's `now` is at or after the deadline and its
/// write carries `not_before = deadline`, so its hold ends no earlier, and only Redis time at or past that
/// end lifts it. However long A pauses, later heartbeats of a are decided at or past the deadline: fences,
/// not renewals. Pins the `deadline <= now` test in `accept` (renewing a heartbeat decided past the deadline
/// carries a later send) and the margin in `fence_member_at`.
#[test]
fn a_renewal_racing_a_members_own_deadline_fence_ends_before_the_fences_hold() {
    let (mut redis, deadline, req) = a_draining_up_to_its_deadline();

    // A decides a's heartbeat at the deadline: a's own fence, not before the deadline in Redis time.
    let d = decide(Some(&redis.group), "a", &req, deadline, &T);
    assert_eq!(d.response.status, HeartbeatStatus::FencedMemberEpoch);
    let Outcome::Write(fence) = d.outcome else {
        panic!("a's own fence is a write: {:?}", d.outcome);
    };
    assert_eq!(fence.not_before_ms, deadline);
    let hold = fence.group.as_ref().unwrap().holds[0].clone();
    assert_eq!(hold.reason, HoldReason::RebalanceTimeout);
    let fence_base = redis.revision;

    // Every later heartbeat of a, by any replica whose clock is at or past the deadline, is a fence too.
    for late in [deadline, deadline + 1, deadline + 3 * T.member_lease_ttl_ms] {
        let (mut flow, _) = HeartbeatFlow::<AtRevision>::start("a", Caller::ANONYMOUS, &T);
        assert!(
            matches!(
                flow.on_read(&req, Ok(Some(redis.read())), false, late),
                Step::Write
            ),
            "decided at {late}, past the deadline: a fence, never a renewal"
        );
    }

    // B, its clock LAG behind Redis, decides a's next heartbeat at deadline - 1: a renewal; a sent it no
    // later than Redis time deadline - 1 + LAG. It lands late, after A's pause began.
    let lag = T.hold_margin_ms;
    let sent = deadline - 1 + lag;
    let (mut flow, _) = HeartbeatFlow::<AtRevision>::start("a", Caller::ANONYMOUS, &T);
    let Step::Renew(base) = flow.on_read(&req, Ok(Some(redis.read())), false, deadline - 1) else {
        panic!("before the deadline by B's clock, a's unchanged report is renewed");
    };
    let renewal = redis.renew(base.revision(), "a", deadline + 2_000);
    assert_eq!(renewal, Renewal::Renewed);
    let Step::Answer(answer) = flow.on_renewed(&req, renewal) else {
        panic!("a renewal is answered");
    };
    assert_eq!(answer.status, HeartbeatStatus::Ok);

    // A's write lands after a whole lease of pause; it removes a's lease entry.
    let landed = deadline + 2 * T.member_lease_ttl_ms;
    assert!(
        !redis.cas(fence_base, &fence, deadline - 1),
        "not before the deadline"
    );
    assert!(redis.cas(fence_base, &fence, landed));
    assert_eq!(redis.group.members["a"].state, MemberState::Fenced);
    assert!(!redis.leases.contains_key("a"));

    let a_reads_until = sent + T.member_lease_ttl_ms;
    assert!(
        a_reads_until <= hold.until_ms,
        "a may read until {a_reads_until} but its shards are held only until {}",
        hold.until_ms
    );
    let (lift, _) = tick(&redis.group, hold.until_ms, &BTreeSet::new(), &T)
        .unwrap()
        .expect("the hold runs out");
    let base = redis.revision;
    assert!(!redis.cas(base, &lift, hold.until_ms - 1));
    assert!(redis.cas(base, &lift, hold.until_ms));
    assert!(rsc_group::invariants::check(&redis.group).is_empty());
}
