//! A deterministic simulation of one group: the real state machine (`decide`, `tick`), a store with the same
//! compare-and-set and lease semantics as the Redis one, and simulated consumers that follow the protocol
//! (Spring-style revoke reports or Python-style omission), with lost responses, network partitions
//! (a member keeps reading until its client lease runs out), crashes, restarts, graceful leaves and
//! duplicate-id restarts.
//!
//! After every step it checks invariant 1 from the clients' side — no shard is being read by two consumers —
//! and the aggregate invariants; after the faults stop it checks convergence (every shard read by exactly its
//! target owner, spread ≤ 1). Seeded and reproducible: a failure prints its seed; re-run one seed with
//! `SIM_SEED=<seed> cargo test -p rsc-group --test simulation`.

use rsc_group::heartbeat::{Outcome, Transition, decide};
use rsc_group::invariants;
use rsc_group::migration::{self, Migration, MigrationState};
use rsc_group::model::{Group, MemberState, ShardSet};
use rsc_group::tick::tick;
use rsc_group::timing::Timing;
use rsc_protocol::wire::{
    HeartbeatRequest, HeartbeatStatus, RevokeState, RevokingShardReport, RuntimeConsumerCapacity,
    ShardId,
};
use std::collections::{BTreeMap, BTreeSet};

const TIMING: Timing = Timing {
    heartbeat_interval_ms: 100,
    member_lease_ttl_ms: 500,
    rebalance_timeout_ms: 1_500,
    stale_member_retention_ms: 5_000,
    hold_margin_ms: 50,
};
/// Client-side lease: shorter than the member lease TTL by a safety margin (invariant 4).
const CLIENT_LEASE_MS: i64 = 400;
const STEP_MS: i64 = 10;

/// Small deterministic PRNG (xorshift64*), so runs are reproducible without dependencies.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn chance(&mut self, per_mille: u64) -> bool {
        self.next() % 1000 < per_mille
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Redis as the state machine sees it: aggregate with a revision, and lease deadlines.
struct SimStore {
    group: Group,
    revision: u64,
    leases: BTreeMap<String, i64>,
}

impl SimStore {
    fn lapsed(&self, now: i64) -> BTreeSet<String> {
        self.leases
            .iter()
            .filter(|(_, d)| **d <= now)
            .map(|(m, _)| m.clone())
            .collect()
    }

    /// The CAS script: all conditions, then all writes.
    fn cas(&mut self, t: &Transition, now: i64) -> bool {
        if now < t.not_before_ms {
            return false;
        }
        if t.must_be_lapsed
            .iter()
            .any(|m| self.leases.get(m).is_some_and(|d| *d > now))
        {
            return false;
        }
        if t.must_be_live
            .iter()
            .any(|m| self.leases.get(m).is_none_or(|d| *d <= now))
        {
            return false;
        }
        for m in &t.renew {
            self.leases
                .insert(m.clone(), now + TIMING.member_lease_ttl_ms);
        }
        for m in &t.remove {
            self.leases.remove(m);
        }
        let mut g = t.group.clone().expect("transition carries a group");
        self.revision += 1;
        g.store_revision = self.revision;
        self.group = g;
        true
    }

