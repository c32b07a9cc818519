//! A test context for example tests of the state machine's rules, in the style of Kafka's
//! `GroupMetadataManagerTestContext`: one group on a mock clock (Redis time), a store that keeps the group as
//! its JSON and the members' lease deadlines, members that remember what their answers told them, and a
//! fluent way to say "member X heartbeats with …, expect …".
//!
//! - The clock only moves when a test says so ([`Context::advance`]).
//! - Every write is replayed: the aggregate is stored as the JSON a replica would load, and read back from it
//!   before anything else happens, so each test also checks that what is written is what is read.
//! - A write's lease conditions are checked against the store's leases at the mock time, as `cas.lua` does;
//!   a steady answer renews the lease only while it is live, as `heartbeat.lua` does.
//! - After every write, `invariants::check` must hold.
//!
//! A member sends by default what a well-behaved member would: its last answered epoch and metadataVersion,
//! owning exactly the shards its last answer assigned (it stops reading a revoked shard at once and reports
//! it released). Each part of the request can be said otherwise ([`Heartbeat`]).

pub mod answer;
pub mod heartbeat;
pub mod stream;

pub use heartbeat::Heartbeat;

use rsc_group::heartbeat::Transition;
use rsc_group::invariants;
use rsc_group::model::{Group, ShardSet};
use rsc_group::stream::StreamRecord;
use rsc_group::tick::{TickReport, tick};
use rsc_group::timing::Timing;
use std::collections::{BTreeMap, BTreeSet};

/// The timing of every context: a 1 s heartbeat, 5 s member lease, 20 s rebalance timeout, 10 s static
/// grace.
pub const TIMING: Timing = Timing {
    heartbeat_interval_ms: 1_000,
    member_lease_ttl_ms: 5_000,
    rebalance_timeout_ms: 20_000,
    stale_member_retention_ms: 600_000,
    hold_margin_ms: 500,
    static_member_grace_ms: 10_000,
};

/// When every context starts (Redis time, ms).
pub const START: i64 = 1_000_000;

/// What a member process knows from its answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberView {
    pub epoch: i64,
    pub metadata_version: i64,
    pub assigned: ShardSet,
    pub instance: Option<String>,
}

/// One group in a store, a mock clock, and the members' views.
pub struct Context {
    /// The group as the store holds it (read back from its JSON).
    pub group: Group,
    stored_json: String,
    pub now: i64,
    pub timing: Timing,
    leases: BTreeMap<String, i64>,
    pub views: BTreeMap<String, MemberView>,
    /// The stream record (resharding examples).
    pub stream: StreamRecord,
    /// How many writes the store took.
    pub writes: usize,
    requests: u64,
}

/// Builds a [`Context`].
pub struct ContextBuilder {
    shards: u32,
    timing: Timing,
    group: Option<Group>,
}

impl ContextBuilder {
    pub fn shards(mut self, n: u32) -> Self {
        self.shards = n;
        self
    }

    /// Starts from this aggregate instead of an empty group.
    pub fn group(mut self, g: Group) -> Self {
        self.group = Some(g);
        self
    }

    pub fn build(self) -> Context {
        let group = self
            .group
            .unwrap_or_else(|| Group::new("orders", "billing", self.shards, START, "life-1"));
        let mut stream = StreamRecord::new(&group.stream_prefix, group.shard_count, START);
        stream.routing_version = 1;
        Context {
            stored_json: group.to_json(),
            group,
            now: START,
            timing: self.timing,
            leases: BTreeMap::new(),
            views: BTreeMap::new(),
            stream,
            writes: 0,
            requests: 0,
        }
    }
}

impl Context {
    #[allow(clippy::new_ret_no_self)]
    pub fn new() -> ContextBuilder {
        ContextBuilder {
            shards: 4,
            timing: TIMING,
            group: None,
        }
    }

    /// Moves the mock clock on.
    pub fn advance(&mut self, ms: i64) -> &mut Self {
        self.now += ms;
        self
    }

