//! Per-key order across a scale, as a group sees it: gates on child shards.
//!
//! On an ordered stream (`ordering: KEY`), adopting a scale closes a *gate* on every child shard (a new
//! shard whose keys can come from another old shard: `rsc_protocol::ordering::gates`). A gated shard stays
//! in the target assignment (so the migration cannot complete and the group stays RECONCILING) but
//! `rebalance::settle` grants it to nobody and revokes it from anyone holding it. The gate keeps, per
//! child, the parents that may still hold records from before the switch *for this group*; the
//! coordinator's reconciler feeds Redis evidence (this group's Redis consumer group on the parent: nothing
//! pending, everything delivered) to [`open_gates`], which removes those parents; a child with no parent left
//! opens and is granted through the usual revoke-before-assign path. Gates are per group, so a slow group
//! never holds up a fast one. Rollback, force-complete and a superseding migration clear every gate.

use crate::model::{EpochOverflow, Group, ShardSet};
use crate::rebalance::{bumped, settle};
use crate::timing::Timing;

/// Shards no member may be granted now (children whose parents may still hold pre-switch records).
pub fn gated_shards(g: &Group) -> ShardSet {
    g.ordering_gates.keys().copied().collect()
}

/// Closes the gates of the migration `g` just adopted (`from → to`) and settles, so that a gated shard
/// someone holds is revoked at once. Returns whether any gate was closed.
pub fn close_gates(g: &mut Group, from: u32, to: u32, now_ms: i64, timing: &Timing) -> bool {
    g.ordering_gates = rsc_protocol::ordering::gates(from, to);
    if g.ordering_gates.is_empty() {
        return false;
    }
    settle(g, now_ms, timing);
    true
}

/// Removes the parents in `drained` (Redis shows this group has consumed everything they held from before
/// the switch) from every gate; children left with no parent open and are granted. Returns false when no
/// gate named any of them. Nothing changes when the epochs would overflow.
pub fn open_gates(
    g: &mut Group,
    drained: &ShardSet,
    now_ms: i64,
    timing: &Timing,
) -> Result<bool, EpochOverflow> {
    if !g
        .ordering_gates
        .values()
        .any(|parents| parents.iter().any(|p| drained.contains(p)))
    {
        return Ok(false);
    }
    let bump = bumped(g)?;
    for parents in g.ordering_gates.values_mut() {
        parents.retain(|p| !drained.contains(p));
    }
    g.ordering_gates.retain(|_, parents| !parents.is_empty());
    bump.apply(g);
    settle(g, now_ms, timing);
    g.updated_at_ms = now_ms;
    Ok(true)
}

/// The parents any gate still waits for (the shards whose drain evidence the reconciler must read).
pub fn waited_parents(g: &Group) -> ShardSet {
    g.ordering_gates.values().flatten().copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migration::{Migration, MigrationState, adopt};
    use crate::model::Member;
    use crate::rebalance::recompute_target;

    fn group_with_members(shards: u32, members: &[&str]) -> Group {
        let mut g = Group::new("p", "g", shards, 0, "life");
        for id in members {
            g.members.insert((*id).into(), Member::new(id, id, 0));
        }
        recompute_target(&mut g, 0, &Timing::default());
        g
    }

    fn scale(g: &mut Group, to: u32) {
        let m = Migration::new(
            "r1".into(),
            g.shard_count,
            to,
            MigrationState::Active,
            "t".into(),
            "t".into(),
            1,
        );
        let from = g.shard_count;
        assert!(adopt(g, &m, 1, &Timing::default()).unwrap());
        close_gates(g, from, to, 1, &Timing::default());
    }

    fn assigned(g: &Group) -> ShardSet {
        g.members
            .values()
            .flat_map(|m| m.assigned.clone())
            .collect()
    }

    #[test]
    fn children_are_granted_only_once_their_parents_drained() {
        let mut g = group_with_members(4, &["a", "b"]);
        scale(&mut g, 8);
        assert_eq!(gated_shards(&g), ShardSet::from([4, 5, 6, 7]));
        assert_eq!(
            assigned(&g),
            ShardSet::from([0, 1, 2, 3]),
            "survivors keep being consumed"
        );
        assert_eq!(waited_parents(&g), ShardSet::from([0, 1, 2, 3]));

        assert!(!open_gates(&mut g, &ShardSet::from([9]), 2, &Timing::default()).unwrap());
        assert!(open_gates(&mut g, &ShardSet::from([1]), 2, &Timing::default()).unwrap());
        assert_eq!(gated_shards(&g), ShardSet::from([4, 6, 7]));
        assert!(
            assigned(&g).contains(&5),
            "child of a drained parent granted"
        );
        for s in [4, 6, 7] {
            assert!(!assigned(&g).contains(&s));
        }
        assert!(crate::invariants::check(&g).is_empty());
    }

    #[test]
    fn a_held_child_is_revoked_when_its_gate_closes() {
        // 1 -> 2 -> 4: shard 1 was held by a member; after 2 -> 4 only 2 and 3 are children.
        let mut g = group_with_members(2, &["a"]);
        scale(&mut g, 4);
        assert_eq!(gated_shards(&g), ShardSet::from([2, 3]));
        // A gate closed on a shard someone holds revokes it (the grant path never re-adds it).
        g.ordering_gates.insert(1, ShardSet::from([0]));
        settle(&mut g, 3, &Timing::default());
        let a = &g.members["a"];
        assert!(!a.assigned.contains(&1) && a.revoking.contains_key(&1));
    }
}
