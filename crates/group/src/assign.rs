//! The sticky, balanced assignor: a pure function from (shards, live members, previous target) to
//! the next target assignment.
//!
//! Why it exists: the reference assignor (wire contract §4.8) can leave a spread of two or more
//! shards between members and moves more shards than needed. This one always reaches a spread of at
//! most one and moves the fewest shards any balanced assignment can move.
//!
//! The algorithm, with `S` shards and `N` members, `q = S / N`, `r = S % N`:
//! 1. Previous owners. `previous` is read in memberId order; a shard's previous owner is the first
//!    member (in that order) that lists it, live or not. Shards not in `shards` are ignored. A
//!    member's *valid previous* shards are the shards of `shards` whose previous owner it is.
//! 2. Quotas. Every member gets `q`, and `r` of them get `q + 1`: those with the most valid previous
//!    shards, ties broken by the smaller memberId. This maximises the shards that can stay put.
//! 3. Keep. Each member keeps its lowest `min(valid previous, quota)` valid previous shards.
//! 4. Fill. All other shards are freed and handed out in ascending order: members are visited in
//!    ascending memberId order, and each one below its quota takes the lowest remaining freed shards
//!    until it reaches its quota.
//!
//! A "move" is a shard whose previous owner is still live and whose new owner differs. Shards of
//! departed members are not moves. With the quotas above the number of moves equals the lower bound
//! `Σ max(0, valid_previous_i − quota_i)`, so no balanced assignment moves fewer shards.
//!
//! Cost: `O((P + S) log S + N log N)` where `P` is the number of entries in `previous`; there is no
//! scan of every shard against every member. Only `BTreeMap`/`BTreeSet` and sorted `Vec`s are used,
//! so the output depends on the input alone.

use std::collections::{BTreeMap, BTreeSet};

/// Computes the target assignment of `shards` to `members`, sticky and balanced.
///
/// Every shard goes to exactly one member; the result has an entry (possibly empty) for every
/// member and no other key. With no members the result is empty. See the module docs for the
/// exact, deterministic rules.
pub fn assign(
    shards: &BTreeSet<u32>,
    members: &BTreeSet<String>,
    previous: &BTreeMap<String, BTreeSet<u32>>,
) -> BTreeMap<String, BTreeSet<u32>> {
    let member_ids: Vec<&str> = members.iter().map(String::as_str).collect();
    let targets = assign_sorted(
        shards,
        &member_ids,
        previous.iter().map(|(id, s)| (id.as_str(), s)),
    );
    member_ids
        .into_iter()
        .zip(targets)
        .map(|(id, set)| (id.to_owned(), set))
        .collect()
}

/// [`assign`] over borrowed ids, for callers that keep their own map (no member id is copied): the target
/// of each of `member_ids` (ascending, distinct), in that order. `previous` yields `(member id, shards)` in
/// ascending member-id order, as a `BTreeMap` does.
pub fn assign_sorted<'p>(
    shards: &BTreeSet<u32>,
    member_ids: &[&str],
    previous: impl IntoIterator<Item = (&'p str, &'p BTreeSet<u32>)>,
) -> Vec<BTreeSet<u32>> {
    if member_ids.is_empty() {
        return Vec::new();
    }
    let shard_list: Vec<u32> = shards.iter().copied().collect();

    let valid = valid_previous(&shard_list, member_ids, previous);
    let quotas = quotas(shard_list.len(), &valid);

    // Positions (into `shard_list`) held by each member; `taken` marks positions already placed.
    let mut held: Vec<Vec<usize>> = Vec::with_capacity(member_ids.len());
    let mut taken = vec![false; shard_list.len()];
    for (mut own, &quota) in valid.into_iter().zip(&quotas) {
        // `own` is ascending, so truncating keeps the lowest shard indexes.
        own.truncate(quota);
        for &pos in &own {
            taken[pos] = true;
        }
        held.push(own);
    }

    let mut freed = taken
        .iter()
        .enumerate()
        .filter(|(_, is_taken)| !**is_taken)
        .map(|(pos, _)| pos);
    for (own, &quota) in held.iter_mut().zip(&quotas) {
        while own.len() < quota {
            match freed.next() {
                Some(pos) => own.push(pos),
                None => break,
            }
        }
    }

    held.into_iter()
        .map(|own| {
            own.into_iter()
                .filter_map(|pos| shard_list.get(pos).copied())
                .collect()
        })
        .collect()
}

/// Counts the shards whose previous owner (the first member listing it in `previous`, in memberId
/// order) is still a member of `next` and whose owner in `next` is a different member.
///
/// Shards that left the shard set (absent from `next`) and shards of departed members do not count.
pub fn moves(
    previous: &BTreeMap<String, BTreeSet<u32>>,
    next: &BTreeMap<String, BTreeSet<u32>>,
) -> usize {
    let mut owner_now: BTreeMap<u32, &str> = BTreeMap::new();
    for (member, owned) in next {
        for &shard in owned {
            owner_now.entry(shard).or_insert(member.as_str());
        }
    }
    let mut seen: BTreeSet<u32> = BTreeSet::new();
    let mut count = 0;
    for (member, owned) in previous {
        let live = next.contains_key(member);
        for &shard in owned {
            if !seen.insert(shard) || !live {
                continue;
            }
            if owner_now
                .get(&shard)
                .is_some_and(|now| *now != member.as_str())
            {
                count += 1;
            }
        }
    }
    count
}

