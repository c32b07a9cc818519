//! A coordinator replica, modelled on `crates/coordinator/src/{heartbeat,coordinator,reconciler,cache}.rs`.
//!
//! Each replica keeps its own cached aggregate and revision (possibly stale), decides on it with its own
//! estimate of Redis time (skewed a little, re-learned from every store reply, as `clock.rs` does), and
//! commits: a steady heartbeat runs the renewal script that checks the revision; a write is a CAS. A
//! conflict invalidates the cache and decides again on fresh state (at most `MAX_ATTEMPTS` times, then
//! `RETRY`); a failed lease or time condition reconciles the group first. Its reconciler ticks on its own
//! schedule with Redis time. A replica handles one request at a time (the real one serialises transitions
//! of a group with a per-group lock). A batching replica (`batch.rs`'s group commit) decides a write together
//! with every queued request that needs one, with `rsc_group::batch`, commits them once and answers each.
//!
//! Faults: a crash loses the cache and whatever was being decided; a pause stops the replica, possibly
//! *between* a decision and its commit (the GC-pause case), and it resumes with the stale decision and cache.

use super::TIMING;
use super::checks;
use super::net::{Endpoint, Network, Payload};
use super::rng::Rng;
use super::store::{CasOutcome, RenewOutcome, SimStore, Writer};
use rsc_group::batch::Batch;
use rsc_group::heartbeat::{Outcome, Transition, decide, probe, rejected_response};
use rsc_group::model::Group;
use rsc_group::tick::tick;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatResponse, HeartbeatStatus};
use std::collections::VecDeque;
use std::rc::Rc;

/// As `coordinator::MAX_CAS_ATTEMPTS`.
pub const MAX_ATTEMPTS: usize = 5;

/// Replica fault rates (per mille per step) and bounds.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplicaFaults {
    /// Largest error of a replica's estimate of Redis time, either way.
    pub max_skew_ms: i64,
    /// Chance, at each decision, that the replica pauses before committing it.
    pub pause_mid_decision: u64,
    pub max_pause_ms: i64,
}

/// Everything a replica touches while it works.
pub struct Env<'a> {
    pub now: i64,
    pub store: &'a mut SimStore,
    pub net: &'a mut Network,
    pub rng: &'a mut Rng,
    pub faults: ReplicaFaults,
    pub stats: &'a mut Stats,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub heartbeats: u64,
    pub conflicts: u64,
    pub retries: u64,
    pub pauses_mid_decision: u64,
    pub stale_decisions_committed: u64,
    /// Stale reports that made `decide` signal a rebalance regression on fresh state (see `checks.rs`).
    pub false_rebalance_signals: u64,
    /// Requests written in a batch together with at least one other.
    pub batched: u64,
}

/// What was decided and still has to be committed.
enum Decided {
    Steady {
        base: u64,
        resp: HeartbeatResponse,
    },
    Write {
        base: u64,
        t: Box<Transition>,
        resp: HeartbeatResponse,
        /// Queued requests decided into the same batch, with their answers.
        others: Vec<(HbJob, HeartbeatResponse)>,
    },
}

pub struct HbJob {
    pub from: Endpoint,
    pub req: Rc<HeartbeatRequest>,
    attempt: usize,
    decided: Option<Decided>,
    /// Whether another writer moved the group while this request was being handled.
    contended: bool,
}

impl HbJob {
    pub fn new(from: Endpoint, req: Rc<HeartbeatRequest>) -> Self {
        HbJob {
            from,
            req,
            attempt: 0,
            decided: None,
            contended: false,
        }
    }
}

enum Job {
    Heartbeat(Box<HbJob>),
    Tick {
        attempt: usize,
        decided: Option<(u64, Box<Transition>)>,
    },
}

pub struct Replica {
    pub index: usize,
    pub down_until: i64,
    pub paused_until: i64,
    cache: Option<(Rc<Group>, u64)>,
    /// Highest revision this replica has seen (invariant 6: it must never read a lower one).
    highest: u64,
    skew_ms: i64,
    pub next_tick: i64,
    tick_interval: i64,
    pub inbox: VecDeque<HbJob>,
    parked: Option<Job>,
    batching: bool,
}

