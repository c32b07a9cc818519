//! Revoke-before-assign: turns a target assignment into grants and revocations.
//!
//! This is the one place where shards are granted, so it is where invariant 1 (one reader per shard) is
//! enforced: a shard is granted only when no live member holds it (assigned or revoking) and no hold covers
//! it. Revocations record the member epoch at which they were handed out, so that only a report made after
//! the member saw the revocation can release the shard.

mod bits;
mod incremental;
mod index;
#[cfg(any(test, debug_assertions))]
mod reference;
mod targets;

pub use incremental::{recompute_target_indexed, settle_indexed};
pub use index::RebalanceIndex;

use crate::assign::assign_sorted;
use crate::model::{EpochOverflow, Group, GroupState, Member, MemberState, ShardSet, incremented};
use crate::timing::Timing;
use bits::ShardBits;

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
///
/// The new target is computed from what changed when it can be (`targets.rs`), else by the assignor; debug
/// builds compute both and insist they are equal.
pub fn recompute_target_noting(g: &mut Group, now_ms: i64, timing: &Timing, noted: &mut Noted) {
    #[cfg(debug_assertions)]
    let before = g.clone();
    let mut changed = Noted::new();
    let by_changes = targets::assignor_shards(g)
        .is_some_and(|shards| targets::recompute_by_changes(g, &shards, &mut changed));
    if !by_changes {
        recompute_target_in_full(g, &mut changed);
    }
    #[cfg(debug_assertions)]
    if by_changes {
        let mut full = before;
        let mut full_changed = Noted::new();
        recompute_target_in_full(&mut full, &mut full_changed);
        assert_eq!(
            full.target_assignments, g.target_assignments,
            "the target computed from the changes differs from the assignor's"
        );
        assert_eq!(full_changed, changed, "the members noted differ");
    }
    noted.extend(changed);
    settle_noting(g, now_ms, timing, noted);
}

