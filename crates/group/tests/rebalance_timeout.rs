//! A member that does not release a revoked shard within the rebalance timeout is fenced, and its shards
//! reach the new owner only after its last lease has certainly run out.

use rsc_group::heartbeat::{Caller, Outcome, Transition, decide};
use rsc_group::model::{Group, MemberState};
use rsc_group::replica::Snapshot;
use rsc_group::replica::commit::BatchReply;
use rsc_group::replica::heartbeat::{Confirmation, HeartbeatFlow, Renewal, Step};
use rsc_group::tick::tick;
use rsc_group::timing::Timing;
use rsc_protocol::wire::{
    HeartbeatRequest, HeartbeatStatus, RevokeState, RevokingShardReport, RuntimeConsumerCapacity,
    ShardId,
};
use std::collections::{BTreeMap, BTreeSet};

pub(crate) const T: Timing = Timing {
    heartbeat_interval_ms: 1_000,
    member_lease_ttl_ms: 5_000,
    rebalance_timeout_ms: 20_000,
    stale_member_retention_ms: 600_000,
    hold_margin_ms: 500,
    static_member_grace_ms: 0,
};

pub(crate) fn request(
    member: &str,
    epoch: i64,
    owned: &[u32],
    draining: &[u32],
) -> HeartbeatRequest {
    HeartbeatRequest {
        protocol_version: 1,
        request_id: format!("{member}-{epoch}"),
        member_id: member.into(),
        member_name: None,
        client_name: None,
        client_version: None,
        group_instance_id: None,
        member_epoch: epoch,
        metadata_version: 0,
        runtime_consumer_capacity: RuntimeConsumerCapacity {
            runtime_max_concurrency: 1,
            available_concurrency: 1,
        },
        owned_shards: owned.iter().map(|s| ShardId::new(*s)).collect(),
        revoking_shards: draining
            .iter()
            .map(|s| RevokingShardReport {
                shard: ShardId::new(*s),
                state: RevokeState::Draining,
                in_flight: 1,
                acked_at: None,
            })
            .collect(),
        shard_progress: vec![],
    }
}

/// Decides and applies a heartbeat, returning (status, memberEpoch, assignedShards).
pub(crate) fn beat(
    g: &mut Group,
    req: &HeartbeatRequest,
    now: i64,
) -> (HeartbeatStatus, i64, Vec<u32>) {
    let d = decide(Some(g), &req.member_id, req, now, &T);
    if let Outcome::Write(t) = d.outcome {
        *g = t.group.expect("a write carries the group");
    }
    let assigned = d
        .response
        .assignment
        .assigned_shards
        .iter()
        .map(|s| s.shard_index)
        .collect();
    (d.response.status, d.response.member_epoch, assigned)
}

#[test]
fn a_member_stuck_draining_is_fenced_at_the_rebalance_timeout_and_its_shard_is_held_until_its_lease_ran_out()
 {
    let mut now = 1_000_000;
    let mut g = Group::new("s", "g", 2, now, "lc");
    let (_, a_epoch, a_assigned) = beat(&mut g, &request("a", 0, &[], &[]), now);
    assert_eq!(a_assigned, vec![0, 1]);
    beat(&mut g, &request("a", a_epoch, &[0, 1], &[]), now);

    // b joins: a must give up one shard; b gets it only after a releases it.
    now += 1_000;
    let (_, b_epoch, b_assigned) = beat(&mut g, &request("b", 0, &[], &[]), now);
    assert!(b_assigned.is_empty());
    let (_, a_epoch, a_assigned) = beat(&mut g, &request("a", a_epoch, &[0, 1], &[]), now);
    assert_eq!(a_assigned.len(), 1);
    let kept = a_assigned[0];
    let revoked = 1 - kept;
    let deadline = g.members["a"]
        .rebalance_deadline_ms
        .expect("a has a rebalance deadline");
    assert_eq!(deadline, now + T.rebalance_timeout_ms);

    // a keeps reporting the shard as DRAINING with work in flight, past the deadline.
    while now + 5_000 < deadline {
        now += 5_000;
        let (status, _, _) = beat(&mut g, &request("a", a_epoch, &[kept], &[revoked]), now);
        assert_eq!(status, HeartbeatStatus::Ok);
        assert!(
            tick(&g, now, &BTreeSet::new(), &T)
                .unwrap()
                .is_none_or(|(_, r)| r.fenced.is_empty())
        );
        let (_, _, b_assigned) = beat(&mut g, &request("b", b_epoch, &[], &[]), now);
        assert!(
            b_assigned.is_empty(),
            "b must not read the shard while a still drains it"
        );
    }
    let (t, report) = tick(&g, deadline, &BTreeSet::new(), &T)
        .unwrap()
        .expect("the deadline fences a");
    assert_eq!(report.fenced, vec!["a".to_owned()]);
    assert_eq!(
        t.not_before_ms, deadline,
        "Redis must confirm the deadline has passed"
    );
    g = t.group.unwrap();
    assert_eq!(g.members["a"].state, MemberState::Fenced);
    let (status, _, _) = beat(
        &mut g,
        &request("a", a_epoch, &[kept], &[revoked]),
        deadline,
    );
    assert_eq!(status, HeartbeatStatus::FencedMemberEpoch);

    // Both of a's shards are held until a's last lease has certainly run out, then granted to b.
    let hold_until = deadline + T.member_lease_ttl_ms + T.hold_margin_ms;
    let (_, b_epoch, b_assigned) = beat(&mut g, &request("b", b_epoch, &[], &[]), deadline);
    assert!(b_assigned.is_empty(), "held, not granted: {b_assigned:?}");
    assert!(
        tick(&g, hold_until - 1, &BTreeSet::new(), &T)
            .unwrap()
            .is_none_or(|(t, _)| { t.group.unwrap().members["b"].assigned.is_empty() })
    );
    let (t, report) = tick(&g, hold_until, &BTreeSet::new(), &T)
        .unwrap()
        .expect("the hold runs out");
    assert_eq!(report.holds_released, 1);
    g = t.group.unwrap();
    let (_, _, b_assigned) = beat(&mut g, &request("b", b_epoch, &[], &[]), hold_until);
    assert_eq!(b_assigned, vec![0, 1]);
    assert!(rsc_group::invariants::check(&g).is_empty());
}