impl Replica {
    pub fn new(index: usize, tick_interval: i64, now: i64, batching: bool) -> Self {
        Replica {
            index,
            batching,
            down_until: 0,
            paused_until: 0,
            cache: None,
            highest: 0,
            skew_ms: 0,
            next_tick: now + tick_interval,
            tick_interval,
            inbox: VecDeque::new(),
            parked: None,
        }
    }

    pub fn is_down(&self, now: i64) -> bool {
        now < self.down_until
    }

    /// The process dies: cache, queue and any half-done work are lost.
    pub fn crash(&mut self, now: i64, until: i64) {
        self.down_until = until;
        self.paused_until = 0;
        self.cache = None;
        self.highest = 0;
        self.inbox.clear();
        self.parked = None;
        self.next_tick = until.max(now);
    }

    pub fn pause(&mut self, until: i64) {
        self.paused_until = self.paused_until.max(until);
    }

    pub fn cached_revision(&self) -> Option<u64> {
        self.cache.as_ref().map(|(_, r)| *r)
    }

    /// Does whatever is due: resumes parked work, answers queued requests, runs the reconciler.
    pub fn run(&mut self, env: &mut Env) {
        if self.is_down(env.now) || env.now < self.paused_until {
            return;
        }
        if let Some(job) = self.parked.take() {
            self.execute(job, env);
        }
        while env.now >= self.paused_until {
            let Some(job) = self.inbox.pop_front() else {
                break;
            };
            self.execute(Job::Heartbeat(Box::new(job)), env);
        }
        if env.now >= self.paused_until && env.now >= self.next_tick {
            self.next_tick = env.now + self.tick_interval;
            self.execute(
                Job::Tick {
                    attempt: 0,
                    decided: None,
                },
                env,
            );
        }
    }

    fn execute(&mut self, job: Job, env: &mut Env) {
        match job {
            Job::Heartbeat(j) => self.heartbeat(*j, env),
            Job::Tick { attempt, decided } => self.reconcile(attempt, decided, env),
        }
    }

    /// The replica's estimate of Redis time.
    fn clock(&self, env: &Env) -> i64 {
        env.now + self.skew_ms
    }

    /// A store reply carried Redis time: the estimate is re-learned (with a small error).
    fn observe(&mut self, env: &mut Env) {
        let m = env.faults.max_skew_ms;
        self.skew_ms = env.rng.range(-m, m);
    }

    fn remember(&mut self, group: Rc<Group>, revision: u64) {
        assert!(
            revision >= self.highest,
            "invariant 6: replica {} read revision {revision} after seeing {}",
            self.index,
            self.highest
        );
        self.highest = revision;
        self.cache = Some((group, revision));
    }

    fn load(&mut self, env: &mut Env) -> (Rc<Group>, u64) {
        let (g, rev) = env.store.load();
        self.observe(env);
        self.remember(g.clone(), rev);
        (g, rev)
    }

    /// Maybe pauses now, parking `job` to be finished when the replica resumes.
    fn maybe_pause(&mut self, job: Job, env: &mut Env) -> Option<Job> {
        if env.rng.chance(env.faults.pause_mid_decision) {
            env.stats.pauses_mid_decision += 1;
            self.paused_until = env.now + env.rng.range(1, env.faults.max_pause_ms);
            self.parked = Some(job);
            return None;
        }
        Some(job)
    }

