//! One heartbeat request on a replica, from reading the group to its answer, as a sans-I/O state machine.
//!
//! [`HeartbeatFlow::start`] returns the first [`Step`]; the shell performs it and feeds its result to the
//! matching `on_*` method, which returns the next step, until [`Step::Answer`], [`Step::Refuse`] or
//! [`Step::FailClosed`]. The rules it encodes:
//! - decide on the cached aggregate when there is one (steady heartbeats never reload), with [`probe`]: a
//!   transition is only recognised here and decided for real in a batch ([`crate::replica::commit`]);
//! - a refusal that depends on group state (a member owned by another principal, an unknown or fenced
//!   member), decided on a cached aggregate, is confirmed first ([`Step::ConfirmCurrent`], one read of the
//!   revision): if the group moved, read it again and decide again;
//! - rollback evidence in the request ([`member_signal`]) is acted on only when decided on state known to be
//!   current, counted once, and recorded before deciding again ([`Step::RecordSuspicion`]);
//! - a steady heartbeat renews the member's lease conditionally on the revision it was decided on
//!   ([`Step::Renew`]); a transition joins the group's batch ([`Step::Write`]);
//! - a lost race means "decide again", a failed lease or time condition "reconcile, then decide again", at
//!   most [`MAX_CAS_ATTEMPTS`] decisions; trouble with the store is answered `RETRY`, which never renews a
//!   lease.

use crate::durability::{Signal, member_signal};
use crate::heartbeat::{Caller, Decision, Outcome, owner_conflict, probe, rejected_response};
use crate::replica::commit::BatchReply;
use crate::replica::{MAX_CAS_ATTEMPTS, Snapshot};
use crate::timing::Timing;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatResponse, HeartbeatStatus};

/// What the shell must do next for this request.
#[derive(Debug)]
pub enum Step<S> {
    /// Read the group: the cached aggregate if there is one, else a load. Then [`HeartbeatFlow::on_read`].
    Read,
    /// Drop the cached aggregate of the group, then as [`Step::Read`].
    Reload,
    /// Tell whether the store still holds this snapshot's revision. Then [`HeartbeatFlow::on_confirmed`].
    ConfirmCurrent(S),
    /// Record this rollback evidence in the aggregate, by compare-and-set on `base` (the shell may decline:
    /// a principal over its budget). Then [`HeartbeatFlow::on_recorded`].
    RecordSuspicion {
        /// The group the evidence was seen on: the revision the write is conditional on.
        base: S,
        /// The evidence.
        signal: Signal,
    },
    /// Renew the member's lease (and store its progress) if the store still holds `base`'s revision. Then
    /// [`HeartbeatFlow::on_renewed`].
    Renew(S),
    /// Queue the request's transition for the group's next batch. Then [`HeartbeatFlow::on_batch`].
    Write,
    /// Reconcile the group's time-driven state (expire lapsed leases). Then [`HeartbeatFlow::on_reconciled`].
    Reconcile,
    /// Done: send this answer.
    Answer(HeartbeatResponse),
    /// Done: the member belongs to another principal (`owner`); refuse the request.
    Refuse {
        /// The principal that joined the member.
        owner: String,
    },
    /// Done: the group's metadata cannot be read; answer that it fails closed.
    FailClosed,
}

/// Why a read of the group gave no aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFailure {
    /// The metadata is unreadable or inconsistent: the group fails closed.
    Corrupt,
    /// The store could not answer now.
    Unavailable,
}

/// What the store said about a cached revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// The store still holds the revision: decide on the cached aggregate.
    Current,
    /// The group has moved on: read it again and decide again.
    Moved,
    /// The store could not answer now.
    Unavailable,
    /// The store answered something unusable: read the group again (the read reports damage).
    Unreadable,
}

/// What the lease renewal came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewal {
    /// The lease was renewed (and the progress stored).
    Renewed,
    /// The revision moved: decide again.
    Conflict,
    /// The member's lease had already lapsed: reconcile, then decide again.
    LeaseLapsed,
    /// The store could not answer now: answer RETRY.
    Unavailable,
}

/// Things worth counting or logging, gathered while the request was handled (each at most once).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Notes {
    /// The request carried rollback evidence, acted on (on current state).
    pub metadata_regression: bool,
    /// The request reported a shard revoking again after its release was recorded.
    pub rebalance_regression: bool,
    /// The transition it needed would overflow an epoch.
    pub epochs_exhausted: bool,
    /// It was answered RETRY after [`MAX_CAS_ATTEMPTS`] decisions.
    pub gave_up: bool,
}

