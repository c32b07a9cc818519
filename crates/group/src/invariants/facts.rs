//! The group-wide facts [`check`] looks at, counted so that a write's check costs what the write changed.
//!
//! [`check`] walks every member and every shard of the aggregate. A batch of heartbeats changes a few members
//! of a group of thousands, so after such a write the coordinator keeps [`Facts`] beside its cached aggregate
//! (how many live members hold each shard, how many targets name it, the members with a fault of their own,
//! the active members and their instance ids, the live members by owner) and updates them in place from the
//! members the write changed ([`Facts::update`]): no copy of the facts, nothing counted over the group. When
//! the facts say every invariant holds, [`check`] would find nothing; when they do not, [`check`] runs in full
//! to say what is wrong ([`check_changed`]), so the answer is always exactly what the full check gives.
//!
//! What the facts are counted against (the shard count, draining shards, ordering gates and switch points,
//! static reservations) is kept with them as their frame (the gated and reserved shards, the reserved instance
//! ids), derived once when they are counted: a write that changes any of it counts the facts afresh. So a
//! write's update reads only the changed members' records and entries, and the check of a clean group only
//! the holds besides.
//!
//! Updating is exact counting, so it can be undone: the update of a write's reverse (`next` back to `base`,
//! the same members changed) gives back the facts of `base`. Whoever keeps facts beside an aggregate keeps
//! them of exactly that aggregate: the coordinator takes them out of the cached revision only once its write
//! is in Redis, and a refused or failed write leaves them where they were. The simulation checks, for every
//! write, that the updated facts equal facts counted from scratch.

use super::check;
use crate::model::{Group, Member, MemberState, ShardSet};
use std::collections::{BTreeSet, HashMap};

/// What [`check`] depends on, counted over one aggregate, with the frame they were counted against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    counts: Counts,
    frame: Frame,
}

/// The counts of [`Facts`], each kept exactly as members are counted in and out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Counts {
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
    /// (Target entry, shard) pairs naming a shard reserved for a stopped static member.
    reserved_targeted: usize,
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
    /// Active members whose instance id has a reservation.
    reserved_instances: usize,
    /// Live members (active or leaving): what the member caps count.
    live: usize,
    /// Owner (principal) → how many live members it holds (members without an owner are not counted).
    live_by_owner: HashMap<String, usize>,
}

/// The parts of the header the facts are counted against: when any differs, the facts are counted afresh.
fn same_frame(a: &Group, b: &Group) -> bool {
    a.shard_count == b.shard_count
        && a.draining_shards == b.draining_shards
        && a.ordering_gates == b.ordering_gates
        && a.ordering_switch_points == b.ordering_switch_points
        && a.static_reservations == b.static_reservations
}

/// The header-derived sets a fact is judged with, derived once when the facts are counted (they stay the same
/// while [`same_frame`] holds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Frame {
    gated: ShardSet,
    reserved: ShardSet,
    /// The instance ids the static reservations are for.
    reserved_instances: BTreeSet<String>,
    /// Two reservations for one instance id, or one shard in two reservations.
    reservations_clash: bool,
    shard_count: u32,
    draining: ShardSet,
}

