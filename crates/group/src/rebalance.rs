//! Revoke-before-assign: turns a target assignment into grants and revocations.
//!
//! This is the one place where shards are granted, so it is where invariant 1 (one reader per shard) is
//! enforced: a shard is granted only when no live member holds it (assigned or revoking) and no hold covers
//! it. Revocations record the member epoch at which they were handed out, so that only a report made after
//! the member saw the revocation can release the shard.

use crate::assign::assign;
use crate::model::{Group, GroupState, MemberState, ShardSet};
use crate::timing::Timing;
use std::collections::BTreeMap;

/// Bumps the group epochs for a membership or shard-range change.
pub fn bump_epochs(g: &mut Group) {
    g.group_epoch += 1;
    g.metadata_version += 1;
    g.assignment_epoch = g.group_epoch;
}

/// Recomputes the target assignment over the active members (sticky, balanced), then settles grants.
pub fn recompute_target(g: &mut Group, now_ms: i64, timing: &Timing) {
    let members = g.active_member_ids();
    let shards = g.assignable_shards();
    let previous: BTreeMap<String, ShardSet> = g
        .target_assignments
        .iter()
        .filter(|(id, _)| members.contains(*id))
        .map(|(id, s)| (id.clone(), s.clone()))
        .collect();
    g.target_assignments = assign(&shards, &members, &previous);
    settle(g, now_ms, timing);
}

/// Moves every live member towards its target: revokes what it must give up, takes back shards it was
/// revoking but is now meant to keep, and grants free target shards. Updates member epochs and group state.
pub fn settle(g: &mut Group, now_ms: i64, timing: &Timing) {
    let epoch = g.assignment_epoch;
    let mut held = ShardSet::new();
    for h in &g.holds {
        held.extend(h.shards.iter().copied());
    }

    // Revocations and take-backs first, so that `held` below is complete before any grant.
    for m in g.members.values_mut().filter(|m| m.state.is_live()) {
        let target = if m.state == MemberState::Active {
            g.target_assignments
                .get(&m.member_id)
                .cloned()
                .unwrap_or_default()
        } else {
            ShardSet::new()
        };
        let mut changed = false;
        let to_revoke: Vec<u32> = m.assigned.difference(&target).copied().collect();
        let revocation_epoch = if m.state == MemberState::Leaving {
            -1
        } else {
            epoch
        };
        for s in to_revoke {
            m.assigned.remove(&s);
            m.revoking.insert(s, revocation_epoch);
            changed = true;
        }
        let take_back: Vec<u32> = m
            .revoking
            .keys()
            .copied()
            .filter(|s| target.contains(s))
            .collect();
        for s in take_back {
            m.revoking.remove(&s);
            m.reported_revoking.remove(&s);
            m.assigned.insert(s);
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
        held.extend(m.held());
    }

    // Grants: free target shards go to their target owner, in memberId order.
    for m in g
        .members
        .values_mut()
        .filter(|m| m.state == MemberState::Active)
    {
        let Some(target) = g.target_assignments.get(&m.member_id) else {
            continue;
        };
        let mut granted = false;
        for &s in target {
            if !m.assigned.contains(&s) && !held.contains(&s) {
                m.assigned.insert(s);
                held.insert(s);
                granted = true;
            }
        }
        if granted {
            m.member_epoch = epoch;
        }
    }
    g.state = derive_state(g);
}

/// EMPTY with no active member; STABLE when every active member holds exactly its target and nothing is being
/// revoked or held; RECONCILING otherwise.
pub fn derive_state(g: &Group) -> GroupState {
    let active: Vec<_> = g
        .members
        .values()
        .filter(|m| m.state == MemberState::Active)
        .collect();
    if active.is_empty() {
        return GroupState::Empty;
    }
    let converged = active.iter().all(|m| {
        m.revoking.is_empty()
            && g.target_assignments
                .get(&m.member_id)
                .is_some_and(|t| *t == m.assigned)
            && m.reported_owned == m.assigned
    });
    let others_quiet = g
        .members
        .values()
        .filter(|m| m.state == MemberState::Leaving)
        .all(|m| m.revoking.is_empty());
    if converged && others_quiet && g.holds.is_empty() {
        GroupState::Stable
    } else {
        GroupState::Reconciling
    }
}
