//! How one write of a group is stored under layout "4": its changes, every entry, or the whole document.
//!
//! A write of changes costs Redis what it carries, and entries pass through the compare-and-set script one by
//! one, uncompressed; a whole document is one LZ4-compressed value set without passing through the script. So
//! when a rebalance changes most of a large group (the first minutes of a big join: each batch moves shards
//! from most members to the joiners) the whole document is far cheaper for Redis, and hardly dearer for the
//! coordinator, which encodes most entries either way. The rule, with a gap between the two thresholds so
//! that a group does not switch at every write:
//!
//! - a group of fewer than [`WHOLE_MIN_ENTRIES`] entries is always stored split (any write of it is small);
//! - stored split: whole when more than a quarter of its entries changed, else the changes;
//! - stored whole: whole again while more than a sixteenth of its entries changed, else every entry (once:
//!   the group is split again when the wave of changes has passed).
//!
//! Redis checks the revision either way, so which form a write takes never changes what a reader sees.

use super::{Group, SplitWrite};
use std::collections::BTreeSet;

/// Groups with fewer entries (members plus targets) than this are always stored split.
pub const WHOLE_MIN_ENTRIES: usize = 1_000;

/// What to store for one write of a group whose layout is "4".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteForm {
    /// The whole document (the store's compressed layout).
    Whole,
    /// The header and entries (changes, or every entry when `full`).
    Split(SplitWrite),
}

impl Group {
    /// How to store this group, decided on `base` (what Redis holds; `base_split`: held split). Compares the
    /// two groups entry by entry — only the entries of `changed` when the members that may have changed are
    /// known (`Transition::changed_members`) — so the decision is exact.
    pub fn write_form(
        &mut self,
        base: &Group,
        base_split: bool,
        changed: Option<&BTreeSet<String>>,
    ) -> WriteForm {
        let changes = match changed {
            Some(among) => self.split_changes_among(base, among),
            None => self.split_changes(base),
        };
        let total = self.members.len() + self.target_assignments.len();
        let changed = changes.entries.len();
        let whole = total >= WHOLE_MIN_ENTRIES
            && if base_split {
                changed * 4 > total
            } else {
                changed * 16 > total
            };
        if whole {
            WriteForm::Whole
        } else if base_split {
            WriteForm::Split(changes)
        } else {
            WriteForm::Split(self.split_full())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Member, ShardSet};

    fn group(members: usize) -> Group {
        let mut g = Group::new("orders", "billing", 8, 1_000, "life");
        for i in 0..members {
            let id = format!("m-{i:05}");
            g.members
                .insert(id.clone(), Member::new(&id, "worker", 1_000));
            g.target_assignments.insert(id, ShardSet::from([0]));
        }
        g
    }

    /// `g` with the targets of its first `n` members changed.
    fn retargeted(g: &Group, n: usize) -> Group {
        let mut next = g.clone();
        for t in next.target_assignments.values_mut().take(n) {
            *t = ShardSet::from([1]);
        }
        next
    }

    fn kind(form: &WriteForm) -> &'static str {
        match form {
            WriteForm::Whole => "whole",
            WriteForm::Split(w) if w.full => "full",
            WriteForm::Split(_) => "changes",
        }
    }

    #[test]
    fn a_large_group_is_stored_whole_while_most_of_it_changes_and_split_again_after() {
        // 1,000 members: 2,000 entries.
        let base = group(1_000);
        let cases = [
            // (entries changed, base stored split, form)
            (500, true, "changes"),
            (501, true, "whole"),
            (501, false, "whole"),
            (126, false, "whole"),
            (125, false, "full"),
            (0, false, "full"),
            (0, true, "changes"),
        ];
        for (n, base_split, expected) in cases {
            let form = retargeted(&base, n).write_form(&base, base_split, None);
            assert_eq!(
                kind(&form),
                expected,
                "{n} changed, base split {base_split}"
            );
            if let WriteForm::Split(w) = form {
                let want = if w.full { 2_000 } else { n };
                assert_eq!(w.entries.len(), want);
            }
        }
    }

    #[test]
    fn a_small_group_is_always_stored_split() {
        let base = group(499);
        let all = retargeted(&base, 499);
        assert_eq!(kind(&all.clone().write_form(&base, true, None)), "changes");
        assert_eq!(kind(&all.clone().write_form(&base, false, None)), "full");
        // Told the members that changed, the same.
        let among = all.members.keys().cloned().collect();
        assert_eq!(
            kind(&all.clone().write_form(&base, true, Some(&among))),
            "changes"
        );
    }
}
