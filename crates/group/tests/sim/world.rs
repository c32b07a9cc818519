//! One scenario: a group in the simulated Redis, 1–3 coordinator replicas, 1–6 consumer processes and the
//! network between them, all driven in 10 ms steps from one seed. While faults run, every step may crash,
//! restart, partition or gracefully stop a consumer, crash or pause a replica, and (in resharding scenarios)
//! scale, roll back or force-complete a migration or deliver drain evidence; the network drops, delays,
//! duplicates and reorders messages as the scenario's profile says. Then the faults stop, and the group must
//! converge: every consumer reads exactly its target, every shard is read, spread ≤ 1, migrations finished.
//!
//! Static membership: in some scenarios some consumers are static (a `groupInstanceId`; each process a new
//! member id), so crashes and restarts reclaim reserved shards within the grace or find them rebalanced
//! past it, and rolling restarts are temporary leaves; in some, two consumers share one instance id, and
//! the one that is refused must never become an active member while the other is. These choices come from
//! a second generator seeded from the scenario's seed, so scenarios without static members are exactly
//! those of the same seed before static membership existed.
//!
//! Resharding scenarios: the operator scales, rolls back and force-completes through the replicas, which run
//! the coordinator's resharding flows step by step with pauses and crashes between any two steps, and every
//! replica's reconciler runs the pass over the stream (`operator.rs`, `resharder.rs`). Half the scales are of
//! an ordered stream (a third generator, so other scenarios are unchanged). Producers append keyed records
//! through guarded publish and consumers read them (`data.rs`, a generator of its own), so drain evidence is
//! what the simulated Redis shows, and the ledger checks per-key order, no double read and, at convergence,
//! nothing lost. After every write the world checks that no child shard was granted while one of its parents
//! had not consumed its pre-switch records, unless with its fence; after every step, that every process
//! reading such a child honours a fence at or before its switch point, from its answers or its boundary.

use super::checks;
use super::client::{Client, Style};
use super::data::DataPlane;
use super::net::{Endpoint, NetFaults, Network, Payload};
use super::operator::Operator;
use super::replica::{Env, HbJob, Replica, ReplicaFaults};
use super::resharder::ReshardJob;
use super::rng::Rng;
use super::store::{LayoutPlan, SimStore};
pub use super::summary::Summary;
use super::{STEP_MS, TIMING};
use rsc_group::invariants;
use rsc_group::model::{Group, GroupState, MemberState, ShardSet};
use rsc_protocol::wire::HeartbeatRequest;
use std::rc::Rc;

/// Steps with faults, and the most steps allowed for convergence afterwards.
pub const FAULT_STEPS: usize = 1_200;
pub const MAX_CONVERGE_STEPS: usize = 2_000;

/// The scenario's fault profile, drawn from the seed.
#[derive(Debug, Clone, Copy)]
pub struct Profile {
    pub members: usize,
    pub shards: u32,
    pub replicas: usize,
    pub net: NetFaults,
    pub replica: ReplicaFaults,
    /// Per 10,000 steps: a replica crashes / pauses while idle.
    pub replica_crash: u64,
    pub replica_pause: u64,
    pub resharding: bool,
    /// Replicas commit queued writes in batches (group commit).
    pub batching: bool,
    /// Per mille: each consumer is static (has a `groupInstanceId`).
    pub static_members: u64,
    /// The second consumer is given the first one's instance id (when both are static).
    pub duplicate_instance: bool,
    /// Per 10,000 steps: a replica's view of the live replicas changes (a replica joined or left, or the
    /// replicas disagree about it), so ownership of the group moves or is claimed twice or by nobody.
    pub view_churn: u64,
    /// How the store keeps the aggregate: split from the start, whole throughout, or whole until a rolling
    /// upgrade moves it to split mid-run (`store.rs`).
    pub layout: LayoutPlan,
}