/// A heartbeat that arrives after the member's rebalance deadline, with the revoked shard still draining,
/// fences the member itself (a write that Redis takes only once the deadline has passed) instead of renewing
/// its lease. A steady renewal would not change the revision, so a reconciler tick decided just past the
/// deadline but written late (a paused replica) would still land, its hold (from the tick's `now`) would end
/// before the renewed lease, and the shard would be granted while this member still reads it (simulation
/// seed 3103: invariant 1).
#[test]
fn a_member_past_its_rebalance_deadline_is_fenced_by_its_own_heartbeat_not_renewed() {
    let mut now = 1_000_000;
    let mut g = Group::new("s", "g", 2, now, "lc");
    let (_, a_epoch, _) = beat(&mut g, &request("a", 0, &[], &[]), now);
    beat(&mut g, &request("a", a_epoch, &[0, 1], &[]), now);
    now += 1_000;
    beat(&mut g, &request("b", 0, &[], &[]), now);
    let (_, a_epoch, a_assigned) = beat(&mut g, &request("a", a_epoch, &[0, 1], &[]), now);
    let kept = a_assigned[0];
    let revoked = 1 - kept;
    let deadline = g.members["a"].rebalance_deadline_ms.expect("a deadline");

    // Just before the deadline, a draining report already recorded is a steady renewal.
    let (status, _, _) = beat(
        &mut g,
        &request("a", a_epoch, &[kept], &[revoked]),
        deadline - 2,
    );
    assert_eq!(status, HeartbeatStatus::Ok);
    let before = decide(
        Some(&g),
        "a",
        &request("a", a_epoch, &[kept], &[revoked]),
        deadline - 1,
        &T,
    );
    assert_eq!(before.outcome, Outcome::Steady);
    assert_eq!(before.response.status, HeartbeatStatus::Ok);

    // At the deadline: fenced by this heartbeat, with the shards held as a tick would hold them.
    let at = decide(
        Some(&g),
        "a",
        &request("a", a_epoch, &[kept], &[revoked]),
        deadline,
        &T,
    );
    assert_eq!(at.response.status, HeartbeatStatus::FencedMemberEpoch);
    let Outcome::Write(t) = at.outcome else {
        panic!("a fence is a write, not a renewal: {:?}", at.outcome);
    };
    assert_eq!(
        t.not_before_ms, deadline,
        "Redis must confirm the deadline has passed"
    );
    let fenced = t.group.expect("a write carries the group");
    assert_eq!(fenced.members["a"].state, MemberState::Fenced);
    let hold = fenced
        .holds
        .iter()
        .find(|h| h.member_id == "a")
        .expect("a's shards are held");
    assert_eq!(hold.shards, [0, 1].into_iter().collect());
    assert_eq!(
        hold.until_ms,
        deadline + T.member_lease_ttl_ms + T.hold_margin_ms
    );
    assert!(rsc_group::invariants::check(&fenced).is_empty());

    // A draining member that finally reports the shard revoked after the deadline is accepted, not fenced.
    let mut released = request("a", a_epoch, &[kept], &[revoked]);
    released.revoking_shards[0].state = RevokeState::Revoked;
    released.revoking_shards[0].in_flight = 0;
    let late = decide(Some(&g), "a", &released, deadline + 1, &T);
    assert_eq!(late.response.status, HeartbeatStatus::Ok);
}

