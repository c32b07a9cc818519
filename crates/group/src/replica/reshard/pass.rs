//! The reconciler's pass over one stream: resume a PREPARING scale ([`Activate`]); guard a switched
//! migration again ([`Guard`]: raise the boundaries, record an ordered switch's switch points) and publish
//! its old shards' plain appends after the switch; then for each group: bring it in line with the stream
//! record, let its removed shards that Redis shows drained leave its assignment, open the gates whose parents
//! Redis shows consumed up to their switch points; and once every group is done with the stream's migration,
//! complete it ([`Complete`]). Every write is a compare-and-set and every step idempotent, so passes of
//! several replicas, or a pass that stops anywhere, leave nothing half done that the next pass does not
//! finish.

use super::activate::Activate;
use super::complete::Complete;
use super::evidence::{DrainEvidence, ParentEvidence};
use super::guard::Guard;
use super::{Answer, Event, Flow, Progress, ReshardError, Settings, Step, StreamSnapshot};
use crate::model::{Migration, MigrationState};
use crate::replica::Snapshot;
use crate::reshard::record::watched_migration;
use crate::reshard::sync::GroupChange;

/// How long after a migration ended its old shards' plain appends are still watched (the gauge): stale plain
/// clients may still append to an old shard.
pub const WATCH_AFTER_END_MS: i64 = 10 * 60 * 1000;

#[derive(Debug)]
enum Phase<S> {
    Listing,
    Loading,
    Activating(Box<Activate>),
    ResumeFailed,
    Guarding(Box<Guard>),
    Watching,
    /// The group `groups[index]` is being read or brought in line.
    Syncing,
    Draining(DrainEvidence, S),
    Releasing(S),
    Parents(ParentEvidence, S),
    Opening(S),
    Completing(Complete),
    Done,
}

/// One reconciler pass over one stream.
#[derive(Debug)]
pub struct StreamPass<S> {
    settings: Settings,
    groups: Vec<String>,
    index: usize,
    stream: Option<StreamSnapshot>,
    /// The stream's active migration as the pass first read it.
    active: Option<Migration>,
    all_done: bool,
    phase: Phase<S>,
}

impl<S: Snapshot> StreamPass<S> {
    /// Starts a pass; the first step lists the stream's live groups.
    pub fn start(settings: &Settings) -> (Self, Progress<()>) {
        let pass = StreamPass {
            settings: *settings,
            groups: Vec::new(),
            index: 0,
            stream: None,
            active: None,
            all_done: true,
            phase: Phase::Listing,
        };
        (pass, Progress::Step(Step::ListGroups))
    }

    fn finish(&mut self) -> Progress<()> {
        self.phase = Phase::Done;
        Progress::Done(())
    }

    fn loaded(&mut self, stream: Option<StreamSnapshot>, now_ms: i64) -> Progress<()> {
        self.active = stream
            .as_ref()
            .and_then(|s| s.record.active_migration.clone());
        self.stream = stream;
        match (&self.stream, &self.active) {
            (Some(s), Some(a)) if a.state == MigrationState::Preparing => {
                let (activate, progress) =
                    Activate::start(s.clone(), a.clone(), &self.groups, &self.settings, now_ms);
                match progress {
                    Progress::Step(step) => {
                        self.phase = Phase::Activating(Box::new(activate));
                        Progress::Step(step)
                    }
                    Progress::Done(activated) => self.activated(activated, now_ms),
                }
            }
            _ => self.watch(now_ms),
        }
    }

    fn activated(
        &mut self,
        activated: Result<StreamSnapshot, ReshardError>,
        now_ms: i64,
    ) -> Progress<()> {
        match activated {
            Ok(s) => {
                self.stream = Some(s);
                self.watch(now_ms)
            }
            Err(e) => {
                self.phase = Phase::ResumeFailed;
                Progress::Step(Step::Report(Event::ResumeFailed(e)))
            }
        }
    }

