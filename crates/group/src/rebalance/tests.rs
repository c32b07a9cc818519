//! Tests of the rebalance: the target computed from the changes and the one-walk settle against their
//! definitions (the assignor, the three-walk settle) over random groups.

use super::{
    Noted, recompute_target, recompute_target_in_full, reference, settle_in_one_walk, targets,
};
use crate::assign::assign;
use crate::model::Member;
use crate::model::{Group, MemberState};
use crate::timing::Timing;
use std::collections::{BTreeMap, BTreeSet};

/// `recompute_target` writes back only what changed; the map it leaves must be exactly what `assign`
/// computes over the active members and their previous targets, for any mix of states and targets.
#[test]
fn recompute_target_leaves_exactly_the_assignors_result() {
    let states = [
        MemberState::Active,
        MemberState::Leaving,
        MemberState::Expired,
        MemberState::Fenced,
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for case in 0..300 {
        let shard_count = next(20) as u32;
        let mut g = Group::new("p", "g", shard_count, 0, "life");
        for i in 0..next(12) {
            let id = format!("m{i:02}");
            let mut m = Member::new(&id, &id, 0);
            m.state = states[next(4) as usize];
            g.members.insert(id.clone(), m);
            if next(2) == 0 {
                let target: BTreeSet<u32> = (0..next(4)).map(|_| next(24) as u32).collect();
                g.target_assignments.insert(id, target);
            }
        }
        if next(3) == 0 {
            // A target entry of a member that is gone altogether.
            g.target_assignments
                .insert("zz-gone".into(), BTreeSet::from([1, 2]));
        }
        let active: BTreeSet<String> = g.active_member_ids();
        let previous: BTreeMap<String, BTreeSet<u32>> = g
            .target_assignments
            .iter()
            .filter(|(id, _)| active.contains(*id))
            .map(|(id, s)| (id.clone(), s.clone()))
            .collect();
        let expected = assign(&g.assignable_shards(), &active, &previous);
        recompute_target(&mut g, 0, &Timing::default());
        assert_eq!(g.target_assignments, expected, "case {case}");
    }
}

/// A small xorshift generator: the cases below depend on nothing but their seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }

    fn shards(&mut self, count: u64, below: u32) -> BTreeSet<u32> {
        (0..self.below(count + 1))
            .map(|_| self.below(u64::from(below.max(1))) as u32)
            .collect()
    }
}

fn member(id: &str, state: MemberState) -> Member {
    let mut m = Member::new(id, id, 0);
    m.state = state;
    m
}

/// The target computed from the changes (`targets.rs`) equals the assignor's after any batch of changes to a
/// group whose targets the assignor made: joins, leaves, expiries, a static member's reserved target
/// claimed or kept, a scale, draining shards, and targets made inconsistent (where it must decline and
/// leave the group untouched). Run in every build, so release builds check it too.
#[test]
fn the_target_from_the_changes_is_the_assignors() {
    use crate::model::{Reservation, ReservationReason};
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let states = [
        MemberState::Leaving,
        MemberState::Expired,
        MemberState::Fenced,
    ];
    let (mut computed, cases) = (0, 3_000);
    for case in 0..cases {
        let shard_count = rng.below(40) as u32;
        let mut g = Group::new("p", "g", shard_count, 0, "life");
        for i in 0..rng.below(16) {
            let id = format!("m{i:02}");
            g.members
                .insert(id.clone(), member(&id, MemberState::Active));
        }
        recompute_target_in_full(&mut g, &mut Noted::new());
        // A batch of changes.
        let ids: Vec<String> = g.members.keys().cloned().collect();
        for id in &ids {
            if rng.chance(4) {
                let state = states[rng.below(3) as usize];
                if let Some(m) = g.members.get_mut(id) {
                    m.state = state;
                }
            }
        }
        for i in 0..rng.below(6) {
            let id = format!("j{i:02}");
            g.members
                .insert(id.clone(), member(&id, MemberState::Active));
            if rng.chance(6) {
                // A static member claiming its reserved target: an entry before the rebalance.
                let claimed = rng.shards(3, shard_count + 2);
                g.target_assignments.insert(id, claimed);
            }
        }
        if rng.chance(8) {
            g.draining_shards = (shard_count..shard_count + 1 + rng.below(3) as u32).collect();
        }
        if rng.chance(8) {
            g.static_reservations.push(Reservation {
                group_instance_id: "i".into(),
                member_id: "gone".into(),
                shards: rng.shards(3, shard_count.max(1)),
                until_ms: 1,
                reason: ReservationReason::TemporaryLeave,
                owner: None,
            });
        }
        if rng.chance(10) {
            g.shard_count = rng.below(40) as u32;
        }
        if rng.chance(10)
            && let Some(t) = g.target_assignments.values_mut().next()
        {
            t.insert(rng.below(u64::from(shard_count) + 3) as u32);
        }
        if rng.chance(12) {
            g.target_assignments
                .insert("zz-gone".into(), rng.shards(3, 40));
        }

        let (mut by_changes, mut in_full) = (g.clone(), g.clone());
        let (mut noted_changes, mut noted_full) = (Noted::new(), Noted::new());
        let computed_here = targets::assignor_shards(&by_changes).is_some_and(|shards| {
            targets::recompute_by_changes(&mut by_changes, &shards, &mut noted_changes)
        });
        recompute_target_in_full(&mut in_full, &mut noted_full);
        if computed_here {
            computed += 1;
            assert_eq!(
                by_changes.target_assignments, in_full.target_assignments,
                "case {case}"
            );
            assert_eq!(noted_changes, noted_full, "case {case}");
        } else {
            assert_eq!(by_changes, g, "case {case}: declined, so untouched");
            assert!(noted_changes.is_empty(), "case {case}");
        }
    }
    assert!(
        computed > cases / 2,
        "only {computed} of {cases} cases were computed from the changes"
    );
}

