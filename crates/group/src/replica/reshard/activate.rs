//! Steps 2–3 of a scale: provision the target shards for every group, then switch routing (idempotent).
//!
//! The new shard streams and each group's Redis consumer group on them are created before routing can name
//! them (a failure leaves the migration PREPARING and routing unchanged; the same scale, or the reconciler,
//! resumes). A scale with producer quiesce waits, before it switches, until every producer seen within the
//! refresh window has quiesced for it, or its deadline passed (`quiesce::decide`); while it waits the flow
//! ends with the record unchanged, and the reconciler, a producer's report or the scale retried asks again.
//! The switch is one compare-and-set of the stream record (ACTIVE, the new shard count, the next routing
//! version, the quiesce's outcome); then the switch is guarded ([`Guard`]). A lost race reads the record
//! again and decides again, at most [`MAX_CAS_ATTEMPTS`] times.

use super::guard::Guard;
use super::{Answer, Event, Flow, Progress, ReshardError, Settings, Step, StreamSnapshot};
use crate::model::{Migration, MigrationState};
use crate::quiesce::{Decision, QuiesceOutcome, decide};
use crate::replica::MAX_CAS_ATTEMPTS;
use crate::reshard::record::{quiesce_to_decide, switched};

type Output = Result<StreamSnapshot, ReshardError>;

#[derive(Debug)]
enum Phase {
    Provisioning,
    Sightings,
    Switching {
        outcome: Option<QuiesceOutcome>,
    },
    Reloading,
    Guarding {
        guard: Box<Guard>,
        outcome: Option<QuiesceOutcome>,
    },
    /// A report is out; then done with this.
    Reported(Box<Output>),
    Done,
}

/// Provisions, waits for producer quiesce, switches routing and guards the switch of `migration`.
#[derive(Debug)]
pub struct Activate {
    stream: StreamSnapshot,
    migration: Migration,
    settings: Settings,
    attempts: usize,
    phase: Phase,
}

impl Activate {
    /// `groups`: every live group of the stream (each gets its Redis consumer group on the new shards).
    pub fn start(
        stream: StreamSnapshot,
        migration: Migration,
        groups: &[String],
        settings: &Settings,
        now_ms: i64,
    ) -> (Self, Progress<Output>) {
        let mut flow = Activate {
            stream,
            migration,
            settings: *settings,
            attempts: 0,
            phase: Phase::Done,
        };
        if flow
            .stream
            .record
            .active_migration
            .as_ref()
            .is_some_and(|m| m.state != MigrationState::Preparing)
        {
            let stream = flow.stream.clone();
            return (flow, Progress::Done(Ok(stream)));
        }
        if settings.provisioning_enabled && flow.migration.to_shard_count > 0 {
            flow.phase = Phase::Provisioning;
            let step = Step::Provision {
                groups: groups.to_vec(),
                shards: 0..flow.migration.to_shard_count,
            };
            return (flow, Progress::Step(step));
        }
        let progress = flow.gate(now_ms);
        (flow, progress)
    }

    /// The top of the switch loop: ask for the producers when a quiesce is undecided, else switch.
    fn gate(&mut self, now_ms: i64) -> Progress<Output> {
        if self.attempts == MAX_CAS_ATTEMPTS {
            self.phase = Phase::Done;
            return Progress::Done(Err(ReshardError::StreamKeptChanging));
        }
        self.attempts += 1;
        if quiesce_to_decide(&self.stream.record, &self.migration).is_some() {
            self.phase = Phase::Sightings;
            return Progress::Step(Step::ReadSightings);
        }
        self.switch(None, now_ms)
    }

    fn switch(&mut self, outcome: Option<QuiesceOutcome>, now_ms: i64) -> Progress<Output> {
        match switched(&self.stream.record, outcome.as_ref(), now_ms) {
            Err(e) => self.finish(Err(e.into())),
            Ok(None) => self.finish(Ok(self.stream.clone())),
            Ok(Some(next)) => {
                self.phase = Phase::Switching { outcome };
                Progress::Step(Step::WriteStream {
                    base: self.stream.revision,
                    next: Box::new(next),
                })
            }
        }
    }