/// The group as a replica would hold it (the revision is not looked at here).
#[derive(Debug, Clone)]
struct Held(Group);

impl Snapshot for Held {
    fn group(&self) -> &Group {
        &self.0
    }
    fn revision(&self) -> u64 {
        1
    }
}

/// A member's own fence decided on a clock ahead of Redis is refused by Redis as too early (`not_before` the
/// deadline): the request reconciles and decides again, and on a clock that has learned Redis time (the
/// deadline not reached) it is renewed and answered OK, not RETRY. Only a clock still ahead at every one of
/// its decisions gives up (the simulation's replica clock, seeds 6853 and 15677, did that until it learned
/// from the refusal as `clock.rs` does).
#[test]
fn a_fence_refused_as_too_early_is_renewed_once_the_clock_has_learned_redis_time() {
    // The draining report is recorded a little earlier: the same report again is a steady renewal.
    let (g, deadline, req) = a_draining_group();
    let snap = Held(g);

    // Redis is at deadline - 1 throughout; `ahead` is each decision's clock error.
    let handle = |errors: &[i64]| {
        let (mut flow, mut step) = HeartbeatFlow::<Held>::start("a", Caller::ANONYMOUS, &T);
        let mut errors = errors.iter();
        loop {
            step = match step {
                Step::Read | Step::Reload => {
                    let ahead = errors.next().copied().unwrap_or(0);
                    flow.on_read(&req, Ok(Some(snap.clone())), true, deadline - 1 + ahead)
                }
                // The fence's time condition: Redis refuses it before the deadline.
                Step::Write => flow.on_batch(&req, BatchReply::Reconcile),
                Step::Reconcile => flow.on_reconciled(&req),
                Step::Renew(_) => flow.on_renewed(&req, Renewal::Renewed),
                Step::Answer(response) => return (response.status, flow.notes().gave_up),
                other => panic!("unexpected step {other:?}"),
            }
        }
    };
    assert_eq!(handle(&[3, -2]), (HeartbeatStatus::Ok, false));
    assert_eq!(handle(&[3, 3, 3, 3, 3]), (HeartbeatStatus::Retry, true));
}

/// Redis as the two scripts see one group: its revision and the members' lease ends. `heartbeat.lua` renews
/// a lease only at the revision the renewal was decided on and while the lease is live (it never looks at
/// the rebalance deadline); `cas.lua` takes a write only at its expected revision and not before its
/// `not_before_ms`, then applies its lease operations.
#[derive(Debug)]
pub(crate) struct Redis {
    pub(crate) group: Group,
    pub(crate) revision: u64,
    pub(crate) leases: BTreeMap<String, i64>,
}

/// A group read at a revision (what a replica caches).
#[derive(Debug, Clone)]
pub(crate) struct AtRevision(Group, u64);

impl Snapshot for AtRevision {
    fn group(&self) -> &Group {
        &self.0
    }
    fn revision(&self) -> u64 {
        self.1
    }
}

impl Redis {
    pub(crate) fn read(&self) -> AtRevision {
        AtRevision(self.group.clone(), self.revision)
    }

    pub(crate) fn lease_live(&self, member: &str, now: i64) -> bool {
        self.leases.get(member).is_some_and(|end| now < *end)
    }

    /// heartbeat.lua at Redis time `now`.
    pub(crate) fn renew(&mut self, expected: u64, member: &str, now: i64) -> Renewal {
        if expected != self.revision {
            return Renewal::Conflict;
        }
        if !self.lease_live(member, now) {
            return Renewal::LeaseLapsed;
        }
        self.leases
            .insert(member.to_owned(), now + T.member_lease_ttl_ms);
        Renewal::Renewed
    }