impl Profile {
    /// `statics` draws the static-membership choices (apart, so that other draws do not change).
    fn draw(rng: &mut Rng, statics: &mut Rng, views: &mut Rng) -> Self {
        let max_long = rng.range(200, 1_500);
        Profile {
            members: 1 + rng.below(6) as usize,
            shards: 1 + rng.below(24) as u32,
            replicas: rng.pick(&[1, 2, 2, 3, 3]),
            net: NetFaults {
                drop: rng.pick(&[0, 20, 100]),
                duplicate: rng.pick(&[0, 30, 150]),
                max_delay_ms: rng.pick(&[5, 30, 80]),
                long_delay: rng.pick(&[0, 10, 40]),
                max_long_delay_ms: max_long,
            },
            replica: ReplicaFaults {
                max_skew_ms: rng.pick(&[0, 10, 30]),
                pause_mid_decision: rng.pick(&[0, 5, 30]),
                max_pause_ms: rng.pick(&[100, 400, 1_000]),
            },
            replica_crash: rng.pick(&[0, 10, 30]),
            replica_pause: rng.pick(&[0, 10, 30]),
            resharding: rng.chance(600),
            batching: rng.chance(500),
            static_members: statics.pick(&[0, 0, 500, 1_000]),
            duplicate_instance: statics.chance(250),
            view_churn: views.pick(&[0, 20, 100]),
            layout: LayoutPlan::SPLIT,
        }
    }
}

impl LayoutPlan {
    /// Half the scenarios split from the start, two in five move from whole to split mid-run (a rolling
    /// upgrade), one in ten stay whole. Drawn apart from the rest, so that other draws do not change.
    fn draw(rng: &mut Rng) -> LayoutPlan {
        match rng.below(10) {
            0..=4 => LayoutPlan::SPLIT,
            5..=8 => {
                let whole_until = rng.range(1, 60) as usize;
                LayoutPlan {
                    whole_until,
                    mixed_until: whole_until + rng.range(0, 40) as usize,
                }
            }
            _ => LayoutPlan {
                whole_until: usize::MAX,
                mixed_until: usize::MAX,
            },
        }
    }
}

pub struct World {
    rng: Rng,
    pub now: i64,
    pub profile: Profile,
    store: SimStore,
    replicas: Vec<Replica>,
    clients: Vec<Client>,
    net: Network,
    summary: Summary,
    /// The operator (resharding scenarios) and the data plane.
    operator: Operator,
    data: DataPlane,
    /// Draws the replicas' views apart from everything else, so earlier seeds keep their scenarios.
    views_rng: Rng,
}

impl World {
    pub fn new(seed: u64) -> Self {
        let now = 1_000_000;
        let mut rng = Rng::new(seed);
        let mut statics = Rng::new(seed ^ 0x5747_4943);
        let mut views_rng = Rng::new(seed ^ 0x5649_4557);
        let mut profile = Profile::draw(&mut rng, &mut statics, &mut views_rng);
        profile.layout = LayoutPlan::draw(&mut Rng::new(seed ^ 0x4c41_594f));
        let mut replicas: Vec<Replica> = (0..profile.replicas)
            .map(|i| Replica::new(i, rng.range(80, 120), now, profile.batching))
            .collect();
        for r in &mut replicas {
            r.view = (0..profile.replicas).collect();
        }
        let mut clients = (0..profile.members)
            .map(|i| {
                let style = if rng.chance(500) {
                    Style::Spring
                } else {
                    Style::Python
                };
                let instance = statics
                    .chance(profile.static_members)
                    .then(|| format!("inst{i}"));
                let mut c = Client::new(
                    &format!("m{i}"),
                    instance.as_deref(),
                    style,
                    0,
                    i % profile.replicas,
                    now,
                );
                if rng.chance(200) {
                    c.drain_rounds = 25; // slower than the rebalance timeout: fenced
                }
                c
            })
            .collect::<Vec<Client>>();
        if profile.duplicate_instance && clients.len() >= 2 && clients[0].instance.is_some() {
            let shared = clients[0].instance.clone();
            let c = &clients[1];
            clients[1] = Client::new(&c.base, shared.as_deref(), c.style, 0, c.sticky, now);
        }
        World {
            store: SimStore::new(
                Group {
                    routing_version: 1,
                    ..Group::new("s", "g", profile.shards, now, "lc")
                },
                now,
                profile.layout,
            ),
            net: Network::new(profile.net),
            rng,
            now,
            profile,
            replicas,
            clients,
            summary: Summary::default(),
            operator: Operator::new(Rng::new(seed ^ 0x4f52_4445)),
            data: DataPlane::new(seed),
            views_rng,
        }
    }

