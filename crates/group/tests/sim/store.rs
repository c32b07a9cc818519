//! Redis as the state machine sees it: the aggregate with its revision, and member lease deadlines judged
//! by Redis time (the simulation's `now`). The operations mirror the scripts in `crates/store/src/lua`:
//! `cas` (cas.lua: revision, then not-before, then lease conditions, all checked before any write) and
//! `renew` (heartbeat.lua: revision, then the member's lease must still be live; renews it, never touches
//! the aggregate). A lease is live while `now < deadline`.
//!
//! Every committed write is recorded, so the world can check it against invariants 1, 3, 4 and 6.
//!
//! It also holds the stream record (`record_cas.lua`: compare-and-set by revision), the shard streams with
//! their routing boundaries (`shards.rs`) and the producers' sightings for producer quiesce (`producers.rs`).
//! Every stream record write is kept too, so the world can follow switches and ends.

use super::TIMING;
use super::shards::SimShards;
use rsc_group::heartbeat::Transition;
use rsc_group::model::Group;
use rsc_group::quiesce::ProducerSighting;
use rsc_group::replica::reshard::StreamSnapshot;
use rsc_group::stream::StreamRecord;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// Who committed a write (for the revoke-before-assign check).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writer {
    /// Heartbeats of these members (more than one: a batch).
    Heartbeats(Vec<String>),
    /// A reconciler tick.
    Tick,
    /// A resharding flow's group change (bringing it in line with the stream, drain evidence).
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
    pub stream: StreamSnapshot,
    /// Every stream record write (before, after), kept until the world has looked at it.
    pub stream_writes: Vec<(StreamRecord, StreamRecord)>,
    pub shards: SimShards,
    pub sightings: BTreeMap<String, ProducerSighting>,
}

impl SimStore {
    /// A stream whose record and shard streams were created with `group`.
    pub fn new(group: Group, now: i64) -> Self {
        let mut record = StreamRecord::new(&group.stream_prefix, group.shard_count, now);
        record.routing_version = group.routing_version;
        SimStore {
            revision: group.store_revision,
            shards: SimShards::new(group.shard_count),
            group: Rc::new(group),
            leases: BTreeMap::new(),
            writes: Vec::new(),
            stream: StreamSnapshot {
                record,
                revision: 1,
            },
            stream_writes: Vec::new(),
            sightings: BTreeMap::new(),
        }
    }

    /// record_cas.lua: `next` written if the record is still at `base` (its revision and time set).
    pub fn write_stream(
        &mut self,
        base: u64,
        mut next: StreamRecord,
        now: i64,
    ) -> Option<StreamSnapshot> {
        if base != self.stream.revision {
            return None;
        }
        next.store_revision = base + 1;
        next.updated_at_ms = now;
        let old = std::mem::replace(&mut self.stream.record, next.clone());
        self.stream.revision = base + 1;
        self.stream_writes.push((old, next));
        Some(self.stream.clone())
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
