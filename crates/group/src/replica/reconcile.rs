//! One reconciler pass over one group, as a sans-I/O state machine: read the group as the store holds it,
//! take the store's time and the members whose leases lapsed by it, [`tick`], compare-and-set with the
//! tick's time and lease conditions, and on a lost race or a failed condition start again — at most
//! [`MAX_CAS_ATTEMPTS`] times; the next pass tries again. Safety never depends on there being one
//! reconciler: every pass works on the state the store holds and commits by compare-and-set.

use crate::heartbeat::Transition;
use crate::model::EpochOverflow;
use crate::replica::{CommitResult, MAX_CAS_ATTEMPTS, Snapshot};
use crate::tick::{TickReport, tick};
use crate::timing::Timing;
use std::collections::BTreeSet;

/// What the shell must do next for this pass.
#[derive(Debug)]
pub enum ReconcileStep<S> {
    /// Read the group as the store holds it (a cached aggregate whose revision the store confirms, or a
    /// load). Then [`ReconcileFlow::on_read`].
    Read,
    /// Read the store's time and the members whose leases lapsed by it. Then [`ReconcileFlow::on_observed`].
    Observe(S),
    /// Compare-and-set this transition on `base`. Then [`ReconcileFlow::on_committed`].
    Commit {
        /// The group as read: the revision the write is conditional on.
        base: S,
        /// The tick, as a transition of that group (with its time and lease conditions).
        transition: Box<Transition>,
        /// What the tick did, for the pass's result.
        report: TickReport,
    },
    /// Done: what was committed (None: nothing due, nothing written, or the store failed).
    Done(Option<TickReport>),
    /// Done: a transition that is due would overflow an epoch; nothing was written.
    Exhausted(EpochOverflow),
}

/// The state of one pass between steps.
#[derive(Debug)]
pub struct ReconcileFlow {
    timing: Timing,
    attempts: usize,
}

impl ReconcileFlow {
    /// Starts a pass; the first step reads the group.
    pub fn start<S>(timing: &Timing) -> (Self, ReconcileStep<S>) {
        let mut flow = ReconcileFlow {
            timing: *timing,
            attempts: 0,
        };
        let step = flow.again();
        (flow, step)
    }

    fn again<S>(&mut self) -> ReconcileStep<S> {
        if self.attempts == MAX_CAS_ATTEMPTS {
            return ReconcileStep::Done(None);
        }
        self.attempts += 1;
        ReconcileStep::Read
    }

    /// The group as read (None: it does not exist, or the store failed — nothing to do this pass).
    pub fn on_read<S: Snapshot>(&mut self, group: Option<S>) -> ReconcileStep<S> {
        match group {
            Some(base) => ReconcileStep::Observe(base),
            None => ReconcileStep::Done(None),
        }
    }

    /// The store's time and the members whose leases lapsed by it.
    pub fn on_observed<S: Snapshot>(
        &mut self,
        base: S,
        now_ms: i64,
        lapsed: &BTreeSet<String>,
    ) -> ReconcileStep<S> {
        match tick(base.group(), now_ms, lapsed, &self.timing) {
            Ok(Some((transition, report))) => ReconcileStep::Commit {
                base,
                transition: Box::new(transition),
                report,
            },
            Ok(None) => ReconcileStep::Done(None),
            Err(e) => ReconcileStep::Exhausted(e),
        }
    }

    /// What the compare-and-set of [`ReconcileStep::Commit`] came to.
    pub fn on_committed<S>(
        &mut self,
        result: CommitResult,
        report: TickReport,
    ) -> ReconcileStep<S> {
        match result {
            CommitResult::Written => ReconcileStep::Done(Some(report)),
            CommitResult::Conflict | CommitResult::ConditionFailed { .. } => self.again(),
            CommitResult::Unavailable => ReconcileStep::Done(None),
        }
    }
}
