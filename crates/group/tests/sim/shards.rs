//! The shard streams as Redis holds them, as small as the resharding flows and the consumers need: each
//! shard stream's entries (a key each), the one Redis consumer group of the simulated group on it (its
//! last-delivered id and its pending entries with their owner), and each shard's routing boundary (guarded
//! publish: the floor, the switch point recorded when it was raised, the scale annotation).
//!
//! What it does not model: more than one consumer group per shard, trimming (MAXLEN), entry fields, the
//! idle time of pending entries (a reader claims every pending entry of its shard, which invariant 1 makes
//! safe), plain XADDs that bypass guarded publish, failed commands, and Redis restarts.
//!
//! Entry ids are `<n>-0` with `n` counting per shard index and never reused, even across a retirement
//! (Redis's ids are time-based, so a re-created stream's ids are newer too).

use rsc_group::reshard::evidence::ConsumerGroupInfo;
use rsc_protocol::ordering::{BoundaryScale, ShardBoundary};
use rsc_protocol::stream_id::StreamId;
use std::collections::BTreeMap;

/// One entry of a shard stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub id: u64,
    pub key: u32,
    /// Its place in the producer's sequence of this key (`ledger.rs`).
    pub serial: usize,
}

/// The simulated group's Redis consumer group on one shard stream.
#[derive(Debug, Clone, Default)]
pub struct Cursor {
    pub last_delivered: u64,
    /// Delivered and not acknowledged: entry id → the process it was delivered to.
    pub pending: BTreeMap<u64, String>,
}

#[derive(Debug, Clone, Default)]
pub struct ShardStream {
    pub entries: Vec<Entry>,
    pub last_id: u64,
    pub group: Option<Cursor>,
}

/// What a guarded append came to (guarded_append.lua).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    Id(u64),
    /// The producer's routing version is below the shard's boundary: refused, nothing written.
    Stale,
    /// The shard stream does not exist (NOMKSTREAM).
    NoStream,
}

#[derive(Debug, Default)]
pub struct SimShards {
    pub streams: BTreeMap<u32, ShardStream>,
    pub boundaries: BTreeMap<u32, ShardBoundary>,
    /// The next entry id of each shard index (never reused).
    next_id: BTreeMap<u32, u64>,
    /// The switch point each shard's boundary got when it was raised to each routing version.
    pub switch_points: BTreeMap<(i64, u32), String>,
}

pub fn id_text(id: u64) -> String {
    format!("{id}-0")
}

impl SimShards {
    /// Shard streams `0..count`, each with the group's consumer group, as a created stream has them.
    pub fn new(count: u32) -> Self {
        let mut s = SimShards::default();
        for shard in 0..count {
            s.provision(shard);
        }
        s
    }

    pub fn exists(&self, shard: u32) -> bool {
        self.streams.contains_key(&shard)
    }

    /// XGROUP CREATE … $ MKSTREAM (idempotent).
    pub fn provision(&mut self, shard: u32) {
        let last = self.next_id.get(&shard).copied().unwrap_or(0);
        let stream = self.streams.entry(shard).or_insert_with(|| ShardStream {
            last_id: last,
            ..ShardStream::default()
        });
        if stream.group.is_none() {
            stream.group = Some(Cursor {
                last_delivered: stream.last_id,
                pending: BTreeMap::new(),
            });
        }
    }

    /// XINFO GROUPS (None: no stream).
    pub fn groups(&self, shard: u32) -> Option<Vec<ConsumerGroupInfo>> {
        let s = self.streams.get(&shard)?;
        Some(
            s.group
                .iter()
                .map(|c| ConsumerGroupInfo {
                    name: Some("g".into()),
                    pending: Some(c.pending.len() as i64),
                    lag: Some(s.entries.iter().filter(|e| e.id > c.last_delivered).count() as i64),
                    last_delivered_id: Some(id_text(c.last_delivered)),
                })
                .collect(),
        )
    }

    /// XINFO STREAM's last-generated-id (None: no stream).
    pub fn last_id(&self, shard: u32) -> Option<StreamId> {
        self.streams.get(&shard).map(|s| (s.last_id, 0))
    }

    /// XPENDING up to `point`, counting at most `cap`.
    pub fn pending_up_to(&self, shard: u32, point: &str, cap: usize) -> Option<i64> {
        let point = rsc_protocol::stream_id::parse_stream_id(point)?;
        let c = self.streams.get(&shard)?.group.as_ref()?;
        Some(
            c.pending
                .keys()
                .filter(|id| (**id, 0) <= point)
                .take(cap)
                .count() as i64,
        )
    }

