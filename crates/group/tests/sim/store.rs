//! Redis as the state machine sees it: the aggregate with its revision, and member lease deadlines judged
//! by Redis time (the simulation's `now`). The operations mirror the scripts in `crates/store/src/lua`:
//! `cas` (cas.lua: revision, then not-before, then lease conditions, all checked before any write) and
//! `renew` (heartbeat.lua: revision, then the member's lease must still be live; renews it, never touches
//! the aggregate). A lease is live while `now < deadline`.
//!
//! Every committed write is recorded, so the world can check it against invariants 1, 3, 4 and 6.
//!
//! The aggregate is stored as the real store keeps it: whole (layout "1"/"3": the document, encoded and parsed
//! again) or split (layout "4": a header and one entry per member; each write applies only the entries that
//! changed, or all of them when the group was stored whole before: `Group::write_form`). A scenario's
//! [`LayoutPlan`] says which writes use which, so some groups are split from the start and others move from
//! whole to split mid-run, through a rolling upgrade where old and new replicas' writes alternate. After every
//! write the group is what loading the stored form gives (`Group::from_split` / `Group::from_json`), and it
//! must equal what was written.
//!
//! It also holds the stream record (`record_cas.lua`: compare-and-set by revision), the shard streams with
//! their routing boundaries (`shards.rs`) and the producers' sightings for producer quiesce (`producers.rs`).
//! Every stream record write is kept too, so the world can follow switches and ends.

use super::TIMING;
use super::shards::SimShards;
use rsc_group::heartbeat::Transition;
use rsc_group::invariants::{self, Facts};
use rsc_group::model::{Group, WriteForm};
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

/// Which of a scenario's writes store the aggregate whole and which split (write numbers count from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutPlan {
    /// Writes before this one are whole (replicas of the earlier version only).
    pub whole_until: usize,
    /// From `whole_until` to here writes alternate (a rolling upgrade: old and new replicas); then all split.
    pub mixed_until: usize,
}

impl LayoutPlan {
    pub const SPLIT: LayoutPlan = LayoutPlan {
        whole_until: 0,
        mixed_until: 0,
    };

    fn split(&self, write: usize) -> bool {
        write >= self.mixed_until || (write >= self.whole_until && write.is_multiple_of(2))
    }
}

/// The aggregate as Redis holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stored {
    Whole,
    Split {
        header: String,
        entries: BTreeMap<(String, String), String>,
    },
}

