//! What the rebalance reads of every member, counted once and kept beside a group, so that the rebalance after
//! a batch reads only the members that changed (`incremental.rs`).
//!
//! The full rebalance walks every member twice: the new target needs every active member's target size (the
//! quotas), and `settle` looks at every live member (revocations, take-backs, the held shards, grants, the
//! group's state). A [`RebalanceIndex`] keeps those answers for one aggregate: how many times each shard is held,
//! the active members ordered by target size, which shards no target names, whether the targets are a
//! partition, and the members `settle` would act on (unsettled: a revocation, take-back or deadline to change;
//! lacking: a target shard to be granted) or that keep the group RECONCILING (diverged active members, busy
//! leaving ones). Members are counted in and out one at a time ([`RebalanceIndex::forget`],
//! [`RebalanceIndex::count`]), so the index follows a change in what the change touched. It is only valid for
//! the header it was counted under ([`RebalanceIndex::fits`]): the holds, gates, reservations and shard range.
//!
//! Beside what the rebalance reads, the index keeps which active members hold each `groupInstanceId`
//! ([`RebalanceIndex::instance_holders`]), so that a static member's join asks whether another live process
//! holds its identity without walking every member (`heartbeat::Draft::active_instance`). That part does not
//! depend on the header: it is kept whether or not the index fits.

use crate::model::{Group, Hold, Member, MemberState, Reservation, ShardSet};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The header fields the index is counted against: when any differs, it is counted afresh.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Frame {
    shard_count: u32,
    draining: ShardSet,
    gates: BTreeMap<u32, ShardSet>,
    switch_points: BTreeMap<u32, String>,
    holds: Vec<Hold>,
    reservations: Vec<Reservation>,
}

impl Frame {
    fn of(g: &Group) -> Self {
        Frame {
            shard_count: g.shard_count,
            draining: g.draining_shards.clone(),
            gates: g.ordering_gates.clone(),
            switch_points: g.ordering_switch_points.clone(),
            holds: g.holds.clone(),
            reservations: g.static_reservations.clone(),
        }
    }

    fn is_of(&self, g: &Group) -> bool {
        self.shard_count == g.shard_count
            && self.draining == g.draining_shards
            && self.gates == g.ordering_gates
            && self.switch_points == g.ordering_switch_points
            && self.holds == g.holds
            && self.reservations == g.static_reservations
    }
}

/// The rebalance's view of one aggregate (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebalanceIndex {
    frame: Frame,
    /// Shards granted to nobody (`Group::gated_shards`).
    pub(super) gated: ShardSet,
    /// Shards reserved for stopped static members (not the assignor's).
    reserved: ShardSet,
    /// How many shards the assignor divides (assignable, not reserved).
    pub(super) assignor_total: usize,
    /// Shard → how many live members and holds hold it.
    pub(super) held: HashMap<u32, u32>,
    /// Active members.
    pub(super) active: usize,
    /// Active members by (target size, id); a member without a target entry counts as size 0.
    pub(super) sizes: BTreeSet<(usize, String)>,
    /// Target size → how many active members have it (as `sizes` counts them).
    pub(super) by_size: BTreeMap<usize, usize>,
    /// Active members without a target entry.
    pub(super) no_entry: BTreeSet<String>,
    /// Target entries of ids that are not active members.
    pub(super) stale: BTreeSet<String>,
    /// Shard → how many active members' target entries name it.
    targeted: HashMap<u32, u32>,
    /// Shards that could be granted now: targeted, held by no live member or hold, not gated
    /// ([`RebalanceIndex::any_grantable`]), counted as `held` and `targeted` change.
    grantable: usize,
    /// Shards in more than one active member's target.
    pub(super) doubled: usize,
    /// (Active member, shard) pairs of a target naming a shard the assignor does not divide.
    pub(super) outside: usize,
    /// The assignor's shards that no active member's target names, ascending.
    pub(super) untargeted: BTreeSet<u32>,
    /// Live members `settle` would revoke from, take back for, or whose deadline it would change.
    pub(super) unsettled: BTreeSet<String>,
    /// Active members with an ungated target shard they are not assigned.
    pub(super) lacking: BTreeSet<String>,
    /// Active members not converged (something revoking, assigned ≠ target, or reported ≠ assigned).
    pub(super) diverged: BTreeSet<String>,
    /// Leaving members still revoking.
    pub(super) busy: BTreeSet<String>,
    /// Instance id → the active members with that `groupInstanceId` (one, but for a broken group).
    instances: BTreeMap<String, BTreeSet<String>>,
}

