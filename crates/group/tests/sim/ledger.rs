//! What the producers appended and the consumers handled, checked as it happens: per-key order (each key
//! belongs to one producer, and that producer's records of a key are handled in the order it appended them),
//! no double read (no record handled twice), and, once the group converged, nothing lost (every record
//! handled).
//!
//! Where the design gives no order guarantee the ledger forgives: a scale of an unordered stream switches
//! routing without gates, and a rollback or force-complete clears an ordered switch's gates ("no order
//! guarantee for the keys that moved meanwhile"); records appended with routing older than such a switch
//! (also after it, by a producer that had not learnt of it yet) need not be handled before later ones. A
//! force-complete abandons what its removed shards still held: those records need not be handled at all.

use std::collections::BTreeMap;

#[derive(Debug, Clone)]
struct Record {
    shard: u32,
    id: u64,
    /// The routing version the producer appended it with.
    version: i64,
    handled: bool,
    abandoned: bool,
}

#[derive(Debug, Default)]
struct KeyLog {
    records: Vec<Record>,
    /// The first record still owed (not handled, appended with routing not forgiven); every later record
    /// must wait for it.
    next: usize,
}

impl KeyLog {
    fn advance(&mut self, forgiven_below: i64) {
        while self
            .records
            .get(self.next)
            .is_some_and(|r| r.handled || r.version < forgiven_below)
        {
            self.next += 1;
        }
    }
}

#[derive(Debug, Default)]
pub struct Ledger {
    keys: BTreeMap<u32, KeyLog>,
    /// Records appended with a routing version below this owe no order to later ones.
    forgiven_below: i64,
    pub appended: u64,
    pub handled: u64,
    pub forgiven: u64,
    pub abandoned: u64,
}

impl Ledger {
    /// The serial the next record of `key` gets.
    pub fn next_serial(&self, key: u32) -> usize {
        self.keys.get(&key).map_or(0, |k| k.records.len())
    }

    /// A record of `key` was appended to `shard` with entry id `id`, by routing `version` (its serial:
    /// [`Ledger::next_serial`]).
    pub fn appended(&mut self, key: u32, shard: u32, id: u64, version: i64) {
        self.appended += 1;
        let forgiven_below = self.forgiven_below;
        let log = self.keys.entry(key).or_default();
        log.records.push(Record {
            shard,
            id,
            version,
            handled: false,
            abandoned: false,
        });
        log.advance(forgiven_below);
    }

    /// `by` handled record `serial` of `key` at `now`: never twice, and never before a record of its key
    /// appended earlier (unless that one was forgiven).
    pub fn handled(&mut self, key: u32, serial: usize, by: &str, now: i64) {
        self.handled += 1;
        let log = self.keys.entry(key).or_default();
        let Some(r) = log.records.get(serial) else {
            panic!(
                "ledger: t={now} {by} handled key {key} record {serial}, which was never appended"
            );
        };
        assert!(
            !r.handled,
            "no double read: t={now} {by} handled key {key} record {serial} (shard {} id {}-0) again",
            r.shard, r.id
        );
        if log.next < serial {
            let earlier = &log.records[log.next];
            panic!(
                "per-key order: t={now} {by} handled key {key} record {serial} (shard {} id {}-0, routing v{}) \
                 before record {} (shard {} id {}-0, routing v{}), appended earlier and not handled yet",
                r.shard, r.id, r.version, log.next, earlier.shard, earlier.id, earlier.version
            );
        }
        log.records[serial].handled = true;
        log.advance(self.forgiven_below);
    }

    /// Records appended with routing older than `version` stop owing order to later ones.
    pub fn forgive_below(&mut self, version: i64) {
        if version <= self.forgiven_below {
            return;
        }
        self.forgiven += 1;
        self.forgiven_below = version;
        for log in self.keys.values_mut() {
            log.advance(version);
        }
    }

    /// The records on `shard` so far need not be handled (a force-complete left them behind).
    pub fn abandon(&mut self, shard: u32) {
        for r in self
            .keys
            .values_mut()
            .flat_map(|l| l.records.iter_mut())
            .filter(|r| r.shard == shard && !r.handled && !r.abandoned)
        {
            r.abandoned = true;
            self.abandoned += 1;
        }
    }

    /// Records neither handled nor abandoned, as `key:shard/id`, at most `limit` of them.
    pub fn unhandled(&self, limit: usize) -> Vec<String> {
        self.keys
            .iter()
            .flat_map(|(k, l)| {
                l.records
                    .iter()
                    .filter(|r| !r.handled && !r.abandoned)
                    .map(move |r| format!("key {k}: shard {} id {}-0", r.shard, r.id))
            })
            .take(limit)
            .collect()
    }
}
