//! Property tests of the sticky balanced assignor: coverage, balance, determinism, stability and
//! move-optimality on random (and deliberately malformed) inputs and on join/leave/scale sequences.
//!
//! The move lower bound is computed here independently of the assignor, and the greedy quota choice
//! it relies on is itself checked against a brute force over every quota choice for small groups.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::sample::Index;
use rsc_group::assign::{assign, moves, spread};

type Assignment = BTreeMap<String, BTreeSet<u32>>;

fn member_name(i: u32) -> String {
    format!("m{i:02}")
}

/// A set of up to 40 member ids drawn from a pool of 60.
fn members_strategy() -> impl Strategy<Value = BTreeSet<String>> {
    prop::collection::btree_set(0u32..60, 0..=40)
        .prop_map(|ids| ids.into_iter().map(member_name).collect())
}

/// Up to 300 shard indexes, not necessarily contiguous.
fn shards_strategy() -> impl Strategy<Value = BTreeSet<u32>> {
    prop::collection::btree_set(0u32..400, 0..=300)
}

/// A previous map with garbage: members from the whole pool (so some have departed), shard indexes
/// beyond the shard set, and shards listed under several members.
fn previous_strategy() -> impl Strategy<Value = Assignment> {
    prop::collection::btree_map(
        (0u32..60).prop_map(member_name),
        prop::collection::btree_set(0u32..450, 0..=30),
        0..=40,
    )
}

/// Every shard assigned exactly once, keys equal the members, spread at most one.
fn check_invariants(shards: &BTreeSet<u32>, members: &BTreeSet<String>, out: &Assignment) {
    let keys: BTreeSet<String> = out.keys().cloned().collect();
    assert_eq!(&keys, members, "result keys must be exactly the members");
    if members.is_empty() {
        assert!(out.is_empty());
        return;
    }
    let mut seen = BTreeSet::new();
    for owned in out.values() {
        for &shard in owned {
            assert!(seen.insert(shard), "shard {shard} assigned twice");
        }
    }
    assert_eq!(&seen, shards, "every shard assigned, and nothing else");
    assert!(spread(out) <= 1, "spread {} > 1: {out:?}", spread(out));
}

/// Valid previous shard count of each live member: the first lister in memberId order owns a shard.
fn previous_counts(
    shards: &BTreeSet<u32>,
    members: &BTreeSet<String>,
    previous: &Assignment,
) -> Vec<usize> {
    let mut owner: BTreeMap<u32, &String> = BTreeMap::new();
    for (member, owned) in previous {
        for shard in owned {
            owner.entry(*shard).or_insert(member);
        }
    }
    members
        .iter()
        .map(|m| {
            shards
                .iter()
                .filter(|s| owner.get(s).is_some_and(|o| *o == m))
                .count()
        })
        .collect()
}

/// Moves forced by a given quota vector.
fn forced_moves(counts: &[usize], quotas: &[usize]) -> usize {
    counts
        .iter()
        .zip(quotas)
        .map(|(p, q)| p.saturating_sub(*q))
        .sum()
}

/// The lower bound on moves of any balanced assignment, using the greedy quota choice (the r largest
/// previous counts get q + 1).
fn lower_bound(shard_count: usize, counts: &[usize]) -> usize {
    let n = counts.len();
    if n == 0 {
        return 0;
    }
    let (q, r) = (shard_count / n, shard_count % n);
    let mut sorted = counts.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let quotas: Vec<usize> = (0..n).map(|i| if i < r { q + 1 } else { q }).collect();
    forced_moves(&sorted, &quotas)
}

/// The same bound by trying every choice of the r members that get q + 1.
fn lower_bound_brute_force(shard_count: usize, counts: &[usize]) -> usize {
    let n = counts.len();
    if n == 0 {
        return 0;
    }
    let (q, r) = (shard_count / n, shard_count % n);
    let mut best = usize::MAX;
    for mask in 0u32..(1 << n) {
        if mask.count_ones() as usize != r {
            continue;
        }
        let quotas: Vec<usize> = (0..n)
            .map(|i| if mask & (1 << i) != 0 { q + 1 } else { q })
            .collect();
        best = best.min(forced_moves(counts, &quotas));
    }
    best
}

/// A random balanced assignment of `0..shard_count` to `member_count` members: shards shuffled and
/// cut into pieces of q or q + 1, the larger pieces going to random members.
fn balanced_strategy(
    shard_count: u32,
    member_count: u32,
) -> impl Strategy<Value = (BTreeSet<u32>, Assignment)> {
    let order = Just((0..shard_count).collect::<Vec<u32>>()).prop_shuffle();
    let big = Just((0..member_count).collect::<Vec<u32>>()).prop_shuffle();
    (order, big).prop_map(move |(order, big)| {
        let n = member_count.max(1) as usize;
        let (q, r) = (order.len() / n, order.len() % n);
        let mut sizes = vec![q; n];
        for &m in big.iter().take(r) {
            sizes[m as usize] = q + 1;
        }
        let mut rest = order.into_iter();
        let previous: Assignment = sizes
            .iter()
            .enumerate()
            .map(|(m, &size)| (member_name(m as u32), rest.by_ref().take(size).collect()))
            .collect();
        ((0..shard_count).collect(), previous)
    })
}

