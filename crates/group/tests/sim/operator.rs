//! The operator in resharding scenarios, and what the world learns from the stream record's writes.
//!
//! The operator scales the stream to a random count (often doubling it on an ordered stream, sometimes with
//! producer quiesce), rolls back or force-completes the active migration, and flips the stream's ordering
//! option while no migration is active; each scale, rollback or force-complete is a request to a random live
//! replica, which runs the core's flow for it step by step (`resharder.rs`). A scale while another migration
//! is active is refused there, as the coordinator refuses it.
//!
//! From the stream record's writes the world follows the current ordered switch (its children and routing
//! version: the checks ask which children must still be withheld or fenced) and tells the ledger where order
//! is no longer owed (an unordered switch, a rollback, a force-complete) and which records a force-complete
//! abandoned.

use super::ledger::Ledger;
use super::resharder::ReshardJob;
use super::rng::Rng;
use super::shards::SimShards;
use super::store::SimStore;
use rsc_group::model::{MigrationState, ShardSet};
use rsc_group::reshard::record::ScaleRequest;
use rsc_group::stream::StreamRecord;
use rsc_protocol::ordering::{Ordering, gates};
use std::collections::BTreeMap;

/// The current ordered switch (no children: none).
#[derive(Debug, Default)]
pub struct OrderedSwitch {
    pub resharding_id: String,
    /// Children of the switch with their parents.
    pub children: BTreeMap<u32, ShardSet>,
    /// The routing version the switch raised boundaries to.
    pub version: i64,
}

impl OrderedSwitch {
    /// Whether `parent`'s records from before the switch have all been consumed by the group (the truth,
    /// from the simulated Redis, which the core's drain evidence must not get ahead of).
    pub fn consumed(&self, parent: u32, shards: &SimShards) -> bool {
        shards.consumed_up_to_switch(parent, self.version)
    }

    /// The parents of `child` not consumed up to their switch points yet.
    pub fn waiting(&self, child: u32, shards: &SimShards) -> ShardSet {
        self.children
            .get(&child)
            .map_or_else(ShardSet::new, |parents| {
                parents
                    .iter()
                    .filter(|p| !self.consumed(**p, shards))
                    .copied()
                    .collect()
            })
    }

    /// `child`'s switch point, once its boundary was raised to the switch's version.
    pub fn point<'a>(&self, child: u32, shards: &'a SimShards) -> Option<&'a String> {
        shards.switch_points.get(&(self.version, child))
    }
}

/// What the operator did and saw, for the summary.
#[derive(Debug, Default, Clone, Copy)]
pub struct OperatorStats {
    pub scales: u64,
    pub ordered_scales: u64,
    pub quiesced_scales: u64,
    pub rollbacks: u64,
    pub force_completes: u64,
    pub completed: u64,
}

pub struct Operator {
    /// The ordered-stream generator (ordering flips, doubling, quiesce).
    orng: Rng,
    seq: u64,
    pub switch: OrderedSwitch,
    pub stats: OperatorStats,
}

impl Operator {
    pub fn new(orng: Rng) -> Self {
        Operator {
            orng,
            seq: 0,
            switch: OrderedSwitch::default(),
            stats: OperatorStats::default(),
        }
    }

    /// This step's operator request, if any: the job and the replica it goes to (`replicas_up`: those not
    /// down). `rng` is the world's main generator.
    pub fn act(
        &mut self,
        rng: &mut Rng,
        store: &mut SimStore,
        replicas_up: &[usize],
        now: i64,
    ) -> Option<(usize, ReshardJob)> {
        let roll = rng.below(10_000);
        let record = store.stream.record.clone();
        let job = match roll {
            0..=4 => {
                let to = rng.below(25) as u32;
                let ordered = self.orng.chance(500);
                if record.active_migration.is_none() {
                    self.set_ordering(store, ordered, now);
                }
                let count = store.stream.record.shard_count;
                let to = if ordered && count.is_power_of_two() && self.orng.chance(500) {
                    count * 2
                } else {
                    to
                };
                self.seq += 1;
                let quiesce = self.orng.chance(250).then(|| self.orng.range(200, 1_500));
                let request = ScaleRequest {
                    resharding_id: format!("reshard-{}", self.seq),
                    target: to,
                    requested_by: "sim".into(),
                    reason: "sim".into(),
                    quiesce_timeout_ms: quiesce,
                };
                ReshardJob::scale(request, store.group.shard_count)
            }
            5..=29 => {
                let m = record.active_migration.as_ref()?;
                let end = if roll >= 22 {
                    MigrationState::ForceCompleted
                } else {
                    MigrationState::RolledBack
                };
                ReshardJob::end((*store.group).clone(), &m.resharding_id, end)
            }
            _ => return None,
        };
        let replica = *replicas_up.get(self.orng.below(replicas_up.len() as u64) as usize)?;
        Some((replica, job))
    }