/// The one-walk settle leaves exactly the group, and notes exactly the members, that the three-walk
/// definition does, for any members (every state, any assigned, revoking and reported sets, deadlines),
/// targets (missing, overlapping, of members not active), holds and ordering gates — and for a settled group
/// a batch then changed a little, the common case.
#[test]
fn the_one_walk_settle_is_the_three_walk_one() {
    use crate::model::{Hold, HoldReason};
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let states = [
        MemberState::Active,
        MemberState::Active,
        MemberState::Leaving,
        MemberState::Expired,
        MemberState::Fenced,
    ];
    for case in 0..4_000 {
        let shard_count = 1 + rng.below(24) as u32;
        let mut g = Group::new("p", "g", shard_count, 0, "life");
        g.assignment_epoch = 7;
        let settled_first = rng.chance(2);
        for i in 0..rng.below(10) {
            let id = format!("m{i:02}");
            let mut m = member(&id, states[rng.below(5) as usize]);
            if !settled_first || rng.chance(4) {
                m.assigned = rng.shards(3, shard_count + 1);
                for s in rng.shards(2, shard_count + 1) {
                    m.revoking.insert(s, rng.below(9) as i64);
                }
                m.reported_revoking = rng
                    .shards(1, shard_count)
                    .into_iter()
                    .map(|s| {
                        let report = crate::model::RevokeReport {
                            state: rsc_protocol::wire::RevokeState::Draining,
                            in_flight: 1,
                        };
                        (s, report)
                    })
                    .collect();
                m.reported_owned = rng.shards(2, shard_count);
                m.rebalance_deadline_ms = rng.chance(2).then_some(5);
            }
            g.members.insert(id.clone(), m);
            if rng.chance(5) {
                continue;
            }
            let target = rng.shards(4, shard_count + 1);
            g.target_assignments.insert(id, target);
        }
        if rng.chance(4) {
            g.holds.push(Hold {
                member_id: "old".into(),
                shards: rng.shards(3, shard_count),
                until_ms: 9,
                reason: HoldReason::RebalanceTimeout,
                anchor_pending: false,
            });
        }
        if rng.chance(5) {
            for s in rng.shards(3, shard_count) {
                g.ordering_gates.insert(s, BTreeSet::from([0]));
                if rng.chance(2) {
                    g.ordering_switch_points.insert(s, "1-0".into());
                }
            }
        }
        if settled_first {
            // Settled, then a batch's worth of changes: a release, a new target shard, a member leaving.
            settle_in_one_walk(&mut g, 1, &Timing::default(), &mut Noted::new());
            for m in g.members.values_mut() {
                if rng.chance(3)
                    && let Some(s) = m.revoking.keys().next().copied()
                {
                    m.revoking.remove(&s);
                }
                if rng.chance(6) {
                    m.state = states[rng.below(5) as usize];
                }
                m.reported_owned.clone_from(&m.assigned);
            }
            if let Some(t) = g.target_assignments.values_mut().next() {
                t.insert(rng.below(u64::from(shard_count)) as u32);
            }
        }
        let (mut one_walk, mut three_walks) = (g.clone(), g.clone());
        let (mut noted_one, mut noted_three) = (Noted::new(), Noted::new());
        settle_in_one_walk(&mut one_walk, 3, &Timing::default(), &mut noted_one);
        reference::settle_in_passes(&mut three_walks, 3, &Timing::default(), &mut noted_three);
        assert_eq!(one_walk, three_walks, "case {case}");
        assert_eq!(noted_one, noted_three, "case {case}");
    }
}