impl Frame {
    fn of(g: &Group) -> Self {
        let mut reserved = ShardSet::new();
        let mut reserved_instances = BTreeSet::new();
        let mut reservations_clash = false;
        for r in &g.static_reservations {
            reservations_clash |= !reserved_instances.insert(r.group_instance_id.clone());
            for s in &r.shards {
                reservations_clash |= !reserved.insert(*s);
            }
        }
        Frame {
            gated: g.gated_shards(),
            reserved,
            reserved_instances,
            reservations_clash,
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
        let mut counts = Counts::default();
        // Every member's record and target entry, then the target entries of ids that are not members.
        for id in g.members.keys() {
            counts.add(g, &frame, id, 1);
        }
        for id in g.target_assignments.keys() {
            if !g.members.contains_key(id) {
                counts.add(g, &frame, id, 1);
            }
        }
        // `add` counted coverage changes from an uncovered count of zero: start it from every assignable shard.
        counts.uncovered = g
            .assignable_shards()
            .iter()
            .filter(|s| !frame.reserved.contains(s) && !counts.targeted.contains_key(s))
            .count();
        Facts { counts, frame }
    }

    /// Makes these facts (of `base`) the facts of `next`, a write of `base` that changed the `members` or
    /// `targetAssignments` entries of `changed` only: in place, from those members (what the write changed),
    /// or counted afresh when the write changed what they are counted against.
    pub fn update(&mut self, base: &Group, next: &Group, changed: &BTreeSet<String>) {
        if !same_frame(base, next) {
            *self = Facts::of(next);
            return;
        }
        for id in changed {
            self.counts.add(base, &self.frame, id, -1);
            self.counts.add(next, &self.frame, id, 1);
        }
    }

    /// Live members (active or leaving) of the aggregate these facts are of.
    pub fn live_members(&self) -> usize {
        self.counts.live
    }

    /// Live members of that aggregate that `owner` holds (joined as that principal).
    pub fn live_members_of(&self, owner: &str) -> usize {
        self.counts.live_by_owner.get(owner).copied().unwrap_or(0)
    }

    /// Whether [`check`] finds nothing in `g` (whose facts these are). Reads the counts and `g`'s holds.
    pub fn hold_in(&self, g: &Group) -> bool {
        let c = &self.counts;
        if c.doubly_held > 0
            || c.doubly_targeted > 0
            || c.faulty > 0
            || c.doubly_instanced > 0
            || (c.active > 0 && c.uncovered > 0)
            || c.reserved_targeted > 0
            || c.reserved_instances > 0
            || self.frame.reservations_clash
        {
            return false;
        }
        if g.ordering_gates.is_empty() && !g.ordering_switch_points.is_empty() {
            return false;
        }
        let held = |s: &u32| c.held.get(s).is_some_and(|n| *n > 0);
        !g.holds.iter().any(|h| h.shards.iter().any(held))
    }
}

impl Counts {
    /// Adds (`sign` 1) or removes (-1) what member `id`'s record and target entry in `g` contribute.
    fn add(&mut self, g: &Group, frame: &Frame, id: &str, sign: i8) {
        if let Some(m) = g.members.get(id) {
            if m.state.is_live() {
                for s in m.held() {
                    let _ = count(&mut self.held, &mut self.doubly_held, s, sign);
                }
                self.live = step(self.live, sign);
                if let Some(owner) = &m.owner {
                    let n = self.live_by_owner.entry(owner.clone()).or_default();
                    *n = step(*n, sign);
                    if *n == 0 {
                        self.live_by_owner.remove(owner);
                    }
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
                    if frame.reserved_instances.contains(i) {
                        self.reserved_instances = step(self.reserved_instances, sign);
                    }
                }
            }
        }
        if target_fault(g, id) {
            self.faulty = step(self.faulty, sign);
        }
        if let Some(t) = g.target_assignments.get(id) {
            for &s in t {
                let (before, after) = count(&mut self.targeted, &mut self.doubly_targeted, s, sign);
                if frame.reserved.contains(&s) {
                    self.reserved_targeted = step(self.reserved_targeted, sign);
                } else if frame.assignable(s) {
                    if before == 0 && after > 0 {
                        self.uncovered = self.uncovered.saturating_sub(1);
                    } else if before > 0 && after == 0 {
                        self.uncovered += 1;
                    }
                }
            }
        }
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

/// [`check`] of `next`, a write of `base` that changed the entries of `changed` only, with `facts`, the facts
/// of `base`, made `next`'s in place ([`Facts::update`]): what the full check finds (nothing, when the facts
/// say every invariant holds; else the full check runs).
pub fn check_changed(
    base: &Group,
    facts: &mut Facts,
    next: &Group,
    changed: &BTreeSet<String>,
) -> Vec<String> {
    facts.update(base, next, changed);
    if facts.hold_in(next) {
        Vec::new()
    } else {
        check(next)
    }
}

#[cfg(test)]
mod tests {
    use super::{Facts, check_changed};
    use crate::invariants::check;
    use crate::model::{Group, Hold, Member, MemberState, Reservation, ReservationReason};
    use std::collections::BTreeSet;

    /// A small random group, faults included: states, holdings, targets, owners and instance ids drawn at random.
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
        if next(2) == 0 {
            m.owner = Some(format!("p{}", next(2)));
        }
        m
    }

    /// A random group of up to 8 members over 8 shards, with a hold and a reservation now and then.
    fn random_group(next: &mut impl FnMut(u64) -> u64) -> Group {
        let mut base = Group::new("p", "g", 8, 0, "life");
        for i in 0..next(8) {
            let id = format!("m{i}");
            base.members.insert(id.clone(), random_member(&id, next));
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
                anchor_pending: false,
            });
        }
        for _ in 0..next(3) {
            if next(2) == 0 {
                base.static_reservations.push(Reservation {
                    group_instance_id: format!("i{}", next(3)),
                    member_id: "gone".into(),
                    shards: [next(10) as u32].into(),
                    until_ms: 1,
                    reason: ReservationReason::LeaseLapsed,
                    owner: None,
                });
            }
        }
        base
    }