    /// `Coordinator::heartbeat`.
    fn heartbeat(&mut self, mut job: HbJob, env: &mut Env) {
        let member = job.req.member_id.clone();
        while job.attempt < MAX_ATTEMPTS {
            let decided = match job.decided.take() {
                Some(d) => {
                    env.stats.stale_decisions_committed += 1;
                    d
                }
                None => {
                    job.attempt += 1;
                    let (group, base, fresh) = match &self.cache {
                        Some((g, r)) => (g.clone(), *r, false),
                        None => {
                            let (g, r) = self.load(env);
                            (g, r, true)
                        }
                    };
                    let now = self.clock(env);
                    let d = decide(Some(&group), &member, &job.req, now, &TIMING);
                    // The coordinator tells steady heartbeats from transitions with `probe`: it must agree.
                    let p = probe(Some(&group), &member, &job.req, now, &TIMING);
                    assert_eq!(p.signals, d.signals, "probe and decide disagree on signals");
                    match (&p.outcome, &d.outcome) {
                        (Outcome::Write(_), Outcome::Write(_)) => {}
                        _ => assert_eq!(
                            (&p.outcome, &p.response),
                            (&d.outcome, &d.response),
                            "probe and decide disagree"
                        ),
                    }
                    if d.signals.metadata_regression || d.signals.rebalance_regression {
                        if !fresh {
                            self.cache = None;
                            continue;
                        }
                        if checks::false_rollback_signal(&group, &job.req, &d.signals) {
                            env.stats.false_rebalance_signals += 1;
                        }
                    }
                    let decided = match d.outcome {
                        Outcome::Rejected {
                            needs_fresh_state: true,
                        } if !fresh => {
                            self.cache = None;
                            continue;
                        }
                        Outcome::Rejected { .. } => {
                            return self.answer(&job, Rc::new(d.response), env);
                        }
                        Outcome::Steady => Decided::Steady {
                            base,
                            resp: d.response,
                        },
                        Outcome::Write(_) if self.batching => {
                            self.decide_batch(&group, base, now, &job)
                        }
                        Outcome::Write(t) => Decided::Write {
                            base,
                            t,
                            resp: d.response,
                            others: Vec::new(),
                        },
                    };
                    job.decided = Some(decided);
                    match self.maybe_pause(Job::Heartbeat(Box::new(job)), env) {
                        Some(Job::Heartbeat(mut j)) => {
                            let d = j.decided.take();
                            job = *j;
                            d.expect("just decided")
                        }
                        _ => return,
                    }
                }
            };
            match decided {
                Decided::Steady { base, resp } => {
                    let outcome = env.store.renew(base, &member, env.now);
                    self.observe(env);
                    match outcome {
                        RenewOutcome::Renewed => {
                            return self.answer(&job, Rc::new(resp), env);
                        }
                        RenewOutcome::Conflict => {
                            env.stats.conflicts += 1;
                            job.contended = true;
                            self.cache = None;
                        }
                        RenewOutcome::LeaseLapsed => {
                            self.reconcile(0, None, env);
                        }
                    }
                }
                Decided::Write {
                    base,
                    t,
                    resp,
                    others,
                } => {
                    let writers = std::iter::once(&job)
                        .chain(others.iter().map(|(j, _)| j))
                        .map(|j| j.req.member_id.clone())
                        .collect();
                    let outcome = env
                        .store
                        .cas(base, &t, env.now, Writer::Heartbeats(writers));
                    self.observe(env);
                    if let CasOutcome::Written(rev) = outcome {
                        let g = env.store.group.clone();
                        self.remember(g, rev);
                        if !others.is_empty() {
                            env.stats.batched += 1 + others.len() as u64;
                        }
                        for (other, answer) in others {
                            self.answer(&other, Rc::new(answer), env);
                        }
                        return self.answer(&job, Rc::new(resp), env);
                    }
                    // Not written: the others decide again (`BatchReply::DecideAgain`), in their order.
                    for (mut other, _) in others.into_iter().rev() {
                        other.contended = true;
                        self.inbox.push_front(other);
                    }
                    if outcome == CasOutcome::Conflict {
                        env.stats.conflicts += 1;
                        job.contended = true;
                        self.cache = None;
                    } else {
                        self.cache = None;
                        self.reconcile(0, None, env);
                    }
                }
            }
            if env.now < self.paused_until {
                return; // a reconcile inside this request paused the replica; the member will time out
            }
        }
        env.stats.retries += 1;
        assert!(
            job.contended,
            "invariant 5: t={} {} (epoch {}) answered RETRY although nobody else wrote meanwhile: the \
             coordinator cannot answer it on its own; Redis holds {:#?}",
            env.now,
            job.req.request_id,
            job.req.member_epoch,
            env.store.group.members.get(&member)
        );
        let retry = rejected_response(&job.req, &TIMING, HeartbeatStatus::Retry);
        self.answer(&job, Rc::new(retry), env);
    }