impl RebalanceIndex {
    /// The index of `g`, counted over every member; None when the group's shards are not all in the dense
    /// range the rebalance computes in bits (never for a valid group: the full rebalance runs then).
    pub fn of(g: &Group) -> Option<Self> {
        let shards = super::targets::assignor_shards(g)?;
        let reserved = g.reserved_shards();
        let mut untargeted = BTreeSet::new();
        for s in (0..g.shard_count).chain(g.draining_shards.iter().copied()) {
            if !reserved.contains(&s) {
                untargeted.insert(s);
            }
        }
        let mut index = RebalanceIndex {
            frame: Frame::of(g),
            gated: g.gated_shards(),
            reserved,
            assignor_total: shards.len(),
            held: HashMap::new(),
            active: 0,
            sizes: BTreeSet::new(),
            by_size: BTreeMap::new(),
            no_entry: BTreeSet::new(),
            stale: BTreeSet::new(),
            targeted: HashMap::new(),
            grantable: 0,
            doubled: 0,
            outside: 0,
            untargeted,
            unsettled: BTreeSet::new(),
            lacking: BTreeSet::new(),
            diverged: BTreeSet::new(),
            busy: BTreeSet::new(),
            instances: BTreeMap::new(),
        };
        for h in &g.holds {
            for &s in &h.shards {
                index.hold(s);
            }
        }
        for (id, m) in &g.members {
            index.count(id, Some(m), g.target_assignments.get(id));
        }
        for (id, t) in &g.target_assignments {
            if !g.members.contains_key(id) {
                index.count(id, None, Some(t));
            }
        }
        Some(index)
    }

    /// Whether the index was counted under `g`'s header (holds, gates, reservations, shard range).
    pub fn fits(&self, g: &Group) -> bool {
        self.frame.is_of(g)
    }

    fn in_assignor(&self, s: u32) -> bool {
        (s < self.frame.shard_count || self.frame.draining.contains(&s))
            && !self.reserved.contains(&s)
    }

    /// Counts member `id` again after a change: out as it was counted (`was`, `was_target`), in as `g` holds it.
    pub fn recount(
        &mut self,
        g: &Group,
        id: &str,
        was: Option<&Member>,
        was_target: Option<&ShardSet>,
    ) {
        self.forget(id, was, was_target);
        self.count(id, g.members.get(id), g.target_assignments.get(id));
    }

    /// Counts member `id` in, as record `m` (None: no record) with target entry `t`.
    pub(super) fn count(&mut self, id: &str, m: Option<&Member>, t: Option<&ShardSet>) {
        self.count_instance(id, m);
        self.count_held(m);
        self.count_target(id, m, t);
        self.count_flags(id, m, t);
    }

    /// Counts member `id` out, as it was counted in (the record and entry it was counted with).
    pub(super) fn forget(&mut self, id: &str, m: Option<&Member>, t: Option<&ShardSet>) {
        self.forget_instance(id, m);
        self.forget_held(m);
        self.forget_target(id, m, t);
        self.forget_flags(id);
    }

    /// The instance id of `m`, if it is an active static member, counted in for `id`.
    fn count_instance(&mut self, id: &str, m: Option<&Member>) {
        if let Some(instance) = active_instance_id(m) {
            self.instances
                .entry(instance.to_owned())
                .or_default()
                .insert(id.to_owned());
        }
    }

