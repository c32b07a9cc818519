//! The rebalance after a batch, computed from what the batch changed with a [`RebalanceIndex`] of the group.
//!
//! Same result as the full computation, member for member and noted member for noted member:
//! - The new target (`recompute_by_changes`' rule: a member keeps its lowest shards up to its quota; the
//!   freed shards, ascending, go to the members below their quota in id order) needs the members above or
//!   below their quota. The quotas follow from the count of members per target size (q each, q + 1 for the r
//!   largest, ties to the smaller id), so those members are read off the index's size order: every member of
//!   size ≥ q + 2 or < q, the last ones of size q + 1 not among the r largest, the first ones of size q among
//!   them, and the members without an entry. Every other member's quota equals its size: it does not change.
//! - `settle` changes a member only if its revocations, take-backs or deadline are due (the index's
//!   unsettled members), or it lacks a target shard and one can be granted (lacking: while no targeted shard
//!   is free and ungated nobody can be granted one, so those are not visited), or its record or target entry
//!   changed since the index counted it (the batch's members and those whose target just changed); any other member is left
//!   exactly as the full walk would leave it, since what it reads of that member did not change. The held
//!   shards the grants look at and the group's state come from the index's counts.
//!
//! When the header changed what the index was counted under (holds, gates, reservations, the shard range),
//! the full computation runs and the index is counted afresh. Tests and debug builds run the full computation
//! on a copy every time and insist on the same group, the same noted members and the same index as one
//! counted from scratch.

use super::index::RebalanceIndex;
use super::{Noted, StateSoFar, lacks, recompute_target_noting, settle_member, settle_noting};
use crate::model::{Group, GroupState, ShardSet};
use crate::timing::Timing;
use std::collections::{BTreeMap, BTreeSet};

/// [`super::recompute_target_noting`] with `index`, an index of `g` as it is (kept so: it counts the changes it
/// makes); `dirty`: the members whose record or target entry changed since the last rebalance (looked at
/// again whatever the index says).
pub fn recompute_target_indexed(
    g: &mut Group,
    index: &mut RebalanceIndex,
    dirty: &BTreeSet<String>,
    now_ms: i64,
    timing: &Timing,
    noted: &mut Noted,
) {
    #[cfg(any(test, debug_assertions))]
    let expected = full_result(recompute_target_noting, g, noted, now_ms, timing);
    if !index.fits(g) {
        full_and_recount(recompute_target_noting, g, index, now_ms, timing, noted);
    } else {
        let mut changed = Noted::new();
        if target_by_index(g, index, &mut changed) {
            let mut dirty = dirty.clone();
            dirty.extend(changed.iter().cloned());
            noted.extend(changed);
            settle_by_index(g, index, &dirty, now_ms, timing, noted);
        } else {
            // Not a partition, or no active member: the assignor decides, and the index is counted afresh.
            full_and_recount(recompute_target_noting, g, index, now_ms, timing, noted);
        }
    }
    #[cfg(any(test, debug_assertions))]
    check(g, index, noted, expected);
}

/// [`super::settle_noting`] with `index`, as [`recompute_target_indexed`] takes it.
pub fn settle_indexed(
    g: &mut Group,
    index: &mut RebalanceIndex,
    dirty: &BTreeSet<String>,
    now_ms: i64,
    timing: &Timing,
    noted: &mut Noted,
) {
    #[cfg(any(test, debug_assertions))]
    let expected = full_result(settle_noting, g, noted, now_ms, timing);
    if index.fits(g) {
        settle_by_index(g, index, dirty, now_ms, timing, noted);
    } else {
        full_and_recount(settle_noting, g, index, now_ms, timing, noted);
    }
    #[cfg(any(test, debug_assertions))]
    check(g, index, noted, expected);
}

/// A full rebalance step (`recompute_target_noting` or `settle_noting`).
type FullStep = fn(&mut Group, i64, &Timing, &mut Noted);

