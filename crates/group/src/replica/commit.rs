//! Group commit: the heartbeats of one group waiting to write on a replica are decided in sequence on the
//! newest aggregate ([`crate::batch::Batch`]), committed with one compare-and-set, and each is then told what
//! the commit means for it (`DecidedBatch::replies`).
//!
//! A request that is not combined (on the newer aggregate it no longer needs a write, its member is already
//! named by an earlier request of the batch, or another principal now owns it) is told to decide again at
//! once; it is never answered on an aggregate that was not written. After a commit:
//! - written: every combined request gets its answer, re-stated on the aggregate written;
//! - lost race: everyone decides again on fresh state;
//! - a lease or time condition failed: the requests whose own condition failed reconcile the group first
//!   (once each), the others decide again;
//! - store unavailable: everyone answers `RETRY`.

use crate::batch::{Batch, LiveMembers, MemberCaps};
use crate::heartbeat::{Caller, Outcome, Transition};
use crate::model::Group;
use crate::rebalance::RebalanceIndex;
use crate::replica::CommitResult;
use crate::timing::Timing;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatResponse};
use std::borrow::Cow;

/// At most this many requests are decided into one write; the rest wait for the next.
pub const MAX_BATCH: usize = 1_000;

/// What a request that needed a write is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchReply {
    /// Written: send this response.
    Answered(Box<HeartbeatResponse>),
    /// Not written by this batch: decide again on the current aggregate.
    DecideAgain,
    /// A lease or time condition of this request's transition failed: reconcile the group, then decide again.
    Reconcile,
    /// The store failed: answer RETRY.
    Unavailable,
}

/// A request waiting to write. `T`: the shell's handle to answer it with (a channel, a simulated job).
#[derive(Debug)]
pub struct Queued<T> {
    /// The member id of the request's path.
    pub member_id: String,
    /// The heartbeat body.
    pub req: HeartbeatRequest,
    /// The authenticated principal (None: unauthenticated heartbeats) and whether it is an ADMIN.
    pub principal: Option<String>,
    /// Whether the principal may act for any member (an ADMIN).
    pub acts_for_any_member: bool,
    /// Where the request's reply goes.
    pub reply_to: T,
}

impl<T> Queued<T> {
    fn caller(&self) -> Caller<'_> {
        Caller {
            principal: self.principal.as_deref(),
            acts_for_any_member: self.acts_for_any_member,
        }
    }
}

/// A request combined into the batch, with its answer stated on the aggregate to commit.
#[derive(Debug)]
pub struct Included<T> {
    /// The member id of the request's path.
    pub member_id: String,
    /// The heartbeat body.
    pub req: HeartbeatRequest,
    /// Where the request's reply goes.
    pub reply_to: T,
    /// The request's answer, stated on the aggregate to commit (sent only once it is written).
    pub response: HeartbeatResponse,
    /// This request fenced its member.
    pub fenced: bool,
    /// The transition renews this member's lease (an accepted heartbeat): its progress is stored with it.
    pub renewed: bool,
    /// The members its transition names (in a condition or a lease operation).
    named: Vec<String>,
}

/// A decided batch, before its commit.
#[derive(Debug)]
pub struct DecidedBatch<T> {
    /// The one transition to commit; None when no request was combined.
    pub transition: Option<Transition>,
    /// The combined requests, in the order they were decided.
    pub included: Vec<Included<T>>,
    /// The requests not combined: each decides again at once ([`BatchReply::DecideAgain`]).
    pub declined: Vec<T>,
    /// The rebalance index of the transition's aggregate, when the batch was given one
    /// ([`decide_queue_indexed`]).
    pub index: Option<RebalanceIndex>,
}

/// Decides each queued request on the aggregate the previous one produced (the first on `base`) and
/// combines what can be combined into one transition.
pub fn decide_queue<T>(
    base: &Group,
    queue: Vec<Queued<T>>,
    now_ms: i64,
    timing: &Timing,
) -> DecidedBatch<T> {
    decide_queue_capped(base, queue, now_ms, timing, MemberCaps::default())
}