    fn forget_instance(&mut self, id: &str, m: Option<&Member>) {
        if let Some(instance) = active_instance_id(m)
            && let Some(ids) = self.instances.get_mut(instance)
        {
            ids.remove(id);
            if ids.is_empty() {
                self.instances.remove(instance);
            }
        }
    }

    /// The members counted as active holders of `group_instance_id`, ascending (as counted: a member changed
    /// since is looked at again by the caller, `heartbeat::Draft::active_instance`).
    pub fn instance_holders(&self, group_instance_id: &str) -> impl Iterator<Item = &String> + '_ {
        self.instances.get(group_instance_id).into_iter().flatten()
    }

    /// Counts `g`'s instance ids afresh (the rest of the index is left as it is): for an index that cannot be
    /// counted afresh as a whole (`recount_all`), so that this part stays `g`'s.
    pub(super) fn recount_instances(&mut self, g: &Group) {
        self.instances.clear();
        for (id, m) in &g.members {
            self.count_instance(id, Some(m));
        }
    }

    /// The shards `m` holds, counted in (live members only; a shard both assigned and revoking counts once,
    /// so that settle's moves between the two leave the counts as they are).
    pub(super) fn count_held(&mut self, m: Option<&Member>) {
        if let Some(m) = m.filter(|m| m.state.is_live()) {
            for s in distinct_held(m) {
                self.hold(s);
            }
        }
    }

    fn forget_held(&mut self, m: Option<&Member>) {
        if let Some(m) = m.filter(|m| m.state.is_live()) {
            for s in distinct_held(m) {
                if let Some(n) = self.held.get_mut(&s) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        self.held.remove(&s);
                        self.note_held(s, false);
                    }
                }
            }
        }
    }

    /// Whether some live member or hold holds `s` (held by at least one).
    pub(super) fn is_held(&self, s: u32) -> bool {
        self.held.contains_key(&s)
    }

    /// Whether some shard could be granted now: named by an active member's target, held by no live member
    /// or hold, and not gated. When none can, `settle` grants nothing, so a member it visits only because it
    /// lacks a target shard would be left as it is. Kept as a count (`grantable`), so asking costs nothing
    /// whatever the group's size (it was a scan of every targeted shard).
    pub(super) fn any_grantable(&self) -> bool {
        self.grantable > 0
    }

    /// `s` got its first holder (`first`) or lost its last one: a targeted, ungated shard stops or starts
    /// being grantable.
    fn note_held(&mut self, s: u32, first: bool) {
        if self.targeted.contains_key(&s) && !self.gated.contains(&s) {
            self.grantable = if first {
                self.grantable.saturating_sub(1)
            } else {
                self.grantable + 1
            };
        }
    }

    /// `s` got its first target entry (`first`) or lost its last one: an unheld, ungated shard starts or stops
    /// being grantable.
    fn note_targeted(&mut self, s: u32, first: bool) {
        if !self.is_held(s) && !self.gated.contains(&s) {
            self.grantable = if first {
                self.grantable + 1
            } else {
                self.grantable.saturating_sub(1)
            };
        }
    }

    /// Counts a grant of `s` (the member's record is counted in afterwards without its held shards), or a hold
    /// of it, or a live member's holding.
    pub(super) fn hold(&mut self, s: u32) {
        let n = self.held.entry(s).or_default();
        *n += 1;
        if *n == 1 {
            self.note_held(s, true);
        }
    }

    /// The member's target entry counted in: sizes, the partition, stale entries.
    pub(super) fn count_target(&mut self, id: &str, m: Option<&Member>, t: Option<&ShardSet>) {
        let active = m.is_some_and(|m| m.state == MemberState::Active);
        if !active {
            if t.is_some() {
                self.stale.insert(id.to_owned());
            }
            return;
        }
        self.active += 1;
        let size = t.map_or(0, |t| t.len());
        self.sizes.insert((size, id.to_owned()));
        *self.by_size.entry(size).or_default() += 1;
        let Some(t) = t else {
            self.no_entry.insert(id.to_owned());
            return;
        };
        for &s in t {
            let n = self.targeted.entry(s).or_default();
            *n += 1;
            if *n == 2 {
                self.doubled += 1;
            }
            if *n == 1 {
                self.untargeted.remove(&s);
                self.note_targeted(s, true);
            }
            if !self.in_assignor(s) {
                self.outside += 1;
            }
        }
    }

    /// The member's target entry counted out, as [`RebalanceIndex::count_target`] counted it in.
    pub(super) fn forget_target(&mut self, id: &str, m: Option<&Member>, t: Option<&ShardSet>) {
        let active = m.is_some_and(|m| m.state == MemberState::Active);
        if !active {
            if t.is_some() {
                self.stale.remove(id);
            }
            return;
        }
        self.active = self.active.saturating_sub(1);
        let size = t.map_or(0, |t| t.len());
        self.sizes.remove(&(size, id.to_owned()));
        if let Some(n) = self.by_size.get_mut(&size) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.by_size.remove(&size);
            }
        }
        let Some(t) = t else {
            self.no_entry.remove(id);
            return;
        };
        for &s in t {
            let in_assignor = self.in_assignor(s);
            if let Some(n) = self.targeted.get_mut(&s) {
                *n = n.saturating_sub(1);
                if *n == 1 {
                    self.doubled = self.doubled.saturating_sub(1);
                }
                if *n == 0 {
                    self.targeted.remove(&s);
                    self.note_targeted(s, false);
                    if in_assignor {
                        self.untargeted.insert(s);
                    }
                }
            }
            if !in_assignor {
                self.outside = self.outside.saturating_sub(1);
            }
        }
    }

    /// The member's flags counted in: unsettled, lacking, diverged, busy.
    pub(super) fn count_flags(&mut self, id: &str, m: Option<&Member>, t: Option<&ShardSet>) {
        let Some(m) = m.filter(|m| m.state.is_live()) else {
            return;
        };
        let active = m.state == MemberState::Active;
        let target = if active { t } else { None };
        let meant = |s: &u32| target.is_some_and(|t| t.contains(s)) && !self.gated.contains(s);
        let unsettled = m.assigned.iter().any(|s| !meant(s))
            || m.revoking.keys().any(meant)
            || m.revoking.is_empty() == m.rebalance_deadline_ms.is_some();
        let lacking = target.is_some_and(|t| {
            t.iter()
                .any(|s| !m.assigned.contains(s) && !self.gated.contains(s))
        });
        let diverged = active
            && !(m.revoking.is_empty()
                && target.is_some_and(|t| *t == m.assigned)
                && m.reported_owned == m.assigned);
        let busy = m.state == MemberState::Leaving && !m.revoking.is_empty();
        for (flag, set) in [
            (unsettled, &mut self.unsettled),
            (lacking, &mut self.lacking),
            (diverged, &mut self.diverged),
            (busy, &mut self.busy),
        ] {
            if flag {
                set.insert(id.to_owned());
            }
        }
    }

    /// The member's flags counted out.
    pub(super) fn forget_flags(&mut self, id: &str) {
        self.unsettled.remove(id);
        self.lacking.remove(id);
        self.diverged.remove(id);
        self.busy.remove(id);
    }
}

/// `m`'s `groupInstanceId` when it is an active member (what [`Group::active_instance`] looks for).
fn active_instance_id(m: Option<&Member>) -> Option<&str> {
    m.filter(|m| m.state == MemberState::Active)
        .and_then(|m| m.group_instance_id.as_deref())
}

/// The shards `m` holds, each once.
fn distinct_held(m: &Member) -> impl Iterator<Item = u32> + '_ {
    m.assigned.iter().copied().chain(
        m.revoking
            .keys()
            .copied()
            .filter(|s| !m.assigned.contains(s)),
    )
}