    /// `batch.rs::commit_batch`: `job` (a write on `group`) first, then every queued request that also needs
    /// a write on the batch's aggregate; the rest stay queued in their order. A queued request joins only if
    /// its own path would have sent it to the queue: a write on the cache, with no rollback signal.
    fn decide_batch(&mut self, group: &Group, base: u64, now: i64, job: &HbJob) -> Decided {
        let mut batch = Batch::on(group, now, &TIMING);
        batch
            .decide(&job.req.member_id, &job.req)
            .expect("a write decided alone is one in an empty batch");
        let mut others = Vec::new();
        let mut kept = VecDeque::new();
        while let Some(other) = self.inbox.pop_front() {
            let id = &other.req.member_id;
            let queued = other.decided.is_none() && {
                let p = probe(Some(group), id, &other.req, now, &TIMING);
                matches!(p.outcome, Outcome::Write(_))
                    && !p.signals.metadata_regression
                    && !p.signals.rebalance_regression
            };
            if queued && batch.decide(id, &other.req).is_ok() {
                others.push(other);
            } else {
                kept.push_back(other);
            }
        }
        self.inbox = kept;
        let done = batch.finish().expect("the batch holds job");
        let mut answers = done.decisions.into_iter().map(|d| d.response);
        let resp = answers.next().expect("job's answer");
        Decided::Write {
            base,
            t: Box::new(done.transition),
            resp,
            others: others.into_iter().zip(answers).collect(),
        }
    }

    fn answer(&mut self, job: &HbJob, resp: Rc<HeartbeatResponse>, env: &mut Env) {
        env.stats.heartbeats += 1;
        if super::tracing() {
            eprintln!(
                "t={} r{} answers {} (epoch {}) {:?} epoch {} assigned {:?}; Redis revision {}",
                env.now,
                self.index,
                job.req.request_id,
                job.req.member_epoch,
                resp.status,
                resp.member_epoch,
                resp.assignment
                    .assigned_shards
                    .iter()
                    .map(|s| s.shard_index)
                    .collect::<Vec<_>>(),
                env.store.revision
            );
        }
        checks::response(env.store, &job.req, &resp);
        let to = Endpoint {
            replica: self.index,
            ..job.from
        };
        env.net.send(Payload::Response(to, resp), env.rng, env.now);
    }

    /// `Coordinator::reconcile_group`: fresh load, Redis time, lapsed leases, `tick`, CAS.
    fn reconcile(
        &mut self,
        mut attempt: usize,
        mut decided: Option<(u64, Box<Transition>)>,
        env: &mut Env,
    ) {
        while attempt < MAX_ATTEMPTS {
            let (base, t) = match decided.take() {
                Some(d) => d,
                None => {
                    attempt += 1;
                    let (group, base) = self.load(env);
                    let now = env.now;
                    let lapsed = env.store.lapsed(now);
                    let Some((t, _)) = tick(&group, now, &lapsed, &TIMING)
                        .expect("the simulation's epochs stay small")
                    else {
                        return;
                    };
                    let job = Job::Tick {
                        attempt,
                        decided: Some((base, Box::new(t))),
                    };
                    match self.maybe_pause(job, env) {
                        Some(Job::Tick {
                            decided: Some(d), ..
                        }) => d,
                        _ => return,
                    }
                }
            };
            let outcome = env.store.cas(base, &t, env.now, Writer::Tick);
            self.observe(env);
            match outcome {
                CasOutcome::Written(rev) => {
                    let g = env.store.group.clone();
                    self.remember(g, rev);
                    return;
                }
                CasOutcome::Conflict => {
                    env.stats.conflicts += 1;
                    self.cache = None;
                }
                CasOutcome::ConditionFailed => self.cache = None,
            }
        }
    }
}