    /// cas.lua at Redis time `now`: whether `t` was written.
    pub(crate) fn cas(&mut self, expected: u64, t: &Transition, now: i64) -> bool {
        if expected != self.revision
            || now < t.not_before_ms
            || t.must_be_lapsed.iter().any(|m| self.lease_live(m, now))
            || t.must_be_live.iter().any(|m| !self.lease_live(m, now))
        {
            return false;
        }
        for m in &t.renew {
            self.leases.insert(m.clone(), now + T.member_lease_ttl_ms);
        }
        for m in &t.remove {
            self.leases.remove(m);
        }
        self.group = t.group.clone().expect("a write carries the group");
        self.revision += 1;
        true
    }
}

/// Member a drains a revoked shard and keeps reporting it DRAINING; its lease in Redis was last renewed just
/// before its rebalance deadline. Returns Redis, a's deadline and the request a keeps sending.
pub(crate) fn a_draining_up_to_its_deadline() -> (Redis, i64, HeartbeatRequest) {
    let (group, deadline, req) = a_draining_group();
    let leases = [
        ("a".to_owned(), deadline - 10 + T.member_lease_ttl_ms),
        ("b".to_owned(), deadline - 10 + T.member_lease_ttl_ms),
    ];
    let redis = Redis {
        group,
        revision: 1,
        leases: leases.into_iter().collect(),
    };
    (redis, deadline, req)
}

/// The group of [`a_draining_up_to_its_deadline`], its draining report recorded at the deadline - 10 (a
/// steady renewal from then on): the group, a's deadline and the request a keeps sending.
fn a_draining_group() -> (Group, i64, HeartbeatRequest) {
    let mut now = 1_000_000;
    let mut g = Group::new("s", "g", 2, now, "lc");
    let (_, a_epoch, _) = beat(&mut g, &request("a", 0, &[], &[]), now);
    beat(&mut g, &request("a", a_epoch, &[0, 1], &[]), now);
    now += 1_000;
    beat(&mut g, &request("b", 0, &[], &[]), now);
    let (_, a_epoch, a_assigned) = beat(&mut g, &request("a", a_epoch, &[0, 1], &[]), now);
    let kept = a_assigned[0];
    let revoked = 1 - kept;
    let deadline = g.members["a"].rebalance_deadline_ms.expect("a deadline");
    let req = request("a", a_epoch, &[kept], &[revoked]);
    assert_eq!(beat(&mut g, &req, deadline - 10).0, HeartbeatStatus::Ok);
    (g, deadline, req)
}

/// How far the renewing replica's estimate of Redis time lags Redis in these examples: the whole hold
/// margin, the largest error the margin is meant to cover.
const LAG: i64 = T.hold_margin_ms;

