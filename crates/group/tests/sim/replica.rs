//! A coordinator replica: the replica core (`rsc_group::replica`) — the same heartbeat flow, group commit
//! and reconciler pass the coordinator runs — driven over the simulated store, network and time.
//!
//! What is the simulation's own is only what the coordinator's shell does around the core: a cached
//! aggregate with its revision (possibly stale), an estimate of Redis time (skewed a little, re-learned from
//! every store reply, as `clock.rs` does), and one request at a time (the real replica serialises a group's
//! transitions with a per-group lock). A batching replica commits a write together with every queued request
//! whose own flow reached the write step on the same aggregate (the coordinator's queue); a non-batching one
//! commits each write alone. Its reconciler ticks on its own schedule with Redis time.
//!
//! Its resharding work (the operator's scales and ends, a producer's last quiesced report, the reconciler's
//! pass over the stream in resharding scenarios) runs the core's resharding flows one step at a time
//! (`resharder.rs`), beside its heartbeats.
//!
//! Faults: a crash loses the cache and whatever was being decided; a pause stops the replica, possibly
//! *between* a decision and its commit (the GC-pause case), or between two resharding steps, and it resumes
//! with the stale decision and cache.

use super::TIMING;
use super::checks;
use super::net::{Endpoint, Network, Payload};
use super::resharder::ReshardJob;
use super::rng::Rng;
use super::store::{CasOutcome, RenewOutcome, SimStore, Writer};
use rsc_group::deadline::{LeaseView, NextVisit, next_visit};
use rsc_group::heartbeat::{Caller, Outcome, Transition, decide, probe};
use rsc_group::model::Group;
use rsc_group::ownership::{ReplicaSet, group_work, stream_work};
use rsc_group::rebalance::RebalanceIndex;
use rsc_group::replica::commit::{
    BatchReply, Included, Queued, decide_queue, decide_queue_indexed, replies,
};
use rsc_group::replica::heartbeat::{Confirmation, HeartbeatFlow, Renewal, Step};
use rsc_group::replica::reconcile::{ReconcileFlow, ReconcileStep};
use rsc_group::replica::{CommitResult, Snapshot};
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatResponse};
use std::collections::VecDeque;
use std::rc::Rc;

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
    /// Resharding scenarios: the reconciler also runs the pass over the stream.
    pub resharding: bool,
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
    /// Resharding flow steps performed, and pauses between two of them.
    pub reshard_steps: u64,
    pub reshard_pauses: u64,
    /// Reconciler ticks that visited the group as its owner, and ticks of replicas whose view gave the group
    /// to another replica.
    pub owner_visits: u64,
    pub ticks_not_owner: u64,
    /// Steady renewals that Redis took at or after their member's rebalance deadline with shards still
    /// revoking (decided before it on a clock behind Redis, or committed after a pause): safe, as
    /// ARCHITECTURE.md's invariant 1 argues; counted to show the scenarios reach it.
    pub renewals_past_deadline: u64,
}

/// The aggregate a replica holds and the revision it was read or written at.
#[derive(Debug, Clone)]
pub struct Snap {
    pub group: Rc<Group>,
    pub revision: u64,
}

impl Snapshot for Snap {
    fn group(&self) -> &Group {
        &self.group
    }

    fn revision(&self) -> u64 {
        self.revision
    }
}

/// A heartbeat request on its way through a replica.
pub struct HbJob {
    pub from: Endpoint,
    pub req: Rc<HeartbeatRequest>,
    /// The core's flow for this request and the step to perform next (None: not started).
    resume: Option<(HeartbeatFlow<Snap>, Step<Snap>)>,
    /// The step to perform next was decided before a pause (a stale decision about to be committed).
    decided_before_pause: bool,
    /// Whether another writer moved the group while this request was being handled.
    contended: bool,
}

impl HbJob {
    pub fn new(from: Endpoint, req: Rc<HeartbeatRequest>) -> Self {
        HbJob {
            from,
            req,
            resume: None,
            decided_before_pause: false,
            contended: false,
        }
    }
}

