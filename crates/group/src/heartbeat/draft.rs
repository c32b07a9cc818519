//! The `Draft`: the aggregate a heartbeat decision works on (copy-on-write, probing, deferred rebalance).

use crate::model::Group;
use crate::rebalance::{Noted, recompute_target_noting, settle_noting};
use crate::timing::Timing;
use std::borrow::Cow;

/// The aggregate a decision works on: changed in place (copied first when borrowed) to apply a write, or,
/// when probing, never changed.
///
/// A deferring draft (a batch's) leaves the rebalance a membership change or a release calls for to
/// [`Draft::rebalance_now`]: the batch runs one for all its requests instead of one per request, which over a
/// group of N members turns a join wave's O(N²) into O(N) per batch. Nothing a later request's decision
/// reads depends on it (`batch.rs` says why), except an open metadata-correction round, so while one is open
/// every decision ends rebalanced (`decide_in_place`).
#[derive(Debug)]
pub struct Draft<'a> {
    group: Cow<'a, Group>,
    probing: bool,
    deferring: bool,
    deferred: Option<Rebalance>,
    /// The members whose entries the rebalances run so far changed.
    noted: Noted,
}

/// A rebalance a write calls for; the later variant includes the earlier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Rebalance {
    /// Move members towards their (unchanged) targets: `settle`.
    Grants,
    /// The active members changed: a new target, then `settle`.
    Target,
}

impl<'a> Draft<'a> {
    /// A draft of `group` that applies writes and rebalances at once (copying a borrowed group on the first
    /// change).
    pub fn new(group: Cow<'a, Group>) -> Self {
        Draft {
            group,
            probing: false,
            deferring: false,
            deferred: None,
            noted: Noted::new(),
        }
    }

    /// A draft whose rebalances wait for [`Draft::rebalance_now`].
    pub fn deferring(group: Cow<'a, Group>) -> Self {
        Draft {
            deferring: true,
            ..Draft::new(group)
        }
    }

    pub(super) fn probe(group: &'a Group) -> Self {
        Draft {
            probing: true,
            ..Draft::new(Cow::Borrowed(group))
        }
    }

    /// The aggregate as it stands (with every write applied so far, and a deferred rebalance not run).
    pub fn into_group(self) -> Group {
        self.group.into_owned()
    }

    /// The members whose `members` or `targetAssignments` entries the rebalances run so far changed (the
    /// decisions' own changes are to the requesting member only; `batch.rs` adds those).
    pub fn noted(&self) -> &Noted {
        &self.noted
    }

    /// Runs the rebalance deferred so far, if any.
    pub fn rebalance_now(&mut self, now_ms: i64, timing: &Timing) {
        let Some(kind) = self.deferred.take() else {
            return;
        };
        let g = self.group.to_mut();
        match kind {
            Rebalance::Grants => settle_noting(g, now_ms, timing, &mut self.noted),
            Rebalance::Target => recompute_target_noting(g, now_ms, timing, &mut self.noted),
        }
    }

    /// Rebalances after a write: now, or (deferring) later.
    pub(super) fn rebalance(&mut self, kind: Rebalance, now_ms: i64, timing: &Timing) {
        self.deferred = self.deferred.max(Some(kind));
        if !self.deferring {
            self.rebalance_now(now_ms, timing);
        }
    }

    /// The aggregate being written (after [`Draft::write`] returned it once).
    pub(super) fn written(&mut self) -> &mut Group {
        debug_assert!(!self.probing);
        self.group.to_mut()
    }

    /// Whether nothing was written yet to a borrowed aggregate (no copy was made).
    pub fn is_untouched(&self) -> bool {
        matches!(self.group, Cow::Borrowed(_))
    }

    /// The aggregate to change, or None when only probing.
    pub(super) fn write(&mut self) -> Option<&mut Group> {
        (!self.probing).then(|| self.group.to_mut())
    }
}

impl std::ops::Deref for Draft<'_> {
    type Target = Group;
    fn deref(&self) -> &Group {
        &self.group
    }
}
