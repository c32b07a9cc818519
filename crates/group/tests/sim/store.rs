//! Redis as the state machine sees it: the aggregate with its revision, and member lease deadlines judged
//! by Redis time (the simulation's `now`). The operations mirror the scripts in `crates/store/src/lua`:
//! `cas` (cas.lua: revision, then not-before, then lease conditions, all checked before any write) and
//! `renew` (heartbeat.lua: revision, then the member's lease must still be live; renews it, never touches
//! the aggregate). A lease is live while `now < deadline`.
//!
//! Every committed write is recorded, so the world can check it against invariants 1, 3, 4 and 6.
//!
//! It also holds the shard streams' routing boundaries (the routing keys of `routing_floor.rs`): raised on
//! every shard by a routing switch, with its switch point, and annotated with the scale (possibly a few steps
//! later: a producer's append can raise a boundary before the coordinator annotates it).

use super::TIMING;
use rsc_group::heartbeat::Transition;
use rsc_group::model::Group;
use rsc_protocol::ordering::{BoundaryScale, ShardBoundary};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// Who committed a write (for the revoke-before-assign check).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writer {
    /// Heartbeats of these members (more than one: a batch).
    Heartbeats(Vec<String>),
    /// A reconciler tick.
    Tick,
    /// An operator action or drain evidence.
    Operator,
}

/// One committed write, kept until the world has checked it.
#[derive(Debug)]
pub struct WriteRecord {
    pub old: Rc<Group>,
    pub new: Rc<Group>,
    pub must_be_lapsed: Vec<String>,
    pub by: Writer,
    pub now: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CasOutcome {
    Written(u64),
    Conflict,
    /// TOO_EARLY (`member` None), LEASE_ACTIVE or LEASE_LAPSED (the member whose lease condition failed):
    /// nothing was written.
    ConditionFailed {
        member: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenewOutcome {
    Renewed,
    Conflict,
    LeaseLapsed,
}

pub struct SimStore {
    pub group: Rc<Group>,
    pub revision: u64,
    pub leases: BTreeMap<String, i64>,
    pub writes: Vec<WriteRecord>,
    /// The stream's routing version (the stream record's), and each shard's routing boundary.
    pub routing_version: i64,
    pub boundaries: BTreeMap<u32, ShardBoundary>,
}

impl SimStore {
    pub fn new(group: Group) -> Self {
        SimStore {
            revision: group.store_revision,
            routing_version: group.routing_version,
            group: Rc::new(group),
            leases: BTreeMap::new(),
            writes: Vec::new(),
            boundaries: BTreeMap::new(),
        }
    }

    pub fn load(&self) -> (Rc<Group>, u64) {
        (self.group.clone(), self.revision)
    }

    pub fn lease_live(&self, member: &str, now: i64) -> bool {
        self.leases.get(member).is_some_and(|d| now < *d)
    }

    /// Members whose lease has lapsed (the reconciler's ZRANGEBYSCORE).
    pub fn lapsed(&self, now: i64) -> BTreeSet<String> {
        self.leases
            .iter()
            .filter(|(_, d)| **d <= now)
            .map(|(m, _)| m.clone())
            .collect()
    }

    /// cas.lua.
    pub fn cas(&mut self, expected: u64, t: &Transition, now: i64, by: Writer) -> CasOutcome {
        if expected != self.revision {
            return CasOutcome::Conflict;
        }
        if now < t.not_before_ms {
            return CasOutcome::ConditionFailed { member: None };
        }
        let failed = t
            .must_be_lapsed
            .iter()
            .find(|m| self.lease_live(m, now))
            .or_else(|| t.must_be_live.iter().find(|m| !self.lease_live(m, now)));
        if let Some(m) = failed {
            return CasOutcome::ConditionFailed {
                member: Some(m.clone()),
            };
        }
        for m in &t.renew {
            self.leases
                .insert(m.clone(), now + TIMING.member_lease_ttl_ms);
        }
        for m in &t.remove {
            self.leases.remove(m);
        }
        let g = t.group.clone().expect("a transition carries a group");
        self.commit(g, t.must_be_lapsed.clone(), by, now);
        CasOutcome::Written(self.revision)
    }

    /// heartbeat.lua.
    pub fn renew(&mut self, expected: u64, member: &str, now: i64) -> RenewOutcome {
        if expected != self.revision {
            return RenewOutcome::Conflict;
        }
        if !self.lease_live(member, now) {
            return RenewOutcome::LeaseLapsed;
        }
        self.leases
            .insert(member.to_owned(), now + TIMING.member_lease_ttl_ms);
        RenewOutcome::Renewed
    }

    /// An operator's write (scale, rollback, force-complete, drain evidence): a CAS on the current revision.
    /// A routing switch `from → to`: bumps the routing version and raises every shard's boundary to it with a
    /// fresh switch point (`<now>-<shard>`), annotated with the scale unless `annotated` is false. Returns
    /// every raised shard's switch point (old and new).
    pub fn switch_routing(
        &mut self,
        from: u32,
        to: u32,
        ordered: bool,
        annotated: bool,
        now: i64,
    ) -> BTreeMap<u32, String> {
        self.routing_version += 1;
        let scale = BoundaryScale {
            version: self.routing_version,
            from,
            to,
            ordered,
        };
        for s in 0..from.max(to) {
            self.boundaries.insert(
                s,
                ShardBoundary {
                    floor: self.routing_version,
                    switch_id: format!("{now}-{s}"),
                    scale: annotated.then_some(scale),
                },
            );
        }
        (0..from.max(to))
            .map(|s| (s, format!("{now}-{s}")))
            .collect()
    }

    /// The coordinator annotates the boundaries of the latest switch (`switch_routing` with `annotated` false).
    pub fn annotate(&mut self, from: u32, to: u32, ordered: bool) {
        let version = self.routing_version;
        for b in self.boundaries.values_mut().filter(|b| b.floor == version) {
            b.scale = Some(BoundaryScale {
                version,
                from,
                to,
                ordered,
            });
        }
    }

    pub fn write_operator(&mut self, g: Group, now: i64) {
        self.commit(g, Vec::new(), Writer::Operator, now);
    }

    fn commit(&mut self, mut g: Group, must_be_lapsed: Vec<String>, by: Writer, now: i64) {
        self.revision += 1;
        g.store_revision = self.revision;
        let new = Rc::new(g);
        let old = std::mem::replace(&mut self.group, new.clone());
        self.writes.push(WriteRecord {
            old,
            new,
            must_be_lapsed,
            by,
            now,
        });
    }
}
