//! Per-key order across a scale, as a group sees it: gates on child shards.
//!
//! On an ordered stream (`ordering: KEY`), adopting a scale closes a *gate* on every child shard (a new
//! shard whose keys can come from another old shard: `rsc_protocol::ordering::gates`). A gated shard stays
//! in the target assignment (so the migration cannot complete and the group stays RECONCILING) but
//! `rebalance::settle` grants it to nobody and revokes it from anyone holding it. The gate keeps, per
//! child, the parents that may still hold records from before the switch *for this group*; the
//! coordinator's reconciler feeds Redis evidence (this group's Redis consumer group on the parent: nothing
//! pending, everything delivered), read for the migration whose gates they are, to [`open_gates`], which
//! removes those parents while the gates are still that migration's; a child with no parent left
//! opens and is granted through the usual revoke-before-assign path. Gates are per group, so a slow group
//! never holds up a fast one. Rollback, force-complete and a superseding migration clear every gate.
//!
//! A child that survives the scale (`rsc_protocol::ordering::fenced_children`: it holds its own keys'
//! pre-switch records and may be a parent itself) is not withheld when its switch point is known: it is
//! *fenced* and granted as usual, and the heartbeat response carries `readFences` for the fenced shards a
//! member holds: the member hands no record after the fence to the application until the gate opens, which
//! lifts the fence. The group keeps the switch points of the old shards that still matter
//! (`Group::ordering_switch_points`): fenced children, and parents still waited for, whose drain evidence
//! counts only the records up to their switch point. A surviving child whose switch point is unknown stays
//! withheld (safe, but it can wait forever when it is a parent too: the coordinator adopts an ordered switch
//! only once every old shard's switch point is recorded).

use crate::model::{EpochOverflow, Group, ShardSet};
use crate::rebalance::{bumped, settle};
use crate::timing::Timing;
use std::collections::BTreeMap;

/// Closes the gates of the migration `g` just adopted (`from → to`, the stream's routing counts) and settles,
/// so that a withheld shard someone holds is revoked at once. `switch_points` are the old shards' switch
/// points: a surviving child with one is fenced there instead of withheld, and a parent with one drains by
/// its records up to it. Returns whether any gate was closed.
pub fn close_gates(
    g: &mut Group,
    from: u32,
    to: u32,
    switch_points: &BTreeMap<u32, String>,
    now_ms: i64,
    timing: &Timing,
) -> bool {
    g.ordering_gates = rsc_protocol::ordering::gates(from, to);
    g.ordering_switch_points = switch_points
        .iter()
        .filter(|(s, _)| **s < from)
        .map(|(s, id)| (*s, id.clone()))
        .collect();
    keep_needed_switch_points(g);
    if g.ordering_gates.is_empty() {
        return false;
    }
    settle(g, now_ms, timing);
    true
}

/// Drops the switch points of shards that are neither a gated child nor a parent some gate waits for.
fn keep_needed_switch_points(g: &mut Group) {
    let needed = g.waited_parents();
    let gates = &g.ordering_gates;
    g.ordering_switch_points
        .retain(|s, _| gates.contains_key(s) || needed.contains(s));
}