/// What the full step gives on a copy of `g` and `noted`: the result the incremental one must equal.
#[cfg(any(test, debug_assertions))]
fn full_result(
    full: FullStep,
    g: &Group,
    noted: &Noted,
    now_ms: i64,
    timing: &Timing,
) -> (Group, Noted) {
    let (mut g, mut noted) = (g.clone(), noted.clone());
    full(&mut g, now_ms, timing, &mut noted);
    (g, noted)
}

/// The full step on `g` itself, where the index cannot answer; the index is then counted afresh.
fn full_and_recount(
    full: FullStep,
    g: &mut Group,
    index: &mut RebalanceIndex,
    now_ms: i64,
    timing: &Timing,
    noted: &mut Noted,
) {
    full(g, now_ms, timing, noted);
    recount_all(g, index);
}

/// The incremental result against the full one (and the index against one counted from scratch).
#[cfg(any(test, debug_assertions))]
fn check(g: &Group, index: &RebalanceIndex, noted: &Noted, expected: (Group, Noted)) {
    assert!(
        *g == expected.0,
        "the rebalance by the index differs from the full rebalance"
    );
    assert_eq!(
        *noted, expected.1,
        "the rebalance by the index noted other members"
    );
    assert_eq!(
        Some(index),
        RebalanceIndex::of(g).as_ref(),
        "the index kept differs from one counted afresh"
    );
}

/// Counts `g` afresh into `index` (left as it is if `g`'s shards are not dense: then its `fits` answers for
/// the header it was counted under, so it is not used with `g`; only its instance ids, which are used whatever
/// the header, are counted afresh).
fn recount_all(g: &Group, index: &mut RebalanceIndex) {
    match RebalanceIndex::of(g) {
        Some(fresh) => *index = fresh,
        None => index.recount_instances(g),
    }
}

/// The new target from the index's sizes (the rule in the module docs), noting the entries changed; false,
/// having changed nothing, when the targets are not a partition of the assignor's shards or no member is
/// active (the assignor decides then).
fn target_by_index(g: &mut Group, index: &mut RebalanceIndex, noted: &mut Noted) -> bool {
    if index.doubled > 0 || index.outside > 0 || index.active == 0 {
        return false;
    }
    let (n, total) = (index.active, index.assignor_total);
    let (q, r) = (total / n, total % n);
    // The r largest: every size above `threshold.0`, and the first `threshold.1` (by id) of that size.
    let mut above = 0;
    let mut threshold = (usize::MAX, 0);
    for (&size, &count) in index.by_size.iter().rev() {
        if above + count > r {
            threshold = (size, r - above);
            break;
        }
        above += count;
    }
    let larger = |size: usize, rank: usize| {
        size > threshold.0 || (size == threshold.0 && rank < threshold.1)
    };
    // Member → (its size, its quota), for the members whose quota differs from their size.
    let mut plan: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (&size, &count) in &index.by_size {
        let of_size = || {
            index
                .sizes
                .range((size, String::new())..)
                .take_while(move |(s, _)| *s == size)
        };
        if size >= q + 2 || size < q {
            for (rank, (_, id)) in of_size().enumerate() {
                let quota = if larger(size, rank) { q + 1 } else { q };
                plan.insert(id.clone(), (size, quota));
            }
        } else if size == q + 1 {
            // Above their quota q unless among the r largest.
            let not_larger = if threshold.0 > size {
                count
            } else if threshold.0 == size {
                count.saturating_sub(threshold.1)
            } else {
                0
            };
            for (_, id) in index
                .sizes
                .range(..(size + 1, String::new()))
                .rev()
                .take(not_larger)
            {
                plan.insert(id.clone(), (size, q));
            }
        } else {
            // size == q: below their quota q + 1 when among the r largest.
            let larger_count = if threshold.0 < size {
                count
            } else if threshold.0 == size {
                threshold.1.min(count)
            } else {
                0
            };
            for (_, id) in of_size().take(larger_count) {
                plan.insert(id.clone(), (size, q + 1));
            }
        }
    }
    for id in &index.no_entry {
        // Not planned: size 0, not among the largest, so q is 0 (else every size-0 member is planned).
        if !plan.contains_key(id) {
            plan.insert(id.clone(), (0, q));
        }
    }
    let mut freed: Vec<u32> = index.untargeted.iter().copied().collect();
    let stale: Vec<String> = index.stale.iter().cloned().collect();
    let Group {
        members,
        target_assignments: targets,
        ..
    } = g;
    for id in plan.keys().chain(&stale) {
        index.forget_target(id, members.get(id), targets.get(id));
    }
    let mut short: Vec<(&str, usize)> = Vec::new();
    for (id, &(have, quota)) in &plan {
        if have > quota {
            if let Some(t) = targets.get_mut(id) {
                for _ in quota..have {
                    freed.extend(t.pop_last());
                }
            }
            noted.insert(id.clone());
        } else if have < quota || !targets.contains_key(id) {
            short.push((id, quota - have));
        }
    }
    freed.sort_unstable();
    let mut freed = freed.into_iter();
    for (id, need) in short {
        let t = match targets.get_mut(id) {
            Some(t) => t,
            None => targets.entry(id.to_owned()).or_default(),
        };
        t.extend(freed.by_ref().take(need));
        noted.insert(id.to_owned());
    }
    for id in &stale {
        targets.remove(id);
        noted.insert(id.clone());
    }
    for id in plan.keys() {
        index.count_target(id, members.get(id), targets.get(id));
    }
    true
}