    /// A random write of `base`: a few members' records or target entries changed, now and then the header.
    fn random_write(base: &Group, next: &mut impl FnMut(u64) -> u64) -> (Group, BTreeSet<String>) {
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
                    g.members.insert(id.clone(), random_member(&id, next));
                }
            }
            changed.insert(id);
        }
        match next(7) {
            0 => g.shard_count = next(10) as u32,
            1 => {
                g.draining_shards.insert(8 + next(3) as u32);
            }
            2 => g.holds.clear(),
            3 => g.static_reservations.clear(),
            _ => {}
        }
        (g, changed)
    }

    fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n.max(1)
        }
    }

    /// Live members counted by walking the group, in all and per owner.
    fn live_counted(g: &Group, owner: &str) -> (usize, usize) {
        let live = g.members.values().filter(|m| m.state.is_live());
        let all = live.clone().count();
        let of = live.filter(|m| m.owner.as_deref() == Some(owner)).count();
        (all, of)
    }

    /// Facts updated in place from the changed members equal facts counted afresh, and say "no violation"
    /// exactly when the full check finds none, for random writes of random groups (most of them faulty).
    #[test]
    fn updated_facts_equal_counted_facts_and_agree_with_the_full_check() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let mut clean = 0;
        for case in 0..3_000 {
            let base = random_group(&mut next);
            let mut facts = Facts::of(&base);
            let (g, changed) = random_write(&base, &mut next);
            let violations = check_changed(&base, &mut facts, &g, &changed);
            assert_eq!(facts, Facts::of(&g), "case {case}: {g:#?}");
            assert_eq!(violations, check(&g), "case {case}");
            assert_eq!(facts.hold_in(&g), check(&g).is_empty(), "case {case}");
            for owner in ["p0", "p1"] {
                assert_eq!(
                    (facts.live_members(), facts.live_members_of(owner)),
                    live_counted(&g, owner),
                    "case {case}"
                );
            }
            if violations.is_empty() {
                clean += 1;
            }
        }
        assert!(clean > 50, "clean cases too rare to mean anything: {clean}");
    }

    /// A write that is refused after its facts were updated (the update undone by updating with the reverse
    /// write) leaves the facts of the aggregate that stays, so that the next write, decided on that aggregate,
    /// is checked exactly: a chain of writes, a random third of them refused, never drifts from the facts
    /// counted afresh.
    #[test]
    fn a_refused_write_leaves_the_facts_of_the_aggregate_that_stays() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut refused = 0;
        for case in 0..300 {
            let mut kept = random_group(&mut next);
            let mut facts = Facts::of(&kept);
            for write in 0..20 {
                let (g, changed) = random_write(&kept, &mut next);
                let violations = check_changed(&kept, &mut facts, &g, &changed);
                assert_eq!(violations, check(&g), "case {case}, write {write}");
                if next(3) == 0 {
                    // Refused: the aggregate kept is still `kept`, so must its facts be.
                    facts.update(&g, &kept, &changed);
                    refused += 1;
                } else {
                    kept = g;
                }
                assert_eq!(facts, Facts::of(&kept), "case {case}, write {write}");
                assert_eq!(facts.hold_in(&kept), check(&kept).is_empty());
            }
        }
        assert!(refused > 1_000, "too few refused writes: {refused}");
    }
}