/// The new target by the assignor over every active member (changing only the entries that differ).
fn recompute_target_in_full(g: &mut Group, noted: &mut Noted) {
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

    /// The value of `key`; keys must be asked for in strictly ascending order (each key of the map is
    /// compared once with the keys asked for, not twice).
    fn get(&mut self, key: &str) -> Option<&'m V> {
        while let Some((k, v)) = self.iter.peek() {
            match k.as_str().cmp(key) {
                std::cmp::Ordering::Less => {
                    self.iter.next();
                }
                std::cmp::Ordering::Equal => {
                    let v = *v;
                    self.iter.next();
                    return Some(v);
                }
                std::cmp::Ordering::Greater => return None,
            }
        }
        None
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
///
/// One walk of the members: each live member's revocations and take-backs, and its part of the group state;
/// the active members that lack a target shard are kept (a reference each) and granted to afterwards, in
/// member-id order, once the held shards are all known. A member that holds exactly its target costs a
/// subset test and a size comparison. Debug builds run the three-walk definition (`reference.rs`) on a copy
/// and insist on the same group and the same noted members.
pub fn settle_noting(g: &mut Group, now_ms: i64, timing: &Timing, noted: &mut Noted) {
    #[cfg(debug_assertions)]
    let expected = {
        let (mut group, mut noted) = (g.clone(), noted.clone());
        reference::settle_in_passes(&mut group, now_ms, timing, &mut noted);
        (group, noted)
    };
    settle_in_one_walk(g, now_ms, timing, noted);
    #[cfg(debug_assertions)]
    {
        assert!(
            *g == expected.0,
            "the one-walk settle differs from the reference"
        );
        assert_eq!(
            *noted, expected.1,
            "the one-walk settle noted other members"
        );
    }
}

/// [`settle_noting`]'s work (without the debug comparison).
fn settle_in_one_walk(g: &mut Group, now_ms: i64, timing: &Timing, noted: &mut Noted) {
    let epoch = g.assignment_epoch;
    // Ordered streams: gated children are granted to nobody, and revoked from whoever holds them.
    let gated = g.gated_shards();
    let mut held = ShardBits::default();
    for h in &g.holds {
        for &s in &h.shards {
            let _ = held.insert(s);
        }
    }
    let no_target = ShardSet::new();
    let mut state = StateSoFar::default();
    // Active members with a target shard they lack (in id order), granted to once `held` is complete.
    let mut lacking: Vec<(&mut Member, &ShardSet)> = Vec::new();
    let mut targets = AscendingMap::new(&g.target_assignments);
    for m in g.members.values_mut() {
        if !m.state.is_live() {
            continue;
        }
        let active = m.state == MemberState::Active;
        let entry = if active {
            targets.get(&m.member_id)
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
        for s in m.held() {
            let _ = held.insert(s);
        }
        let short = entry.is_some_and(|t| lacks(m, t, &gated));
        match entry {
            Some(t) if short => lacking.push((m, t)),
            _ => state.add(m, entry),
        }
    }

    // Grants: free target shards go to their target owner, in memberId order.
    for (m, target) in lacking {
        let mut granted = false;
        for &s in target {
            if !held.contains(s) && !m.assigned.contains(&s) && !gated.contains(&s) {
                m.assigned.insert(s);
                let _ = held.insert(s);
                granted = true;
            }
        }
        if granted {
            m.member_epoch = epoch;
            noted.insert(m.member_id.clone());
        }
        state.add(m, Some(target));
    }
    g.state = state.of(g.holds.is_empty());
    g.reconciling_since_ms = match g.state {
        GroupState::Reconciling => g.reconciling_since_ms.or(Some(now_ms)),
        GroupState::Stable | GroupState::Empty => None,
    };
}

/// Settle's first part for one live member: revokes what `target` (less the gated shards) does not name,
/// takes back what it names again, moves the member's epoch (an active member that changed) and its deadline,
/// and notes the member if its record changed.
fn settle_member(
    m: &mut Member,
    target: &ShardSet,
    gated: &ShardSet,
    epoch: i64,
    now_ms: i64,
    timing: &Timing,
    noted: &mut Noted,
) {
    let active = m.state == MemberState::Active;
    let meant = |s: &u32| target.contains(s) && !gated.contains(s);
    let mut changed = false;
    let deadline_before = m.rebalance_deadline_ms;
    let revocation_epoch = if m.state == MemberState::Leaving {
        -1
    } else {
        epoch
    };
    let keeps_all = if gated.is_empty() {
        m.assigned.is_subset(target)
    } else {
        m.assigned.iter().all(meant)
    };
    if !keeps_all {
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
    if changed && active {
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
}

/// Whether an active member (after [`settle_member`]) lacks a shard of its target `t`: after the revocations
/// every assigned shard is in the target and not gated, so it does exactly when it has fewer than the target's
/// ungated shards.
fn lacks(m: &Member, t: &ShardSet, gated: &ShardSet) -> bool {
    if gated.is_empty() {
        m.assigned.len() < t.len()
    } else {
        t.iter()
            .any(|s| !m.assigned.contains(s) && !gated.contains(s))
    }
}

/// What [`derive_state`] finds, gathered member by member (live members only: the others do not count).
#[derive(Default)]
struct StateSoFar {
    any_active: bool,
    diverged: bool,
    others_busy: bool,
}

impl StateSoFar {
    /// Counts live member `m` as it will be written, with its target entry (None for a member not active).
    fn add(&mut self, m: &Member, target: Option<&ShardSet>) {
        match m.state {
            MemberState::Active => {
                self.any_active = true;
                self.diverged = self.diverged
                    || !(m.revoking.is_empty()
                        && target.is_some_and(|t| *t == m.assigned)
                        && m.reported_owned == m.assigned);
            }
            MemberState::Leaving => {
                self.others_busy = self.others_busy || !m.revoking.is_empty();
            }
            MemberState::Expired | MemberState::Fenced => {}
        }
    }

    /// The group state: EMPTY, STABLE or RECONCILING as [`derive_state`] defines them.
    fn of(&self, no_holds: bool) -> GroupState {
        if !self.any_active {
            GroupState::Empty
        } else if !self.diverged && !self.others_busy && no_holds {
            GroupState::Stable
        } else {
            GroupState::Reconciling
        }
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
mod tests;
