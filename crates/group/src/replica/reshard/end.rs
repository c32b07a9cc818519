//! An operator's rollback or force-complete of a migration, once its request is checked: the stream record
//! read (or created), [`plan_end`] on the group as the shell read it, then the end filed on the stream
//! record by compare-and-set (a rollback also switches routing back, so every shard's routing boundary is
//! raised again to refuse producers holding the scaled routing), and every group brought in line. A lost
//! race reads the record again; once it no longer has the migration active, either another replica filed this
//! same end (nothing left to do) or the migration ended otherwise meanwhile (it completed: the end is refused as
//! it would be after the fact, [`ended_meanwhile`]).

use super::ensure::EnsureStream;
use super::{Answer, Event, Flow, Progress, ReshardError, Step, StreamSnapshot};
use crate::model::{Group, Migration, MigrationState};
use crate::replica::Snapshot;
use crate::reshard::end::{EndPlan, ended_meanwhile, plan_end};
use crate::reshard::record::{boundary_scale, ended};
use crate::reshard::sync::GroupChange;

/// What an end came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndOutcome {
    /// A repeated end: this is the migration as the group ended it; nothing was written.
    Repeat(Migration),
    /// Filed on the stream record (or found ended by another replica) and every group brought in line, or
    /// nothing was the stream's to end: answer with the migration as it now stands.
    Ended,
}

type Output = Result<EndOutcome, ReshardError>;

#[derive(Debug)]
enum Phase {
    Ensuring(EnsureStream),
    Writing,
    Reloading,
    Raising(StreamSnapshot),
    Listing(StreamSnapshot),
    Syncing {
        stream: StreamSnapshot,
        groups: Vec<String>,
    },
    Reported,
    Done,
}

/// One rollback (`end` ROLLED_BACK) or force-complete (FORCE_COMPLETED) of migration `id`.
#[derive(Debug)]
pub struct EndFlow {
    group: Group,
    id: String,
    end: MigrationState,
    reason: String,
    /// The stream's active migration being ended and the state it is filed in.
    ending: Option<(Migration, MigrationState)>,
    base: Option<StreamSnapshot>,
    phase: Phase,
}

