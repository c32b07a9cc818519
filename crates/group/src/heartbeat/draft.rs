//! The `Draft`: the aggregate a heartbeat decision works on (copy-on-write, probing, deferred rebalance).

use crate::model::{Group, Member, MemberState, ShardSet};
use crate::rebalance::{
    Noted, RebalanceIndex, recompute_target_indexed, recompute_target_noting, settle_indexed,
    settle_noting,
};
use crate::timing::Timing;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

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
    /// The group's rebalance index, when the draft keeps one (a batch's on a kept copy).
    indexed: Option<Indexed>,
}

/// A draft's rebalance index and the members changed since it counted them.
#[derive(Debug)]
struct Indexed {
    index: RebalanceIndex,
    /// Member → its record and target entry as the index counted them (before a decision changed them).
    before: BTreeMap<String, (Option<Member>, Option<ShardSet>)>,
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
            indexed: None,
        }
    }

    /// The draft keeping `index`, which must be the index of its aggregate as it is now
    /// (`RebalanceIndex::of`): its rebalances then follow what changed (`rebalance/incremental.rs`).
    pub fn keep_index(&mut self, index: RebalanceIndex) {
        self.indexed = Some(Indexed {
            index,
            before: BTreeMap::new(),
        });
    }

    /// Says that a decision may change member `id`'s entries (a draft keeping an index notes them as they
    /// are, to count the member again when the index is next used).
    pub fn will_change(&mut self, id: &str) {
        if let Some(indexed) = &mut self.indexed
            && !indexed.before.contains_key(id)
        {
            let g = &*self.group;
            indexed.before.insert(
                id.to_owned(),
                (
                    g.members.get(id).cloned(),
                    g.target_assignments.get(id).cloned(),
                ),
            );
        }
    }

    /// Counts the members changed since into the index; returns them.
    fn recount(&mut self) -> Option<(&mut RebalanceIndex, BTreeSet<String>)> {
        let indexed = self.indexed.as_mut()?;
        let g = &*self.group;
        let mut dirty = BTreeSet::new();
        for (id, (m, t)) in std::mem::take(&mut indexed.before) {
            indexed.index.recount(g, &id, m.as_ref(), t.as_ref());
            dirty.insert(id);
        }
        Some((&mut indexed.index, dirty))
    }

    /// The index of the aggregate as it is now, if the draft keeps one.
    pub fn take_index(&mut self) -> Option<RebalanceIndex> {
        self.recount()?;
        let indexed = self.indexed.take()?;
        if indexed.index.fits(&self.group) {
            Some(indexed.index)
        } else {
            RebalanceIndex::of(&self.group)
        }
    }

    /// The active member that holds `group_instance_id`, if any: [`Group::active_instance`]'s answer. A draft
    /// keeping an index asks it rather than walking every member: the members it counted as holders, and
    /// those changed since it counted them, looked at as they are now; the first in member-id order (as the
    /// walk finds it). Tests and debug builds insist on the walk's answer.
    pub(super) fn active_instance(&self, group_instance_id: &str) -> Option<&Member> {
        let Some(indexed) = &self.indexed else {
            return self.group.active_instance(group_instance_id);
        };
        let g = &*self.group;
        let found = indexed
            .index
            .instance_holders(group_instance_id)
            .chain(indexed.before.keys())
            .filter_map(|id| g.members.get_key_value(id))
            .filter(|(_, m)| {
                m.state == MemberState::Active
                    && m.group_instance_id.as_deref() == Some(group_instance_id)
            })
            .min_by(|a, b| a.0.cmp(b.0))
            .map(|(_, m)| m);
        #[cfg(any(test, debug_assertions))]
        assert!(
            match (found, g.active_instance(group_instance_id)) {
                (Some(a), Some(b)) => std::ptr::eq(a, b),
                (a, b) => a.is_none() && b.is_none(),
            },
            "the index's holder of groupInstanceId {group_instance_id} is not the walk's"
        );
        found
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
        if let Some(mut indexed) = self.indexed.take() {
            let g = self.group.to_mut();
            let mut dirty = BTreeSet::new();
            for (id, (m, t)) in std::mem::take(&mut indexed.before) {
                indexed.index.recount(g, &id, m.as_ref(), t.as_ref());
                dirty.insert(id);
            }
            let index = &mut indexed.index;
            match kind {
                Rebalance::Grants => {
                    settle_indexed(g, index, &dirty, now_ms, timing, &mut self.noted)
                }
                Rebalance::Target => {
                    recompute_target_indexed(g, index, &dirty, now_ms, timing, &mut self.noted);
                }
            }
            // Counted as they are now; should a decision change them again, they are counted again.
            for id in dirty {
                let was = (
                    g.members.get(&id).cloned(),
                    g.target_assignments.get(&id).cloned(),
                );
                indexed.before.insert(id, was);
            }
            self.indexed = Some(indexed);
            return;
        }
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
