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
//! not once per request, which for a group of thousands of members is most of the cost of a join storm.

use crate::heartbeat::{Decision, Draft, Outcome, Transition, decide_in_place};
use crate::model::Group;
use crate::timing::Timing;
use rsc_protocol::wire::HeartbeatRequest;
use std::borrow::Cow;
use std::collections::BTreeSet;

/// Transitions combined so far: the newest aggregate, and the union of conditions and lease operations.
#[derive(Debug)]
pub struct Batch<'a> {
    group: Draft<'a>,
    combined: Transition,
    named: BTreeSet<String>,
    len: usize,
}

/// Why a request was not combined into the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotCombined {
    /// The batch already names this member: decide again after the batch is written.
    MemberAlreadyNamed,
    /// On the batch's aggregate the request is no transition (rejected or steady): decide again alone.
    NotATransition,
}

impl<'a> Batch<'a> {
    /// An empty batch over the aggregate as last written.
    pub fn on(base: &'a Group) -> Self {
        Batch {
            group: Draft::new(Cow::Borrowed(base)),
            combined: Transition::default(),
            named: BTreeSet::new(),
            len: 0,
        }
    }

    /// Decides `req` on the batch's aggregate and, if it is a transition, applies and combines it. The
    /// returned decision's response describes the aggregate right after this request.
    pub fn decide(
        &mut self,
        path_member_id: &str,
        req: &HeartbeatRequest,
        now_ms: i64,
        timing: &Timing,
    ) -> Result<Decision, NotCombined> {
        if self.named.contains(&req.member_id) || self.named.contains(path_member_id) {
            return Err(NotCombined::MemberAlreadyNamed);
        }
        let decision = decide_in_place(&mut self.group, path_member_id, req, now_ms, timing);
        let Outcome::Write(t) = &decision.outcome else {
            return Err(NotCombined::NotATransition);
        };
        let c = &mut self.combined;
        self.named.extend(t.named_members().cloned());
        c.must_be_lapsed.extend(t.must_be_lapsed.iter().cloned());
        c.must_be_live.extend(t.must_be_live.iter().cloned());
        c.renew.extend(t.renew.iter().cloned());
        c.remove.extend(t.remove.iter().cloned());
        c.not_before_ms = c.not_before_ms.max(t.not_before_ms);
        self.len += 1;
        Ok(decision)
    }

    /// How many transitions were combined.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The one transition to commit, with the newest aggregate (None while empty).
    pub fn into_transition(self) -> Option<Transition> {
        if self.len == 0 {
            return None;
        }
        let mut t = self.combined;
        t.group = Some(self.group.into_group());
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heartbeat::decide;
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

    #[test]
    fn requests_decided_in_a_batch_equal_the_same_requests_decided_one_by_one() {
        let base = group();
        let mut batch = Batch::on(&base);
        let mut one_by_one = base.clone();
        for m in ["a", "b", "c"] {
            let req = join_req(m);
            let in_batch = batch.decide(m, &req, NOW, &timing()).expect("combined");
            let alone = decide(Some(&one_by_one), m, &req, NOW, &timing());
            assert_eq!(in_batch.response, alone.response, "answer to {m}");
            let Outcome::Write(t) = alone.outcome else {
                panic!("a join is a transition");
            };
            one_by_one = t.group.expect("aggregate");
        }
        assert_eq!(batch.len(), 3);
        let t = batch.into_transition().expect("three combined");
        assert_eq!(t.group.as_ref(), Some(&one_by_one));
        assert_eq!(t.renew, vec!["a", "b", "c"]);
    }

    #[test]
    fn a_second_request_of_a_member_in_the_batch_is_refused_without_being_decided() {
        let base = group();
        let mut batch = Batch::on(&base);
        batch
            .decide("a", &join_req("a"), NOW, &timing())
            .expect("first join");
        let before = (*batch.group).clone();
        assert_eq!(
            batch
                .decide("a", &join_req("a"), NOW, &timing())
                .expect_err("same member"),
            NotCombined::MemberAlreadyNamed
        );
        assert_eq!(*batch.group, before, "the aggregate is untouched");
        assert_eq!(batch.len(), 1);
    }

    #[test]
    fn a_rejected_request_is_not_combined_and_an_empty_batch_commits_nothing() {
        let base = group();
        let mut batch = Batch::on(&base);
        let mut unknown = join_req("ghost");
        unknown.member_epoch = 5;
        assert_eq!(
            batch
                .decide("ghost", &unknown, NOW, &timing())
                .expect_err("unknown member"),
            NotCombined::NotATransition
        );
        assert!(batch.is_empty());
        assert!(batch.group.is_untouched(), "nothing was copied");
        assert!(batch.into_transition().is_none());
    }
}
