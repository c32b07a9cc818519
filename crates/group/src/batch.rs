//! Deciding heartbeats one after another on one aggregate, to be committed with a single compare-and-set.
//!
//! A replica that has several heartbeats of one group waiting to write decides them in sequence, each on the
//! aggregate the previous one produced, and commits the last aggregate once. That is only equivalent to
//! committing them one by one if the lease conditions of each still mean the same thing when all conditions
//! are checked before all writes (as the CAS script does). They do when no member named by a later transition
//! (in a condition or a lease operation) is named by an earlier one of the same batch: a transition's lease
//! operations then never touch what another one's conditions look at. A heartbeat transition names only the
//! requesting member, so [`Batch::decide`] refuses (without deciding) a request from a member the batch
//! already names; the refused request is decided again after the batch is written.
//!
//! The aggregate is changed in place ([`decide_in_place`]): it is copied once per batch, on the first write,
//! not once per request. And the rebalance that joins, leaves and releases call for (a new target over all
//! members, then grants) runs once, when the batch is finished, not once per request: for a group of
//! thousands of members those two were most of the cost of a join storm. Deferring it is sound because a
//! heartbeat's decision reads only the requester's own record and group-wide epochs, and a rebalance changes a
//! record only by revoking (never taking a shard from its holder), granting and raising its epoch. So a later
//! request of the batch sees its own record as Redis holds it, which is all its member can have seen: the
//! same holdings for the fencing check, no revocation it could release (one made by this batch's rebalance
//! carries a newer epoch than any request can), and its epoch judged current exactly when it would be
//! alone. The one decision that reads other members' revocations, closing a metadata-correction round, sees
//! the aggregate rebalanced (`heartbeat::Draft`).
//!
//! The members a batch changed are known without comparing the group: each decision changes its own member's
//! entries (and group-wide fields, in the header), and the rebalance notes the members it changed
//! (`rebalance::recompute_target_noting`); [`Finished`]'s transition carries them (`changed_members`), so the
//! split write compares only those. The simulation checks, for every batch, that they are exactly what comparing
//! every member finds.
//!
//! Every answer is finally re-stated on the aggregate committed ([`restate_on_committed`]): an OK tells the
//! member exactly what Redis holds for it (a joiner gets its shards in its first answer), not an intermediate
//! aggregate no one ever stored.
//!
//! A batch also keeps a group's member caps ([`MemberCaps`]) exactly: a join that would add a live member
//! beyond them, counted on the batch's aggregate (the one its compare-and-set will replace, joins of the batch
//! included), is not combined ([`NotCombined::OverCap`]) and is decided again, alone, on what was written. So
//! concurrent joins on several replicas never pass a cap: each batch's count is checked against the aggregate
//! Redis still holds when it commits. Counting the live members walks the group, once per batch that meets a
//! join while the group has as many members (live or not) as a cap; a caller that keeps the counts beside the
//! aggregate (the coordinator's `invariants::Facts`) hands them over ([`Batch::with_live`]) and nothing is
//! walked.

use crate::heartbeat::{
    Caller, Decision, Draft, Outcome, Transition, decide_in_place, owner_conflict,
    restate_on_committed,
};
use crate::model::Group;
use crate::rebalance::RebalanceIndex;
use crate::timing::Timing;
use rsc_protocol::wire::HeartbeatRequest;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

/// The most live members a group may hold, in all and per principal (None: no cap).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemberCaps {
    /// The most live members of the group.
    pub max_members: Option<usize>,
    /// The most live members one principal may hold in the group.
    pub max_per_principal: Option<usize>,
}

/// Live members counted on a batch's aggregate (kept up to date as joins are combined), or handed to the batch
/// counted already ([`Batch::with_live`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveMembers {
    /// Live members (active or leaving) in all.
    pub all: usize,
    /// Live members by owner (principal). Handed to a batch, it must name every principal the batch's
    /// requests come from (a principal left out counts as holding none).
    pub by_principal: BTreeMap<String, usize>,
}