    fn reconcile(&mut self, now: i64) {
        let lapsed = self.lapsed(now);
        if let Some((t, _)) = tick(&self.group, now, &lapsed, &TIMING) {
            assert!(
                self.cas(&t, now),
                "a tick decided at `now` must commit at `now`"
            );
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    /// Reports DRAINING once, then REVOKED (Spring starter).
    Spring,
    /// Simply omits revoked shards from ownedShards (Python client).
    Python,
}

struct Client {
    id: String,
    style: Style,
    running: bool,
    /// Cannot reach the coordinator (requests and responses lost) but keeps running.
    partitioned_until: i64,
    epoch: i64,
    metadata_version: i64,
    reading: ShardSet,
    /// Shards given up, with how many more heartbeats report them DRAINING before REVOKED.
    giving_up: BTreeMap<u32, u8>,
    /// Send time of the request whose OK response last renewed the client lease.
    renewed_at: i64,
    next_heartbeat: i64,
    leaving: bool,
}

impl Client {
    fn new(id: &str, style: Style, now: i64) -> Self {
        Client {
            id: id.to_owned(),
            style,
            running: true,
            partitioned_until: 0,
            epoch: 0,
            metadata_version: 0,
            reading: ShardSet::new(),
            giving_up: BTreeMap::new(),
            renewed_at: i64::MIN / 2,
            next_heartbeat: now,
            leaving: false,
        }
    }

    fn request(&self, seq: u64) -> HeartbeatRequest {
        let revoking = match self.style {
            Style::Python => Vec::new(),
            Style::Spring => self
                .giving_up
                .iter()
                .map(|(s, n)| RevokingShardReport {
                    shard: ShardId::new(*s),
                    state: if *n > 0 {
                        RevokeState::Draining
                    } else {
                        RevokeState::Revoked
                    },
                    in_flight: i64::from(*n > 0),
                    acked_at: None,
                })
                .collect(),
        };
        HeartbeatRequest {
            protocol_version: 1,
            request_id: format!("{}-{seq}", self.id),
            member_id: self.id.clone(),
            member_name: None,
            member_epoch: if self.leaving { -1 } else { self.epoch },
            metadata_version: self.metadata_version,
            runtime_consumer_capacity: RuntimeConsumerCapacity {
                runtime_max_concurrency: 1,
                available_concurrency: 1,
            },
            owned_shards: self.reading.iter().map(|s| ShardId::new(*s)).collect(),
            revoking_shards: revoking,
            shard_progress: Vec::new(),
        }
    }

    fn after_send(&mut self) {
        for n in self.giving_up.values_mut() {
            *n = n.saturating_sub(1);
        }
    }

    fn on_response(
        &mut self,
        status: HeartbeatStatus,
        epoch: i64,
        mv: i64,
        assigned: &[ShardId],
        sent_at: i64,
    ) {
        match status {
            HeartbeatStatus::Ok => {
                let assigned: ShardSet = assigned.iter().map(|s| s.shard_index).collect();
                for s in self
                    .reading
                    .difference(&assigned)
                    .copied()
                    .collect::<Vec<_>>()
                {
                    self.reading.remove(&s);
                    self.giving_up
                        .insert(s, if self.style == Style::Spring { 1 } else { 0 });
                }
                self.giving_up.retain(|s, _| !assigned.contains(s));
                self.reading = assigned;
                self.epoch = epoch;
                self.metadata_version = mv;
                self.renewed_at = self.renewed_at.max(sent_at);
            }
            HeartbeatStatus::SyncMetadata | HeartbeatStatus::RevokePending => {
                let assigned: ShardSet = assigned.iter().map(|s| s.shard_index).collect();
                self.reading = self.reading.intersection(&assigned).copied().collect();
                self.epoch = epoch;
                self.metadata_version = mv;
            }
            HeartbeatStatus::FencedMemberEpoch | HeartbeatStatus::UnknownMemberId => {
                self.reading.clear();
                self.giving_up.clear();
                self.epoch = 0;
            }
            HeartbeatStatus::Retry
            | HeartbeatStatus::InvalidRequest
            | HeartbeatStatus::UnsupportedProtocol => {
                panic!("unexpected status {status:?} for {}", self.id)
            }
        }
    }
}

struct Sim {
    rng: Rng,
    now: i64,
    store: SimStore,
    clients: Vec<Client>,
    seq: u64,
    loss_per_mille: u64,
    resharding: bool,
}

impl Sim {
    fn new(seed: u64, members: usize, shards: u32) -> Self {
        let now = 1_000_000;
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let clients = (0..members)
            .map(|i| {
                Client::new(
                    &format!("m{i}"),
                    if rng.chance(500) {
                        Style::Spring
                    } else {
                        Style::Python
                    },
                    now,
                )
            })
            .collect();
        Sim {
            rng,
            now,
            store: SimStore {
                group: Group::new("s", "g", shards, now, "lc"),
                revision: 1,
                leases: BTreeMap::new(),
            },
            clients,
            seq: 0,
            loss_per_mille: 0,
            resharding: false,
        }
    }

    fn heartbeat(&mut self, i: usize) {
        self.seq += 1;
        let sent_at = self.now;
        let req = self.clients[i].request(self.seq);
        let leaving = self.clients[i].leaving;
        self.clients[i].after_send();
        let reachable = self.clients[i].partitioned_until <= self.now;
        if !reachable || self.rng.chance(self.loss_per_mille) {
            return; // request lost
        }
        let id = self.clients[i].id.clone();
        let response = loop {
            let d = decide(Some(&self.store.group), &id, &req, self.now, &TIMING);
            match d.outcome {
                Outcome::Rejected { .. } => break d.response,
                Outcome::Steady => {
                    if self.store.leases.get(&id).is_some_and(|dl| *dl > self.now) {
                        self.store
                            .leases
                            .insert(id.clone(), self.now + TIMING.member_lease_ttl_ms);
                        break d.response;
                    }
                    self.store.reconcile(self.now);
                }
                Outcome::Write(t) => {
                    if self.store.cas(&t, self.now) {
                        break d.response;
                    }
                    self.store.reconcile(self.now);
                }
            }
        };
        if leaving {
            self.clients[i].running = false;
            self.clients[i].reading.clear();
            return;
        }
        if self.rng.chance(self.loss_per_mille) || self.clients[i].partitioned_until > self.now {
            return; // response lost
        }
        let r = response;
        self.clients[i].on_response(
            r.status,
            r.member_epoch,
            r.metadata_version,
            &r.assignment.assigned_shards,
            sent_at,
        );
    }

    fn step(&mut self, faults: bool) {
        self.now += STEP_MS;
        if faults {
            self.inject_faults();
            if self.resharding {
                self.reshard();
            }
        }
        for i in 0..self.clients.len() {
            let c = &mut self.clients[i];
            if !c.running {
                continue;
            }
            // Client lease: stop reading when no renewal succeeded within it.
            if self.now - c.renewed_at > CLIENT_LEASE_MS {
                c.reading.clear();
            }
            if c.next_heartbeat <= self.now {
                let jitter = self.rng.below(20) as i64;
                self.clients[i].next_heartbeat =
                    self.now + TIMING.heartbeat_interval_ms - 10 + jitter;
                self.heartbeat(i);
            }
        }
        if self.now % 100 == 0 {
            self.store.reconcile(self.now);
        }
        self.check_safety();
    }

    /// Operator actions: scale to a random count, roll back or force-complete the active migration; and
    /// Redis drain evidence arriving for draining shards.
    fn reshard(&mut self) {
        let now = self.now;
        let roll = self.rng.below(10_000);
        let mut g = self.store.group.clone();
        let changed = match roll {
            0..=4 => {
                let to = self.rng.below(25) as u32;
                self.seq += 1;
                let m = Migration {
                    resharding_id: format!("reshard-{}", self.seq),
                    from_shard_count: g.shard_count,
                    to_shard_count: to,
                    state: MigrationState::Active,
                    requested_by: "sim".into(),
                    reason: "sim".into(),
                    created_at_ms: now,
                    updated_at_ms: now,
                    activated_at_ms: None,
                    draining_at_ms: None,
                    completed_at_ms: None,
                    end_reason: None,
                };
                migration::adopt(&mut g, &m, now, &TIMING)
            }
            5..=6 => match g.active_migration_id.clone() {
                Some(id) => migration::rollback(&mut g, &id, "sim", now, &TIMING).unwrap_or(false),
                None => false,
            },
            7 => match g.active_migration_id.clone() {
                Some(id) => {
                    migration::force_complete(&mut g, &id, "sim", now, &TIMING).unwrap_or(false)
                }
                None => false,
            },
            8..=80 if !g.draining_shards.is_empty() => {
                let pick = *g
                    .draining_shards
                    .iter()
                    .nth(self.rng.below(g.draining_shards.len() as u64) as usize)
                    .unwrap();
                migration::release_drained(&mut g, &[pick].into_iter().collect(), now, &TIMING)
            }
            _ => false,
        };
        if changed {
            let t = Transition::new(g);
            assert!(
                self.store.cas(&t, now),
                "an unconditional transition commits"
            );
        }
    }

    fn inject_faults(&mut self) {
        let n = self.clients.len();
        let i = self.rng.below(n as u64) as usize;
        let now = self.now;
        let roll = self.rng.below(10_000);
        let c = &mut self.clients[i];
        match roll {
            0..=9 if c.running => {
                // crash: the process dies, reading stops with it
                c.running = false;
                c.reading.clear();
            }
            10..=24 if !c.running => {
                // (re)start a process with the same member id
                *c = Client::new(&c.id.clone(), c.style, now);
            }
            25..=34 if c.running => {
                c.partitioned_until = now + 200 + (roll as i64 % 7) * 150;
            }
            35..=39 if c.running && !c.leaving => {
                c.leaving = true;
                c.next_heartbeat = now;
            }
            40..=44 if c.running => {
                // duplicate-id restart while the old process is already gone
                *c = Client::new(&c.id.clone(), c.style, now);
            }
            _ => {}
        }
    }

    fn check_safety(&self) {
        let mut reader: BTreeMap<u32, &str> = BTreeMap::new();
        for c in self.clients.iter().filter(|c| c.running) {
            for s in &c.reading {
                if let Some(other) = reader.insert(*s, &c.id) {
                    panic!(
                        "t={} shard {s} read by both {other} and {}\n{:#?}",
                        self.now, c.id, self.store.group
                    );
                }
            }
        }
        let v = invariants::check(&self.store.group);
        assert!(
            v.is_empty(),
            "t={} aggregate invariants violated: {v:?}",
            self.now
        );
    }

    fn check_converged(&self) {
        let g = &self.store.group;
        let active: Vec<&Client> = self
            .clients
            .iter()
            .filter(|c| c.running && !c.leaving)
            .collect();
        let mut read = ShardSet::new();
        for c in &active {
            let target = g.target_of(&c.id);
            assert_eq!(
                c.reading, target,
                "{} reads {:?}, target {:?}\n{g:#?}",
                c.id, c.reading, target
            );
            read.extend(c.reading.iter().copied());
            assert_eq!(g.members[&c.id].state, MemberState::Active);
        }
        if !active.is_empty() {
            assert_eq!(
                read,
                g.assignable_shards(),
                "every shard is read once converged"
            );
            assert!(
                g.draining_shards.is_empty(),
                "drains finish once evidence arrives"
            );
            assert_eq!(
                g.active_migration_id, None,
                "migrations complete: {:?}",
                g.migrations
            );
            assert!(invariants::target_spread(g) <= 1);
        }
    }
}

fn run(seed: u64) {
    let mut rng = Rng(seed | 1);
    let members = 1 + rng.below(6) as usize;
    let shards = 1 + rng.below(24) as u32;
    let mut sim = Sim::new(seed, members, shards);
    sim.loss_per_mille = [0, 20, 100][rng.below(3) as usize];
    sim.resharding = rng.chance(600);
    for _ in 0..1_500 {
        sim.step(true);
    }
    // Faults stop: everyone restarts and the network heals.
    sim.loss_per_mille = 0;
    let now = sim.now;
    for c in &mut sim.clients {
        if !c.running {
            *c = Client::new(&c.id.clone(), c.style, now);
        }
        c.partitioned_until = 0;
    }
    for _ in 0..1_500 {
        sim.step(false);
        // Drain evidence keeps arriving after faults stop.
        if !sim.store.group.draining_shards.is_empty() {
            let mut g = sim.store.group.clone();
            let all = g.draining_shards.clone();
            if migration::release_drained(&mut g, &all, sim.now, &TIMING) {
                assert!(sim.store.cas(&Transition::new(g), sim.now));
            }
        }
    }
    sim.check_converged();
}

#[test]
fn simulated_groups_keep_one_reader_per_shard_and_converge() {
    if let Ok(seed) = std::env::var("SIM_SEED") {
        run(seed.parse().expect("SIM_SEED must be an integer"));
        return;
    }
    let scenarios: u64 = std::env::var("SIM_SCENARIOS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    for seed in 1..=scenarios {
        let result = std::panic::catch_unwind(|| run(seed));
        if let Err(e) = result {
            eprintln!(
                "simulation failed for seed {seed}; re-run: SIM_SEED={seed} cargo test -p rsc-group --test simulation"
            );
            std::panic::resume_unwind(e);
        }
    }
}