/// What a step left to remember until its result comes back.
#[derive(Debug)]
enum Awaiting<S> {
    Nothing,
    /// Refuse for `owner` if the cached state is current.
    OwnerConfirmation {
        owner: String,
    },
    /// Send this rejection if the cached state is current.
    RejectionConfirmation(HeartbeatResponse),
    /// Evidence is being recorded; if it is not, act on this decision.
    Suspicion {
        decision: Decision,
        base: S,
        fresh: bool,
    },
    /// Send this steady answer once the lease is renewed.
    Renewal(HeartbeatResponse),
}

/// The state of one heartbeat request between steps.
#[derive(Debug)]
pub struct HeartbeatFlow<S> {
    member_id: String,
    principal: Option<String>,
    acts_for_any_member: bool,
    timing: Timing,
    decisions: usize,
    /// The revision this request's own suspicion record was written at: state known to be current.
    recorded_revision: Option<u64>,
    notes: Notes,
    awaiting: Awaiting<S>,
}

impl<S: Snapshot> HeartbeatFlow<S> {
    /// A validated heartbeat for `member_id` (the path's) from `caller`; returns the flow and its first step.
    pub fn start(member_id: &str, caller: Caller<'_>, timing: &Timing) -> (Self, Step<S>) {
        let mut flow = HeartbeatFlow {
            member_id: member_id.to_owned(),
            principal: caller.principal.map(str::to_owned),
            acts_for_any_member: caller.acts_for_any_member,
            timing: *timing,
            decisions: 0,
            recorded_revision: None,
            notes: Notes::default(),
            awaiting: Awaiting::Nothing,
        };
        let step = flow.decide_again(None, false);
        (flow, step)
    }

    /// What was seen while handling the request.
    pub fn notes(&self) -> Notes {
        self.notes
    }

    /// The steady answer a [`Step::Renew`] will send once the lease is renewed (None at any other step): what
    /// the caller may look at before renewing, such as the pending shards a release forecast watches.
    pub fn steady_answer(&self) -> Option<&HeartbeatResponse> {
        match &self.awaiting {
            Awaiting::Renewal(response) => Some(response),
            _ => None,
        }
    }

