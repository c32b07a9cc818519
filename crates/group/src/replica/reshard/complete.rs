//! Completing a stream's migration once every group is done with it: the stream record's migration filed
//! as DEPRECATED (compare-and-set, at most [`MAX_CAS_ATTEMPTS`] tries; nothing to do once it is no longer
//! active), then, for a scale-in when the coordinator retires removed shards, the drained shard streams
//! deleted (each only if every consumer group on it read everything) and the record made to count as its
//! own only the keys still there ([`Forget`]).

use super::{Answer, Event, Flow, Progress, Settings, Step};
use crate::model::Migration;
use crate::replica::MAX_CAS_ATTEMPTS;
use crate::reshard::record::{completed, forget_retired, retired_keys_to_check};
use std::ops::Range;

#[derive(Debug)]
enum Phase {
    Loading,
    Writing,
    Retiring,
    Forgetting(Forget),
    Reported,
    Done,
}

/// Completes the stream's migration `active`.
#[derive(Debug)]
pub struct Complete {
    active: Migration,
    settings: Settings,
    attempts: usize,
    phase: Phase,
}

impl Complete {
    /// Starts completing `active` (the stream's active migration as the pass read it); the first step loads
    /// the stream record.
    pub fn start(active: Migration, settings: &Settings) -> (Self, Progress<()>) {
        let flow = Complete {
            active,
            settings: *settings,
            attempts: 1,
            phase: Phase::Loading,
        };
        (flow, Progress::Step(Step::LoadStream))
    }

    fn again(&mut self) -> Progress<()> {
        if self.attempts >= MAX_CAS_ATTEMPTS {
            return self.finish();
        }
        self.attempts += 1;
        self.phase = Phase::Loading;
        Progress::Step(Step::LoadStream)
    }

    fn finish(&mut self) -> Progress<()> {
        self.phase = Phase::Done;
        Progress::Done(())
    }

    fn report(&mut self) -> Progress<()> {
        self.phase = Phase::Reported;
        Progress::Step(Step::Report(Event::MigrationComplete {
            resharding_id: self.active.resharding_id.clone(),
        }))
    }

    fn forget(&mut self) -> Progress<()> {
        let (forget, progress) = Forget::start();
        self.phase = Phase::Forgetting(forget);
        progress
    }
}

impl<S> Flow<S> for Complete {
    type Output = ();

    fn answer(&mut self, answer: Answer<S>, now_ms: i64) -> Progress<()> {
        match (std::mem::replace(&mut self.phase, Phase::Done), answer) {
            (Phase::Loading, Answer::Stream(Ok(Some(base)))) => {
                match completed(&base.record, &self.active.resharding_id, now_ms) {
                    None => self.finish(),
                    Some(next) => {
                        self.phase = Phase::Writing;
                        Progress::Step(Step::WriteStream {
                            base: base.revision,
                            next: Box::new(next),
                        })
                    }
                }
            }
            (Phase::Writing, Answer::Written(Ok(Some(_)))) => {
                if self.settings.retire_removed_shards && self.active.is_scale_in() {
                    let removed = self.active.to_shard_count..self.active.from_shard_count;
                    self.phase = Phase::Retiring;
                    Progress::Step(Step::RetireShards(removed))
                } else {
                    self.report()
                }
            }
            (Phase::Writing, Answer::Written(_)) => self.again(),
            (Phase::Retiring, Answer::Done) => self.forget(),
            (Phase::Forgetting(mut forget), answer) => {
                match Flow::<S>::answer(&mut forget, answer, now_ms) {
                    Progress::Step(step) => {
                        self.phase = Phase::Forgetting(forget);
                        Progress::Step(step)
                    }
                    Progress::Done(()) => self.report(),
                }
            }
            (Phase::Reported, Answer::Done) => self.finish(),
            _ => self.finish(),
        }
    }
}

#[derive(Debug)]
enum ForgetPhase {
    Loading,
    Checking {
        record: Box<crate::stream::StreamRecord>,
        revision: u64,
        checked: Range<u32>,
    },
    Writing,
    Done,
}

/// After removed shards were retired: the record stops counting keys that no longer exist as its own (at
/// most [`MAX_CAS_ATTEMPTS`] tries; any failure leaves it as it is).
#[derive(Debug)]
pub struct Forget {
    attempts: usize,
    phase: ForgetPhase,
}

impl Forget {
    /// Starts; the first step loads the stream record.
    pub fn start() -> (Self, Progress<()>) {
        let flow = Forget {
            attempts: 1,
            phase: ForgetPhase::Loading,
        };
        (flow, Progress::Step(Step::LoadStream))
    }

    fn finish(&mut self) -> Progress<()> {
        self.phase = ForgetPhase::Done;
        Progress::Done(())
    }
}

impl<S> Flow<S> for Forget {
    type Output = ();

    fn answer(&mut self, answer: Answer<S>, _now_ms: i64) -> Progress<()> {
        match (
            std::mem::replace(&mut self.phase, ForgetPhase::Done),
            answer,
        ) {
            (ForgetPhase::Loading, Answer::Stream(Ok(Some(base)))) => {
                let Some(checked) = retired_keys_to_check(&base.record) else {
                    return self.finish();
                };
                let step = Step::ExistingShards(checked.clone());
                self.phase = ForgetPhase::Checking {
                    record: Box::new(base.record),
                    revision: base.revision,
                    checked,
                };
                Progress::Step(step)
            }
            (
                ForgetPhase::Checking {
                    record,
                    revision,
                    checked,
                },
                Answer::Existing(Ok(left)),
            ) => match forget_retired(&record, &checked, &left) {
                None => self.finish(),
                Some(next) => {
                    self.phase = ForgetPhase::Writing;
                    Progress::Step(Step::WriteStream {
                        base: revision,
                        next: Box::new(next),
                    })
                }
            },
            (ForgetPhase::Writing, Answer::Written(Ok(Some(_)))) => self.finish(),
            (ForgetPhase::Writing, Answer::Written(_)) if self.attempts < MAX_CAS_ATTEMPTS => {
                self.attempts += 1;
                self.phase = ForgetPhase::Loading;
                Progress::Step(Step::LoadStream)
            }
            _ => self.finish(),
        }
    }
}
