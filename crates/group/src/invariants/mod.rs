//! Checks of the group invariants (ARCHITECTURE.md), used by property tests, the simulator and the coordinator's
//! `invariantViolations` view. Each returns human-readable violations; an empty list means all hold.
//! [`Facts`] (`facts.rs`) keeps what [`check`] depends on counted, so that a write's check costs what it
//! changed ([`check_changed`]).

mod facts;

pub use facts::{Facts, check_changed};

use crate::model::{Group, MemberState};
use std::collections::BTreeMap;

/// Invariant 1 as the aggregate expresses it: no shard is held (assigned or revoking) by two live members, or
/// by a live member and a hold; and every held shard exists or is being drained.
pub fn check(g: &Group) -> Vec<String> {
    let mut violations = Vec::new();
    let mut holder: BTreeMap<u32, &str> = BTreeMap::new();
    for m in g.members.values().filter(|m| m.state.is_live()) {
        for s in m.held() {
            if let Some(other) = holder.insert(s, &m.member_id) {
                violations.push(format!(
                    "shard {s} held by both {other} and {}",
                    m.member_id
                ));
            }
        }
    }
    for h in &g.holds {
        for s in &h.shards {
            if let Some(other) = holder.get(s) {
                violations.push(format!(
                    "shard {s} held by {other} while on hold for {}",
                    h.member_id
                ));
            }
        }
    }
    let gated = g.gated_shards();
    for m in g.members.values() {
        if !m.state.is_live() && (!m.assigned.is_empty() || !m.revoking.is_empty()) {
            violations.push(format!(
                "{} member {} still holds shards",
                m.state.as_str(),
                m.member_id
            ));
        }
        if let Some(s) = m.assigned.iter().find(|s| gated.contains(s)) {
            violations.push(format!(
                "member {} is assigned shard {s}, withheld until its parents {:?} drained",
                m.member_id, g.ordering_gates[s]
            ));
        }
        if m.state == MemberState::Active
            && m.assigned
                .iter()
                .any(|s| *s >= g.shard_count && !g.draining_shards.contains(s))
        {
            violations.push(format!(
                "member {} is assigned a shard outside 0..{} that is not draining",
                m.member_id, g.shard_count
            ));
        }
    }
    if g.ordering_gates.is_empty() && !g.ordering_switch_points.is_empty() {
        violations.push(format!(
            "switch points {:?} are kept although no ordering gate is closed",
            g.ordering_switch_points.keys().collect::<Vec<_>>()
        ));
    }
    let mut target_owner: BTreeMap<u32, &str> = BTreeMap::new();
    for (id, shards) in &g.target_assignments {
        match g.members.get(id) {
            Some(m) if m.state == MemberState::Active => {}
            _ => violations.push(format!(
                "target assignment names {id}, which is not an active member"
            )),
        }
        for s in shards {
            if let Some(other) = target_owner.insert(*s, id) {
                violations.push(format!(
                    "shard {s} is in the targets of both {other} and {id}"
                ));
            }
        }
    }
    let reserved = g.reserved_shards();
    if g.members.values().any(|m| m.state == MemberState::Active) {
        for s in g.assignable_shards() {
            if !target_owner.contains_key(&s) && !reserved.contains(&s) {
                violations.push(format!(
                    "shard {s} has no target owner although active members exist"
                ));
            }
        }
    }
    static_members(g, &target_owner, &mut violations);
    violations
}

/// Static membership: a reserved shard is in no target and in one reservation; an instance id has at most
/// one active member, and no reservation while it has one.
fn static_members(g: &Group, target_owner: &BTreeMap<u32, &str>, violations: &mut Vec<String>) {
    let mut reserved_for: BTreeMap<u32, &str> = BTreeMap::new();
    let mut instances = std::collections::BTreeSet::new();
    for r in &g.static_reservations {
        if !instances.insert(r.group_instance_id.as_str()) {
            violations.push(format!(
                "groupInstanceId {} has two reservations",
                r.group_instance_id
            ));
        }
        if let Some(m) = g.active_instance(&r.group_instance_id) {
            violations.push(format!(
                "groupInstanceId {} is reserved although {} holds it",
                r.group_instance_id, m.member_id
            ));
        }
        for s in &r.shards {
            if let Some(other) = reserved_for.insert(*s, &r.group_instance_id) {
                violations.push(format!(
                    "shard {s} is reserved for both {other} and {}",
                    r.group_instance_id
                ));
            }
            if let Some(owner) = target_owner.get(s) {
                violations.push(format!(
                    "shard {s} is reserved for {} but in the target of {owner}",
                    r.group_instance_id
                ));
            }
        }
    }
    let mut active: BTreeMap<&str, &str> = BTreeMap::new();
    for m in g
        .members
        .values()
        .filter(|m| m.state == MemberState::Active)
    {
        if let Some(i) = m.group_instance_id.as_deref()
            && let Some(other) = active.insert(i, &m.member_id)
        {
            violations.push(format!(
                "groupInstanceId {i} is held by two active members, {other} and {}",
                m.member_id
            ));
        }
    }
}

/// Spread of assigned-shard counts among active members once converged (max − min).
pub fn target_spread(g: &Group) -> u32 {
    let counts: Vec<usize> = g
        .members
        .values()
        .filter(|m| m.state == MemberState::Active)
        .map(|m| {
            g.target_assignments
                .get(&m.member_id)
                .map_or(0, |t| t.len())
        })
        .collect();
    match (counts.iter().max(), counts.iter().min()) {
        (Some(max), Some(min)) => u32::try_from(max - min).unwrap_or(u32::MAX),
        _ => 0,
    }
}
