//! `POST /coord/v1/streams/{p}/scale` once its request is checked: the stream record read (or created from
//! the groups' shard count), then by [`plan_scale`]: resume the active migration when it goes to the same
//! target, refuse while another is active, answer a no-op when nothing changes, or record a new migration
//! (PREPARING; a scale-out first checks that its new shard keys do not exist unless the coordinator made
//! them) and read the record again. Then [`SwitchFlow`]: provision, wait for producer quiesce, switch, guard,
//! bring every group in line. A replica that stops anywhere leaves the migration for the reconciler (or the
//! same scale, retried) to resume.

use super::ensure::EnsureStream;
use super::switch::{SwitchFlow, Switched};
use super::{Answer, Flow, Progress, ReshardError, Settings, Step, StreamSnapshot};
use crate::model::Migration;
use crate::replica::Snapshot;
use crate::reshard::record::{
    ScalePlan, ScaleRequest, foreign_keys_to_check, noop_migration, plan_scale, recorded,
};

/// What a scale came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScaleOutcome {
    /// The stream has the target count and nothing is active: this finished no-op migration is the answer.
    Noop(Migration),
    /// The migration (as the stream recorded it) and what [`SwitchFlow`] left.
    Scaled {
        /// The migration as the stream recorded it.
        migration: Box<Migration>,
        /// The stream record and each group's migration after the switch.
        switched: Box<Switched>,
    },
}

type Output = Result<ScaleOutcome, ReshardError>;

#[derive(Debug)]
enum Phase {
    Ensuring(EnsureStream),
    CheckingKeys,
    Recording,
    Reloading,
    Switching {
        migration: Box<Migration>,
        flow: Box<SwitchFlow>,
    },
    Done,
}

/// One scale of a stream to `request.target` shards.
#[derive(Debug)]
pub struct ScaleFlow {
    request: ScaleRequest,
    groups: Vec<String>,
    settings: Settings,
    stream: Option<StreamSnapshot>,
    phase: Phase,
}

impl ScaleFlow {
    /// `groups`: the stream's live groups (checked by the shell: they exist, none is suspected of a rollback
    /// or in a metadata-correction round); `shard_count`: the first one's, for a record created now.
    pub fn start(
        stream_prefix: &str,
        request: ScaleRequest,
        groups: Vec<String>,
        shard_count: u32,
        settings: &Settings,
    ) -> (Self, Progress<Output>) {
        let (ensure, progress) = EnsureStream::start(stream_prefix, shard_count);
        let flow = ScaleFlow {
            request,
            groups,
            settings: *settings,
            stream: None,
            phase: Phase::Ensuring(ensure),
        };
        match progress {
            Progress::Step(step) => (flow, Progress::Step(step)),
            Progress::Done(_) => (flow, Progress::Done(Err(ReshardError::OutOfStep))),
        }
    }

    fn finish(&mut self, output: Output) -> Progress<Output> {
        self.phase = Phase::Done;
        Progress::Done(output)
    }

    /// What the record in hand says: resume, refuse, answer a no-op, or record the scale.
    fn plan(&mut self, stream: StreamSnapshot, now_ms: i64) -> Progress<Output> {
        let plan = plan_scale(&stream.record, self.request.target);
        match plan {
            ScalePlan::Resume(m) => {
                let (flow, progress) = SwitchFlow::start(
                    stream,
                    m.clone(),
                    self.groups.clone(),
                    &self.settings,
                    now_ms,
                );
                let migration = Box::new(m);
                match progress {
                    Progress::Step(step) => {
                        self.phase = Phase::Switching {
                            migration,
                            flow: Box::new(flow),
                        };
                        Progress::Step(step)
                    }
                    Progress::Done(switched) => self.switched(migration, switched),
                }
            }
            ScalePlan::InProgress(m) => self.finish(Err(ReshardError::InProgress(Box::new(m)))),
            ScalePlan::Noop => {
                let r = &self.request;
                let noop = noop_migration(r.target, &r.requested_by, &r.reason, now_ms);
                self.finish(Ok(ScaleOutcome::Noop(noop)))
            }
            ScalePlan::Record => {
                let check = foreign_keys_to_check(
                    &stream.record,
                    self.request.target,
                    self.settings.provisioning_enabled,
                );
                self.stream = Some(stream);
                match check {
                    Some(shards) => {
                        self.phase = Phase::CheckingKeys;
                        Progress::Step(Step::ExistingShards(shards))
                    }
                    None => self.record(now_ms),
                }
            }
        }
    }

    fn record(&mut self, now_ms: i64) -> Progress<Output> {
        let Some(stream) = &self.stream else {
            return self.finish(Err(ReshardError::OutOfStep));
        };
        let next = recorded(&stream.record, &self.request, now_ms);
        let base = stream.revision;
        self.phase = Phase::Recording;
        Progress::Step(Step::WriteStream {
            base,
            next: Box::new(next),
        })
    }

    fn switched(
        &mut self,
        migration: Box<Migration>,
        switched: Result<Switched, ReshardError>,
    ) -> Progress<Output> {
        let outcome = switched.map(|switched| ScaleOutcome::Scaled {
            migration,
            switched: Box::new(switched),
        });
        self.finish(outcome)
    }
}

impl<S: Snapshot> Flow<S> for ScaleFlow {
    type Output = Output;

    fn answer(&mut self, answer: Answer<S>, now_ms: i64) -> Progress<Output> {
        match (std::mem::replace(&mut self.phase, Phase::Done), answer) {
            (Phase::Ensuring(mut ensure), answer) => {
                match Flow::<S>::answer(&mut ensure, answer, now_ms) {
                    Progress::Step(step) => {
                        self.phase = Phase::Ensuring(ensure);
                        Progress::Step(step)
                    }
                    Progress::Done(Err(e)) => self.finish(Err(e)),
                    Progress::Done(Ok(stream)) => self.plan(stream, now_ms),
                }
            }
            (Phase::CheckingKeys, Answer::Existing(Err(_))) => {
                self.finish(Err(ReshardError::Store))
            }
            (Phase::CheckingKeys, Answer::Existing(Ok(found))) if !found.is_empty() => {
                self.finish(Err(ReshardError::ForeignShardKeys(found)))
            }
            (Phase::CheckingKeys, Answer::Existing(Ok(_))) => self.record(now_ms),
            (Phase::Recording, Answer::Written(Err(_))) => self.finish(Err(ReshardError::Store)),
            (Phase::Recording, Answer::Written(Ok(Some(s)))) => self.plan(s, now_ms),
            (Phase::Recording, Answer::Written(Ok(None))) => {
                self.phase = Phase::Reloading;
                Progress::Step(Step::LoadStream)
            }
            (Phase::Reloading, Answer::Stream(Err(_))) => self.finish(Err(ReshardError::Store)),
            (Phase::Reloading, Answer::Stream(Ok(None))) => {
                self.finish(Err(ReshardError::StreamVanished))
            }
            (Phase::Reloading, Answer::Stream(Ok(Some(s)))) => self.plan(s, now_ms),
            (
                Phase::Switching {
                    migration,
                    mut flow,
                },
                answer,
            ) => match Flow::<S>::answer(flow.as_mut(), answer, now_ms) {
                Progress::Step(step) => {
                    self.phase = Phase::Switching { migration, flow };
                    Progress::Step(step)
                }
                Progress::Done(switched) => self.switched(migration, switched),
            },
            _ => self.finish(Err(ReshardError::OutOfStep)),
        }
    }
}