pub struct SimStore {
    pub group: Rc<Group>,
    stored: Stored,
    layout: LayoutPlan,
    /// Writes committed so far, and how many of them were split.
    pub writes_committed: usize,
    pub split_writes: usize,
    /// Batch writes whose changed members (`Transition::changed_members`) were checked.
    pub batch_writes_checked: usize,
    /// The invariant facts of `group`, kept across writes as the coordinator keeps them: updated in place from
    /// the members a batch changed (`invariants::check_changed`) once the write is committed (a refused write
    /// never touches them), counted afresh after any other write.
    facts: Facts,
    /// Batch writes whose incremental invariant check was compared with the full one.
    pub incremental_checks: usize,
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
    pub fn new(group: Group, now: i64, layout: LayoutPlan) -> Self {
        let mut record = StreamRecord::new(&group.stream_prefix, group.shard_count, now);
        record.routing_version = group.routing_version;
        let facts = Facts::of(&group);
        SimStore {
            facts,
            revision: group.store_revision,
            shards: SimShards::new(group.shard_count),
            group: Rc::new(group),
            stored: Stored::Whole,
            layout,
            writes_committed: 0,
            split_writes: 0,
            batch_writes_checked: 0,
            incremental_checks: 0,
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
        self.commit(
            g,
            t.must_be_lapsed.clone(),
            t.changed_members.as_ref(),
            by,
            now,
        );
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

    fn commit(
        &mut self,
        mut g: Group,
        must_be_lapsed: Vec<String>,
        changed: Option<&BTreeSet<String>>,
        by: Writer,
        now: i64,
    ) {
        self.revision += 1;
        g.store_revision = self.revision;
        self.check_incrementally(&g, changed);
        let new = Rc::new(self.store_and_load(g, changed));
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

impl SimStore {
    /// The coordinator's invariant check of a write (`invariants::check_changed` from the kept facts, for a batch
    /// that says which members it changed): it must find exactly what the full check finds, and leave facts
    /// equal to those counted afresh. And its batch copy: the previous revision caught up by the same members
    /// (`Group::catch_up`) must equal the revision written.
    fn check_incrementally(&mut self, g: &Group, changed: Option<&BTreeSet<String>>) {
        let Some(changed) = changed else {
            self.facts = Facts::of(g);
            return;
        };
        let violations = invariants::check_changed(&self.group, &mut self.facts, g, changed);
        assert_eq!(
            violations,
            invariants::check(g),
            "write {}: the incremental invariant check disagrees with the full one",
            self.writes_committed
        );
        assert!(
            self.facts == Facts::of(g),
            "write {}: the invariant facts updated in place from the changed members differ from those counted afresh",
            self.writes_committed
        );
        // The coordinator's batch copy (`Group::catch_up`): the revision before, brought up by the changed
        // members, is the revision written.
        let mut copy = (*self.group).clone();
        copy.catch_up(g, changed);
        assert!(
            copy == *g,
            "write {}: the previous revision caught up by the changed members is not the revision written",
            self.writes_committed
        );
        self.incremental_checks += 1;
    }

    /// Stores `g` in the layout this write uses and returns what loading it gives, checked equal to `g`.
    /// `changed`: the members a batch says it changed (`Transition::changed_members`), checked to be exactly
    /// the ones whose entries comparing every member finds changed.
    fn store_and_load(&mut self, mut g: Group, changed: Option<&BTreeSet<String>>) -> Group {
        let write = self.writes_committed;
        self.writes_committed += 1;
        if let Some(among) = changed {
            let told = g.split_changes_among(&self.group, among);
            let all = g.split_changes(&self.group);
            let keys = |w: &rsc_group::model::SplitWrite| {
                let mut k: Vec<_> = w
                    .entries
                    .iter()
                    .map(|e| (e.part, e.key.clone(), e.json.clone()))
                    .collect();
                k.sort();
                k
            };
            assert_eq!(
                keys(&told),
                keys(&all),
                "write {write}: the batch's changed members miss a change"
            );
            self.batch_writes_checked += 1;
        }
        // A replica configured for layout 4 decides as the coordinator does (`Group::write_form`): changes, every
        // entry, or (a large group most of which changed) the whole document.
        let form = if self.layout.split(write) {
            g.write_form(
                &self.group,
                matches!(self.stored, Stored::Split { .. }),
                changed,
            )
        } else {
            WriteForm::Whole
        };
        let WriteForm::Split(split) = form else {
            self.stored = Stored::Whole;
            let loaded = Group::from_json(&g.to_json()).expect("a whole aggregate loads");
            assert_eq!(loaded, g, "layout 3: write {write} loads back as written");
            return loaded;
        };
        self.split_writes += 1;
        let mut entries = match std::mem::replace(&mut self.stored, Stored::Whole) {
            Stored::Split { entries, .. } => entries,
            Stored::Whole => BTreeMap::new(),
        };
        if split.full {
            entries.clear();
        }
        for e in split.entries {
            let key = (e.part.to_owned(), e.key);
            match e.json {
                Some(json) => entries.insert(key, json),
                None => entries.remove(&key),
            };
        }
        let loaded = Group::from_split(
            &split.header,
            entries
                .iter()
                .map(|((p, k), j)| (p.as_str(), k.as_str(), j.as_str())),
        )
        .expect("a split aggregate loads");
        assert_eq!(
            loaded, g,
            "layout 4: write {write} loads back as written (full: {})",
            split.full
        );
        self.stored = Stored::Split {
            header: split.header,
            entries,
        };
        loaded
    }
}
