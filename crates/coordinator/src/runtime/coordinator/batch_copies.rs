//! Each large group's batch copy, kept from one heartbeat batch to the next (`rsc_group::model::Group::catch_up`).
//!
//! A batch decides on a copy of the aggregate it read. For a group of thousands of members, making that copy
//! and freeing the one the previous batch replaced cost about as much as deciding the batch. So after a
//! batch's write, the aggregate it was decided on — once nothing else on this replica holds it — is brought
//! up to the revision written by copying only the members the batch changed, and kept for the group's next
//! batch, which changes it in place. A copy is used only for the revision (and lifecycle) it is equal to;
//! any other write in between (the reconciler's, another replica's) leaves it unused, and the batch copies
//! the aggregate as before. Only groups of [`MIN_MEMBERS`] or more keep one, at most [`MAX_COPIES`] at a time
//! (each costs the group's size in memory).

use crate::runtime::cache::{Cached, GroupName};
use rsc_group::model::Group;
use rsc_group::rebalance::RebalanceIndex;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

/// Groups smaller than this copy their aggregate for every batch (cheap at that size).
pub(crate) const MIN_MEMBERS: usize = 1_000;
/// At most this many groups keep a copy.
pub(crate) const MAX_COPIES: usize = 16;

/// One group's copy, equal to the aggregate of `revision`, with its rebalance index (so that the next batch's
/// rebalance costs what that batch changes: `rsc_group::rebalance::RebalanceIndex`).
struct KeptCopy {
    revision: u64,
    group: Group,
    index: Option<RebalanceIndex>,
}

#[derive(Default)]
pub(crate) struct BatchCopies {
    copies: Mutex<HashMap<GroupName, KeptCopy>>,
}

impl BatchCopies {
    /// This replica's copy of `base`'s aggregate and its rebalance index, if it keeps one (taken: the batch
    /// changes both in place).
    pub(crate) fn take(
        &self,
        name: &GroupName,
        base: &Cached,
    ) -> Option<(Group, Option<RebalanceIndex>)> {
        let copy = self.copies.lock().ok()?.remove(name)?;
        (copy.revision == base.revision && copy.group.lifecycle_id == base.group.lifecycle_id)
            .then_some((copy.group, copy.index))
    }

    /// After `written` replaced `base` by a batch that changed the entries of `changed` only: keeps `base`'s
    /// aggregate, caught up to `written`, as the group's copy — if nothing else holds it any more (else it is
    /// simply released) and the group is large enough to be worth it — with `index`, the batch's rebalance
    /// index of the aggregate written (counted afresh when the batch had none).
    pub(crate) fn keep(
        &self,
        name: &GroupName,
        base: Cached,
        written: &Cached,
        changed: &BTreeSet<String>,
        index: Option<RebalanceIndex>,
    ) {
        if written.group.members.len() < MIN_MEMBERS {
            return;
        }
        let Ok(mut group) = Arc::try_unwrap(base.group) else {
            return;
        };
        group.catch_up(&written.group, changed);
        debug_assert!(
            group == *written.group,
            "a batch copy caught up by the changed members differs from the aggregate written"
        );
        let index = index.or_else(|| RebalanceIndex::of(&group));
        debug_assert!(
            index == RebalanceIndex::of(&group),
            "a batch's rebalance index differs from the one counted afresh"
        );
        let Ok(mut copies) = self.copies.lock() else {
            return;
        };
        if copies.len() < MAX_COPIES || copies.contains_key(name) {
            copies.insert(
                name.clone(),
                KeptCopy {
                    revision: written.revision,
                    group,
                    index,
                },
            );
        }
    }
}