    /// Guards a switched migration again, then publishes the watched migration's plain appends.
    fn watch(&mut self, now_ms: i64) -> Progress<()> {
        let Some(stream) = self.stream.clone() else {
            return self.sync_next(now_ms);
        };
        match &stream.record.active_migration {
            Some(m) if m.state == MigrationState::Preparing => self.sync_next(now_ms),
            Some(_) => {
                let (guard, progress) = Guard::start(stream);
                match progress {
                    Progress::Step(step) => {
                        self.phase = Phase::Guarding(Box::new(guard));
                        Progress::Step(step)
                    }
                    Progress::Done(s) => self.guarded(s, now_ms),
                }
            }
            None => self.guarded(stream, now_ms),
        }
    }

    fn guarded(&mut self, stream: StreamSnapshot, now_ms: i64) -> Progress<()> {
        let watched = watched_migration(&stream.record, now_ms, WATCH_AFTER_END_MS)
            .map(|m| m.from_shard_count);
        self.stream = Some(stream);
        match watched {
            Some(old_shards) => {
                self.phase = Phase::Watching;
                Progress::Step(Step::WatchAppends { old_shards })
            }
            None => self.sync_next(now_ms),
        }
    }

    /// The next group: brought in line with the stream record (read, when there is none); or, after the
    /// last, the migration completed when every group is done with it.
    fn sync_next(&mut self, _now_ms: i64) -> Progress<()> {
        let Some(group) = self.groups.get(self.index).cloned() else {
            return self.complete();
        };
        self.phase = Phase::Syncing;
        match &self.stream {
            Some(s) => Progress::Step(Step::UpdateGroup {
                group,
                change: GroupChange::SyncToStream(Box::new(s.record.clone())),
            }),
            None => Progress::Step(Step::LoadGroup(group)),
        }
    }

    fn group_done(&mut self, c: Option<S>, now_ms: i64) -> Progress<()> {
        match (&self.active, c) {
            (_, None) => self.all_done = false,
            (Some(a), Some(c)) => {
                self.all_done &= c
                    .group()
                    .migration(&a.resharding_id)
                    .is_some_and(|m| m.state.is_terminal());
            }
            (None, Some(_)) => {}
        }
        self.index += 1;
        self.sync_next(now_ms)
    }

    /// The group in hand: drain evidence for its removed shards first.
    fn drain(&mut self, c: S, now_ms: i64) -> Progress<()> {
        if c.group().draining_shards.is_empty() {
            return self.parents(c, now_ms);
        }
        let (evidence, progress) =
            DrainEvidence::start(c.group(), self.settings.drain_grace_ms, now_ms);
        match progress {
            Progress::Step(step) => {
                self.phase = Phase::Draining(evidence, c);
                Progress::Step(step)
            }
            Progress::Done(drained) => self.release(c, drained, now_ms),
        }
    }

    fn release(&mut self, c: S, drained: crate::model::ShardSet, now_ms: i64) -> Progress<()> {
        if drained.is_empty() {
            return self.parents(c, now_ms);
        }
        let group = self.groups[self.index].clone();
        self.phase = Phase::Releasing(c);
        Progress::Step(Step::UpdateGroup {
            group,
            change: GroupChange::ReleaseDrained(drained),
        })
    }

    /// Then evidence for the parents its gates wait for.
    fn parents(&mut self, c: S, now_ms: i64) -> Progress<()> {
        if c.group().ordering_gates.is_empty() {
            return self.group_done(Some(c), now_ms);
        }
        let (evidence, progress) =
            ParentEvidence::start(c.group(), self.settings.drain_grace_ms, now_ms);
        match progress {
            Progress::Step(step) => {
                self.phase = Phase::Parents(evidence, c);
                Progress::Step(step)
            }
            Progress::Done(drained) => self.open(c, drained, now_ms),
        }
    }

