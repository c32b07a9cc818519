//! A replica's resharding work: the replica core's flows (`rsc_group::replica::reshard`) — the operator's
//! scale, rollback and force-complete, a producer's last `quiesced` report, and the reconciler's pass over
//! the stream — performed on the simulated store as `crates/coordinator/src/services/reshard/perform.rs` performs
//! them on Redis, but one step at a time: the world's other work (heartbeats, producers, consumers, the other
//! replicas) runs between any two steps, and the replica may pause there or crash (losing the flow, as a
//! coordinator killed mid-request loses it; the reconciler's next pass resumes what it left).

use super::TIMING;
use super::replica::{Env, Replica, Snap};
use super::store::{CasOutcome, Writer};
use rsc_group::model::{Group, MigrationState};
use rsc_group::replica::CommitResult;
use rsc_group::replica::reshard::end::EndFlow;
use rsc_group::replica::reshard::group_update::{GroupUpdate, UpdateStep};
use rsc_group::replica::reshard::pass::StreamPass;
use rsc_group::replica::reshard::scale::ScaleFlow;
use rsc_group::replica::reshard::switch::SwitchFlow;
use rsc_group::replica::reshard::{Answer, Flow, Progress, Settings, Step};
use rsc_group::reshard::record::{ScaleRequest, raised_shards};
use std::collections::BTreeMap;

/// The configuration the simulated coordinator runs the flows with.
pub const SETTINGS: Settings = Settings {
    provisioning_enabled: true,
    retire_removed_shards: true,
    drain_grace_ms: 200,
    producer_refresh_window_ms: 1_000,
    timing: TIMING,
};

/// The stream's prefix and its one group.
const PREFIX: &str = "s";
const GROUP: &str = "g";

enum Flowing {
    Scale(Box<ScaleFlow>),
    End(Box<EndFlow>),
    Switch(Box<SwitchFlow>),
    Pass(Box<StreamPass<Snap>>),
}

impl Flowing {
    fn answer(&mut self, answer: Answer<Snap>, now: i64) -> Option<Step> {
        fn step<O>(p: Progress<O>) -> Option<Step> {
            match p {
                Progress::Step(s) => Some(s),
                Progress::Done(_) => None,
            }
        }
        match self {
            Flowing::Scale(f) => step(f.answer(answer, now)),
            Flowing::End(f) => step(f.answer(answer, now)),
            Flowing::Switch(f) => step(f.answer(answer, now)),
            Flowing::Pass(f) => step(Flow::<Snap>::answer(f.as_mut(), answer, now)),
        }
    }
}

/// One resharding flow on a replica, at its next step.
pub struct ReshardJob {
    flow: Flowing,
    next: Option<Step>,
    /// A group change in progress for the flow's [`Step::UpdateGroup`], at its next step.
    update: Option<(GroupUpdate, UpdateStep<Snap>)>,
}

fn first<O>(p: Progress<O>) -> Option<Step> {
    match p {
        Progress::Step(s) => Some(s),
        Progress::Done(_) => None,
    }
}

impl ReshardJob {
    /// The reconciler's pass over the stream.
    pub fn pass() -> Self {
        let (flow, p) = StreamPass::start(&SETTINGS);
        ReshardJob {
            flow: Flowing::Pass(Box::new(flow)),
            next: first(p),
            update: None,
        }
    }

    pub fn is_pass(&self) -> bool {
        matches!(self.flow, Flowing::Pass(_))
    }

    /// An operator's scale (its request checked: the group exists and is not suspected).
    pub fn scale(request: ScaleRequest, shard_count: u32) -> Self {
        let (flow, p) =
            ScaleFlow::start(PREFIX, request, vec![GROUP.into()], shard_count, &SETTINGS);
        ReshardJob {
            flow: Flowing::Scale(Box::new(flow)),
            next: first(p),
            update: None,
        }
    }

    /// An operator's rollback or force-complete of `id`, on the group as the replica just read it.
    pub fn end(group: Group, id: &str, end: MigrationState) -> Self {
        let (flow, p) = EndFlow::start(PREFIX, group, id, end, "sim");
        ReshardJob {
            flow: Flowing::End(Box::new(flow)),
            next: first(p),
            update: None,
        }
    }

    /// A producer's `quiesced` report that found the scale still waiting: switch if that was the last.
    pub fn quiesced(stream: rsc_group::replica::reshard::StreamSnapshot, now: i64) -> Option<Self> {
        let m = stream.record.active_migration.clone()?;
        let (flow, p) = SwitchFlow::start(stream, m, vec![GROUP.into()], &SETTINGS, now);
        Some(ReshardJob {
            flow: Flowing::Switch(Box::new(flow)),
            next: first(p),
            update: None,
        })
    }
}

