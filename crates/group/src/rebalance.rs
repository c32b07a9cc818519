//! Revoke-before-assign: turns a target assignment into grants and revocations.
//!
//! This is the one place where shards are granted, so it is where invariant 1 (one reader per shard) is
//! enforced: a shard is granted only when no live member holds it (assigned or revoking) and no hold covers
//! it. Revocations record the member epoch at which they were handed out, so that only a report made after
//! the member saw the revocation can release the shard.

use crate::assign::assign_sorted;
use crate::model::{EpochOverflow, Group, GroupState, MemberState, ShardSet, incremented};
use crate::timing::Timing;

/// The group epochs after a membership or shard-range change, computed (checked) before anything is changed,
/// so that a transition that cannot bump them is refused whole rather than half applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bump {
    group_epoch: i64,
    metadata_version: i64,
}

impl Bump {
    /// Sets the epochs computed by [`bumped`] (on a copy of the group they were computed from).
    pub fn apply(self, g: &mut Group) {
        g.group_epoch = self.group_epoch;
        g.metadata_version = self.metadata_version;
        g.assignment_epoch = self.group_epoch;
    }
}

/// The epochs [`bump_epochs`] would set, or why it cannot.
pub fn bumped(g: &Group) -> Result<Bump, EpochOverflow> {
    Ok(Bump {
        group_epoch: incremented("groupEpoch", g.group_epoch)?,
        metadata_version: incremented("metadataVersion", g.metadata_version)?,
    })
}

/// Bumps the group epochs for a membership or shard-range change (nothing changes on an overflow).
pub fn bump_epochs(g: &mut Group) -> Result<(), EpochOverflow> {
    bumped(g)?.apply(g);
    Ok(())
}

/// Recomputes the target assignment over the active members (sticky, balanced), then settles grants.
///
/// It runs on every join and leave, so at thousands of members it must not rebuild the target map: it
/// borrows the member ids, and only entries whose target changed (or new members) are written.
///
/// Shards reserved for a stopped static member (`Group::static_reservations`) are left out: no other member's
/// target changes when a static member stops, and none when it comes back for them.
pub fn recompute_target(g: &mut Group, now_ms: i64, timing: &Timing) {
    recompute_target_noting(g, now_ms, timing, &mut Noted::new());
}

/// The members whose `members` or `targetAssignments` entry a rebalance changed (or removed).
pub type Noted = std::collections::BTreeSet<String>;

/// [`recompute_target`], adding to `noted` every member whose target or record it changed, so that a write
/// can carry those entries without comparing every member.
pub fn recompute_target_noting(g: &mut Group, now_ms: i64, timing: &Timing, noted: &mut Noted) {
    let mut shards = g.assignable_shards();
    if !g.static_reservations.is_empty() {
        let reserved = g.reserved_shards();
        shards.retain(|s| !reserved.contains(s));
    }
    // `members` is keyed by member id, so this is ascending.
    let members: Vec<&str> = g
        .members
        .values()
        .filter(|m| m.state == MemberState::Active)
        .map(|m| m.member_id.as_str())
        .collect();
    // Both `members` and the target map are ascending: every lookup below is a forward walk.
    let mut seen = AscendingIds::new(&members);
    let previous = g
        .target_assignments
        .iter()
        .filter(move |(id, _)| seen.contains(id))
        .map(|(id, s)| (id.as_str(), s));
    let mut targets = assign_sorted(&shards, &members, previous);
    let mut seen = AscendingIds::new(&members);
    g.target_assignments.retain(|id, _| {
        let keep = seen.contains(id);
        if !keep {
            noted.insert(id.clone());
        }
        keep
    });
    // Every key left is a member: update in place, and collect the members that have no entry yet.
    let mut missing = Vec::new();
    let mut i = 0;
    for (id, old) in g.target_assignments.iter_mut() {
        while i < members.len() && members[i] < id.as_str() {
            missing.push(i);
            i += 1;
        }
        if i < members.len() && members[i] == id.as_str() {
            let target = std::mem::take(&mut targets[i]);
            if *old != target {
                *old = target;
                noted.insert(id.clone());
            }
            i += 1;
        }
    }
    missing.extend(i..members.len());
    for i in missing {
        let target = std::mem::take(&mut targets[i]);
        g.target_assignments.insert(members[i].to_owned(), target);
        noted.insert(members[i].to_owned());
    }
    settle_noting(g, now_ms, timing, noted);
}