    /// switch_point.lua: the boundary raised to `floor` with the stream's last id as its switch point. An
    /// older annotation stays in Redis, but describes an older switch than the floor, so a consumer reading
    /// the boundary drops it (`ShardBoundary::from_fields`): kept here as consumers see it, none.
    fn raise_boundary(&mut self, shard: u32, floor: i64) {
        let last = id_text(self.streams.get(&shard).map_or(0, |s| s.last_id));
        self.switch_points.insert((floor, shard), last.clone());
        self.boundaries.insert(
            shard,
            ShardBoundary {
                floor,
                switch_id: last,
                scale: None,
            },
        );
    }

    /// raise_routing_floor.lua: raises to `scale.version` when lower, annotates when it stands there;
    /// returns the switch point when the boundary stands at the scale's version.
    pub fn raise(&mut self, shard: u32, scale: BoundaryScale) -> Option<String> {
        let current = self.boundaries.get(&shard).map_or(0, |b| b.floor);
        if scale.version > current {
            self.raise_boundary(shard, scale.version);
        }
        let b = self.boundaries.get_mut(&shard)?;
        if b.floor != scale.version {
            return None;
        }
        b.scale = Some(scale);
        Some(b.switch_id.clone())
    }

    /// guarded_append.lua with the producer's routing version.
    pub fn guarded_append(
        &mut self,
        shard: u32,
        version: i64,
        key: u32,
        serial: usize,
    ) -> Appended {
        let floor = self.boundaries.get(&shard).map_or(0, |b| b.floor);
        if version < floor {
            return Appended::Stale;
        }
        if !self.exists(shard) {
            return Appended::NoStream;
        }
        if version > floor {
            self.raise_boundary(shard, version);
        }
        let next = self.next_id.entry(shard).or_insert(0);
        *next += 1;
        let id = *next;
        let Some(s) = self.streams.get_mut(&shard) else {
            return Appended::NoStream;
        };
        s.last_id = id;
        s.entries.push(Entry { id, key, serial });
        Appended::Id(id)
    }

    /// retire_if_drained.lua: deleted when every consumer group read and acknowledged everything.
    pub fn retire_if_drained(&mut self, shard: u32) {
        let drained = self.streams.get(&shard).is_none_or(|s| {
            s.group
                .as_ref()
                .is_none_or(|c| c.pending.is_empty() && c.last_delivered >= s.last_id)
        });
        if drained && let Some(s) = self.streams.remove(&shard) {
            self.next_id.insert(
                shard,
                s.last_id
                    .max(self.next_id.get(&shard).copied().unwrap_or(0)),
            );
        }
    }

    /// A consumer's read of `shard` (the SDK's XAUTOCLAIM, then XREADGROUP of up to `batch` new entries):
    /// every pending entry, claimed by `reader`, then the new ones, delivered to it; in id order.
    pub fn read(&mut self, shard: u32, reader: &str, batch: usize) -> Vec<Entry> {
        let Some(s) = self.streams.get_mut(&shard) else {
            return Vec::new();
        };
        let Some(c) = s.group.as_mut() else {
            return Vec::new();
        };
        for owner in c.pending.values_mut() {
            reader.clone_into(owner);
        }
        let mut out: Vec<Entry> = s
            .entries
            .iter()
            .filter(|e| c.pending.contains_key(&e.id))
            .copied()
            .collect();
        let from = c.last_delivered;
        for e in s.entries.iter().filter(|e| e.id > from).take(batch) {
            c.last_delivered = e.id;
            c.pending.insert(e.id, reader.to_owned());
            out.push(*e);
        }
        out
    }

    /// XACK.
    pub fn ack(&mut self, shard: u32, id: u64) {
        if let Some(c) = self.streams.get_mut(&shard).and_then(|s| s.group.as_mut()) {
            c.pending.remove(&id);
        }
    }

    /// Whether the group has consumed `shard` up to the switch point its boundary got at `version`
    /// (nothing pending up to it, delivered at or past it): the truth the drain evidence must reflect.
    /// A shard whose boundary never reached `version` may still receive records routed the old way.
    pub fn consumed_up_to_switch(&self, shard: u32, version: i64) -> bool {
        let Some(point) = self.switch_points.get(&(version, shard)) else {
            return false;
        };
        let Some(point) = rsc_protocol::stream_id::parse_stream_id(point) else {
            return false;
        };
        let Some(s) = self.streams.get(&shard) else {
            return true;
        };
        s.group.as_ref().is_some_and(|c| {
            c.last_delivered >= point.0 && c.pending.keys().all(|id| *id > point.0)
        })
    }
}