impl LiveMembers {
    /// The live members of `g`, counted over every member.
    pub fn of(g: &Group) -> Self {
        let mut count = LiveMembers::default();
        for m in g.members.values().filter(|m| m.state.is_live()) {
            count.all += 1;
            if let Some(owner) = &m.owner {
                *count.by_principal.entry(owner.clone()).or_default() += 1;
            }
        }
        count
    }
}

/// Transitions combined so far: the newest aggregate, and the union of conditions and lease operations.
#[derive(Debug)]
pub struct Batch<'a> {
    group: Draft<'a>,
    now_ms: i64,
    timing: Timing,
    combined: Transition,
    named: BTreeSet<String>,
    /// The members whose own requests were decided (and so whose entries they may have changed).
    touched: BTreeSet<String>,
    /// Each combined request with its decision, in order.
    decided: Vec<(HeartbeatRequest, Decision)>,
    caps: MemberCaps,
    /// Counted on the first join that a cap concerns, or handed over ([`Batch::with_live`]).
    live: Option<LiveMembers>,
}

/// Why a request was not combined into the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotCombined {
    /// The batch already names this member: decide again after the batch is written.
    MemberAlreadyNamed,
    /// On the batch's aggregate the request is no transition (rejected or steady): decide again alone.
    NotATransition,
    /// On the batch's aggregate the member belongs to another principal: decide again alone (and be refused).
    OwnedByAnother,
    /// A join beyond a member cap on the batch's aggregate: decide again alone (and be refused).
    OverCap,
}

/// A finished batch: the one transition to commit and, in the order they were combined, each request's
/// decision with its answer stated on the aggregate to commit.
#[derive(Debug)]
pub struct Finished {
    /// The one transition to commit.
    pub transition: Transition,
    /// Each combined request's decision, in order, its answer stated on the aggregate to commit.
    pub decisions: Vec<Decision>,
    /// The rebalance index of the aggregate to commit, when the batch was given one ([`Batch::with_index`]).
    pub index: Option<RebalanceIndex>,
}

impl<'a> Batch<'a> {
    /// An empty batch over the aggregate as last written, deciding at `now_ms`.
    pub fn on(base: &'a Group, now_ms: i64, timing: &Timing) -> Self {
        Self::over(Cow::Borrowed(base), now_ms, timing)
    }

    /// [`Batch::on`] over a borrowed aggregate (copied on the first write) or one of the caller's own (changed
    /// in place: no copy of the group at all, `model/catch_up.rs`).
    pub fn over(base: Cow<'a, Group>, now_ms: i64, timing: &Timing) -> Self {
        Batch {
            group: Draft::deferring(base),
            now_ms,
            timing: *timing,
            combined: Transition::default(),
            named: BTreeSet::new(),
            touched: BTreeSet::new(),
            decided: Vec::new(),
            caps: MemberCaps::default(),
            live: None,
        }
    }

    /// The batch keeping these member caps.
    pub fn with_caps(mut self, caps: MemberCaps) -> Self {
        self.caps = caps;
        self
    }

    /// The batch keeping `index`, the rebalance index of its aggregate as it is now: the deferred rebalance
    /// then costs what the batch changed (`rebalance/incremental.rs`), and [`Finished`] carries the index of
    /// the aggregate to commit.
    pub fn with_index(mut self, index: Option<RebalanceIndex>) -> Self {
        if let Some(index) = index {
            self.group.keep_index(index);
        }
        self
    }

    /// The batch with `live`, the live members of its aggregate as it is now, counted already (None: the
    /// batch counts them itself if a join meets a cap), for every principal its requests come from.
    pub fn with_live(mut self, live: Option<LiveMembers>) -> Self {
        if let Some(live) = live {
            #[cfg(any(test, debug_assertions))]
            {
                let counted = LiveMembers::of(&self.group);
                assert_eq!(
                    live.all, counted.all,
                    "the live members handed to the batch are not its aggregate's"
                );
                for (p, n) in &live.by_principal {
                    assert_eq!(
                        *n,
                        counted.by_principal.get(p).copied().unwrap_or(0),
                        "the live members of {p} handed to the batch are not its aggregate's"
                    );
                }
            }
            self.live = Some(live);
        }
        self
    }

