//! The group-wide facts [`check`] looks at, counted so that a write's check costs what the write changed.
//!
//! [`check`] walks every member and every shard of the aggregate. A batch of heartbeats changes a few members
//! of a group of thousands, so after such a write the coordinator keeps [`Facts`] beside its cached aggregate
//! (how many live members hold each shard, how many targets name it, the members with a fault of their own,
//! the active members and their instance ids) and updates them from the members the write changed
//! ([`Facts::after`]). When the facts say every invariant holds, [`check`] would find nothing; when they do
//! not, [`check`] runs in full to say what is wrong ([`check_changed`]), so the answer is always exactly what
//! the full check gives. A write that changes what the facts are counted against (the shard count, draining
//! shards, ordering gates and switch points, static reservations) counts them afresh. The simulation checks,
//! for every write, that the updated facts equal facts counted from scratch.

use super::check;
use crate::model::{Group, Member, MemberState, ShardSet};
use std::collections::{BTreeSet, HashMap};

/// What [`check`] depends on, counted over one aggregate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Shard → how many times live members hold it (assigned or revoking; a shard both assigned and revoking
    /// by one member counts twice, as [`check`] reports it).
    held: HashMap<u32, u32>,
    /// Shards held more than once.
    doubly_held: usize,
    /// Shard → how many target entries name it.
    targeted: HashMap<u32, u32>,
    /// Shards in more than one target.
    doubly_targeted: usize,
    /// Assignable shards, not reserved, that no target names.
    uncovered: usize,
    /// Members with a fault of their own (a dead member holding shards, a gated shard assigned, an active
    /// member assigned a shard outside the group's range), and target entries naming a member that is not
    /// active.
    faulty: usize,
    /// Active members.
    active: usize,
    /// Instance id → how many active members hold it.
    instances: HashMap<String, u32>,
    /// Instance ids held by more than one active member.
    doubly_instanced: usize,
}

/// The parts of the header the facts are counted against: when any differs, the facts are counted afresh.
fn same_frame(a: &Group, b: &Group) -> bool {
    a.shard_count == b.shard_count
        && a.draining_shards == b.draining_shards
        && a.ordering_gates == b.ordering_gates
        && a.ordering_switch_points == b.ordering_switch_points
        && a.static_reservations == b.static_reservations
}

/// The header-derived sets a fact is judged with.
struct Frame {
    gated: ShardSet,
    reserved: ShardSet,
    shard_count: u32,
    draining: ShardSet,
}

impl Frame {
    fn of(g: &Group) -> Self {
        Frame {
            gated: g.gated_shards(),
            reserved: g.reserved_shards(),
            shard_count: g.shard_count,
            draining: g.draining_shards.clone(),
        }
    }

    fn assignable(&self, s: u32) -> bool {
        s < self.shard_count || self.draining.contains(&s)
    }

    /// Whether `m` has a fault of its own, as [`check`] judges a member.
    fn member_fault(&self, m: &Member) -> bool {
        (!m.state.is_live() && (!m.assigned.is_empty() || !m.revoking.is_empty()))
            || m.assigned.iter().any(|s| self.gated.contains(s))
            || (m.state == MemberState::Active
                && m.assigned
                    .iter()
                    .any(|s| *s >= self.shard_count && !self.draining.contains(s)))
    }
}

/// Whether a target entry of `id` names a member that is not active.
fn target_fault(g: &Group, id: &str) -> bool {
    g.target_assignments.contains_key(id)
        && g.members
            .get(id)
            .is_none_or(|m| m.state != MemberState::Active)
}

impl Facts {
    /// The facts of `g`, counted over every member.
    pub fn of(g: &Group) -> Self {
        let frame = Frame::of(g);
        let mut f = Facts::default();
        // Every member's record and target entry, then the target entries of ids that are not members.
        for id in g.members.keys() {
            f.add(g, &frame, id, 1);
        }
        for id in g.target_assignments.keys() {
            if !g.members.contains_key(id) {
                f.add(g, &frame, id, 1);
            }
        }
        // `add` counted coverage changes from an uncovered count of zero: start it from every assignable shard.
        let assignable = g.assignable_shards();
        f.uncovered = assignable
            .iter()
            .filter(|s| !frame.reserved.contains(s) && !f.targeted.contains_key(s))
            .count();
        f
    }

