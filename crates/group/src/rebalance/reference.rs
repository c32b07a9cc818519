//! The rebalance's settle as it was written first, member by member in three walks (revocations, grants,
//! state): the reference the one-pass `settle_noting` is compared with in debug builds and tests.

use super::bits::ShardBits;
use super::{AscendingMap, Noted, derive_state};
use crate::model::{Group, GroupState, MemberState, ShardSet};
use crate::timing::Timing;

/// `settle_noting`, by its first definition.
pub(super) fn settle_in_passes(g: &mut Group, now_ms: i64, timing: &Timing, noted: &mut Noted) {
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
            let _ = held.insert(s);
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
                let _ = held.insert(s);
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