impl EndFlow {
    /// `group`: the group the request names, as the shell read (and checked) it.
    pub fn start(
        stream_prefix: &str,
        group: Group,
        id: &str,
        end: MigrationState,
        reason: &str,
    ) -> (Self, Progress<Output>) {
        let (ensure, progress) = EnsureStream::start(stream_prefix, group.shard_count);
        let flow = EndFlow {
            group,
            id: id.to_owned(),
            end,
            reason: reason.to_owned(),
            ending: None,
            base: None,
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

    fn planned(&mut self, stream: StreamSnapshot, now_ms: i64) -> Progress<Output> {
        let active = stream.record.active_migration.as_ref();
        match plan_end(&self.group, active, &self.id, self.end) {
            Err(refusal) => self.finish(Err(refusal.into())),
            Ok(EndPlan::Repeat(m)) => self.finish(Ok(EndOutcome::Repeat(m))),
            Ok(EndPlan::NotActive) => self.finish(Ok(EndOutcome::Ended)),
            Ok(EndPlan::Proceed {
                active,
                final_state,
            }) => {
                self.ending = Some((active, final_state));
                self.base = Some(stream);
                self.write(now_ms)
            }
        }
    }

    /// One try at filing the end on the record in hand.
    fn write(&mut self, now_ms: i64) -> Progress<Output> {
        let (Some((active, final_state)), Some(base)) = (&self.ending, &self.base) else {
            return self.finish(Err(ReshardError::OutOfStep));
        };
        match ended(&base.record, active, *final_state, &self.reason, now_ms) {
            Err(e) => self.finish(Err(e.into())),
            Ok(next) => {
                let base = base.revision;
                self.phase = Phase::Writing;
                Progress::Step(Step::WriteStream {
                    base,
                    next: Box::new(next),
                })
            }
        }
    }

    /// Filed: a rollback raises the boundaries back; then every group is brought in line.
    fn filed(&mut self, stream: StreamSnapshot) -> Progress<Output> {
        match &self.ending {
            Some((active, MigrationState::RolledBack)) => {
                let back = boundary_scale(
                    &stream.record,
                    active.to_shard_count,
                    active.from_shard_count,
                );
                self.phase = Phase::Raising(stream);
                Progress::Step(Step::RaiseBoundaries(back))
            }
            _ => {
                self.phase = Phase::Listing(stream);
                Progress::Step(Step::ListGroups)
            }
        }
    }

    fn sync_next(&mut self, stream: StreamSnapshot, mut groups: Vec<String>) -> Progress<Output> {
        let Some(group) = groups.pop() else {
            return self.report();
        };
        let change = GroupChange::SyncToStream(Box::new(stream.record.clone()));
        self.phase = Phase::Syncing { stream, groups };
        Progress::Step(Step::UpdateGroup { group, change })
    }

    fn report(&mut self) -> Progress<Output> {
        let Some((active, final_state)) = &self.ending else {
            return self.finish(Err(ReshardError::OutOfStep));
        };
        let event = Event::EndedByOperator {
            resharding_id: active.resharding_id.clone(),
            state: *final_state,
        };
        self.phase = Phase::Reported;
        Progress::Step(Step::Report(event))
    }
}

impl<S: Snapshot> Flow<S> for EndFlow {
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
                    Progress::Done(Ok(stream)) => self.planned(stream, now_ms),
                }
            }
            (Phase::Writing, Answer::Written(Err(_))) => self.finish(Err(ReshardError::Store)),
            (Phase::Writing, Answer::Written(Ok(Some(s)))) => self.filed(s),
            (Phase::Writing, Answer::Written(Ok(None))) => {
                self.phase = Phase::Reloading;
                Progress::Step(Step::LoadStream)
            }
            (Phase::Reloading, Answer::Stream(Err(_))) => self.finish(Err(ReshardError::Store)),
            (Phase::Reloading, Answer::Stream(Ok(None))) => {
                self.finish(Err(ReshardError::StreamVanished))
            }
            (Phase::Reloading, Answer::Stream(Ok(Some(s)))) => {
                let Some((active, final_state)) = &self.ending else {
                    return self.finish(Err(ReshardError::OutOfStep));
                };
                let id = &active.resharding_id;
                let still = s
                    .record
                    .active_migration
                    .as_ref()
                    .is_some_and(|x| &x.resharding_id == id);
                let ended_as = s
                    .record
                    .history
                    .iter()
                    .rev()
                    .find(|m| &m.resharding_id == id)
                    .map(|m| m.state);
                match ended_as {
                    _ if still => {
                        self.base = Some(s);
                        self.write(now_ms)
                    }
                    // It ended otherwise meanwhile (it completed): this end did not happen, say so.
                    Some(state) if state != *final_state => {
                        let refusal = ended_meanwhile(id, self.end, state);
                        self.finish(Err(refusal.into()))
                    }
                    // Another replica filed this same end: nothing left for this one to write.
                    _ => {
                        self.base = Some(s);
                        self.report()
                    }
                }
            }
            (Phase::Raising(stream), Answer::Raised(_)) => {
                self.phase = Phase::Listing(stream);
                Progress::Step(Step::ListGroups)
            }
            (Phase::Listing(_), Answer::Groups(Err(_))) => self.finish(Err(ReshardError::Store)),
            (Phase::Listing(stream), Answer::Groups(Ok(mut groups))) => {
                groups.reverse();
                self.sync_next(stream, groups)
            }
            (Phase::Syncing { .. }, Answer::Updated(Err(e))) => self.finish(Err(e.into())),
            (Phase::Syncing { stream, groups }, Answer::Updated(Ok(_))) => {
                self.sync_next(stream, groups)
            }
            (Phase::Reported, Answer::Done) => self.finish(Ok(EndOutcome::Ended)),
            _ => self.finish(Err(ReshardError::OutOfStep)),
        }
    }
}