    /// Opens the gates of the migration the evidence was read for (`c`, the group as read before it): the
    /// group may have ended it and adopted another meanwhile, which the write must not take the evidence for.
    fn open(&mut self, c: S, drained: crate::model::ShardSet, now_ms: i64) -> Progress<()> {
        let resharding_id = c.group().active_migration_id.clone();
        let Some(resharding_id) = resharding_id.filter(|_| !drained.is_empty()) else {
            return self.group_done(Some(c), now_ms);
        };
        let group = self.groups[self.index].clone();
        self.phase = Phase::Opening(c);
        Progress::Step(Step::UpdateGroup {
            group,
            change: GroupChange::OpenGates {
                resharding_id,
                drained,
            },
        })
    }

    fn complete(&mut self) -> Progress<()> {
        match &self.active {
            Some(a) if a.state != MigrationState::Preparing && self.all_done => {
                let (complete, progress) = Complete::start(a.clone(), &self.settings);
                self.phase = Phase::Completing(complete);
                progress
            }
            _ => self.finish(),
        }
    }
}

impl<S: Snapshot> Flow<S> for StreamPass<S> {
    type Output = ();

    fn answer(&mut self, answer: Answer<S>, now_ms: i64) -> Progress<()> {
        match (std::mem::replace(&mut self.phase, Phase::Done), answer) {
            (Phase::Listing, Answer::Groups(Ok(groups))) => {
                self.groups = groups;
                self.phase = Phase::Loading;
                Progress::Step(Step::LoadStream)
            }
            (Phase::Loading, Answer::Stream(Ok(stream))) => self.loaded(stream, now_ms),
            (Phase::Activating(mut activate), answer) => {
                match Flow::<S>::answer(activate.as_mut(), answer, now_ms) {
                    Progress::Step(step) => {
                        self.phase = Phase::Activating(activate);
                        Progress::Step(step)
                    }
                    Progress::Done(activated) => self.activated(activated, now_ms),
                }
            }
            (Phase::Guarding(mut guard), answer) => {
                match Flow::<S>::answer(guard.as_mut(), answer, now_ms) {
                    Progress::Step(step) => {
                        self.phase = Phase::Guarding(guard);
                        Progress::Step(step)
                    }
                    Progress::Done(s) => self.guarded(s, now_ms),
                }
            }
            (Phase::Watching, Answer::Done) => self.sync_next(now_ms),
            (Phase::Syncing, Answer::Updated(Ok(c)) | Answer::Group(Ok(c))) => {
                self.drain(c, now_ms)
            }
            (Phase::Syncing, Answer::Updated(Err(_)) | Answer::Group(Err(_))) => {
                self.group_done(None, now_ms)
            }
            (Phase::Draining(mut evidence, c), answer) => {
                match Flow::<S>::answer(&mut evidence, answer, now_ms) {
                    Progress::Step(step) => {
                        self.phase = Phase::Draining(evidence, c);
                        Progress::Step(step)
                    }
                    Progress::Done(drained) => self.release(c, drained, now_ms),
                }
            }
            (Phase::Releasing(c), Answer::Updated(updated)) => {
                self.parents(updated.unwrap_or(c), now_ms)
            }
            (Phase::Parents(mut evidence, c), answer) => {
                match Flow::<S>::answer(&mut evidence, answer, now_ms) {
                    Progress::Step(step) => {
                        self.phase = Phase::Parents(evidence, c);
                        Progress::Step(step)
                    }
                    Progress::Done(drained) => self.open(c, drained, now_ms),
                }
            }
            (Phase::Opening(c), Answer::Updated(updated)) => {
                self.group_done(Some(updated.unwrap_or(c)), now_ms)
            }
            (Phase::Completing(mut complete), answer) => {
                match Flow::<S>::answer(&mut complete, answer, now_ms) {
                    Progress::Step(step) => {
                        self.phase = Phase::Completing(complete);
                        Progress::Step(step)
                    }
                    Progress::Done(()) => self.finish(),
                }
            }
            // A failed read of the index or the record ends the pass (the next one tries again), as does a
            // scale that could not be resumed (once reported).
            _ => self.finish(),
        }
    }
}