/// Membership tests of ascending keys in an ascending id list, by walking it once.
struct AscendingIds<'l, 'a> {
    ids: &'l [&'a str],
    pos: usize,
}

impl<'l, 'a> AscendingIds<'l, 'a> {
    fn new(ids: &'l [&'a str]) -> Self {
        AscendingIds { ids, pos: 0 }
    }

    /// Whether `id` is in the list; ids must be asked for in ascending order.
    fn contains(&mut self, id: &str) -> bool {
        while self.pos < self.ids.len() && self.ids[self.pos] < id {
            self.pos += 1;
        }
        self.ids.get(self.pos).is_some_and(|x| *x == id)
    }
}

/// Lookups of ascending keys in a `BTreeMap<String, V>`, by walking it once.
struct AscendingMap<'m, V> {
    iter: std::iter::Peekable<std::collections::btree_map::Iter<'m, String, V>>,
}

impl<'m, V> AscendingMap<'m, V> {
    fn new(map: &'m std::collections::BTreeMap<String, V>) -> Self {
        AscendingMap {
            iter: map.iter().peekable(),
        }
    }

    /// The value of `key`; keys must be asked for in ascending order.
    fn get(&mut self, key: &str) -> Option<&'m V> {
        while self.iter.next_if(|(k, _)| k.as_str() < key).is_some() {}
        match self.iter.peek() {
            Some((k, v)) if k.as_str() == key => Some(*v),
            _ => None,
        }
    }
}

/// Moves every live member towards its target: revokes what it must give up, takes back shards it was
/// revoking but is now meant to keep, and grants free target shards. Updates member epochs and group state.
pub fn settle(g: &mut Group, now_ms: i64, timing: &Timing) {
    settle_noting(g, now_ms, timing, &mut Noted::new());
}