/// Settle by the index: the members in `dirty`, and those the index says settle acts on; the rest are left alone (the module docs say why that is the full walk's result).
fn settle_by_index(
    g: &mut Group,
    index: &mut RebalanceIndex,
    dirty: &BTreeSet<String>,
    now_ms: i64,
    timing: &Timing,
    noted: &mut Noted,
) {
    let epoch = g.assignment_epoch;
    let gated = index.gated.clone();
    let mut visit: BTreeSet<String> = dirty.clone();
    visit.extend(index.unsettled.iter().cloned());
    // A member that only lacks a target shard changes only by a grant: while no shard can be granted (every
    // targeted shard held or gated, as while a group forms and its first member still holds what the others
    // are meant to get), such members are left out, so a batch costs what it changed.
    if !index.lacking.is_empty() && index.any_grantable() {
        visit.extend(index.lacking.iter().cloned());
    }
    let no_target = ShardSet::new();
    let Group {
        members,
        target_assignments: targets,
        ..
    } = g;
    let mut lacking: Vec<&str> = Vec::new();
    for id in &visit {
        index.forget_flags(id);
        let Some(m) = members.get_mut(id).filter(|m| m.state.is_live()) else {
            continue;
        };
        let entry = if m.state == crate::model::MemberState::Active {
            targets.get(id)
        } else {
            None
        };
        settle_member(
            m,
            entry.unwrap_or(&no_target),
            &gated,
            epoch,
            now_ms,
            timing,
            noted,
        );
        if entry.is_some_and(|t| lacks(m, t, &gated)) {
            lacking.push(id);
        }
    }
    // Grants: free target shards go to their target owner, in memberId order (`visit` is ascending).
    for id in lacking {
        let (Some(m), Some(target)) = (members.get_mut(id), targets.get(id)) else {
            continue;
        };
        let mut granted = false;
        for &s in target {
            if !index.is_held(s) && !m.assigned.contains(&s) && !gated.contains(&s) {
                m.assigned.insert(s);
                index.hold(s);
                granted = true;
            }
        }
        if granted {
            m.member_epoch = epoch;
            noted.insert(m.member_id.clone());
        }
    }
    for id in &visit {
        index.count_flags(id, members.get(id), targets.get(id));
    }
    let state = StateSoFar {
        any_active: index.active > 0,
        diverged: !index.diverged.is_empty(),
        others_busy: !index.busy.is_empty(),
    };
    g.state = state.of(g.holds.is_empty());
    g.reconciling_since_ms = match g.state {
        GroupState::Reconciling => g.reconciling_since_ms.or(Some(now_ms)),
        GroupState::Stable | GroupState::Empty => None,
    };
}