    /// Whether a join of `member_id` by `caller` would pass a cap on the batch's aggregate.
    fn over_cap(&mut self, member_id: &str, req: &HeartbeatRequest, caller: &Caller<'_>) -> bool {
        if req.member_epoch != 0
            || self.group.members.contains_key(member_id)
            || (self.caps.max_members.is_none() && self.caps.max_per_principal.is_none())
        {
            return false;
        }
        // Fewer members in all (live or not) than every cap: no cap can be reached, and nothing need be
        // counted (the count, once made, follows the joins).
        let all = self.group.members.len();
        if self.live.is_none()
            && self.caps.max_members.is_none_or(|cap| all < cap)
            && self.caps.max_per_principal.is_none_or(|cap| all < cap)
        {
            return false;
        }
        let group = &self.group;
        let live = self.live.get_or_insert_with(|| LiveMembers::of(group));
        if self.caps.max_members.is_some_and(|cap| live.all >= cap) {
            return true;
        }
        match (self.caps.max_per_principal, caller.principal) {
            (Some(cap), Some(p)) if !caller.acts_for_any_member => {
                live.by_principal.get(p).copied().unwrap_or(0) >= cap
            }
            _ => false,
        }
    }

    /// Decides `req` (from an unauthenticated caller) on the batch's aggregate and, if it is a transition,
    /// applies and combines it.
    pub fn decide(
        &mut self,
        path_member_id: &str,
        req: &HeartbeatRequest,
    ) -> Result<(), NotCombined> {
        self.decide_as(path_member_id, req, &Caller::ANONYMOUS)
    }

    /// [`Batch::decide`] for `caller`: a member another principal owns (on the batch's aggregate, which may be
    /// newer than the one the request was checked on) is not touched; a join records `caller` as the owner.
    pub fn decide_as(
        &mut self,
        path_member_id: &str,
        req: &HeartbeatRequest,
        caller: &Caller<'_>,
    ) -> Result<(), NotCombined> {
        if self.named.contains(&req.member_id) || self.named.contains(path_member_id) {
            return Err(NotCombined::MemberAlreadyNamed);
        }
        if owner_conflict(&self.group, path_member_id, caller).is_some() {
            return Err(NotCombined::OwnedByAnother);
        }
        if self.over_cap(path_member_id, req, caller) {
            return Err(NotCombined::OverCap);
        }
        let was_member = self.group.members.contains_key(path_member_id);
        self.group.will_change(path_member_id);
        self.group.will_change(&req.member_id);
        let decision = decide_in_place(
            &mut self.group,
            path_member_id,
            req,
            caller.principal,
            self.now_ms,
            &self.timing,
        );
        // A decision changes the entries of its own member only (the rebalance's changes are noted apart);
        // one that is not combined is counted too, in case it changed the draft before refusing.
        self.touched.insert(req.member_id.clone());
        self.touched.insert(path_member_id.to_owned());
        let Outcome::Write(t) = &decision.outcome else {
            return Err(NotCombined::NotATransition);
        };
        if !was_member
            && let (Some(live), Some(m)) = (&mut self.live, self.group.members.get(path_member_id))
            && m.state.is_live()
        {
            live.all += 1;
            if let Some(owner) = &m.owner {
                *live.by_principal.entry(owner.clone()).or_default() += 1;
            }
        }
        let c = &mut self.combined;
        self.named.extend(t.named_members().cloned());
        c.must_be_lapsed.extend(t.must_be_lapsed.iter().cloned());
        c.must_be_live.extend(t.must_be_live.iter().cloned());
        c.renew.extend(t.renew.iter().cloned());
        c.remove.extend(t.remove.iter().cloned());
        c.not_before_ms = c.not_before_ms.max(t.not_before_ms);
        self.decided.push((req.clone(), decision));
        Ok(())
    }

    /// How many transitions were combined.
    pub fn len(&self) -> usize {
        self.decided.len()
    }

