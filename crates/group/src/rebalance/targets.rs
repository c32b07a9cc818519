//! The new target after the active members changed, computed from what changed rather than rebuilt.
//!
//! The assignor (`assign.rs`) rebuilds every member's target: a list of every shard, a vector of positions per
//! member, a new set per member, then each new set compared with the old one. When the active members'
//! previous targets are a partition of some of the assignable shards — what the assignor itself leaves, and
//! what invariant checks keep (one target per shard) — its result follows from the target sizes alone: a
//! member's valid previous shards are its whole target, the quotas follow from the sizes, a member keeps its
//! lowest shards up to its quota, and the shards freed (those of members above their quota, and those no
//! target names) go in ascending order to the members below theirs, in member-id order. Only the members
//! above or below their quota, the new members and the entries of members no longer active change; the rest
//! are read once (their size) and left alone. Debug builds compare the result with the assignor's
//! (`rebalance::recompute_target_noting`); anything else (overlapping targets, a shard outside the set, no
//! active member, a shard index beyond the dense range) is left to the assignor.

use super::Noted;
use super::bits::ShardBits;
use crate::model::{Group, MemberState};
use std::collections::BTreeMap;

/// The assignable shards without the reserved ones (the assignor's shard set), as bits, if all are dense.
pub(super) fn assignor_shards(g: &Group) -> Option<ShardBits> {
    let mut shards = ShardBits::below(g.shard_count)?;
    for &s in &g.draining_shards {
        shards.insert(s);
    }
    for r in &g.static_reservations {
        for &s in &r.shards {
            shards.remove(s);
        }
    }
    shards.is_dense().then_some(shards)
}

/// Changes `g`'s target map to what `assign_sorted` gives over the active members, their previous targets and
/// `shards` (noting every member whose entry changed), when the previous targets are a partition as the
/// module docs say; false, having changed nothing, otherwise.
pub(super) fn recompute_by_changes(g: &mut Group, shards: &ShardBits, noted: &mut Noted) -> bool {
    let Group {
        members,
        target_assignments: targets,
        ..
    } = g;
    // Active members in id order, each with the size of its target entry (None: no entry); target entries
    // of ids that are not active members are counted as stale. One walk of both maps.
    let mut ids: Vec<&str> = Vec::new();
    let mut sizes: Vec<Option<usize>> = Vec::new();
    let mut seen = ShardBits::default();
    let mut entries = targets.iter().peekable();
    let mut stale = 0usize;
    for m in members.values().filter(|m| m.state == MemberState::Active) {
        let id = m.member_id.as_str();
        let mut entry = None;
        while let Some((key, t)) = entries.peek() {
            match key.as_str().cmp(id) {
                std::cmp::Ordering::Less => stale += 1,
                std::cmp::Ordering::Equal => entry = Some(*t),
                std::cmp::Ordering::Greater => break,
            }
            entries.next();
            if entry.is_some() {
                break;
            }
        }
        if let Some(t) = entry {
            for &s in t {
                if !shards.contains(s) || !seen.insert(s) {
                    return false;
                }
            }
        }
        ids.push(id);
        sizes.push(entry.map(|t| t.len()));
    }
    stale += entries.count();
    let n = ids.len();
    if n == 0 {
        return false;
    }

    // Quotas: q each, q + 1 for the r members with the largest targets (ties: the smaller id). Found by
    // counting sizes: every size above `threshold` gets q + 1, and the first `extra_at_threshold` of that size.
    let total = shards.len();
    let (q, r) = (total / n, total % n);
    let mut by_size: BTreeMap<usize, usize> = BTreeMap::new();
    for size in &sizes {
        *by_size.entry(size.unwrap_or(0)).or_default() += 1;
    }
    let mut above = 0;
    let mut threshold = (usize::MAX, 0);
    for (&size, &count) in by_size.iter().rev() {
        if above + count > r {
            threshold = (size, r - above);
            break;
        }
        above += count;
    }

    // Members above their quota give up their highest shards; members below take freed shards in id order.
    let mut freed: Vec<u32> = Vec::new();
    let mut short: Vec<(usize, usize)> = Vec::new();
    let mut at_threshold = 0;
    for (i, size) in sizes.iter().enumerate() {
        let have = size.unwrap_or(0);
        let larger = have > threshold.0
            || (have == threshold.0 && {
                at_threshold += 1;
                at_threshold <= threshold.1
            });
        let quota = if larger { q + 1 } else { q };
        if have > quota {
            if let Some(t) = targets.get_mut(ids[i]) {
                for _ in quota..have {
                    freed.extend(t.pop_last());
                }
            }
            noted.insert(ids[i].to_owned());
        } else if have < quota || size.is_none() {
            short.push((i, quota - have));
        }
    }
    freed.extend(shards.dense_minus(&seen));
    freed.sort_unstable();
    let mut freed = freed.into_iter();
    for (i, need) in short {
        let id = ids[i];
        let t = match targets.get_mut(id) {
            Some(t) => t,
            None => targets.entry(id.to_owned()).or_default(),
        };
        t.extend(freed.by_ref().take(need));
        noted.insert(id.to_owned());
    }
    if stale > 0 {
        let mut active = ids.iter().peekable();
        targets.retain(|id, _| {
            while active.next_if(|a| **a < id.as_str()).is_some() {}
            let keep = active.peek().is_some_and(|a| **a == id.as_str());
            if !keep {
                noted.insert(id.clone());
            }
            keep
        });
    }
    true
}
