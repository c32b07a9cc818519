//! A producer as the SDK's routed producer behaves towards the coordinator and Redis: it holds routing (the
//! stream record's shard count and routing version, fetched every refresh interval, each fetch a sighting for
//! producer quiesce), appends its keys through guarded publish (`shards.rs`: refused when its routing is
//! older than the shard's routing boundary, then it fetches routing again; raising the boundary when its
//! routing is newer), and, while the routing it fetched asks for quiesce, appends nothing and reports
//! `quiesced` once. Each key belongs to one producer, which appends it one record at a time.
//!
//! What it does not model: lost append answers and the retries they cause (the duplicates producer quiesce
//! exists for), batching, and the group sync a real routing request makes.

use super::ledger::Ledger;
use super::rng::Rng;
use super::shards::{Appended, SimShards};
use rsc_group::model::MigrationState;
use rsc_group::quiesce::ProducerSighting;
use rsc_group::stream::StreamRecord;
use rsc_protocol::routing::shard_for_key;
use std::collections::BTreeMap;
use std::ops::Range;

pub struct Producer {
    pub id: String,
    keys: Range<u32>,
    /// Shard count and routing version of the routing it holds, and when it fetched it.
    routing: Option<(u32, i64)>,
    fetched_at: i64,
    refresh_ms: i64,
    /// Per mille per step: how often it appends.
    rate: u64,
    /// The scale it holds still for (reported quiesced).
    holding_for: Option<String>,
    pub running: bool,
}

/// The quiesce producers must honour now: the record's, while its scale is the active PREPARING migration,
/// undecided, before its deadline.
fn waiting_quiesce(record: &StreamRecord, now: i64) -> Option<String> {
    let m = record.active_migration.as_ref()?;
    let q = record.producer_quiesce.as_ref()?;
    (m.state == MigrationState::Preparing
        && q.resharding_id == m.resharding_id
        && q.is_waiting(now))
    .then(|| q.resharding_id.clone())
}

impl Producer {
    pub fn new(index: usize, keys: Range<u32>, rng: &mut Rng) -> Self {
        Producer {
            id: format!("producer{index}"),
            keys,
            routing: None,
            fetched_at: 0,
            refresh_ms: rng.range(100, 600),
            rate: rng.pick(&[200, 400, 600]),
            holding_for: None,
            running: true,
        }
    }

    /// One step: fetch routing when it is due (or was refused), then perhaps append one record. Returns the
    /// resharding id it reported quiesced for now, if it did (the coordinator switches on the last report).
    pub fn step(
        &mut self,
        now: i64,
        record: &StreamRecord,
        sightings: &mut BTreeMap<String, ProducerSighting>,
        shards: &mut SimShards,
        ledger: &mut Ledger,
        rng: &mut Rng,
    ) -> Option<String> {
        if !self.running {
            return None;
        }
        let mut reported = None;
        if self.routing.is_none() || now - self.fetched_at >= self.refresh_ms {
            self.routing = Some((record.shard_count, record.routing_version));
            self.fetched_at = now;
            let seen = sightings
                .entry(self.id.clone())
                .or_insert_with(|| ProducerSighting {
                    producer_id: self.id.clone(),
                    ..ProducerSighting::default()
                });
            seen.last_seen_ms = now;
            let waiting = waiting_quiesce(record, now);
            if let Some(rid) = &waiting
                && self.holding_for.as_ref() != Some(rid)
            {
                seen.quiesced_for = Some(rid.clone());
                seen.observed_routing_version = Some(record.routing_version);
                reported = Some(rid.clone());
            }
            self.holding_for = waiting;
        }
        if self.holding_for.is_some() || !rng.chance(self.rate) {
            return reported;
        }
        let Some((count, version)) = self.routing else {
            return reported;
        };
        let key = self.keys.start + rng.below(u64::from(self.keys.len() as u32)) as u32;
        let Some(shard) = shard_for_key(format!("k{key}").as_bytes(), count) else {
            return reported;
        };
        let serial = ledger.next_serial(key);
        match shards.guarded_append(shard, version, key, serial) {
            Appended::Id(id) => {
                if super::tracing() {
                    eprintln!(
                        "t={now} {} appends key {key} #{serial} to shard {shard} {id}-0 (v{version})",
                        self.id
                    );
                }
                ledger.appended(key, shard, id, version)
            }
            // Its routing is stale (or names a shard that is gone): fetch again next step.
            Appended::Stale | Appended::NoStream => self.routing = None,
        }
        reported
    }
}
