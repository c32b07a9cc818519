//! How a resharding flow changes one group: read it as the store holds it, apply the change
//! ([`GroupChange`], pure), compare-and-set, and on a lost race (or a failed condition) read and apply again
//! — at most [`MAX_CAS_ATTEMPTS`] times. An unchanged group is not written. The shell drives it for
//! [`super::Step::UpdateGroup`] and answers that step with its result; the coordinator holds the group's
//! lock meanwhile, so the replica's own heartbeats of the group wait rather than race it.

use super::UpdateFailed;
use crate::heartbeat::Transition;
use crate::replica::{CommitResult, MAX_CAS_ATTEMPTS, Snapshot};
use crate::reshard::sync::GroupChange;
use crate::timing::Timing;

/// What the shell must do next for this change.
#[derive(Debug)]
pub enum UpdateStep<S> {
    /// Read the group (the cached aggregate when the store confirms its revision, else a load). Then
    /// [`GroupUpdate::on_read`].
    Read,
    /// Compare-and-set `transition` on `base`. Then [`GroupUpdate::on_committed`].
    Commit {
        /// The group as read: the revision the write is conditional on.
        base: S,
        /// The change, as a transition of that group.
        transition: Box<Transition>,
    },
    /// Done: the group as written (or as read, when the change changed nothing).
    Done(Result<S, UpdateFailed>),
}

/// The state of one group change between steps.
#[derive(Debug)]
pub struct GroupUpdate {
    change: GroupChange,
    timing: Timing,
    attempts: usize,
}

impl GroupUpdate {
    /// Starts changing a group by `change`; the first step reads it.
    pub fn start<S>(change: GroupChange, timing: &Timing) -> (Self, UpdateStep<S>) {
        let update = GroupUpdate {
            change,
            timing: *timing,
            attempts: 1,
        };
        (update, UpdateStep::Read)
    }

    /// The group as read (Err: the store failed, or the group is gone); `now_ms`: the replica's estimate of
    /// the store's time.
    pub fn on_read<S: Snapshot>(
        &mut self,
        read: Result<S, super::StoreFailed>,
        now_ms: i64,
    ) -> UpdateStep<S> {
        let Ok(base) = read else {
            return UpdateStep::Done(Err(UpdateFailed::Store));
        };
        let mut next = base.group().clone();
        match self.change.apply(&mut next, now_ms, &self.timing) {
            Err(e) => UpdateStep::Done(Err(UpdateFailed::Change(e))),
            Ok(false) => UpdateStep::Done(Ok(base)),
            Ok(true) => UpdateStep::Commit {
                base,
                transition: Box::new(Transition::new(next)),
            },
        }
    }

    /// What the compare-and-set came to, with the group as written when it was.
    pub fn on_committed<S>(&mut self, result: CommitResult, written: Option<S>) -> UpdateStep<S> {
        match (result, written) {
            (CommitResult::Written, Some(written)) => UpdateStep::Done(Ok(written)),
            (CommitResult::Conflict | CommitResult::ConditionFailed { .. }, _)
                if self.attempts < MAX_CAS_ATTEMPTS =>
            {
                self.attempts += 1;
                UpdateStep::Read
            }
            (CommitResult::Conflict | CommitResult::ConditionFailed { .. }, _) => {
                UpdateStep::Done(Err(UpdateFailed::KeptChanging))
            }
            (CommitResult::Written | CommitResult::Unavailable, _) => {
                UpdateStep::Done(Err(UpdateFailed::Store))
            }
        }
    }
}