/// Removes the parents in `drained` (Redis shows this group has consumed everything they held from before
/// the switch of `migration`, the migration whose gates the evidence was read for) from every gate; children
/// left with no parent open and are granted (a fenced one loses its fence). Returns false when no gate named
/// any of them, or when the gates are no longer `migration`'s: the group ended it (a rollback, a
/// force-complete) or adopted another scale meanwhile, whose gates wait for the same shards at other switch
/// points, and evidence up to the old points says nothing about those (found by the simulation: a reconciler
/// pass read the parents for a scale that was rolled back, and its evidence opened the next scale's gates).
/// Nothing changes when the epochs would overflow.
pub fn open_gates(
    g: &mut Group,
    migration: &str,
    drained: &ShardSet,
    now_ms: i64,
    timing: &Timing,
) -> Result<bool, EpochOverflow> {
    if g.active_migration_id.as_deref() != Some(migration)
        || !g
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
    keep_needed_switch_points(g);
    bump.apply(g);
    settle(g, now_ms, timing);
    g.updated_at_ms = now_ms;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::{close_gates, open_gates};
    use crate::invariants;
    use crate::migration::adopt;
    use crate::model::{Group, Member, Migration, MigrationState, ShardSet};
    use crate::rebalance::{recompute_target, settle};
    use crate::timing::Timing;
    use std::collections::BTreeMap;

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
        let points = (0..from).map(|s| (s, format!("{}-0", 100 + s))).collect();
        close_gates(g, from, to, &points, 1, &Timing::default());
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
        assert_eq!(g.gated_shards(), ShardSet::from([4, 5, 6, 7]));
        assert_eq!(
            assigned(&g),
            ShardSet::from([0, 1, 2, 3]),
            "survivors keep being consumed"
        );
        assert_eq!(g.waited_parents(), ShardSet::from([0, 1, 2, 3]));

        assert!(!open_gates(&mut g, "r1", &ShardSet::from([9]), 2, &Timing::default()).unwrap());
        assert!(
            !open_gates(&mut g, "r0", &ShardSet::from([1]), 2, &Timing::default()).unwrap(),
            "evidence read for another migration's gates"
        );
        assert!(open_gates(&mut g, "r1", &ShardSet::from([1]), 2, &Timing::default()).unwrap());
        assert_eq!(g.gated_shards(), ShardSet::from([4, 6, 7]));
        assert!(
            assigned(&g).contains(&5),
            "child of a drained parent granted"
        );
        assert_eq!(
            g.ordering_switch_points
                .keys()
                .copied()
                .collect::<ShardSet>(),
            ShardSet::from([0, 2, 3]),
            "a drained parent's switch point is no longer kept"
        );
        for s in [4, 6, 7] {
            assert!(!assigned(&g).contains(&s));
        }
        assert!(invariants::check(&g).is_empty());
    }

    #[test]
    fn a_held_child_is_revoked_when_its_gate_closes() {
        // 1 -> 2 -> 4: shard 1 was held by a member; after 2 -> 4 only 2 and 3 are children.
        let mut g = group_with_members(2, &["a"]);
        scale(&mut g, 4);
        assert_eq!(g.gated_shards(), ShardSet::from([2, 3]));
        // A gate closed on a shard someone holds, with no switch point to fence it at, revokes it (the grant
        // path never re-adds it).
        g.ordering_gates.insert(1, ShardSet::from([0]));
        g.ordering_switch_points.remove(&1);
        settle(&mut g, 3, &Timing::default());
        let a = &g.members["a"];
        assert!(!a.assigned.contains(&1) && a.revoking.contains_key(&1));
    }

    #[test]
    fn surviving_children_are_granted_fenced_and_open_without_deadlock() {
        // 8 -> 3: every old shard is a parent of every new one; 0, 1 and 2 survive and wait for each other.
        let mut g = group_with_members(8, &["a", "b"]);
        scale(&mut g, 3);
        assert_eq!(g.ordering_gates.len(), 3);
        assert_eq!(
            g.read_fences(&(0..8).collect())
                .keys()
                .copied()
                .collect::<ShardSet>(),
            ShardSet::from([0, 1, 2])
        );
        assert_eq!(
            g.ordering_switch_points.len(),
            8,
            "every old shard is a waited parent"
        );
        assert!(g.gated_shards().is_empty(), "nothing withheld");
        assert!(
            ShardSet::from([0, 1, 2]).is_subset(&assigned(&g)),
            "fenced survivors stay granted"
        );
        let a_holds = g.members["a"].assigned.clone();
        let fences = g.read_fences(&a_holds);
        let survivors_a_holds: ShardSet = a_holds.iter().filter(|s| **s < 3).copied().collect();
        assert!(!survivors_a_holds.is_empty());
        assert_eq!(
            fences.keys().copied().collect::<ShardSet>(),
            survivors_a_holds
        );
        assert!(invariants::check(&g).is_empty());

        // Survivors consumed up to their switch points, and the drained shards 3..8: every gate opens.
        let t = Timing::default();
        assert!(open_gates(&mut g, "r1", &(0..3).collect(), 2, &t).unwrap());
        assert_eq!(g.ordering_gates.len(), 3, "each still waits for 3..8");
        assert!(open_gates(&mut g, "r1", &(3..8).collect(), 3, &t).unwrap());
        assert!(g.ordering_gates.is_empty() && g.ordering_switch_points.is_empty());
        assert!(g.read_fences(&(0..3).collect()).is_empty(), "fences lifted");
    }

    #[test]
    fn a_scale_out_fences_survivors_and_withholds_new_shards() {
        // 3 -> 6: 0..3 survive (fenced), 3..6 are new (withheld until their parents drained).
        let mut g = group_with_members(3, &["a"]);
        scale(&mut g, 6);
        assert_eq!(g.gated_shards(), ShardSet::from([3, 4, 5]));
        assert_eq!(g.read_fences(&(0..6).collect()).len(), 3);
        assert_eq!(assigned(&g), ShardSet::from([0, 1, 2]));
        assert_eq!(g.read_fences(&(0..6).collect())[&1], "101-0");
        assert!(invariants::check(&g).is_empty());
        assert!(open_gates(&mut g, "r1", &(0..3).collect(), 2, &Timing::default()).unwrap());
        assert!(g.ordering_gates.is_empty());
        assert_eq!(assigned(&g), (0..6).collect());
    }

    #[test]
    fn a_surviving_child_without_a_switch_point_is_withheld() {
        let mut g = group_with_members(8, &["a"]);
        let m = Migration::new(
            "r1".into(),
            8,
            3,
            MigrationState::Active,
            "t".into(),
            "t".into(),
            1,
        );
        assert!(adopt(&mut g, &m, 1, &Timing::default()).unwrap());
        close_gates(&mut g, 8, 3, &BTreeMap::new(), 1, &Timing::default());
        assert!(g.ordering_switch_points.is_empty());
        assert_eq!(g.gated_shards(), ShardSet::from([0, 1, 2]));
        assert!(invariants::check(&g).is_empty());
    }
}
