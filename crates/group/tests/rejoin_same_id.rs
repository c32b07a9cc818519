//! A process that rejoins under the member id of an incarnation still alive (a partition, two processes
//! configured with one id, a paused process): the old incarnation's steady renewals, decided on the group as
//! it was before the rejoin, against the hold the rejoin puts on its shards (invariant 1).

use crate::rebalance_timeout::{AtRevision, Redis, T, beat, request};
use rsc_group::heartbeat::{Caller, Outcome, decide};
use rsc_group::model::HoldReason;
use rsc_group::replica::Snapshot;
use rsc_group::replica::heartbeat::{Confirmation, HeartbeatFlow, Renewal, Step};
use rsc_group::tick::tick;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatStatus};
use std::collections::BTreeSet;

/// Member a (the old incarnation) reads shards 0 and 1, its lease live in Redis; returns Redis and the
/// request a keeps sending.
fn old_incarnation_reading() -> (Redis, HeartbeatRequest) {
    let now = 1_000_000;
    let mut g = rsc_group::model::Group::new("s", "g", 2, now, "lc");
    let (_, epoch, assigned) = beat(&mut g, &request("a", 0, &[], &[]), now);
    assert_eq!(assigned, vec![0, 1]);
    beat(&mut g, &request("a", epoch, &[0, 1], &[]), now);
    let redis = Redis {
        group: g,
        revision: 1,
        leases: [("a".to_owned(), now + T.member_lease_ttl_ms)]
            .into_iter()
            .collect(),
    };
    (redis, request("a", epoch, &[0, 1], &[]))
}

/// Drives a flow whose renewal conflicted to its answer, on the group read afresh at `now`.
fn answer_after_conflict(
    flow: &mut HeartbeatFlow<AtRevision>,
    req: &HeartbeatRequest,
    redis: &mut Redis,
    now: i64,
) -> HeartbeatStatus {
    let mut step = flow.on_read(req, Ok(Some(redis.read())), true, now);
    loop {
        step = match step {
            Step::Answer(answer) => return answer.status,
            Step::ConfirmCurrent(_) => flow.on_confirmed(req, Confirmation::Current),
            Step::Renew(base) => {
                let renewal = redis.renew(base.revision(), "a", now);
                flow.on_renewed(req, renewal)
            }
            Step::Read | Step::Reload => flow.on_read(req, Ok(Some(redis.read())), true, now),
            other => panic!("unexpected step {other:?}"),
        };
    }
}

/// The rejoin lands first, then a renewal of the old incarnation decided on the group before it. The rejoin
/// is a write: it moves the revision, so `heartbeat.lua` renews nothing (CONFLICT), and the flow decides
/// again on the group read afresh, where the old incarnation's epoch is below the new incarnation's
/// (`incarnation_epoch`): FENCED_MEMBER_EPOCH, never renewed. Pins the `e < incarnation_epoch` arm of
/// `decide_existing` (without it the old epoch is accepted as a stale report of the new incarnation, a
/// steady renewal answered OK with the new incarnation's assignment).
#[test]
fn an_old_incarnations_renewal_decided_before_the_rejoin_and_landing_after_it_renews_nothing() {
    let (mut redis, old) = old_incarnation_reading();
    let now = 1_002_000;
    let (mut flow, _) = HeartbeatFlow::<AtRevision>::start("a", Caller::ANONYMOUS, &T);
    let Step::Renew(base) = flow.on_read(&old, Ok(Some(redis.read())), false, now) else {
        panic!("the old incarnation's unchanged report is a steady renewal");
    };

    let rejoin = decide(Some(&redis.group), "a", &request("a", 0, &[], &[]), now, &T);
    let Outcome::Write(t) = rejoin.outcome else {
        panic!("a rejoin is a write: {:?}", rejoin.outcome);
    };
    assert!(redis.cas(redis.revision, &t, now));
    let new = &redis.group.members["a"];
    assert!(
        new.incarnation_epoch > old.member_epoch,
        "the rejoin's epoch is above every epoch of the old incarnation"
    );
    assert!(
        redis.group.holds.iter().any(|h| h.member_id == "a"
            && h.reason == HoldReason::PreviousIncarnationRejoined
            && h.shards == [0, 1].into_iter().collect()),
        "the old incarnation's shards are held: {:?}",
        redis.group.holds
    );
    assert!(rejoin.response.assignment.assigned_shards.is_empty());
    let lease = redis.leases["a"];

    let renewal = redis.renew(base.revision(), "a", now + 100);
    assert_eq!(renewal, Renewal::Conflict);
    assert_eq!(redis.leases["a"], lease, "nothing was renewed");
    let step = flow.on_renewed(&old, renewal);
    assert!(matches!(step, Step::Read | Step::Reload), "{step:?}");
    assert_eq!(
        answer_after_conflict(&mut flow, &old, &mut redis, now + 100),
        HeartbeatStatus::FencedMemberEpoch
    );
    assert_eq!(redis.leases["a"], lease, "nothing was renewed");
}