    /// The facts of `next`, a write of `base` (whose facts `self` are) that changed the `members` or
    /// `targetAssignments` entries of `changed` only: updated from those members, or counted afresh when the
    /// write changed what they are counted against.
    pub fn after(&self, base: &Group, next: &Group, changed: &BTreeSet<String>) -> Self {
        if !same_frame(base, next) {
            return Facts::of(next);
        }
        let frame = Frame::of(next);
        let mut f = self.clone();
        for id in changed {
            f.add(base, &frame, id, -1);
            f.add(next, &frame, id, 1);
        }
        f
    }

    /// Adds (`sign` 1) or removes (-1) what member `id`'s record and target entry in `g` contribute.
    fn add(&mut self, g: &Group, frame: &Frame, id: &str, sign: i8) {
        if let Some(m) = g.members.get(id) {
            if m.state.is_live() {
                for s in m.held() {
                    let _ = count(&mut self.held, &mut self.doubly_held, s, sign);
                }
            }
            if frame.member_fault(m) {
                self.faulty = step(self.faulty, sign);
            }
            if m.state == MemberState::Active {
                self.active = step(self.active, sign);
                if let Some(i) = &m.group_instance_id {
                    let n = self.instances.entry(i.clone()).or_default();
                    let before = *n;
                    *n = step_u32(*n, sign);
                    let after = *n;
                    if after == 0 {
                        self.instances.remove(i);
                    }
                    self.doubly_instanced = doubled(self.doubly_instanced, before, after);
                }
            }
        }
        if target_fault(g, id) {
            self.faulty = step(self.faulty, sign);
        }
        if let Some(t) = g.target_assignments.get(id) {
            for &s in t {
                let (before, after) = count(&mut self.targeted, &mut self.doubly_targeted, s, sign);
                if frame.assignable(s) && !frame.reserved.contains(&s) {
                    if before == 0 && after > 0 {
                        self.uncovered = self.uncovered.saturating_sub(1);
                    } else if before > 0 && after == 0 {
                        self.uncovered += 1;
                    }
                }
            }
        }
    }

    /// Whether [`check`] finds nothing in `g` (whose facts these are).
    pub fn hold_in(&self, g: &Group) -> bool {
        if self.doubly_held > 0
            || self.doubly_targeted > 0
            || self.faulty > 0
            || self.doubly_instanced > 0
            || (self.active > 0 && self.uncovered > 0)
        {
            return false;
        }
        if g.ordering_gates.is_empty() && !g.ordering_switch_points.is_empty() {
            return false;
        }
        let held = |s: &u32| self.held.get(s).is_some_and(|n| *n > 0);
        if g.holds.iter().any(|h| h.shards.iter().any(held)) {
            return false;
        }
        let mut instances = BTreeSet::new();
        let mut reserved = BTreeSet::new();
        for r in &g.static_reservations {
            if !instances.insert(r.group_instance_id.as_str())
                || self.instances.contains_key(&r.group_instance_id)
            {
                return false;
            }
            for s in &r.shards {
                if !reserved.insert(*s) || self.targeted.get(s).is_some_and(|n| *n > 0) {
                    return false;
                }
            }
        }
        true
    }
}

fn step(n: usize, sign: i8) -> usize {
    if sign > 0 { n + 1 } else { n.saturating_sub(1) }
}

fn step_u32(n: u32, sign: i8) -> u32 {
    if sign > 0 {
        n.saturating_add(1)
    } else {
        n.saturating_sub(1)
    }
}

/// The count of keys at 2 or more, after one key went from `before` to `after`.
fn doubled(total: usize, before: u32, after: u32) -> usize {
    match (before >= 2, after >= 2) {
        (false, true) => total + 1,
        (true, false) => total.saturating_sub(1),
        _ => total,
    }
}

/// Counts shard `s` once more (`sign` 1) or once less in `map` (no key at zero), keeping `doubly` (the keys at
/// 2 or more) up to date; returns the count before and after.
fn count(map: &mut HashMap<u32, u32>, doubly: &mut usize, s: u32, sign: i8) -> (u32, u32) {
    let n = map.entry(s).or_default();
    let before = *n;
    *n = step_u32(*n, sign);
    let after = *n;
    if after == 0 {
        map.remove(&s);
    }
    *doubly = doubled(*doubly, before, after);
    (before, after)
}

