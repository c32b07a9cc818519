//! The data plane: producers appending keyed records through guarded publish (`producer.rs`) and the
//! consumer processes reading the shards their membership lets them read, as the SDK's reader does — pending
//! entries first, then new ones, handing each to the application and acknowledging it (one step, in this
//! model) unless it lies past the shard's read fence (from the answers or the shard's routing boundary,
//! `rsc_member::ReadFences`), where it stops and leaves the rest pending. Every record handled goes through
//! the ledger (`ledger.rs`). It has a generator of its own, so the scenarios' other choices do not change.
//!
//! What it does not model: a handler that fails or a process that dies between handling and acknowledging (a
//! redelivery the SDK makes at-least-once), reads of a shard being given up while its last batch finishes
//! (`checks::clients_honour_fences` covers those fences), and blocking reads.

use super::client::Client;
use super::ledger::Ledger;
use super::producer::Producer;
use super::rng::Rng;
use super::shards::{SimShards, id_text};
use super::store::SimStore;

pub struct DataPlane {
    rng: Rng,
    pub producers: Vec<Producer>,
    pub ledger: Ledger,
    /// Per mille per step and readable shard: how often a consumer reads it; at most this many new entries
    /// per read.
    read_chance: u64,
    batch: usize,
}

impl DataPlane {
    pub fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0x4441_5441);
        let n = 1 + rng.below(2) as usize;
        let keys = rng.range(3, 8) as u32;
        let producers = (0..n)
            .map(|i| Producer::new(i, i as u32 * keys..(i as u32 + 1) * keys, &mut rng))
            .collect();
        DataPlane {
            read_chance: rng.pick(&[600, 800, 1_000]),
            batch: rng.range(3, 6) as usize,
            rng,
            producers,
            ledger: Ledger::default(),
        }
    }

    /// Each producer's step; returns whether one reported `quiesced` for the scale the record waits on.
    pub fn produce(&mut self, now: i64, store: &mut SimStore) -> bool {
        let mut reported = false;
        for p in &mut self.producers {
            reported |= p
                .step(
                    now,
                    &store.stream.record,
                    &mut store.sightings,
                    &mut store.shards,
                    &mut self.ledger,
                    &mut self.rng,
                )
                .is_some();
        }
        reported
    }

    pub fn stop_producing(&mut self) {
        for p in &mut self.producers {
            p.running = false;
        }
    }

    /// Each running consumer reads some of the shards it may read now.
    pub fn consume(&mut self, now: i64, clients: &[Client], shards: &mut SimShards) {
        for c in clients.iter().filter(|c| c.running) {
            let reader = format!("{}#{}", c.id, c.process);
            for s in c.readable(now) {
                if !self.rng.chance(self.read_chance) {
                    continue;
                }
                let entries = shards.read(s, &reader, self.batch);
                let fence = c.fence_for(s, shards.boundaries.get(&s));
                for e in entries {
                    if fence
                        .as_deref()
                        .is_some_and(|f| rsc_member::beyond(&id_text(e.id), f))
                    {
                        break; // held: stays pending until the fence lifts or the next owner claims it
                    }
                    if super::tracing() {
                        eprintln!(
                            "t={now} {reader} handles shard {s} {}-0 key {} #{} (fence {fence:?})",
                            e.id, e.key, e.serial
                        );
                    }
                    self.ledger.handled(e.key, e.serial, &c.id, now);
                    shards.ack(s, e.id);
                }
            }
        }
    }
}