/// The suspected gap, renewal first: a's steady heartbeat is decided by replica A at its clock's
/// `deadline - 1`, a clock `LAG` behind Redis, so Redis is already past the deadline; replica B's tick fences
/// a at `deadline` (holding its shards until `deadline + lease + margin`) and pauses before its write; A's
/// renewal (one EVALSHA: revision and lease, not time) lands first, late, and renews a's lease in Redis
/// past the hold; then the tick's write lands (a steady renewal left the revision as it was).
///
/// Not a gap: what a's process may read is bounded by its *client* lease, counted from the send of the
/// heartbeat, and the send came before A read its clock. A renews only while its clock is before the
/// deadline (`transitions.rs::accept`: at or past it, the member's own fence), so the send was before
/// `deadline + LAG`; the hold runs from the fence's `now`, at or after the deadline, for the member lease
/// TTL (at least the client lease) plus the margin (at least `LAG`), and only Redis time at or past its end
/// lifts it (`not_before`). The lease entry A renewed is removed by the fence's write, and nothing
/// grants on it. This pins the margin in `fence_member_at` (without it, the shard is granted while a may
/// still read it) and the renewal's decision being bounded by the deadline.
#[test]
fn a_renewal_decided_before_the_deadline_on_a_clock_behind_redis_and_landing_after_it_ends_before_the_fences_hold()
 {
    let (mut redis, deadline, req) = a_draining_up_to_its_deadline();

    // A's clock reads deadline - 1; Redis is at deadline - 1 + LAG. a sent no later than that.
    let sent = deadline - 1 + LAG;
    let (mut flow, step) = HeartbeatFlow::<AtRevision>::start("a", Caller::ANONYMOUS, &T);
    assert!(matches!(step, Step::Read));
    let Step::Renew(base) = flow.on_read(&req, Ok(Some(redis.read())), false, deadline - 1) else {
        panic!("before the deadline by A's clock, a draining report already recorded is renewed");
    };
    // One millisecond later by A's clock it would be a's own fence: no renewal carries a later send.
    let (mut later, _) = HeartbeatFlow::<AtRevision>::start("a", Caller::ANONYMOUS, &T);
    assert!(matches!(
        later.on_read(&req, Ok(Some(redis.read())), false, deadline),
        Step::Write
    ));

    // B's tick at the deadline fences a; B pauses before writing it.
    let (fence, report) = tick(&redis.group, deadline, &BTreeSet::new(), &T)
        .unwrap()
        .expect("the deadline fences a");
    assert_eq!(report.fenced, vec!["a".to_owned()]);
    let fence_base = redis.revision;
    let hold = fence.group.as_ref().unwrap().holds[0].clone();
    assert_eq!(hold.shards, [0, 1].into_iter().collect());

    // A's renewal lands well past the deadline (A paused too) and renews a's lease in Redis past the hold.
    let renewed_at = deadline + 2_000;
    let renewal = redis.renew(base.revision(), "a", renewed_at);
    assert_eq!(renewal, Renewal::Renewed);
    assert!(redis.leases["a"] > hold.until_ms);
    let Step::Answer(answer) = flow.on_renewed(&req, renewal) else {
        panic!("a renewal is answered");
    };
    assert_eq!(answer.status, HeartbeatStatus::Ok);

    // B's write lands: the renewal did not move the revision. It removes a's lease entry.
    assert!(redis.cas(fence_base, &fence, deadline + 3_000));
    assert_eq!(redis.group.members["a"].state, MemberState::Fenced);
    assert!(!redis.leases.contains_key("a"));

    // a reads until its client lease, counted from the send, runs out: at most the member lease TTL
    // (invariant 4 makes it shorter; this is the worst case). That is no later than the hold's end.
    let client_lease = T.member_lease_ttl_ms;
    assert!(
        sent + client_lease <= hold.until_ms,
        "a may read until {} but its shards are held only until {}",
        sent + client_lease,
        hold.until_ms
    );
    // And only Redis time at or past the hold's end lifts it.
    let (lift, _) = tick(&redis.group, hold.until_ms, &BTreeSet::new(), &T)
        .unwrap()
        .expect("the hold runs out");
    assert_eq!(lift.not_before_ms, hold.until_ms);
    let base = redis.revision;
    assert!(!redis.cas(base, &lift, hold.until_ms - 1));
    assert!(redis.cas(base, &lift, hold.until_ms));
    assert!(redis.group.holds.is_empty());
    assert!(rsc_group::invariants::check(&redis.group).is_empty());
}

/// The same two decisions the other way round: the fence lands first (at the deadline, as Redis allows),
/// then the renewal decided before it. `heartbeat.lua` checks the revision the renewal was decided on, the
/// fence moved it, so nothing is renewed; the flow decides again on the group read afresh and answers
/// FENCED_MEMBER_EPOCH (a conflict is never answered as renewed: `replica/heartbeat.rs::on_renewed`).
#[test]
fn a_renewal_decided_before_the_deadline_landing_after_the_fence_renews_nothing_and_answers_fenced()
{
    let (mut redis, deadline, req) = a_draining_up_to_its_deadline();

    let (mut flow, _) = HeartbeatFlow::<AtRevision>::start("a", Caller::ANONYMOUS, &T);
    let Step::Renew(base) = flow.on_read(&req, Ok(Some(redis.read())), false, deadline - 1) else {
        panic!("before the deadline by A's clock, a draining report already recorded is renewed");
    };

    let (fence, _) = tick(&redis.group, deadline, &BTreeSet::new(), &T)
        .unwrap()
        .expect("the deadline fences a");
    let fence_base = redis.revision;
    assert!(
        !redis.cas(fence_base, &fence, deadline - 1),
        "Redis takes the fence only once the deadline has passed"
    );
    assert!(redis.cas(fence_base, &fence, deadline));
    assert!(!redis.leases.contains_key("a"));

    let renewal = redis.renew(base.revision(), "a", deadline + 2_000);
    assert_eq!(renewal, Renewal::Conflict);
    assert!(!redis.leases.contains_key("a"), "nothing was renewed");
    let step = flow.on_renewed(&req, renewal);
    assert!(
        matches!(step, Step::Read | Step::Reload),
        "a conflict decides again: {step:?}"
    );
    let mut step = flow.on_read(&req, Ok(Some(redis.read())), true, deadline + 2_000);
    let answer = loop {
        step = match step {
            Step::Answer(answer) => break answer,
            Step::ConfirmCurrent(_) => flow.on_confirmed(&req, Confirmation::Current),
            other => panic!("unexpected step {other:?}"),
        };
    };
    assert_eq!(answer.status, HeartbeatStatus::FencedMemberEpoch);
    assert!(!redis.leases.contains_key("a"));
}