    pub fn step(&mut self, faults: bool) {
        self.now += STEP_MS;
        self.summary.steps += 1;
        if faults {
            self.inject_faults();
            if self.profile.resharding {
                let up = self.replicas_up();
                if let Some((r, job)) =
                    self.operator
                        .act(&mut self.rng, &mut self.store, &up, self.now)
                {
                    self.replicas[r].jobs.push(job);
                }
            }
        }
        self.deliver();
        for c in &mut self.clients {
            if !c.running && c.restart_when_left {
                c.restart(self.now);
            }
        }
        if self.data.produce(self.now, &mut self.store) {
            // `POST …/producers/quiesced` at a replica: switches at once if that was the last one.
            let up = self.replicas_up();
            if let (Some(r), Some(job)) = (
                up.first(),
                ReshardJob::quiesced(self.store.stream.clone(), self.now),
            ) {
                self.replicas[*r].jobs.push(job);
            }
        }
        self.operator.follow(&mut self.store, &mut self.data.ledger);
        for i in 0..self.replicas.len() {
            let mut env = Env {
                now: self.now,
                store: &mut self.store,
                net: &mut self.net,
                rng: &mut self.rng,
                faults: self.profile.replica,
                stats: &mut self.summary.replica,
                resharding: self.profile.resharding,
            };
            self.replicas[i].run(&mut env);
        }
        self.operator.follow(&mut self.store, &mut self.data.ledger);
        self.check_writes();
        let n = self.replicas.len();
        for i in 0..self.clients.len() {
            if let Some((r, req)) = self.clients[i].poll(self.now, n) {
                self.send_request(i, r, req);
            }
        }
        self.data
            .consume(self.now, &self.clients, &mut self.store.shards);
        checks::clients(&self.clients, &self.store, self.now);
        checks::clients_honour_fences(
            &self.clients,
            self.now,
            &self.operator.switch,
            &self.store.shards,
        );
        for r in &self.replicas {
            assert!(
                r.cached_revision()
                    .is_none_or(|rev| rev <= self.store.revision),
                "invariant 6: replica {} caches a revision Redis never wrote",
                r.index
            );
        }
    }

    fn replicas_up(&self) -> Vec<usize> {
        self.replicas
            .iter()
            .filter(|r| !r.is_down(self.now))
            .map(|r| r.index)
            .collect()
    }

    fn send_request(&mut self, client: usize, replica: usize, req: Rc<HeartbeatRequest>) {
        let c = &self.clients[client];
        if !c.reachable(replica, self.now) {
            return; // lost: the SDK sees a timeout
        }
        let to = Endpoint {
            client,
            process: c.process,
            replica,
        };
        self.net
            .send(Payload::Request(to, req), &mut self.rng, self.now);
    }

