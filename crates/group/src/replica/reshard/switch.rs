//! Activating a recorded scale and bringing every group in line with the stream record it leaves: what a
//! scale does after recording its migration, and what a producer's `quiesced` report does when it was the
//! last one the scale waited for. Its result is the stream record and, per group, the migration as that
//! group then has it (the scale's answer).

use super::activate::Activate;
use super::{Answer, Flow, Progress, ReshardError, Settings, Step, StreamSnapshot};
use crate::model::Migration;
use crate::replica::Snapshot;
use crate::reshard::sync::GroupChange;

/// The stream record after the switch (or as it stands, while producer quiesce still waits), and each
/// group's copy of the migration (the stream's, for a group that has not adopted it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switched {
    /// The stream record as it then stands.
    pub stream: StreamSnapshot,
    /// Each group's copy of the migration, in the order of the groups given.
    pub per_group: Vec<Migration>,
}

type Output = Result<Switched, ReshardError>;

#[derive(Debug)]
enum Phase {
    Activating(Box<Activate>),
    Syncing(Box<StreamSnapshot>),
    Done,
}

/// Activates `migration` and syncs every group.
#[derive(Debug)]
pub struct SwitchFlow {
    migration: Migration,
    groups: Vec<String>,
    per_group: Vec<Migration>,
    phase: Phase,
}

impl SwitchFlow {
    /// Starts activating `migration` (recorded on `stream`) for `groups`, the stream's live groups.
    pub fn start(
        stream: StreamSnapshot,
        migration: Migration,
        groups: Vec<String>,
        settings: &Settings,
        now_ms: i64,
    ) -> (Self, Progress<Output>) {
        let (activate, progress) =
            Activate::start(stream, migration.clone(), &groups, settings, now_ms);
        let mut flow = SwitchFlow {
            migration,
            groups,
            per_group: Vec::new(),
            phase: Phase::Done,
        };
        let progress = match progress {
            Progress::Step(step) => {
                flow.phase = Phase::Activating(Box::new(activate));
                Progress::Step(step)
            }
            Progress::Done(activated) => flow.activated(activated),
        };
        (flow, progress)
    }

    fn activated(&mut self, activated: Result<StreamSnapshot, ReshardError>) -> Progress<Output> {
        match activated {
            Err(e) => self.finish(Err(e)),
            Ok(stream) => self.sync_next(stream),
        }
    }

    /// Brings the next group in line, or is done.
    fn sync_next(&mut self, stream: StreamSnapshot) -> Progress<Output> {
        let Some(group) = self.groups.get(self.per_group.len()).cloned() else {
            let per_group = std::mem::take(&mut self.per_group);
            return self.finish(Ok(Switched { stream, per_group }));
        };
        let change = GroupChange::SyncToStream(Box::new(stream.record.clone()));
        self.phase = Phase::Syncing(Box::new(stream));
        Progress::Step(Step::UpdateGroup { group, change })
    }

    fn finish(&mut self, output: Output) -> Progress<Output> {
        self.phase = Phase::Done;
        Progress::Done(output)
    }
}

impl<S: Snapshot> Flow<S> for SwitchFlow {
    type Output = Output;

    fn answer(&mut self, answer: Answer<S>, now_ms: i64) -> Progress<Output> {
        match (std::mem::replace(&mut self.phase, Phase::Done), answer) {
            (Phase::Activating(mut activate), answer) => {
                match Flow::<S>::answer(activate.as_mut(), answer, now_ms) {
                    Progress::Step(step) => {
                        self.phase = Phase::Activating(activate);
                        Progress::Step(step)
                    }
                    Progress::Done(activated) => self.activated(activated),
                }
            }
            (Phase::Syncing(_), Answer::Updated(Err(e))) => self.finish(Err(e.into())),
            (Phase::Syncing(stream), Answer::Updated(Ok(c))) => {
                let stream = *stream;
                let id = &self.migration.resharding_id;
                let mine = c.group().migration(id).cloned();
                self.per_group
                    .push(mine.unwrap_or_else(|| self.migration.clone()));
                self.sync_next(stream)
            }
            _ => self.finish(Err(ReshardError::OutOfStep)),
        }
    }
}