impl Replica {
    /// Advances each resharding flow by a few steps, pausing (rarely) between two.
    pub fn run_jobs(&mut self, env: &mut Env) {
        let mut jobs = std::mem::take(&mut self.jobs);
        for job in &mut jobs {
            let budget = env.rng.range(1, 3);
            for _ in 0..budget {
                if env.now < self.paused_until || job.next.is_none() && job.update.is_none() {
                    break;
                }
                if self.pause_now(env) {
                    env.stats.reshard_pauses += 1;
                    break;
                }
                env.stats.reshard_steps += 1;
                self.advance(job, env);
            }
        }
        jobs.retain(|j| j.next.is_some() || j.update.is_some());
        // A crash while performing a step cleared the replica's jobs: keep it that way.
        if !self.is_down(env.now) {
            self.jobs.extend(jobs);
        }
    }

    /// Performs the job's next step and hands its answer to the flow (or to the group change in progress).
    fn advance(&mut self, job: &mut ReshardJob, env: &mut Env) {
        if let Some((mut update, step)) = job.update.take() {
            let next = match step {
                UpdateStep::Read => {
                    let snap = self.load(env);
                    update.on_read(Ok(snap), self.clock(env))
                }
                UpdateStep::Commit { base, transition } => {
                    let outcome =
                        env.store
                            .cas(base.revision, &transition, env.now, Writer::Operator);
                    self.observe(env);
                    match outcome {
                        CasOutcome::Written(revision) => {
                            let group = env.store.group.clone();
                            self.remember(group.clone(), revision);
                            update
                                .on_committed(CommitResult::Written, Some(Snap { group, revision }))
                        }
                        CasOutcome::Conflict => {
                            self.cache = None;
                            update.on_committed(CommitResult::Conflict, None)
                        }
                        CasOutcome::ConditionFailed { member } => {
                            self.cache = None;
                            update.on_committed(CommitResult::ConditionFailed { member }, None)
                        }
                    }
                }
                UpdateStep::Done(result) => {
                    job.next = job.flow.answer(Answer::Updated(result), self.clock(env));
                    return;
                }
            };
            job.update = Some((update, next));
            return;
        }
        let Some(step) = job.next.take() else {
            return;
        };
        if super::tracing() {
            eprintln!("t={} r{} reshard step {step:?}", env.now, self.index);
        }
        let answer = match step {
            Step::UpdateGroup { change, .. } => {
                job.update = Some(GroupUpdate::start(change, &TIMING));
                return;
            }
            step => self.perform(step, env),
        };
        job.next = job.flow.answer(answer, self.clock(env));
    }

    fn perform(&mut self, step: Step, env: &mut Env) -> Answer<Snap> {
        let store = &mut *env.store;
        match step {
            Step::ListGroups => Answer::Groups(Ok(vec![GROUP.into()])),
            Step::LoadStream => Answer::Stream(Ok(Some(store.stream.clone()))),
            Step::CreateStream(_) => Answer::Created(Ok(None)),
            Step::WriteStream { base, next } => {
                let written = store.write_stream(base, *next, env.now);
                self.observe(env);
                Answer::Written(Ok(written))
            }
            Step::LoadGroup(_) => Answer::Group(Ok(self.load(env))),
            Step::UpdateGroup { .. } => unreachable!("started as a group change"),
            Step::Provision { shards, .. } => {
                for s in shards {
                    store.shards.provision(s);
                }
                Answer::Provisioned(Ok(()))
            }
            Step::ExistingShards(shards) => {
                Answer::Existing(Ok(shards.filter(|s| store.shards.exists(*s)).collect()))
            }
            Step::ShardGroups(s) => Answer::ShardGroups(Ok(store.shards.groups(s))),
            Step::LastGeneratedId(s) => Answer::LastId(store.shards.last_id(s)),
            Step::PendingUpTo { shard, point, .. } => {
                Answer::Pending(store.shards.pending_up_to(shard, &point, 1))
            }
            Step::RaiseBoundaries(scale) => {
                let mut points = BTreeMap::new();
                for s in raised_shards(&scale) {
                    if let Some(p) = store.shards.raise(s, scale) {
                        points.insert(s, p);
                    }
                }
                Answer::Raised(points)
            }
            Step::RetireShards(shards) => {
                for s in shards {
                    store.shards.retire_if_drained(s);
                }
                Answer::Done
            }
            Step::ReadSightings => {
                Answer::Sightings(Ok(store.sightings.values().cloned().collect()))
            }
            Step::WatchAppends { .. } | Step::Report(_) => Answer::Done,
        }
    }
}