    fn deliver(&mut self) {
        let n = self.replicas.len();
        for p in self.net.due(self.now) {
            match p {
                Payload::Request(ep, req) => {
                    let c = &self.clients[ep.client];
                    if !c.reachable(ep.replica, self.now) {
                        continue;
                    }

                    let r = &mut self.replicas[ep.replica];
                    if r.is_down(self.now) {
                        let id = req.request_id.clone();
                        self.net
                            .send(Payload::Refused(ep, id), &mut self.rng, self.now);
                    } else {
                        r.inbox.push_back(HbJob::new(ep, req));
                    }
                }
                Payload::Response(ep, resp) => {
                    let c = &mut self.clients[ep.client];
                    if !c.reachable(ep.replica, self.now) {
                        continue;
                    }
                    if c.process != ep.process {
                        c.stale_answers += 1;
                        continue;
                    }
                    if resp.status == rsc_protocol::wire::HeartbeatStatus::FencedInstanceId {
                        self.summary.instance_refusals += 1;
                    }
                    let jitter = self.rng.range(0, 10);
                    c.on_response(ep.replica, &resp, self.now, jitter);
                }
                Payload::Refused(ep, id) => {
                    let c = &mut self.clients[ep.client];
                    if c.process != ep.process {
                        continue;
                    }
                    if let Some((r, req)) = c.on_refused(ep.replica, &id, self.now, n) {
                        self.send_request(ep.client, r, req);
                    }
                }
            }
        }
    }