    /// The operator sets the stream's ordering option (the coordinator refuses it while a migration is
    /// active; the world only asks when none is).
    fn set_ordering(&mut self, store: &mut SimStore, ordered: bool, now: i64) {
        let ordering = if ordered {
            Ordering::Key
        } else {
            Ordering::None
        };
        if store.stream.record.ordering == ordering {
            return;
        }
        let mut next = store.stream.record.clone();
        next.ordering = ordering;
        let base = store.stream.revision;
        store.write_stream(base, next, now);
    }

    /// Follows the stream record's writes since the last call.
    pub fn follow(&mut self, store: &mut SimStore, ledger: &mut Ledger) {
        for (old, new) in std::mem::take(&mut store.stream_writes) {
            if super::tracing() {
                eprintln!(
                    "stream write: shards {} v{} ordering {:?} active {:?} switch points {:?}; history {:?}",
                    new.shard_count,
                    new.routing_version,
                    new.ordering,
                    new.active_migration.as_ref().map(|m| (
                        &m.resharding_id,
                        m.from_shard_count,
                        m.to_shard_count,
                        m.state
                    )),
                    new.active_migration.as_ref().map(|m| &m.switch_points),
                    new.history.last().map(|m| (&m.resharding_id, m.state))
                );
            }
            self.switched(&old, &new, ledger);
            self.ended(&old, &new, &store.shards, ledger);
        }
    }

    fn switched(&mut self, old: &StreamRecord, new: &StreamRecord, ledger: &mut Ledger) {
        let (Some(before), Some(m)) = (&old.active_migration, &new.active_migration) else {
            return;
        };
        if before.state != MigrationState::Preparing || m.state != MigrationState::Active {
            return;
        }
        self.stats.scales += 1;
        self.stats.quiesced_scales += u64::from(new.producer_quiesce.is_some());
        let children = gates(m.from_shard_count, m.to_shard_count);
        if new.ordering == Ordering::Key {
            self.stats.ordered_scales += 1;
            self.switch = OrderedSwitch {
                resharding_id: m.resharding_id.clone(),
                children,
                version: new.routing_version,
            };
        } else {
            // No gates: records routed before the switch may be read after later ones.
            self.switch = OrderedSwitch::default();
            ledger.forgive_below(new.routing_version);
        }
    }

    fn ended(
        &mut self,
        old: &StreamRecord,
        new: &StreamRecord,
        shards: &SimShards,
        ledger: &mut Ledger,
    ) {
        let Some(before) = &old.active_migration else {
            return;
        };
        if new
            .active_migration
            .as_ref()
            .is_some_and(|m| m.resharding_id == before.resharding_id)
        {
            return;
        }
        if self.switch.resharding_id == before.resharding_id {
            self.switch = OrderedSwitch::default();
        }
        let Some(ended) = new
            .history
            .iter()
            .rev()
            .find(|m| m.resharding_id == before.resharding_id)
        else {
            return;
        };
        match ended.state {
            MigrationState::Deprecated => self.stats.completed += 1,
            // The gates are cleared: no order guarantee for the keys that moved meanwhile.
            MigrationState::RolledBack => {
                self.stats.rollbacks += 1;
                ledger.forgive_below(new.routing_version);
            }
            MigrationState::ForceCompleted => {
                self.stats.force_completes += 1;
                ledger.forgive_below(new.routing_version);
                // Removed shards leave without drain evidence: what they still hold is given up.
                for s in shards.streams.keys().filter(|s| **s >= new.shard_count) {
                    ledger.abandon(*s);
                }
            }
            _ => {}
        }
    }
}