/// [`decide_queue`] keeping the group's member caps exactly: a join beyond one on the batch's aggregate is
/// declined (it decides again alone, on what was written, and is refused there).
pub fn decide_queue_capped<T>(
    base: &Group,
    queue: Vec<Queued<T>>,
    now_ms: i64,
    timing: &Timing,
    caps: MemberCaps,
) -> DecidedBatch<T> {
    decide_queue_over(Cow::Borrowed(base), queue, now_ms, timing, caps)
}

/// [`decide_queue_capped`] on a borrowed aggregate (copied on the first write) or on the caller's own copy of
/// it, which the batch then changes in place (`Group::catch_up` keeps such a copy current between batches).
pub fn decide_queue_over<T>(
    base: Cow<'_, Group>,
    queue: Vec<Queued<T>>,
    now_ms: i64,
    timing: &Timing,
    caps: MemberCaps,
) -> DecidedBatch<T> {
    decide_queue_indexed(base, None, queue, now_ms, timing, caps, None)
}

/// [`decide_queue_over`] with `index`, the rebalance index of `base` (`RebalanceIndex::of`, then kept beside the
/// caller's copy from batch to batch): the batch's rebalance then costs what it changed, and the decided batch
/// carries the index of the transition's aggregate. `live`: `base`'s live members, counted already, for every
/// principal of the queue (`Batch::with_live`; None: counted by the batch if a join meets a cap).
pub fn decide_queue_indexed<T>(
    base: Cow<'_, Group>,
    index: Option<RebalanceIndex>,
    queue: Vec<Queued<T>>,
    now_ms: i64,
    timing: &Timing,
    caps: MemberCaps,
    live: Option<LiveMembers>,
) -> DecidedBatch<T> {
    let mut batch = Batch::over(base, now_ms, timing)
        .with_caps(caps)
        .with_live(live)
        .with_index(index);
    let mut combined = Vec::new();
    let mut declined = Vec::new();
    for q in queue {
        match batch.decide_as(&q.member_id, &q.req, &q.caller()) {
            Ok(()) => combined.push(q),
            Err(_) => declined.push(q.reply_to),
        }
    }
    let Some(done) = batch.finish() else {
        return DecidedBatch {
            transition: None,
            included: Vec::new(),
            declined,
            index: None,
        };
    };
    let included = combined
        .into_iter()
        .zip(done.decisions)
        .map(|(q, d)| {
            let named: Vec<String> = match &d.outcome {
                Outcome::Write(t) => t.named_members().cloned().collect(),
                _ => Vec::new(),
            };
            Included {
                renewed: done.transition.renew.contains(&q.member_id),
                member_id: q.member_id,
                req: q.req,
                reply_to: q.reply_to,
                response: d.response,
                fenced: d.signals.fenced,
                named,
            }
        })
        .collect();
    DecidedBatch {
        transition: Some(done.transition),
        included,
        declined,
        index: done.index,
    }
}

/// What each combined request is told once the commit of its batch came to `result` (declined requests
/// decide again at once).
pub fn replies<T>(included: Vec<Included<T>>, result: &CommitResult) -> Vec<(T, BatchReply)> {
    let mut first = true;
    included
        .into_iter()
        .map(|i| {
            let reply = match result {
                CommitResult::Written => BatchReply::Answered(Box::new(i.response)),
                CommitResult::Conflict => BatchReply::DecideAgain,
                // Only the requests whose own conditions failed reconcile (once each); the rest decide
                // again. A failed time condition is charged to the first.
                CommitResult::ConditionFailed { member } => {
                    let culprit = match member {
                        Some(m) => i.named.contains(m),
                        None => first,
                    };
                    if culprit {
                        BatchReply::Reconcile
                    } else {
                        BatchReply::DecideAgain
                    }
                }
                CommitResult::Unavailable => BatchReply::Unavailable,
            };
            first = false;
            (i.reply_to, reply)
        })
        .collect()
}