    fn caller(&self) -> Caller<'_> {
        Caller {
            principal: self.principal.as_deref(),
            acts_for_any_member: self.acts_for_any_member,
        }
    }

    /// The answer that keeps the member's state and asks it to try again (never renews a lease).
    pub fn retry(&self, req: &HeartbeatRequest) -> Step<S> {
        Step::Answer(rejected_response(req, &self.timing, HeartbeatStatus::Retry))
    }

    /// The top of the loop: read (or reload) and decide again, unless the request has been decided
    /// [`MAX_CAS_ATTEMPTS`] times (then `RETRY`). `req` is None only at the start.
    fn decide_again(&mut self, req: Option<&HeartbeatRequest>, reload: bool) -> Step<S> {
        self.awaiting = Awaiting::Nothing;
        if self.decisions == MAX_CAS_ATTEMPTS
            && let Some(req) = req
        {
            self.notes.gave_up = true;
            return self.retry(req);
        }
        self.decisions += 1;
        if reload { Step::Reload } else { Step::Read }
    }

    /// The group as read: `Ok(None)` when it does not exist; `fresh` when it came from the store just now
    /// (not from the cache). `now_ms`: the replica's estimate of the store's time.
    pub fn on_read(
        &mut self,
        req: &HeartbeatRequest,
        read: Result<Option<S>, ReadFailure>,
        fresh: bool,
        now_ms: i64,
    ) -> Step<S> {
        let cached = match read {
            Ok(c) => c,
            Err(ReadFailure::Corrupt) => return Step::FailClosed,
            Err(ReadFailure::Unavailable) => return self.retry(req),
        };
        if let Some(base) = &cached
            && let Some(owner) = owner_conflict(base.group(), &self.member_id, &self.caller())
        {
            // Refused only on state known to be current: the member may have been replaced since.
            let owner = owner.to_owned();
            if fresh {
                return Step::Refuse { owner };
            }
            self.awaiting = Awaiting::OwnerConfirmation { owner };
            return Step::ConfirmCurrent(base.clone());
        }
        let decision = probe(
            cached.as_ref().map(|c| c.group()),
            &self.member_id,
            req,
            now_ms,
            &self.timing,
        );
        let fresh = fresh
            || cached
                .as_ref()
                .is_some_and(|c| self.recorded_revision == Some(c.revision()));
        self.notes.rebalance_regression |= decision.signals.rebalance_regression;
        self.notes.epochs_exhausted |= decision.signals.epochs_exhausted;
        if let Some(base) = &cached
            && let Some(mut signal) =
                member_signal(base.group(), &self.member_id, req, &decision.signals)
        {
            let base = base.clone();
            // Rollback evidence is acted on only when decided on state known to be current (a stale cache
            // can make a member look ahead).
            if !fresh {
                return self.decide_again(Some(req), true);
            }
            signal.principal = self.principal.clone();
            self.notes.metadata_regression |= decision.signals.metadata_regression;
            self.awaiting = Awaiting::Suspicion {
                decision,
                base: base.clone(),
                fresh,
            };
            return Step::RecordSuspicion { base, signal };
        }
        self.act(req, decision, cached, fresh)
    }

    /// Acts on a decision that needs no evidence recorded.
    fn act(
        &mut self,
        req: &HeartbeatRequest,
        decision: Decision,
        cached: Option<S>,
        fresh: bool,
    ) -> Step<S> {
        match decision.outcome {
            Outcome::Rejected {
                needs_fresh_state: true,
            } if !fresh => match cached {
                Some(base) => {
                    self.awaiting = Awaiting::RejectionConfirmation(decision.response);
                    Step::ConfirmCurrent(base)
                }
                None => self.decide_again(Some(req), true),
            },
            Outcome::Rejected { .. } => Step::Answer(decision.response),
            Outcome::Steady => match cached {
                None => self.retry(req),
                Some(base) => {
                    self.awaiting = Awaiting::Renewal(decision.response);
                    Step::Renew(base)
                }
            },
            Outcome::Write(_) => Step::Write,
        }
    }

    /// The answer to [`Step::ConfirmCurrent`].
    pub fn on_confirmed(&mut self, req: &HeartbeatRequest, confirmation: Confirmation) -> Step<S> {
        let awaiting = std::mem::replace(&mut self.awaiting, Awaiting::Nothing);
        match (confirmation, awaiting) {
            (Confirmation::Current, Awaiting::OwnerConfirmation { owner }) => {
                Step::Refuse { owner }
            }
            (Confirmation::Current, Awaiting::RejectionConfirmation(response)) => {
                Step::Answer(response)
            }
            (Confirmation::Unavailable, _) => self.retry(req),
            // Moved on, or unreadable: the reload decides (and reports damage as a load does).
            _ => self.decide_again(Some(req), true),
        }
    }

    /// The answer to [`Step::RecordSuspicion`]: the revision written, or None when nothing was recorded
    /// (nothing new, over budget, or a lost race).
    pub fn on_recorded(&mut self, req: &HeartbeatRequest, written: Option<u64>) -> Step<S> {
        let awaiting = std::mem::replace(&mut self.awaiting, Awaiting::Nothing);
        if let Some(revision) = written {
            self.recorded_revision = Some(revision);
            return self.decide_again(Some(req), false);
        }
        match awaiting {
            Awaiting::Suspicion {
                decision,
                base,
                fresh,
            } => self.act(req, decision, Some(base), fresh),
            _ => self.decide_again(Some(req), false),
        }
    }

    /// The answer to [`Step::Renew`].
    pub fn on_renewed(&mut self, req: &HeartbeatRequest, renewal: Renewal) -> Step<S> {
        let awaiting = std::mem::replace(&mut self.awaiting, Awaiting::Nothing);
        match (renewal, awaiting) {
            (Renewal::Renewed, Awaiting::Renewal(response)) => Step::Answer(response),
            (Renewal::Renewed | Renewal::Conflict, _) => self.decide_again(Some(req), false),
            (Renewal::LeaseLapsed, _) => Step::Reconcile,
            (Renewal::Unavailable, _) => self.retry(req),
        }
    }

    /// The answer to [`Step::Write`]: what the batch told this request.
    pub fn on_batch(&mut self, req: &HeartbeatRequest, reply: BatchReply) -> Step<S> {
        match reply {
            BatchReply::Answered(response) => Step::Answer(*response),
            BatchReply::DecideAgain => self.decide_again(Some(req), false),
            // E.g. the member's lease lapsed before this request: expire it, then decide again.
            BatchReply::Reconcile => Step::Reconcile,
            BatchReply::Unavailable => self.retry(req),
        }
    }

    /// After [`Step::Reconcile`]: decide again.
    pub fn on_reconciled(&mut self, req: &HeartbeatRequest) -> Step<S> {
        self.decide_again(Some(req), false)
    }
}