/// [`settle`], adding to `noted` every member whose record it changed.
///
/// It visits every live member (revocations and take-backs first, then grants), so at thousands of members it
/// copies nothing per member: targets are borrowed, and the held shards are kept in a bit set, not a tree.
pub fn settle_noting(g: &mut Group, now_ms: i64, timing: &Timing, noted: &mut Noted) {
    let epoch = g.assignment_epoch;
    // Ordered streams: gated children are granted to nobody, and revoked from whoever holds them.
    let gated = g.gated_shards();
    let mut held = ShardBits::default();
    for h in &g.holds {
        for &s in &h.shards {
            held.insert(s);
        }
    }
    let no_target = ShardSet::new();

    // Revocations and take-backs first, so that `held` below is complete before any grant. Members are
    // visited in id order, so targets are found by walking the target map once.
    let mut targets = AscendingMap::new(&g.target_assignments);
    for m in g.members.values_mut().filter(|m| m.state.is_live()) {
        let target = if m.state == MemberState::Active {
            targets.get(&m.member_id).unwrap_or(&no_target)
        } else {
            &no_target
        };
        // The member's target without the gated shards (gates are rare: the common case looks only at `target`).
        let meant = |s: &u32| target.contains(s) && !gated.contains(s);
        let mut changed = false;
        let deadline_before = m.rebalance_deadline_ms;
        let revocation_epoch = if m.state == MemberState::Leaving {
            -1
        } else {
            epoch
        };
        if m.assigned.iter().any(|s| !meant(s)) {
            let to_revoke: Vec<u32> = m.assigned.iter().copied().filter(|s| !meant(s)).collect();
            for s in to_revoke {
                m.assigned.remove(&s);
                m.revoking.insert(s, revocation_epoch);
            }
            changed = true;
        }
        if m.revoking.keys().any(meant) {
            let take_back: Vec<u32> = m.revoking.keys().copied().filter(meant).collect();
            for s in take_back {
                m.revoking.remove(&s);
                m.reported_revoking.remove(&s);
                m.assigned.insert(s);
            }
            changed = true;
        }
        if changed && m.state == MemberState::Active {
            m.member_epoch = epoch;
        }
        if m.revoking.is_empty() {
            m.rebalance_deadline_ms = None;
        } else if m.rebalance_deadline_ms.is_none() {
            m.rebalance_deadline_ms = Some(now_ms + timing.rebalance_timeout_ms);
        }
        if changed || m.rebalance_deadline_ms != deadline_before {
            noted.insert(m.member_id.clone());
        }
        for s in m.held() {
            held.insert(s);
        }
    }

    // Grants: free target shards go to their target owner, in memberId order.
    let mut targets = AscendingMap::new(&g.target_assignments);
    for m in g
        .members
        .values_mut()
        .filter(|m| m.state == MemberState::Active)
    {
        let Some(target) = targets.get(&m.member_id) else {
            continue;
        };
        let mut granted = false;
        for &s in target {
            if !held.contains(s) && !m.assigned.contains(&s) && !gated.contains(&s) {
                m.assigned.insert(s);
                held.insert(s);
                granted = true;
            }
        }
        if granted {
            m.member_epoch = epoch;
            noted.insert(m.member_id.clone());
        }
    }
    g.state = derive_state(g);
    g.reconciling_since_ms = match g.state {
        GroupState::Reconciling => g.reconciling_since_ms.or(Some(now_ms)),
        GroupState::Stable | GroupState::Empty => None,
    };
}

/// A set of shard indexes: bits for the indexes a group uses (below [`ShardBits::DENSE`]), a tree for any
/// beyond (never in a valid group, but an aggregate is not trusted to be small).
#[derive(Default)]
struct ShardBits {
    bits: Vec<u64>,
    beyond: ShardSet,
}

impl ShardBits {
    const DENSE: u32 = 1 << 20;

    fn insert(&mut self, s: u32) {
        if s >= Self::DENSE {
            self.beyond.insert(s);
            return;
        }
        let (word, bit) = ((s / 64) as usize, s % 64);
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        if let Some(w) = self.bits.get_mut(word) {
            *w |= 1 << bit;
        }
    }

    fn contains(&self, s: u32) -> bool {
        if s >= Self::DENSE {
            return self.beyond.contains(&s);
        }
        self.bits
            .get((s / 64) as usize)
            .is_some_and(|w| w & (1 << (s % 64)) != 0)
    }
}

/// EMPTY with no active member; STABLE when every active member holds exactly its target and nothing is being
/// revoked or held; RECONCILING otherwise.
pub fn derive_state(g: &Group) -> GroupState {
    let mut any_active = false;
    let mut converged = true;
    let mut others_quiet = true;
    // Members in id order, targets found by walking the target map once.
    let mut targets = AscendingMap::new(&g.target_assignments);
    for m in g.members.values() {
        match m.state {
            MemberState::Active => {
                any_active = true;
                converged = converged
                    && m.revoking.is_empty()
                    && targets.get(&m.member_id).is_some_and(|t| *t == m.assigned)
                    && m.reported_owned == m.assigned;
            }
            MemberState::Leaving => others_quiet = others_quiet && m.revoking.is_empty(),
            MemberState::Expired | MemberState::Fenced => {}
        }
    }
    if !any_active {
        return GroupState::Empty;
    }
    if converged && others_quiet && g.holds.is_empty() {
        GroupState::Stable
    } else {
        GroupState::Reconciling
    }
}

#[cfg(test)]
mod tests {
    use super::recompute_target;
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
}