/// After the rejoin, every heartbeat of the old incarnation (any epoch it was ever given, with or without its
/// shards reported) is refused FENCED_MEMBER_EPOCH and renews nothing; a join retry (epoch 0) is the only
/// request answered as the new incarnation, and the old incarnation never sends one once answered. Pins the
/// same arm.
#[test]
fn every_heartbeat_of_the_old_incarnation_after_the_rejoin_is_fenced() {
    let (mut redis, old) = old_incarnation_reading();
    let now = 1_002_000;
    let rejoin = decide(Some(&redis.group), "a", &request("a", 0, &[], &[]), now, &T);
    let Outcome::Write(t) = rejoin.outcome else {
        panic!("a rejoin is a write");
    };
    assert!(redis.cas(redis.revision, &t, now));
    for epoch in 1..=old.member_epoch {
        for owned in [&[0, 1][..], &[]] {
            let req = request("a", epoch, owned, &[]);
            let d = decide(Some(&redis.group), "a", &req, now + 1, &T);
            assert_eq!(
                d.response.status,
                HeartbeatStatus::FencedMemberEpoch,
                "epoch {epoch}, owned {owned:?}"
            );
            assert!(
                matches!(d.outcome, Outcome::Rejected { .. }),
                "{:?}",
                d.outcome
            );
        }
    }
}

/// The gap this file was written for, up to the rejoin's write: the rejoin is decided at `decided`, holding
/// the old incarnation's shards until `decided + lease TTL + margin`, and its replica pauses for a whole lease
/// before writing; meanwhile the old incarnation's steady heartbeat, sent at `sent`, is decided on the group as
/// it still is (the rejoin not written) and renewed: `heartbeat.lua` checks the revision and the lease, and a
/// renewal does not move the revision, so the rejoin's write still lands right after it, at `sent + 1`. The
/// old incarnation was told OK and may read until its client lease, counted from `sent`, runs out (at most
/// the member lease TTL): past the hold as the rejoin decided it. Returns Redis with the rejoin written, the
/// new incarnation's epoch, and until when the old incarnation may read.
fn rejoin_written_after_a_renewal_of_the_old_incarnation() -> (Redis, i64, i64) {
    let (mut redis, old) = old_incarnation_reading();
    let decided = 1_002_000;
    let rejoin = decide(
        Some(&redis.group),
        "a",
        &request("a", 0, &[], &[]),
        decided,
        &T,
    );
    let Outcome::Write(t) = rejoin.outcome else {
        panic!("a rejoin is a write");
    };
    let base = redis.revision;

    let sent = decided + T.member_lease_ttl_ms;
    redis
        .leases
        .insert("a".to_owned(), sent - 1 + T.member_lease_ttl_ms);
    let (mut flow, _) = HeartbeatFlow::<AtRevision>::start("a", Caller::ANONYMOUS, &T);
    let Step::Renew(at) = flow.on_read(&old, Ok(Some(redis.read())), false, sent) else {
        panic!("the old incarnation's unchanged report is a steady renewal");
    };
    let renewal = redis.renew(at.revision(), "a", sent);
    assert_eq!(renewal, Renewal::Renewed);
    let Step::Answer(answer) = flow.on_renewed(&old, renewal) else {
        panic!("a renewal is answered");
    };
    assert_eq!(answer.status, HeartbeatStatus::Ok);
    let old_reads_until = sent + T.member_lease_ttl_ms;

    assert!(redis.cas(base, &t, sent + 1), "the rejoin's write lands");
    let hold = redis.group.holds[0].clone();
    assert_eq!(
        hold.until_ms,
        decided + T.member_lease_ttl_ms + T.hold_margin_ms
    );
    assert!(hold.until_ms < old_reads_until);
    let epoch = redis.group.members["a"].member_epoch;
    (redis, epoch, old_reads_until)
}

/// No write may lift the hold before `until` (Redis time), and one at `until` may.
fn hold_lifted_at(redis: &mut Redis, until: i64, lapsed: &BTreeSet<String>) {
    let (lift, report) = tick(&redis.group, until, lapsed, &T)
        .unwrap()
        .expect("the hold runs out");
    assert_eq!(report.holds_released, 1);
    assert!(lift.not_before_ms >= until || !lift.must_be_lapsed.is_empty());
    let base = redis.revision;
    assert!(!redis.cas(base, &lift, until - 1));
    assert!(redis.cas(base, &lift, until));
    assert!(redis.group.holds.is_empty());
    assert!(rsc_group::invariants::check(&redis.group).is_empty());
}