    /// A heartbeat of `member`, as it would send it now (change any part before sending it).
    pub fn member(&mut self, member: &str) -> Heartbeat<'_> {
        self.requests += 1;
        Heartbeat::new(self, member)
    }

    /// Several heartbeat rounds of every member the context knows (each as it would send it), until nothing
    /// changes: the group converges.
    pub fn converge(&mut self) -> &mut Self {
        for _ in 0..10 {
            let before = (self.writes, self.views.clone());
            let ids: Vec<String> = self.views.keys().cloned().collect();
            for id in ids {
                self.member(&id).send();
            }
            if (self.writes, &self.views) == (before.0, &before.1) {
                return self;
            }
        }
        panic!(
            "the group did not converge within 10 rounds: {:#?}",
            self.group
        );
    }

    /// Whether `member`'s lease is live at the mock time.
    pub fn lease_live(&self, member: &str) -> bool {
        self.leases.get(member).is_some_and(|d| self.now < *d)
    }

    /// Every lease entry: member → lease end (Redis ms), as the lease set holds them. (Read by
    /// deadline_props.rs, which computes a group's next visit from them; not every test binary does.)
    #[allow(dead_code)]
    pub fn lease_ends(&self) -> &BTreeMap<String, i64> {
        &self.leases
    }

    /// Members whose leases lapsed by the mock time.
    pub fn lapsed(&self) -> BTreeSet<String> {
        self.leases
            .iter()
            .filter(|(_, d)| **d <= self.now)
            .map(|(m, _)| m.clone())
            .collect()
    }

    /// A reconciler tick at the mock time, with the leases lapsed by it; written (its conditions checked)
    /// when something is due.
    pub fn tick(&mut self) -> Option<TickReport> {
        let lapsed = self.lapsed();
        let (t, report) = tick(&self.group, self.now, &lapsed, &self.timing)
            .expect("the context's epochs stay small")?;
        assert!(
            self.commit(&t),
            "a tick's conditions hold at the mock time: {t:?}"
        );
        Some(report)
    }

    /// cas.lua: checks `t`'s conditions at the mock time, then applies its lease operations and writes its
    /// aggregate. Whether it was written.
    pub fn commit(&mut self, t: &Transition) -> bool {
        if self.now < t.not_before_ms
            || t.must_be_lapsed.iter().any(|m| self.lease_live(m))
            || t.must_be_live.iter().any(|m| !self.lease_live(m))
        {
            return false;
        }
        for m in &t.renew {
            self.leases
                .insert(m.clone(), self.now + self.timing.member_lease_ttl_ms);
        }
        for m in &t.remove {
            self.leases.remove(m);
        }
        let Some(g) = &t.group else {
            return false;
        };
        self.write(g.clone());
        true
    }

    /// heartbeat.lua: renews `member`'s lease if it is live. Whether it was.
    pub fn renew(&mut self, member: &str) -> bool {
        if !self.lease_live(member) {
            return false;
        }
        self.leases.insert(
            member.to_owned(),
            self.now + self.timing.member_lease_ttl_ms,
        );
        true
    }

    /// Stores `g` (the next revision) and reads it back from its JSON: the replay every write goes through.
    pub fn write(&mut self, mut g: Group) {
        g.store_revision = self.group.store_revision + 1;
        let json = g.to_json();
        let read = Group::from_json(&json).expect("a written aggregate reads back");
        assert_eq!(
            read, g,
            "the aggregate read back differs from the one written"
        );
        let violations = invariants::check(&read);
        assert!(
            violations.is_empty(),
            "invariants violated after a write: {violations:?}\n{read:#?}"
        );
        self.group = read;
        self.stored_json = json;
        self.writes += 1;
    }

    /// The aggregate as the store holds it.
    pub fn stored_json(&self) -> &str {
        &self.stored_json
    }

    /// A fresh request id.
    fn request_id(&self, member: &str) -> String {
        format!("{member}-{}", self.requests)
    }
}

/// `shards` as a set.
pub fn set(shards: &[u32]) -> ShardSet {
    shards.iter().copied().collect()
}