    fn check_writes(&mut self) {
        for rec in std::mem::take(&mut self.store.writes) {
            self.summary.writes += 1;
            if super::tracing() {
                let state = |g: &Group| {
                    g.members
                        .values()
                        .map(|m| {
                            format!(
                                "{}:{}:{:?}/{:?}",
                                m.member_id,
                                m.state.as_str(),
                                m.assigned,
                                m.revoking.keys().collect::<Vec<_>>()
                            )
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                eprintln!(
                    "t={} write by {:?}: rev {} epoch {} {:?} migration {:?} gates {:?} targets {:?} members {} \
                     holds {:?}",
                    rec.now,
                    rec.by,
                    rec.new.store_revision,
                    rec.new.group_epoch,
                    rec.new.state,
                    rec.new
                        .migrations
                        .last()
                        .map(|m| (&m.resharding_id, m.state)),
                    rec.new.ordering_gates,
                    rec.new.target_assignments,
                    state(&rec.new),
                    rec.new
                        .holds
                        .iter()
                        .map(|h| (&h.member_id, &h.shards, h.until_ms))
                        .collect::<Vec<_>>()
                );
            }
            checks::write(&rec, &self.clients);
            checks::children_wait_for_parents(&rec.new, &self.operator.switch, &self.store.shards);
            let (before, after) = (rec.old.ordering_gates.len(), rec.new.ordering_gates.len());
            self.summary.gates_opened += before.saturating_sub(after) as u64;
            if before == 0 && after > 0 {
                let all = rec.new.assignable_shards();
                self.summary.fenced_children += rec.new.read_fences(&all).len() as u64;
            }
            for r in &rec.old.static_reservations {
                if rec.new.static_reservations.contains(r) {
                    continue;
                }
                if rec.new.active_instance(&r.group_instance_id).is_some() {
                    self.summary.reservations_claimed += 1;
                } else {
                    self.summary.reservations_lapsed += 1;
                }
            }
        }
    }

    fn inject_faults(&mut self) {
        let now = self.now;
        let i = self.rng.below(self.clients.len() as u64) as usize;
        let roll = self.rng.below(10_000);
        let replicas = self.replicas.len();
        let cut_replica = self.rng.below(replicas as u64) as usize;
        let c = &mut self.clients[i];
        match roll {
            0..=9 if c.running => c.crash(),
            10..=24 if !c.running => c.restart(now),
            25..=34 if c.running => c.partitioned_until = now + 200 + (roll as i64 % 7) * 150,
            35..=39 if c.running => c.begin_leave(now, false),
            60..=64 if c.running && !c.leaving => {
                // A rolling restart: a static consumer leaves temporarily.
                let temporary = c.instance.is_some();
                c.begin_leave(now, temporary);
                c.restart_when_left = true;
            }
            // A restart under the same id while the old process is already gone.
            40..=44 if c.running => c.restart(now),
            45..=59 if c.running && replicas > 1 => {
                c.cut_from = Some((cut_replica, now + 100 + (roll as i64 % 5) * 200));
            }
            _ => {}
        }
        self.churn_views();
        let r = self.rng.below(replicas as u64) as usize;
        let roll = self.rng.below(10_000);
        if roll < self.profile.replica_crash {
            let until = now + self.rng.range(20, 800);
            self.summary.reshard_flows_crashed += self.replicas[r].jobs.len() as u64;
            self.replicas[r].crash(now, until);
            self.summary.replica_crashes += 1;
        } else if roll < self.profile.replica_crash + self.profile.replica_pause {
            let until = now + self.rng.range(10, self.profile.replica.max_pause_ms);
            self.replicas[r].pause(until);
            self.summary.replica_pauses += 1;
        }
    }

    /// Now and then one replica's view of the live replicas changes: some others drop out of it or come
    /// back (a lease ran out, a replica joined, a registry read disagreed with another replica's). Views
    /// disagree until healed: the group may have two owners, or none, for a while.
    fn churn_views(&mut self) {
        let n = self.replicas.len();
        if n < 2 || !self.views_rng.chance(self.profile.view_churn / 10) {
            return;
        }
        let r = self.views_rng.below(n as u64) as usize;
        let view: Vec<usize> = (0..n)
            .filter(|i| *i == r || self.views_rng.chance(600))
            .collect();
        if view != self.replicas[r].view {
            self.replicas[r].view = view;
            self.summary.view_changes += 1;
        }
    }

    /// Faults stop: the network heals (messages already in flight still arrive), replicas come back,
    /// consumers that are not running start again.
    pub fn heal(&mut self) {
        let now = self.now;
        self.net.faults.drop = 0;
        self.net.faults.duplicate = 0;
        self.net.faults.long_delay = 0;
        // Round trips well within the heartbeat timeout (slow answers are a fault like any other).
        self.net.faults.max_delay_ms = self.net.faults.max_delay_ms.min(30);
        self.profile.replica.pause_mid_decision = 0;
        let all: Vec<usize> = (0..self.replicas.len()).collect();
        for r in &mut self.replicas {
            r.down_until = r.down_until.min(now);
            // Every replica reads the same registry again: one owner.
            r.view = all.clone();
        }
        self.data.stop_producing();
        for c in &mut self.clients {
            if !c.running {
                c.restart(now);
            }
            c.partitioned_until = 0;
            c.cut_from = None;
            // Slow drains are a fault too: two consumers that both drain slower than the rebalance
            // timeout take shards from each other forever (each is fenced, rejoins, and is given shards
            // the other must give up).
            c.drain_rounds = 1;
        }
    }

    /// How long after healing old messages and pauses can still interfere.
    pub fn settle_ms(&self) -> i64 {
        self.profile.net.max_delay_ms
            + self.profile.net.max_long_delay_ms
            + self.profile.replica.max_pause_ms
    }

    /// Every running consumer reads exactly its target, every shard is read, spread ≤ 1, nothing drains.
    pub fn converged(&self) -> Result<(), String> {
        let g = &self.store.group;
        // A consumer refused because the other consumer with its instance id is the active member reads
        // nothing and stays out (the misconfiguration persists; the coordinator must not let both in).
        // (Only while the holder is another running consumer's process: a replacement refused because its own
        // crashed predecessor has not lapsed yet is not converged.)
        let refused = |c: &Client| {
            c.instance.as_deref().is_some_and(|i| {
                g.active_instance(i).is_some_and(|holder| {
                    holder.member_id != c.id
                        && self
                            .clients
                            .iter()
                            .any(|o| o.running && o.id == holder.member_id)
                })
            })
        };
        if let Some(c) = self
            .clients
            .iter()
            .find(|c| refused(c) && !c.readable(self.now).is_empty())
        {
            return Err(format!(
                "{} reads although its instance id is held by another",
                c.id
            ));
        }
        let active: Vec<&Client> = self
            .clients
            .iter()
            .filter(|c| c.running && !c.leaving && !refused(c))
            .collect();
        if let Some(c) = self.clients.iter().find(|c| c.running && c.leaving) {
            return Err(format!("{}'s graceful leave never completes", c.id));
        }
        let mut read = ShardSet::new();
        for c in &active {
            let target = g.target_of(&c.id);
            let reading = c.readable(self.now);
            if reading != target {
                return Err(format!("{} reads {reading:?}, target {target:?}", c.id));
            }
            if g.members.get(&c.id).map(|m| m.state) != Some(MemberState::Active) {
                return Err(format!("{} is not an active member", c.id));
            }
            read.extend(reading);
        }
        if active.is_empty() {
            return Ok(());
        }
        if read != g.assignable_shards() {
            return Err(format!("read {read:?} of {:?}", g.assignable_shards()));
        }
        if !g.draining_shards.is_empty() {
            return Err(format!("still draining {:?}", g.draining_shards));
        }
        if g.active_migration_id.is_some() {
            return Err(format!("migration still active: {:?}", g.migrations.last()));
        }
        if let Some(m) = &self.store.stream.record.active_migration {
            return Err(format!("the stream's migration is still active: {m:?}"));
        }
        let unhandled = self.data.ledger.unhandled(5);
        if !unhandled.is_empty() {
            return Err(format!("records not handled: {unhandled:?}"));
        }
        if invariants::target_spread(g) > 1 {
            return Err("spread above 1".into());
        }
        if g.state != GroupState::Stable {
            return Err(format!("group is {:?}", g.state));
        }
        Ok(())
    }

    pub fn describe(&self) -> String {
        format!(
            "{:#?}\n{:#?}\n{:#?}",
            self.profile, self.store.stream.record, self.store.group
        )
    }

    pub fn summary(&self) -> Summary {
        let mut s = self.summary;
        s.scenarios = 1;
        s.messages = self.net.sent;
        s.dropped = self.net.dropped;
        s.duplicated = self.net.duplicated;
        s.stale_answers = self.clients.iter().map(|c| c.stale_answers).sum();
        s.operator = self.operator.stats;
        s.split_writes = self.store.split_writes as u64;
        s.batch_changes_checked = self.store.batch_writes_checked as u64;
        s.incremental_checks = self.store.incremental_checks as u64;
        s.upgraded_to_split = u64::from(
            self.store.split_writes > 0 && self.store.split_writes < self.store.writes_committed,
        );
        let l = &self.data.ledger;
        (s.appended, s.handled, s.forgiven, s.abandoned) =
            (l.appended, l.handled, l.forgiven, l.abandoned);
        s
    }
}

/// Runs one scenario; panics (with the invariant and the evidence) on any violation.
pub fn run(seed: u64) -> Summary {
    let mut w = World::new(seed);
    for _ in 0..FAULT_STEPS {
        w.step(true);
    }
    w.heal();
    let quiet_from = w.now + w.settle_ms();
    let mut converged_at = None;
    for _ in 0..MAX_CONVERGE_STEPS {
        w.step(false);
        if w.now >= quiet_from && w.converged().is_ok() {
            converged_at = Some(w.now);
            break;
        }
    }
    let Some(_) = converged_at else {
        panic!(
            "no convergence within {} ms after faults stopped: {}\n{}",
            MAX_CONVERGE_STEPS as i64 * STEP_MS,
            w.converged().unwrap_err(),
            w.describe()
        );
    };
    // Converged means stable: a few more heartbeat rounds change nothing.
    for _ in 0..(3 * TIMING.heartbeat_interval_ms / STEP_MS) {
        w.step(false);
    }
    if let Err(e) = w.converged() {
        panic!("converged, then drifted: {e}\n{}", w.describe());
    }
    w.summary()
}