/// The new incarnation confirms its join (its first heartbeat at its epoch, after the join's answer, so after
/// the join's write): until then the hold is not lifted, however late it is by the join's clock, and the
/// confirmation counts the hold again from its own `now`. The shards reach the new incarnation only after the
/// old one's client lease has run out. Pins the tick keeping a rejoin's hold while the join is unconfirmed
/// (`tick.rs`; without it the hold is lifted at the join's `now + TTL + margin`) and the confirmation
/// counting it again (`heartbeat::decide_in_place`, `anchor_rejoin_holds`).
#[test]
fn an_old_incarnations_renewal_landing_while_the_rejoins_write_is_paused_ends_before_the_hold() {
    let (mut redis, epoch, old_reads_until) =
        rejoin_written_after_a_renewal_of_the_old_incarnation();
    let stale_end = redis.group.holds[0].until_ms;

    // The hold's end by the join's clock passes before the new incarnation heartbeats again: kept.
    if let Some((t, _)) = tick(&redis.group, stale_end, &BTreeSet::new(), &T).unwrap() {
        assert_eq!(t.group.unwrap().holds, redis.group.holds);
    }

    // The new incarnation confirms, a heartbeat interval after the write.
    let confirmed = stale_end + T.heartbeat_interval_ms;
    let d = decide(
        Some(&redis.group),
        "a",
        &request("a", epoch, &[], &[]),
        confirmed,
        &T,
    );
    assert_eq!(d.response.status, HeartbeatStatus::Ok);
    assert!(d.response.assignment.assigned_shards.is_empty());
    let Outcome::Write(t) = d.outcome else {
        panic!("a confirmation is a write: {:?}", d.outcome);
    };
    assert!(redis.cas(redis.revision, &t, confirmed));
    assert!(redis.group.members["a"].join_confirmed);
    let until = redis.group.holds[0].until_ms;
    assert_eq!(until, confirmed + T.member_lease_ttl_ms + T.hold_margin_ms);
    assert!(
        old_reads_until <= until,
        "the old incarnation may read until {old_reads_until} but its shards are held only until {until}"
    );
    hold_lifted_at(&mut redis, until, &BTreeSet::new());
    let (_, _, assigned) = beat(&mut redis.group, &request("a", epoch, &[], &[]), until);
    assert_eq!(assigned, vec![0, 1]);
}

/// The same, but the new incarnation never confirms (it died after joining): the hold waits for its expiry,
/// which Redis takes only once its lease, renewed by the join's write, has lapsed, so after the old
/// incarnation's client lease, counted from a send before that write, has run out. Pins the same keep.
#[test]
fn a_rejoin_never_confirmed_holds_the_old_incarnations_shards_until_the_joins_lease_lapsed() {
    let (mut redis, _, old_reads_until) = rejoin_written_after_a_renewal_of_the_old_incarnation();
    let stale_end = redis.group.holds[0].until_ms;
    if let Some((t, _)) = tick(&redis.group, stale_end, &BTreeSet::new(), &T).unwrap() {
        assert_eq!(t.group.unwrap().holds, redis.group.holds);
    }
    let lease_end = redis.leases["a"];
    assert!(old_reads_until <= lease_end);
    let lapsed: BTreeSet<String> = ["a".to_owned()].into_iter().collect();
    hold_lifted_at(&mut redis, lease_end, &lapsed);
}

/// The same, but the new incarnation leaves before it ever confirmed: the leave, decided on the group with the
/// rejoin written, counts the hold again from its own `now`, and the reconciler's next deadline does not
/// fall on the join's stale end while the join is unconfirmed (`deadline.rs`). Pins the recount in
/// `heartbeat::decide_in_place` for a leave.
#[test]
fn a_rejoin_that_leaves_unconfirmed_holds_the_old_incarnations_shards_from_its_leave() {
    use rsc_group::deadline::{LeaseView, NextVisit, next_visit};
    let (mut redis, _, old_reads_until) = rejoin_written_after_a_renewal_of_the_old_incarnation();
    let stale_end = redis.group.holds[0].until_ms;
    let leases = LeaseView {
        earliest_end_ms: Some(redis.leases["a"]),
        entries: 1,
    };
    assert_eq!(
        next_visit(&redis.group, leases, &T),
        NextVisit::At(redis.leases["a"]),
        "the join's lease end, not the hold's stale end"
    );

    let left = stale_end + T.heartbeat_interval_ms;
    let mut leave = request("a", -1, &[], &[]);
    leave.metadata_version = redis.group.metadata_version;
    let d = decide(Some(&redis.group), "a", &leave, left, &T);
    assert_eq!(d.response.status, HeartbeatStatus::Ok);
    let Outcome::Write(t) = d.outcome else {
        panic!("a leave is a write: {:?}", d.outcome);
    };
    assert!(redis.cas(redis.revision, &t, left));
    let until = redis.group.holds[0].until_ms;
    assert_eq!(until, left + T.member_lease_ttl_ms + T.hold_margin_ms);
    assert!(old_reads_until <= until);
    hold_lifted_at(&mut redis, until, &BTreeSet::new());
}