/// The rebalance by a kept index (`incremental.rs`) over several batches: each batch changes a few members
/// (joins, leaves, expiries, releases, reports, a static member's claimed target) and sometimes the header
/// (holds, gates, a scale), the index counts the changed members again, and the target or the settle runs by
/// the index. Each call compares itself with the full rebalance and the index with one counted afresh (in
/// `cfg(test)`), over settled groups the assignor made and over arbitrary ones (unsettled members,
/// overlapping targets).
#[test]
fn the_rebalance_by_the_index_is_the_full_one() {
    use super::{RebalanceIndex, recompute_target_indexed, settle_indexed};
    use crate::model::{Hold, HoldReason};
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let states = [
        MemberState::Active,
        MemberState::Leaving,
        MemberState::Expired,
        MemberState::Fenced,
    ];
    let timing = Timing::default();
    let mut by_index = 0;
    for case in 0..3_000 {
        let shard_count = rng.below(40) as u32;
        let mut g = Group::new("p", "g", shard_count, 0, "life");
        g.assignment_epoch = 3;
        let arbitrary = rng.chance(3);
        for i in 0..rng.below(24) {
            let id = format!("m{i:02}");
            let mut m = member(&id, MemberState::Active);
            if arbitrary {
                m.state = states[rng.below(4) as usize];
                m.assigned = rng.shards(3, shard_count + 1);
                for s in rng.shards(2, shard_count + 1) {
                    m.revoking.insert(s, 2);
                }
                m.rebalance_deadline_ms = rng.chance(2).then_some(5);
                if rng.chance(2) {
                    g.target_assignments
                        .insert(id.clone(), rng.shards(4, shard_count + 1));
                }
            }
            g.members.insert(id, m);
        }
        if !arbitrary {
            recompute_target(&mut g, 1, &timing);
            for m in g.members.values_mut() {
                m.reported_owned.clone_from(&m.assigned);
            }
        }
        if rng.chance(5) {
            g.holds.push(Hold {
                member_id: "old".into(),
                shards: rng.shards(2, shard_count),
                until_ms: 9,
                reason: HoldReason::RebalanceTimeout,
                anchor_pending: false,
            });
        }
        if rng.chance(6) {
            for s in rng.shards(2, shard_count) {
                g.ordering_gates.insert(s, BTreeSet::from([0]));
            }
        }
        let Some(mut index) = RebalanceIndex::of(&g) else {
            continue;
        };
        for batch in 0..3 {
            let mut dirty = BTreeSet::new();
            let ids: Vec<String> = g.members.keys().cloned().collect();
            for id in ids {
                if !rng.chance(4) {
                    continue;
                }
                let was = (
                    g.members.get(&id).cloned(),
                    g.target_assignments.get(&id).cloned(),
                );
                if let Some(m) = g.members.get_mut(&id) {
                    match rng.below(4) {
                        0 => m.state = states[rng.below(4) as usize],
                        1 => {
                            if let Some(s) = m.revoking.keys().next().copied() {
                                m.revoking.remove(&s);
                            }
                        }
                        2 => m.reported_owned.clone_from(&m.assigned),
                        _ => m.reported_owned.clear(),
                    }
                }
                index.recount(&g, &id, was.0.as_ref(), was.1.as_ref());
                dirty.insert(id);
            }
            for i in 0..rng.below(4) {
                let id = format!("j{batch}{i}");
                g.members
                    .insert(id.clone(), member(&id, MemberState::Active));
                if rng.chance(5) {
                    g.target_assignments
                        .insert(id.clone(), rng.shards(2, shard_count + 1));
                }
                index.recount(&g, &id, None, None);
                dirty.insert(id);
            }
            if rng.chance(12) {
                g.shard_count = rng.below(40) as u32;
            }
            if rng.chance(12) {
                g.holds.clear();
            }
            g.assignment_epoch += 1;
            let now = 10 + batch;
            if rng.chance(3) {
                settle_indexed(&mut g, &mut index, &dirty, now, &timing, &mut Noted::new());
            } else {
                recompute_target_indexed(
                    &mut g,
                    &mut index,
                    &dirty,
                    now,
                    &timing,
                    &mut Noted::new(),
                );
            }
            by_index += 1;
        }
        let _ = case;
    }
    assert!(by_index > 1_000, "only {by_index} rebalances by the index");
}