#[derive(Debug, Clone)]
enum Step {
    Join,
    Leave(Index),
    Scale(BTreeSet<u32>),
}

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => Just(Step::Join),
        2 => any::<Index>().prop_map(Step::Leave),
        1 => shards_strategy().prop_map(Step::Scale),
    ]
}

proptest! {
    #[test]
    fn random_inputs_are_covered_balanced_deterministic_and_optimal(
        shards in shards_strategy(),
        members in members_strategy(),
        previous in previous_strategy(),
    ) {
        let out = assign(&shards, &members, &previous);
        check_invariants(&shards, &members, &out);
        prop_assert_eq!(&assign(&shards, &members, &previous), &out);
        let counts = previous_counts(&shards, &members, &previous);
        prop_assert_eq!(moves(&previous, &out), lower_bound(shards.len(), &counts));
    }

    #[test]
    fn greedy_quota_choice_matches_brute_force(
        shard_count in 0usize..=60,
        counts in prop::collection::vec(0usize..=20, 0..=10),
    ) {
        prop_assert_eq!(
            lower_bound(shard_count, &counts),
            lower_bound_brute_force(shard_count, &counts)
        );
    }

    #[test]
    fn reassigning_own_result_moves_nothing(
        shards in shards_strategy(),
        members in members_strategy(),
        previous in previous_strategy(),
    ) {
        let first = assign(&shards, &members, &previous);
        let second = assign(&shards, &members, &first);
        prop_assert_eq!(moves(&first, &second), 0);
        prop_assert_eq!(second, first);
    }

    #[test]
    fn a_join_moves_at_most_the_new_fair_share(
        (shard_count, member_count, (shards, previous)) in (0u32..=300, 1u32..=30)
            .prop_flat_map(|(s, n)| (Just(s), Just(n), balanced_strategy(s, n))),
    ) {
        let mut members: BTreeSet<String> = previous.keys().cloned().collect();
        members.insert("zz-new".to_string());
        let out = assign(&shards, &members, &previous);
        check_invariants(&shards, &members, &out);
        let bound = shard_count.div_ceil(member_count + 1) as usize;
        prop_assert!(moves(&previous, &out) <= bound);
        // Nothing moves between old members: every shard an old member lost went to the newcomer.
        let new_share = out.get("zz-new").map_or(0, BTreeSet::len);
        prop_assert!(new_share <= bound);
        prop_assert_eq!(moves(&previous, &out), new_share);
    }

    #[test]
    fn a_leave_moves_only_the_leavers_shards(
        ((shards, previous), leaver) in (0u32..=300, 1u32..=30)
            .prop_flat_map(|(s, n)| (balanced_strategy(s, n), any::<Index>())),
    ) {
        let mut members: BTreeSet<String> = previous.keys().cloned().collect();
        let gone = leaver.get(&members.iter().cloned().collect::<Vec<_>>()).clone();
        members.remove(&gone);
        let out = assign(&shards, &members, &previous);
        check_invariants(&shards, &members, &out);
        prop_assert_eq!(moves(&previous, &out), 0);
        for member in &members {
            prop_assert!(previous[member].is_subset(&out[member]), "{} lost a shard", member);
        }
    }

    #[test]
    fn join_leave_scale_sequences_keep_invariants(
        initial in shards_strategy(),
        steps in prop::collection::vec(step_strategy(), 0..=50),
    ) {
        let mut shards = initial;
        let mut members: BTreeSet<String> = BTreeSet::new();
        let mut current: Assignment = BTreeMap::new();
        let mut joined = 0u32;
        for step in steps {
            match step {
                Step::Join => {
                    members.insert(format!("j{joined:03}"));
                    joined += 1;
                }
                Step::Leave(index) => {
                    if !members.is_empty() {
                        let ids: Vec<String> = members.iter().cloned().collect();
                        members.remove(index.get(&ids));
                    }
                }
                Step::Scale(next_shards) => shards = next_shards,
            }
            let next = assign(&shards, &members, &current);
            check_invariants(&shards, &members, &next);
            prop_assert_eq!(&assign(&shards, &members, &current), &next);
            let counts = previous_counts(&shards, &members, &current);
            prop_assert_eq!(moves(&current, &next), lower_bound(shards.len(), &counts));
            current = next;
        }
    }
}