    fn finish(&mut self, output: Output) -> Progress<Output> {
        self.phase = Phase::Done;
        Progress::Done(output)
    }

    /// After the guard: the quiesce's outcome reported (to audit and count), then done.
    fn guarded(
        &mut self,
        stream: StreamSnapshot,
        outcome: Option<QuiesceOutcome>,
    ) -> Progress<Output> {
        match outcome {
            Some(outcome) => {
                self.phase = Phase::Reported(Box::new(Ok(stream)));
                Progress::Step(Step::Report(Event::QuiesceSwitched {
                    migration: Box::new(self.migration.clone()),
                    outcome,
                }))
            }
            None => self.finish(Ok(stream)),
        }
    }
}

impl<S> Flow<S> for Activate {
    type Output = Output;

    fn answer(&mut self, answer: Answer<S>, now_ms: i64) -> Progress<Output> {
        match (std::mem::replace(&mut self.phase, Phase::Done), answer) {
            (Phase::Provisioning, Answer::Provisioned(Err(why))) => {
                self.finish(Err(ReshardError::Provisioning(why)))
            }
            (Phase::Provisioning, Answer::Provisioned(Ok(()))) => self.gate(now_ms),
            (Phase::Sightings, Answer::Sightings(Err(_))) => self.finish(Err(ReshardError::Store)),
            (Phase::Sightings, Answer::Sightings(Ok(sightings))) => {
                let Some(q) = quiesce_to_decide(&self.stream.record, &self.migration) else {
                    return self.switch(None, now_ms);
                };
                match decide(
                    q,
                    &sightings,
                    now_ms,
                    self.settings.producer_refresh_window_ms,
                ) {
                    Decision::Wait { pending } => {
                        self.phase = Phase::Reported(Box::new(Ok(self.stream.clone())));
                        Progress::Step(Step::Report(Event::QuiesceWaiting {
                            resharding_id: q.resharding_id.clone(),
                            pending,
                        }))
                    }
                    Decision::Switch(outcome) => self.switch(Some(outcome), now_ms),
                }
            }
            (Phase::Switching { .. }, Answer::Written(Err(_))) => {
                self.finish(Err(ReshardError::Store))
            }
            (Phase::Switching { outcome }, Answer::Written(Ok(Some(s)))) => {
                let (guard, progress) = Guard::start(s);
                match progress {
                    Progress::Step(step) => {
                        self.phase = Phase::Guarding {
                            guard: Box::new(guard),
                            outcome,
                        };
                        Progress::Step(step)
                    }
                    Progress::Done(s) => self.guarded(s, outcome),
                }
            }
            (Phase::Switching { .. }, Answer::Written(Ok(None))) => {
                self.phase = Phase::Reloading;
                Progress::Step(Step::LoadStream)
            }
            (Phase::Reloading, Answer::Stream(Err(_))) => self.finish(Err(ReshardError::Store)),
            (Phase::Reloading, Answer::Stream(Ok(None))) => {
                self.finish(Err(ReshardError::StreamVanished))
            }
            (Phase::Reloading, Answer::Stream(Ok(Some(s)))) => {
                self.stream = s;
                self.gate(now_ms)
            }
            (Phase::Guarding { mut guard, outcome }, answer) => {
                match Flow::<S>::answer(guard.as_mut(), answer, now_ms) {
                    Progress::Step(step) => {
                        self.phase = Phase::Guarding { guard, outcome };
                        Progress::Step(step)
                    }
                    Progress::Done(s) => self.guarded(s, outcome),
                }
            }
            (Phase::Reported(output), Answer::Done) => self.finish(*output),
            _ => self.finish(Err(ReshardError::OutOfStep)),
        }
    }
}