    /// Whether no transition was combined.
    pub fn is_empty(&self) -> bool {
        self.decided.is_empty()
    }

    /// Runs the deferred rebalance and states every answer on the resulting aggregate (None while empty).
    pub fn finish(mut self) -> Option<Finished> {
        if self.decided.is_empty() {
            return None;
        }
        self.group.rebalance_now(self.now_ms, &self.timing);
        let index = self.group.take_index();
        let mut changed = self.touched;
        changed.extend(self.group.noted().iter().cloned());
        let group = self.group.into_group();
        let decisions = self
            .decided
            .into_iter()
            .map(|(req, mut d)| {
                restate_on_committed(&group, &req, &self.timing, &mut d.response);
                d
            })
            .collect();
        let mut transition = self.combined;
        transition.group = Some(group);
        transition.changed_members = Some(changed);
        Some(Finished {
            transition,
            decisions,
            index,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Batch, NotCombined};
    use crate::heartbeat::decide;
    use crate::heartbeat::{Caller, Decision, Outcome, owner_conflict};
    use crate::model::Group;
    use crate::timing::Timing;
    use rsc_protocol::wire::{HeartbeatRequest, RuntimeConsumerCapacity};

    const NOW: i64 = 1_000_000;

    fn timing() -> Timing {
        Timing::default()
    }

    fn join_req(member: &str) -> HeartbeatRequest {
        HeartbeatRequest {
            protocol_version: rsc_protocol::PROTOCOL_VERSION_MAX,
            request_id: format!("join-{member}"),
            member_id: member.to_owned(),
            member_name: None,
            client_name: None,
            client_version: None,
            group_instance_id: None,
            member_epoch: 0,
            metadata_version: 0,
            owned_shards: vec![],
            revoking_shards: vec![],
            shard_progress: vec![],
            runtime_consumer_capacity: RuntimeConsumerCapacity {
                runtime_max_concurrency: 1,
                available_concurrency: 1,
            },
        }
    }

    fn group() -> Group {
        Group::new("orders", "g", 4, NOW, "life")
    }

    /// A caller authenticated as `principal`, with no admin rights over members.
    fn user(principal: &'static str) -> Caller<'static> {
        Caller {
            principal: Some(principal),
            acts_for_any_member: false,
        }
    }

    /// At most 3 members in the group, 2 joined by any one principal.
    fn three_members_two_a_principal() -> super::MemberCaps {
        super::MemberCaps {
            max_members: Some(3),
            max_per_principal: Some(2),
        }
    }

    #[test]
    fn joins_beyond_a_cap_are_not_combined_whatever_the_batch_holds() {
        let g = group();
        let caps = three_members_two_a_principal();
        let alice = user("alice");
        let bob = user("bob");
        let mut batch = Batch::on(&g, NOW, &timing()).with_caps(caps);
        assert_eq!(batch.decide_as("a1", &join_req("a1"), &alice), Ok(()));
        assert_eq!(batch.decide_as("a2", &join_req("a2"), &alice), Ok(()));
        assert_eq!(
            batch.decide_as("a3", &join_req("a3"), &alice),
            Err(NotCombined::OverCap),
            "alice's cap of 2, counting this batch's joins"
        );
        assert_eq!(batch.decide_as("b1", &join_req("b1"), &bob), Ok(()));
        assert_eq!(
            batch.decide_as("b2", &join_req("b2"), &bob),
            Err(NotCombined::OverCap),
            "the group's cap of 3"
        );
        let done = batch.finish().unwrap();
        let written = done.transition.group.unwrap();
        assert_eq!(written.members.len(), 3);
        // A later batch on what was written counts it too.
        let mut next = Batch::on(&written, NOW + 1, &timing()).with_caps(caps);
        assert_eq!(
            next.decide_as("c1", &join_req("c1"), &Caller::ANONYMOUS),
            Err(NotCombined::OverCap)
        );
    }

    /// The live members handed to a batch (as the coordinator hands over its kept counts) are what the caps
    /// are checked against, the batch's own joins counted on top, as when the batch counts them itself.
    #[test]
    fn a_batch_handed_the_live_members_keeps_the_caps_as_when_it_counts_them() {
        let caps = three_members_two_a_principal();
        let alice = user("alice");
        let g = group();
        let mut first = Batch::on(&g, NOW, &timing()).with_caps(caps);
        assert_eq!(first.decide_as("a1", &join_req("a1"), &alice), Ok(()));
        let written = first.finish().unwrap().transition.group.unwrap();
        let live = super::LiveMembers::of(&written);
        assert_eq!(live.all, 1);
        assert_eq!(live.by_principal.get("alice"), Some(&1));
        let mut next = Batch::on(&written, NOW + 1, &timing())
            .with_caps(caps)
            .with_live(Some(live));
        assert_eq!(next.decide_as("a2", &join_req("a2"), &alice), Ok(()));
        assert_eq!(
            next.decide_as("a3", &join_req("a3"), &alice),
            Err(NotCombined::OverCap),
            "alice's cap of 2: one handed over, one joined in this batch"
        );
        assert_eq!(
            next.decide_as("c1", &join_req("c1"), &Caller::ANONYMOUS),
            Ok(()),
            "the group's third"
        );
        assert_eq!(
            next.decide_as("c2", &join_req("c2"), &Caller::ANONYMOUS),
            Err(NotCombined::OverCap),
            "the group's cap of 3"
        );
    }

    /// The group after `a` joined alone (it holds all four shards).
    fn a_joined() -> Group {
        let Outcome::Write(t) = decide(Some(&group()), "a", &join_req("a"), NOW, &timing()).outcome
        else {
            panic!("a join is a transition");
        };
        t.group.expect("aggregate")
    }

    /// The shards an answer says are assigned, and its member epoch.
    fn told(d: &Decision) -> (Vec<u32>, i64) {
        let shards = d.response.assignment.assigned_shards.iter();
        (
            shards.map(|s| s.shard_index).collect(),
            d.response.member_epoch,
        )
    }

    #[test]
    fn a_batch_of_one_equals_the_request_decided_alone() {
        let base = a_joined();
        let req = join_req("b");
        let alone = decide(Some(&base), "b", &req, NOW, &timing());
        let mut batch = Batch::on(&base, NOW, &timing());
        batch.decide("b", &req).expect("combined");
        let done = batch.finish().expect("one combined");
        let Outcome::Write(alone_t) = alone.outcome else {
            panic!("a join is a transition");
        };
        assert_eq!(done.decisions[0].response, alone.response);
        assert_eq!(done.transition.group, alone_t.group);
        assert_eq!(done.transition.renew, vec!["b"]);
    }

    #[test]
    fn joins_in_one_batch_are_rebalanced_once_and_each_answer_is_what_is_committed() {
        let base = group();
        let mut batch = Batch::on(&base, NOW, &timing());
        for m in ["a", "b", "c"] {
            batch.decide(m, &join_req(m)).expect("combined");
        }
        assert_eq!(batch.len(), 3);
        let done = batch.finish().expect("three combined");
        let g = done.transition.group.as_ref().expect("aggregate");
        assert_eq!(done.transition.renew, vec!["a", "b", "c"]);
        assert!(crate::invariants::check(g).is_empty(), "{g:#?}");
        // One rebalance over all three: every shard granted to its target owner, nothing revoked. One by one,
        // "a" would first have been granted all four shards and then have had to revoke them.
        let mut granted = 0;
        for (m, d) in ["a", "b", "c"].iter().zip(&done.decisions) {
            let stored = &g.members[*m];
            assert!(stored.revoking.is_empty(), "{m} revokes nothing");
            assert_eq!(stored.assigned, g.target_of(m), "{m} holds its target");
            let committed = stored.assigned.iter().copied().collect();
            assert_eq!(
                told(d),
                (committed, stored.member_epoch),
                "{m} is told what is committed"
            );
            assert_eq!(d.response.metadata_version, g.metadata_version);
            granted += stored.assigned.len();
        }
        assert_eq!(granted, 4);
    }

    #[test]
    fn an_earlier_answer_in_the_batch_is_restated_after_a_later_join_revokes_from_it() {
        let base = a_joined();
        let a_epoch = base.members["a"].member_epoch;
        // "a" confirms its join (a write), then "b" joins: "a" must give up half its shards.
        let mut confirm = join_req("a");
        confirm.member_epoch = a_epoch;
        confirm.owned_shards = base.members["a"]
            .assigned
            .iter()
            .map(|&s| rsc_protocol::wire::ShardId::new(s))
            .collect();
        let mut batch = Batch::on(&base, NOW, &timing());
        batch
            .decide("a", &confirm)
            .expect("a confirmation is a transition");
        batch.decide("b", &join_req("b")).expect("combined");
        let done = batch.finish().expect("two combined");
        let g = done.transition.group.as_ref().expect("aggregate");
        let a = &g.members["a"];
        assert_eq!(a.revoking.len(), 2, "{a:#?}");
        let committed = a.assigned.iter().copied().collect();
        assert_eq!(told(&done.decisions[0]), (committed, a.member_epoch));
        assert!(a.member_epoch > a_epoch, "the revocation raised a's epoch");
    }

    /// The round a shard's hand-over costs: the batch that carries the old owner's REVOKED report grants the
    /// shard to its new owner, and a new owner decided *earlier* in that same batch is told it in its answer
    /// (the answers are stated on the aggregate committed), not a heartbeat later.
    #[test]
    fn a_shard_released_in_a_batch_is_granted_there_and_told_to_its_new_owner_decided_before_the_release()
     {
        use rsc_protocol::wire::{RevokeState, RevokingShardReport, ShardId};
        let Outcome::Write(t) =
            decide(Some(&a_joined()), "b", &join_req("b"), NOW, &timing()).outcome
        else {
            panic!("a join is a transition");
        };
        let base = t.group.expect("aggregate");
        let (a, b) = (&base.members["a"], &base.members["b"]);
        let moving: Vec<u32> = a.revoking.keys().copied().collect();
        assert_eq!(moving.len(), 2, "b's half is still a's: {a:#?}");
        assert!(b.assigned.is_empty(), "b waits for a's release");
        // b confirms its join (a write: combined), then a reports the two shards REVOKED.
        let mut confirm = join_req("b");
        confirm.request_id = "b-2".into();
        confirm.member_epoch = b.member_epoch;
        let mut release = join_req("a");
        release.request_id = "a-2".into();
        release.member_epoch = a.member_epoch;
        release.owned_shards = a.assigned.iter().map(|&s| ShardId::new(s)).collect();
        release.revoking_shards = moving
            .iter()
            .map(|&s| RevokingShardReport {
                shard: ShardId::new(s),
                state: RevokeState::Revoked,
                in_flight: 0,
                acked_at: None,
            })
            .collect();
        let mut batch = Batch::on(&base, NOW + 1, &timing());
        batch
            .decide("b", &confirm)
            .expect("a join confirmation is a transition");
        batch
            .decide("a", &release)
            .expect("a release is a transition");
        let done = batch.finish().expect("two combined");
        let g = done.transition.group.as_ref().expect("aggregate");
        assert!(g.members["a"].revoking.is_empty());
        let granted: Vec<u32> = g.members["b"].assigned.iter().copied().collect();
        assert_eq!(granted, moving, "granted in the release's batch");
        let (told_b, _) = told(&done.decisions[0]);
        assert_eq!(told_b, moving, "and told to b, decided before the release");
        assert!(
            done.decisions[0]
                .response
                .assignment
                .pending_shards
                .is_empty()
        );
        assert!(crate::invariants::check(g).is_empty());
    }

    #[test]
    fn while_a_correction_round_is_open_the_batch_rebalances_at_once() {
        let mut open = a_joined();
        open.metadata_correction = Some(crate::model::MetadataCorrection {
            target_metadata_version: open.metadata_version,
            observed_metadata_version: open.metadata_version + 1,
            requested_at_ms: NOW,
            updated_at_ms: NOW,
            acknowledged_members: Default::default(),
        });
        let mut closed = open.clone();
        closed.metadata_correction = None;
        for (base, rebalanced) in [(&open, true), (&closed, false)] {
            let mut batch = Batch::on(base, NOW, &timing());
            batch
                .decide("b", &join_req("b"))
                .expect("a join is a transition");
            // The join's rebalance revokes half of a's shards; deferred, nothing is revoked yet.
            assert_eq!(
                !batch.group.members["a"].revoking.is_empty(),
                rebalanced,
                "correction round open: {}",
                base.metadata_correction.is_some()
            );
            let done = batch.finish().expect("one combined");
            let g = done.transition.group.expect("aggregate");
            assert_eq!(g.members["a"].revoking.len(), 2, "rebalanced by the end");
        }
    }

    #[test]
    fn a_second_request_of_a_member_in_the_batch_is_refused_without_being_decided() {
        let base = group();
        let mut batch = Batch::on(&base, NOW, &timing());
        batch.decide("a", &join_req("a")).expect("first join");
        let before = (*batch.group).clone();
        assert_eq!(
            batch.decide("a", &join_req("a")).expect_err("same member"),
            NotCombined::MemberAlreadyNamed
        );
        assert_eq!(*batch.group, before, "the aggregate is untouched");
        assert_eq!(batch.len(), 1);
    }

    #[test]
    fn a_join_records_its_principal_and_another_principal_cannot_touch_the_member() {
        let alice = user("alice");
        let base = group();
        let mut batch = Batch::on(&base, NOW, &timing());
        batch.decide_as("a", &join_req("a"), &alice).expect("join");
        let joined = batch.finish().unwrap().transition.group.unwrap();
        assert_eq!(joined.members["a"].owner.as_deref(), Some("alice"));

        let bob = Caller {
            principal: Some("bob"),
            ..alice
        };
        let admin = Caller {
            principal: Some("root"),
            acts_for_any_member: true,
        };
        assert_eq!(owner_conflict(&joined, "a", &bob), Some("alice"));
        assert_eq!(owner_conflict(&joined, "a", &alice), None);
        assert_eq!(owner_conflict(&joined, "a", &admin), None);
        assert_eq!(owner_conflict(&joined, "a", &Caller::ANONYMOUS), None);
        assert_eq!(owner_conflict(&joined, "b", &bob), None, "unknown member");
        let mut leave = join_req("a");
        leave.member_epoch = -1;
        leave.metadata_version = joined.metadata_version;
        let mut batch = Batch::on(&joined, NOW, &timing());
        assert_eq!(
            batch.decide_as("a", &leave, &bob).expect_err("bob's leave"),
            NotCombined::OwnedByAnother
        );
        assert_eq!(
            batch
                .decide_as("a", &join_req("a"), &bob)
                .expect_err("bob's rejoin"),
            NotCombined::OwnedByAnother
        );
        assert!(batch.is_empty());
        batch.decide_as("a", &leave, &alice).expect("alice's leave");
        // Unauthenticated joins record no owner (and a JSON without the field still loads).
        let anon = decide(Some(&base), "c", &join_req("c"), NOW, &timing());
        let Outcome::Write(t) = anon.outcome else {
            panic!("join")
        };
        let g = t.group.unwrap();
        assert_eq!(g.members["c"].owner, None);
        assert!(!g.to_json().contains("\"owner\""));
        assert!(joined.to_json().contains("\"owner\":\"alice\""));
    }

    #[test]
    fn a_rejected_request_is_not_combined_and_an_empty_batch_commits_nothing() {
        let base = group();
        let mut batch = Batch::on(&base, NOW, &timing());
        let mut unknown = join_req("ghost");
        unknown.member_epoch = 5;
        assert_eq!(
            batch.decide("ghost", &unknown).expect_err("unknown member"),
            NotCombined::NotATransition
        );
        assert!(batch.is_empty());
        assert!(batch.group.is_untouched(), "nothing was copied");
        assert!(batch.finish().is_none());
    }
}