/// [`check`] of `next`, a write of `base` that changed the entries of `changed` only, with `base`'s facts:
/// what the full check finds (nothing, when the facts say every invariant holds; else the full check runs),
/// and `next`'s facts.
pub fn check_changed(
    base: &Group,
    base_facts: &Facts,
    next: &Group,
    changed: &BTreeSet<String>,
) -> (Vec<String>, Facts) {
    let facts = base_facts.after(base, next, changed);
    let violations = if facts.hold_in(next) {
        Vec::new()
    } else {
        check(next)
    };
    (violations, facts)
}

#[cfg(test)]
mod tests {
    use super::{Facts, check_changed};
    use crate::invariants::check;
    use crate::model::{Group, Hold, Member, MemberState, Reservation, ReservationReason};
    use std::collections::BTreeSet;

    /// A small random group, faults included: states, holdings, targets and instance ids drawn at random.
    fn random_member(id: &str, next: &mut impl FnMut(u64) -> u64) -> Member {
        let states = [
            MemberState::Active,
            MemberState::Leaving,
            MemberState::Expired,
            MemberState::Fenced,
        ];
        let mut m = Member::new(id, id, 0);
        m.state = states[next(4) as usize];
        for _ in 0..next(3) {
            m.assigned.insert(next(10) as u32);
        }
        for _ in 0..next(2) {
            m.revoking.insert(next(10) as u32, 1);
        }
        if next(4) == 0 {
            m.group_instance_id = Some(format!("i{}", next(3)));
        }
        m
    }

    /// Facts updated from the changed members equal facts counted afresh, and say "no violation" exactly
    /// when the full check finds none, for random writes of random groups (most of them faulty).
    #[test]
    fn updated_facts_equal_counted_facts_and_agree_with_the_full_check() {
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n.max(1)
        };
        let mut clean = 0;
        for case in 0..2_000 {
            let mut base = Group::new("p", "g", 8, 0, "life");
            for i in 0..next(8) {
                let id = format!("m{i}");
                base.members
                    .insert(id.clone(), random_member(&id, &mut next));
                if next(3) != 0 {
                    let t = (0..next(3)).map(|_| next(10) as u32).collect();
                    base.target_assignments.insert(id, t);
                }
            }
            if next(3) == 0 {
                base.holds.push(Hold {
                    member_id: "gone".into(),
                    shards: [next(10) as u32].into(),
                    until_ms: 1,
                    reason: "test".into(),
                });
            }
            if next(4) == 0 {
                base.static_reservations.push(Reservation {
                    group_instance_id: format!("i{}", next(3)),
                    member_id: "gone".into(),
                    shards: [next(10) as u32].into(),
                    until_ms: 1,
                    reason: ReservationReason::LeaseLapsed,
                    owner: None,
                });
            }
            let facts = Facts::of(&base);
            let mut g = base.clone();
            let mut changed = BTreeSet::new();
            for _ in 0..next(4) {
                let id = format!("m{}", next(10));
                match next(4) {
                    0 => {
                        g.members.remove(&id);
                    }
                    1 => {
                        g.target_assignments.remove(&id);
                    }
                    2 => {
                        let t = (0..next(3)).map(|_| next(10) as u32).collect();
                        g.target_assignments.insert(id.clone(), t);
                    }
                    _ => {
                        g.members.insert(id.clone(), random_member(&id, &mut next));
                    }
                }
                changed.insert(id);
            }
            match next(6) {
                0 => g.shard_count = next(10) as u32,
                1 => {
                    g.draining_shards.insert(8 + next(3) as u32);
                }
                2 => g.holds.clear(),
                _ => {}
            }
            let (violations, updated) = check_changed(&base, &facts, &g, &changed);
            assert_eq!(updated, Facts::of(&g), "case {case}: {g:#?}");
            assert_eq!(violations, check(&g), "case {case}");
            assert_eq!(updated.hold_in(&g), check(&g).is_empty(), "case {case}");
            if violations.is_empty() {
                clean += 1;
            }
        }
        assert!(clean > 50, "clean cases too rare to mean anything: {clean}");
    }
}