/// The difference between the largest and the smallest shard count among the members of `next`
/// (0 when `next` is empty).
pub fn spread(next: &BTreeMap<String, BTreeSet<u32>>) -> u32 {
    let mut counts = next.values().map(BTreeSet::len);
    let Some(first) = counts.next() else {
        return 0;
    };
    let (min, max) = counts.fold((first, first), |(lo, hi), n| (lo.min(n), hi.max(n)));
    u32::try_from(max - min).unwrap_or(u32::MAX)
}

/// For each member (by index in `member_ids`), the ascending positions in `shard_list` of the shards
/// whose previous owner it is. The first member listing a shard in `previous` owns it, even when
/// that member has departed.
fn valid_previous<'p>(
    shard_list: &[u32],
    member_ids: &[&str],
    previous: impl IntoIterator<Item = (&'p str, &'p BTreeSet<u32>)>,
) -> Vec<Vec<usize>> {
    let mut valid: Vec<Vec<usize>> = vec![Vec::new(); member_ids.len()];
    let mut claimed = vec![false; shard_list.len()];
    // `previous` and `member_ids` are both ascending: find each owner by walking `member_ids` once.
    let mut cursor = 0;
    for (owner, owned) in previous {
        while cursor < member_ids.len() && member_ids[cursor] < owner {
            cursor += 1;
        }
        let live = (member_ids.get(cursor) == Some(&owner)).then_some(cursor);
        for shard in owned {
            let Ok(pos) = shard_list.binary_search(shard) else {
                continue;
            };
            let Some(slot) = claimed.get_mut(pos) else {
                continue;
            };
            if *slot {
                continue;
            }
            *slot = true;
            if let Some(own) = live.and_then(|idx| valid.get_mut(idx)) {
                own.push(pos);
            }
        }
    }
    valid
}

/// The quota of each member: `q` for all, `q + 1` for the `r` members with the most valid previous
/// shards (ties → smaller memberId, which is the smaller index).
fn quotas(shard_count: usize, valid: &[Vec<usize>]) -> Vec<usize> {
    let n = valid.len();
    if n == 0 {
        return Vec::new();
    }
    let q = shard_count / n;
    let r = shard_count % n;
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| valid[b].len().cmp(&valid[a].len()).then(a.cmp(&b)));
    let mut quotas = vec![q; n];
    for &idx in order.iter().take(r) {
        quotas[idx] = q + 1;
    }
    quotas
}

#[cfg(test)]
mod tests {
    use super::{assign, moves, spread};
    use std::collections::{BTreeMap, BTreeSet};

    fn set(items: &[u32]) -> BTreeSet<u32> {
        items.iter().copied().collect()
    }

    fn names(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn map(items: &[(&str, &[u32])]) -> BTreeMap<String, BTreeSet<u32>> {
        items.iter().map(|(m, s)| (m.to_string(), set(s))).collect()
    }

    #[test]
    fn no_members_gives_empty_map() {
        let out = assign(&set(&[0, 1]), &BTreeSet::new(), &map(&[("a", &[0])]));
        assert!(out.is_empty());
    }

    #[test]
    fn join_then_scale_follows_documented_order() {
        let shards = set(&[0, 1, 2, 3]);
        let one = assign(&shards, &names(&["A"]), &BTreeMap::new());
        assert_eq!(one, map(&[("A", &[0, 1, 2, 3])]));
        let two = assign(&shards, &names(&["A", "B"]), &one);
        assert_eq!(two, map(&[("A", &[0, 1]), ("B", &[2, 3])]));
        let eight = assign(&(0..8).collect(), &names(&["A", "B"]), &two);
        assert_eq!(eight, map(&[("A", &[0, 1, 4, 5]), ("B", &[2, 3, 6, 7])]));
        assert_eq!(moves(&two, &eight), 0);
    }

    #[test]
    fn larger_quota_goes_to_the_member_with_most_previous_shards() {
        // 5 shards, 2 members: b previously had 3, so b gets the quota of 3 and nothing moves.
        let prev = map(&[("a", &[0, 1]), ("b", &[2, 3, 4])]);
        let out = assign(&(0..5).collect(), &names(&["a", "b"]), &prev);
        assert_eq!(out, prev);
    }

    #[test]
    fn duplicate_listing_belongs_to_first_member_in_id_order() {
        // Shard 1 is listed by both; "a" comes first, so "b" has only shard 2 as its own.
        let prev = map(&[("a", &[0, 1]), ("b", &[1, 2])]);
        let out = assign(&(0..4).collect(), &names(&["a", "b"]), &prev);
        assert_eq!(out, map(&[("a", &[0, 1]), ("b", &[2, 3])]));
        assert_eq!(moves(&prev, &out), 0);
    }

    #[test]
    fn departed_and_unknown_entries_are_ignored() {
        let prev = map(&[("gone", &[0, 1, 99]), ("x", &[2, 77])]);
        let out = assign(&(0..4).collect(), &names(&["x", "y"]), &prev);
        assert_eq!(out, map(&[("x", &[0, 2]), ("y", &[1, 3])]));
        assert_eq!(moves(&prev, &out), 0);
    }

    #[test]
    fn spread_of_empty_and_uneven_maps() {
        assert_eq!(spread(&BTreeMap::new()), 0);
        assert_eq!(spread(&map(&[("a", &[0, 1, 2]), ("b", &[])])), 3);
    }
}