/// Which request of a batch a reply is for: the one that runs the batch, or a queued one (with its flow).
enum Requester {
    This,
    Queued(Box<(HbJob, HeartbeatFlow<Snap>)>),
}

/// A decided batch waiting for its compare-and-set.
struct DecidedWrite {
    base: u64,
    transition: Transition,
    included: Vec<Included<Requester>>,
    /// The rebalance index of the transition's aggregate.
    index: Option<RebalanceIndex>,
}

enum Job {
    Heartbeat(Box<HbJob>),
    /// A heartbeat whose batch was decided before a pause.
    Commit(Box<(HbJob, HeartbeatFlow<Snap>, DecidedWrite)>),
    Tick(ReconcileFlow, ReconcileStep<Snap>),
}

pub struct Replica {
    pub index: usize,
    pub down_until: i64,
    pub paused_until: i64,
    pub(super) cache: Option<Snap>,
    /// Highest revision this replica has seen (invariant 6: it must never read a lower one).
    highest: u64,
    skew_ms: i64,
    /// The instant Redis last refused this replica's write as too early (its time condition failed): at that
    /// instant its estimate, re-learned from Redis time, is not ahead of it (`observe`).
    refused_too_early_at: Option<i64>,
    pub next_tick: i64,
    tick_interval: i64,
    pub inbox: VecDeque<HbJob>,
    parked: Option<Job>,
    batching: bool,
    /// Resharding flows in progress, each at its next step.
    pub jobs: Vec<ReshardJob>,
    /// The replicas this one believes are live (its reading of the registry; it always counts itself): the
    /// reconciler visits the group, and runs the stream's pass, only when this view makes it the owner.
    pub view: Vec<usize>,
    /// The owner's schedule for the group (`rsc_group::deadline`): its next visit and the revision it last
    /// saw (a write by anyone — the change feed — makes the group due at once).
    next_visit: NextVisit,
    seen_revision: Option<u64>,
    /// The rebalance index of the aggregate this replica last wrote, with its revision (kept beside the cache
    /// as the coordinator keeps one beside a batch copy).
    kept_index: Option<(u64, RebalanceIndex)>,
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
            refused_too_early_at: None,
            next_tick: now + tick_interval,
            tick_interval,
            inbox: VecDeque::new(),
            parked: None,
            jobs: Vec::new(),
            view: vec![index],
            next_visit: NextVisit::At(i64::MIN),
            seen_revision: None,
            kept_index: None,
        }
    }

    /// Whether this replica's view makes it the owner of `work`.
    fn owns(&self, work: &str) -> bool {
        let me = format!("r{}", self.index);
        ReplicaSet::new(self.view.iter().map(|i| format!("r{i}")))
            .with(&me)
            .owns(&me, work)
    }

    /// Whether the owner's schedule says the group is due: its deadline came, or it was written since the
    /// last visit.
    fn group_due(&self, env: &Env) -> bool {
        if self.seen_revision != Some(env.store.revision) {
            return true;
        }
        match self.next_visit {
            NextVisit::At(t) => self.clock(env) >= t,
            NextVisit::EveryTick => true,
            NextVisit::OnChange => false,
        }
    }

    /// After a visit: when the group is next due, from Redis's state (`Reconciler::visit`).
    fn schedule_next(&mut self, env: &Env) {
        let leases = LeaseView {
            earliest_end_ms: env.store.leases.values().min().copied(),
            entries: env.store.leases.len(),
        };
        self.next_visit = next_visit(&env.store.group, leases, &TIMING);
        self.seen_revision = Some(env.store.revision);
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
        self.jobs.clear();
        self.next_tick = until.max(now);
        self.next_visit = NextVisit::At(i64::MIN);
        self.seen_revision = None;
    }

    pub fn pause(&mut self, until: i64) {
        self.paused_until = self.paused_until.max(until);
    }

    pub fn cached_revision(&self) -> Option<u64> {
        self.cache.as_ref().map(|s| s.revision)
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
            let group = &env.store.group;
            if self.owns(&group_work(&group.stream_prefix, &group.consumer_group)) {
                if self.group_due(env) {
                    env.stats.owner_visits += 1;
                    self.reconcile(None, env);
                    if env.now < self.paused_until {
                        // Paused mid-visit: decide the next visit when it resumes (at once).
                        self.seen_revision = None;
                    } else {
                        self.schedule_next(env);
                    }
                }
            } else {
                env.stats.ticks_not_owner += 1;
                // Ownership may come back later: visit at once then.
                self.seen_revision = None;
            }
            if env.resharding
                && self.owns(&stream_work(&env.store.group.stream_prefix))
                && !self.jobs.iter().any(ReshardJob::is_pass)
            {
                self.jobs.push(ReshardJob::pass());
            }
        }
        self.run_jobs(env);
    }

    fn execute(&mut self, job: Job, env: &mut Env) {
        match job {
            Job::Heartbeat(j) => self.heartbeat(*j, env),
            Job::Commit(parked) => {
                let (mut j, mut flow, write) = *parked;
                env.stats.stale_decisions_committed += 1;
                let reply = self.commit_write(&mut j, write, env);
                let step = flow.on_batch(&j.req.clone(), reply);
                j.resume = Some((flow, step));
                self.heartbeat(j, env);
            }
            Job::Tick(flow, step) => {
                env.stats.stale_decisions_committed += 1;
                self.reconcile(Some((flow, step)), env);
            }
        }
    }

    /// The replica's estimate of Redis time.
    pub(super) fn clock(&self, env: &Env) -> i64 {
        env.now + self.skew_ms
    }

    /// A store reply carried Redis time: the estimate is re-learned (with a small error). Either way in
    /// general; but not ahead at the instant Redis refused a write as too early: `clock.rs` learns the offset
    /// from the Redis time of a reply received after it, so the estimate it re-learns from that refusal (and
    /// from the reconciler's read of Redis time that follows) lags Redis time, and only time passing (a clock
    /// step, drift) could put it ahead again.
    pub(super) fn observe(&mut self, env: &mut Env) {
        let m = env.faults.max_skew_ms;
        let ahead = if self.refused_too_early_at == Some(env.now) {
            0
        } else {
            m
        };
        self.skew_ms = env.rng.range(-m, ahead);
    }

    pub(super) fn remember(&mut self, group: Rc<Group>, revision: u64) {
        assert!(
            revision >= self.highest,
            "invariant 6: replica {} read revision {revision} after seeing {}",
            self.index,
            self.highest
        );
        self.highest = revision;
        self.cache = Some(Snap { group, revision });
    }

    pub(super) fn load(&mut self, env: &mut Env) -> Snap {
        let (group, revision) = env.store.load();
        self.observe(env);
        self.remember(group.clone(), revision);
        Snap { group, revision }
    }

    /// Whether to pause now, between a decision and its commit.
    pub(super) fn pause_now(&mut self, env: &mut Env) -> bool {
        if env.rng.chance(env.faults.pause_mid_decision) {
            env.stats.pauses_mid_decision += 1;
            self.paused_until = env.now + env.rng.range(1, env.faults.max_pause_ms);
            return true;
        }
        false
    }

    /// `Coordinator::heartbeat_inner`: the core's flow, each step performed on the simulated store.
    fn heartbeat(&mut self, mut job: HbJob, env: &mut Env) {
        let req = job.req.clone();
        let (mut flow, mut step) = job
            .resume
            .take()
            .unwrap_or_else(|| HeartbeatFlow::start(&req.member_id, Caller::ANONYMOUS, &TIMING));
        loop {
            let decided_before_pause = std::mem::take(&mut job.decided_before_pause);
            step = match step {
                Step::Read | Step::Reload => {
                    if matches!(step, Step::Reload) {
                        self.cache = None;
                    }
                    let (snap, fresh) = match &self.cache {
                        Some(s) => (s.clone(), false),
                        None => (self.load(env), true),
                    };
                    let now = self.clock(env);
                    check_decision(&snap.group, &req, now, fresh, env.stats);
                    flow.on_read(&req, Ok(Some(snap)), fresh, now)
                }
                Step::ConfirmCurrent(snap) => {
                    let current = env.store.revision == snap.revision;
                    self.observe(env);
                    let confirmation = if current {
                        Confirmation::Current
                    } else {
                        Confirmation::Moved
                    };
                    flow.on_confirmed(&req, confirmation)
                }
                Step::RecordSuspicion { signal, .. } => panic!(
                    "invariant 6: the simulated Redis never rolls back, yet {} (epoch {}) would record a \
                     rollback suspicion: {signal:?}",
                    req.request_id, req.member_epoch
                ),
                Step::Renew(snap) => {
                    if !decided_before_pause && self.pause_now(env) {
                        job.resume = Some((flow, Step::Renew(snap)));
                        job.decided_before_pause = true;
                        self.parked = Some(Job::Heartbeat(Box::new(job)));
                        return;
                    }
                    if decided_before_pause {
                        env.stats.stale_decisions_committed += 1;
                    }
                    let past_deadline = snap.group.members.get(&req.member_id).is_some_and(|m| {
                        !m.revoking.is_empty()
                            && m.rebalance_deadline_ms.is_some_and(|d| d <= env.now)
                    });
                    let outcome = env.store.renew(snap.revision, &req.member_id, env.now);
                    self.observe(env);
                    let renewal = match outcome {
                        RenewOutcome::Renewed => {
                            env.stats.renewals_past_deadline += u64::from(past_deadline);
                            Renewal::Renewed
                        }
                        RenewOutcome::Conflict => {
                            env.stats.conflicts += 1;
                            job.contended = true;
                            self.cache = None;
                            Renewal::Conflict
                        }
                        RenewOutcome::LeaseLapsed => Renewal::LeaseLapsed,
                    };
                    flow.on_renewed(&req, renewal)
                }
                Step::Write => {
                    let Some(write) = self.decide_write(&job, env) else {
                        step = flow.on_batch(&req, BatchReply::DecideAgain);
                        continue;
                    };
                    if self.pause_now(env) {
                        self.parked = Some(Job::Commit(Box::new((job, flow, write))));
                        return;
                    }
                    let reply = self.commit_write(&mut job, write, env);
                    flow.on_batch(&req, reply)
                }
                Step::Reconcile => {
                    self.reconcile(None, env);
                    if env.now < self.paused_until {
                        return; // the reconciler paused the replica mid-pass; the member will time out
                    }
                    flow.on_reconciled(&req)
                }
                Step::Answer(response) => {
                    if flow.notes().gave_up {
                        env.stats.retries += 1;
                        assert!(
                            job.contended,
                            "invariant 5: t={} {} (epoch {}) answered RETRY although nobody else wrote \
                             meanwhile: the coordinator cannot answer it on its own; Redis holds {:#?}",
                            env.now,
                            req.request_id,
                            req.member_epoch,
                            env.store.group.members.get(&req.member_id)
                        );
                    }
                    return self.answer(&job, Rc::new(response), env);
                }
                Step::Refuse { owner } => {
                    panic!("an anonymous heartbeat was refused for owner {owner}")
                }
                Step::FailClosed => panic!("the simulated store never holds unreadable metadata"),
            };
        }
    }

    /// `batch.rs`: the group's queue decided on the cached aggregate. `job` (whose flow reached the write
    /// step on it) first; when batching, also every queued request whose own flow reaches the write step on
    /// the same aggregate. The others stay queued, in their order. None: `job` itself was not combined.
    fn decide_write(&mut self, job: &HbJob, env: &mut Env) -> Option<DecidedWrite> {
        let snap = self
            .cache
            .clone()
            .expect("a write is decided on the aggregate just read");
        let now = self.clock(env);
        let mut queue = vec![queued(&job.req, Requester::This)];
        if self.batching {
            let mut kept = VecDeque::new();
            while let Some(other) = self.inbox.pop_front() {
                if other.resume.is_some() {
                    kept.push_back(other);
                    continue;
                }
                let (mut flow, _) =
                    HeartbeatFlow::start(&other.req.member_id, Caller::ANONYMOUS, &TIMING);
                match flow.on_read(&other.req, Ok(Some(snap.clone())), false, now) {
                    Step::Write => {
                        let req = other.req.clone();
                        queue.push(queued(&req, Requester::Queued(Box::new((other, flow)))));
                    }
                    _ => kept.push_back(other),
                }
            }
            self.inbox = kept;
        }
        // The batch decided with the rebalance index (the one kept from this replica's last write of this
        // revision, else one counted afresh), and the same queue decided without: the same transition.
        let shadow: Vec<Queued<()>> = queue
            .iter()
            .map(|q| Queued {
                member_id: q.member_id.clone(),
                req: q.req.clone(),
                principal: q.principal.clone(),
                acts_for_any_member: q.acts_for_any_member,
                reply_to: (),
            })
            .collect();
        let fresh = RebalanceIndex::of(&snap.group);
        let index = match self.kept_index.take() {
            Some((revision, kept)) if revision == snap.revision => {
                assert_eq!(
                    Some(&kept),
                    fresh.as_ref(),
                    "the index kept is the aggregate's"
                );
                Some(kept)
            }
            _ => fresh,
        };
        let decided = decide_queue_indexed(
            std::borrow::Cow::Borrowed(&*snap.group),
            index,
            queue,
            now,
            &TIMING,
            rsc_group::batch::MemberCaps::default(),
            None,
        );
        let full = decide_queue(&snap.group, shadow, now, &TIMING);
        match (&decided.transition, &full.transition) {
            (Some(a), Some(b)) => {
                assert!(
                    a.group == b.group,
                    "the batch by the index decided another aggregate"
                );
                assert_eq!(
                    a.changed_members, b.changed_members,
                    "the batch by the index noted others"
                );
                if let Some(g) = &a.group {
                    assert_eq!(
                        decided.index,
                        RebalanceIndex::of(g),
                        "the batch's index is its aggregate's"
                    );
                }
            }
            (None, None) => {}
            _ => panic!("the batch by the index combined other requests"),
        }
        let mut this_declined = false;
        for declined in decided.declined.into_iter().rev() {
            match declined {
                Requester::This => this_declined = true,
                // Told to decide again: it starts over when its turn comes.
                Requester::Queued(other) => self.inbox.push_front(other.0),
            }
        }
        let transition = decided.transition?;
        if this_declined {
            return None;
        }
        Some(DecidedWrite {
            base: snap.revision,
            transition,
            included: decided.included,
            index: decided.index,
        })
    }

    /// The batch's compare-and-set, and what each of its requests is told (`replies`): the queued ones are
    /// answered or put back in the queue at their next step; `job`'s own reply is returned.
    fn commit_write(&mut self, job: &mut HbJob, write: DecidedWrite, env: &mut Env) -> BatchReply {
        let writers = write.included.iter().map(|i| i.member_id.clone()).collect();
        let outcome = env.store.cas(
            write.base,
            &write.transition,
            env.now,
            Writer::Heartbeats(writers),
        );
        if matches!(outcome, CasOutcome::ConditionFailed { member: None }) {
            self.refused_too_early_at = Some(env.now);
        }
        self.observe(env);
        let result = match outcome {
            CasOutcome::Written(revision) => {
                let g = env.store.group.clone();
                self.remember(g, revision);
                self.kept_index = write.index.map(|index| (revision, index));
                if write.included.len() > 1 {
                    env.stats.batched += write.included.len() as u64;
                }
                CommitResult::Written
            }
            CasOutcome::Conflict => {
                env.stats.conflicts += 1;
                self.cache = None;
                CommitResult::Conflict
            }
            CasOutcome::ConditionFailed { member } => {
                self.cache = None;
                CommitResult::ConditionFailed { member }
            }
        };
        let mut own = BatchReply::DecideAgain;
        let mut requeue = Vec::new();
        for (member, reply) in replies(write.included, &result) {
            match member {
                Requester::This => {
                    // Someone else's write moved the group under it.
                    job.contended |= reply == BatchReply::DecideAgain;
                    own = reply;
                }
                Requester::Queued(queued) => {
                    let (mut other, mut flow) = *queued;
                    if reply == BatchReply::DecideAgain {
                        other.contended = true;
                    }
                    match flow.on_batch(&other.req, reply) {
                        Step::Answer(response) => self.answer(&other, Rc::new(response), env),
                        next => {
                            other.resume = Some((flow, next));
                            requeue.push(other);
                        }
                    }
                }
            }
        }
        for other in requeue.into_iter().rev() {
            self.inbox.push_front(other);
        }
        own
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

    /// `Coordinator::reconcile_group`: the core's reconciler pass on a fresh load, with Redis time and the
    /// leases lapsed by it; it may pause between the tick and its compare-and-set.
    fn reconcile(&mut self, resume: Option<(ReconcileFlow, ReconcileStep<Snap>)>, env: &mut Env) {
        let (mut flow, mut step) = resume.unwrap_or_else(|| ReconcileFlow::start(&TIMING));
        loop {
            step = match step {
                ReconcileStep::Read => {
                    let snap = self.load(env);
                    flow.on_read(Some(snap))
                }
                ReconcileStep::Observe(base) => {
                    let lapsed = env.store.lapsed(env.now);
                    let next = flow.on_observed(base, env.now, &lapsed);
                    if matches!(next, ReconcileStep::Commit { .. }) && self.pause_now(env) {
                        self.parked = Some(Job::Tick(flow, next));
                        return;
                    }
                    next
                }
                ReconcileStep::Commit {
                    base,
                    transition,
                    report,
                } => {
                    let outcome = env
                        .store
                        .cas(base.revision, &transition, env.now, Writer::Tick);
                    self.observe(env);
                    let result = match outcome {
                        CasOutcome::Written(revision) => {
                            let g = env.store.group.clone();
                            self.remember(g, revision);
                            CommitResult::Written
                        }
                        CasOutcome::Conflict => {
                            env.stats.conflicts += 1;
                            self.cache = None;
                            CommitResult::Conflict
                        }
                        CasOutcome::ConditionFailed { member } => {
                            self.cache = None;
                            CommitResult::ConditionFailed { member }
                        }
                    };
                    flow.on_committed::<Snap>(result, report)
                }
                ReconcileStep::Done(_) => return,
                ReconcileStep::Exhausted(e) => panic!("the simulation's epochs stay small: {e}"),
            };
        }
    }
}

fn queued(req: &HeartbeatRequest, requester: Requester) -> Queued<Requester> {
    Queued {
        member_id: req.member_id.clone(),
        req: req.clone(),
        principal: None,
        acts_for_any_member: false,
        reply_to: requester,
    }
}

/// Checks on every decision the core makes: `probe` (which the core uses to tell steady heartbeats from
/// transitions) agrees with `decide`, and a decision on state just read raises no false rollback signal.
fn check_decision(g: &Group, req: &HeartbeatRequest, now: i64, fresh: bool, stats: &mut Stats) {
    let d = decide(Some(g), &req.member_id, req, now, &TIMING);
    let p = probe(Some(g), &req.member_id, req, now, &TIMING);
    assert_eq!(p.signals, d.signals, "probe and decide disagree on signals");
    match (&p.outcome, &d.outcome) {
        (Outcome::Write(_), Outcome::Write(_)) => {}
        _ => assert_eq!(
            (&p.outcome, &p.response),
            (&d.outcome, &d.response),
            "probe and decide disagree"
        ),
    }
    if fresh
        && (d.signals.metadata_regression || d.signals.rebalance_regression)
        && checks::false_rollback_signal(g, req, &d.signals)
    {
        stats.false_rebalance_signals += 1;
    }
}
