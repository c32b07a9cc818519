//! Guarding a switch: raise the routing boundary of every shard of the stream's active migration, old and
//! new, to the switch's routing version (idempotent), and on an ordered stream whose scale has children
//! record the old shards' switch points on the migration once every one is known (compare-and-set, kept as
//! they are when recorded already; at most [`MAX_CAS_ATTEMPTS`] tries). Groups adopt an ordered switch only
//! once its switch points are recorded. Best effort: the reconciler guards the switch again on every pass
//! while the migration runs, so a replica that stopped between the switch and the raise leaves no shard
//! unguarded and no group waiting.

use super::{Answer, Event, Flow, Progress, Step, StreamSnapshot};
use crate::replica::MAX_CAS_ATTEMPTS;
use crate::reshard::record::{boundary_scale, switch_points_to_record, with_switch_points};
use std::collections::BTreeMap;

#[derive(Debug)]
enum Phase {
    Raising,
    Recording {
        id: String,
        points: BTreeMap<u32, String>,
        attempts: usize,
    },
    /// The record as it then stands, to return once the report is taken.
    Reported(Box<StreamSnapshot>),
    Done,
}

/// Raises the boundaries of a switch and records its switch points; its result is the stream record as it
/// then stands.
#[derive(Debug)]
pub struct Guard {
    stream: StreamSnapshot,
    phase: Phase,
}

impl Guard {
    /// Starts guarding the switch of `stream`'s active migration; with none, it is done at once.
    pub fn start(stream: StreamSnapshot) -> (Self, Progress<StreamSnapshot>) {
        let Some(m) = stream.record.active_migration.as_ref() else {
            return (
                Guard {
                    stream: stream.clone(),
                    phase: Phase::Done,
                },
                Progress::Done(stream),
            );
        };
        let scale = boundary_scale(&stream.record, m.from_shard_count, m.to_shard_count);
        let guard = Guard {
            stream,
            phase: Phase::Raising,
        };
        (guard, Progress::Step(Step::RaiseBoundaries(scale)))
    }

    fn done(&mut self) -> Progress<StreamSnapshot> {
        self.phase = Phase::Done;
        Progress::Done(self.stream.clone())
    }

    /// One try at recording the points on the record in hand.
    fn record(
        &mut self,
        id: String,
        points: BTreeMap<u32, String>,
        attempts: usize,
    ) -> Progress<StreamSnapshot> {
        let Some(next) = with_switch_points(&self.stream.record, &id, &points) else {
            return self.done();
        };
        let base = self.stream.revision;
        self.phase = Phase::Recording {
            id,
            points,
            attempts,
        };
        Progress::Step(Step::WriteStream {
            base,
            next: Box::new(next),
        })
    }
}

impl<S> Flow<S> for Guard {
    type Output = StreamSnapshot;

    fn answer(&mut self, answer: Answer<S>, _now_ms: i64) -> Progress<StreamSnapshot> {
        match (std::mem::replace(&mut self.phase, Phase::Done), answer) {
            (Phase::Raising, Answer::Raised(raised)) => {
                let Some(points) = switch_points_to_record(&self.stream.record, &raised) else {
                    return self.done();
                };
                let Some(id) = self
                    .stream
                    .record
                    .active_migration
                    .as_ref()
                    .map(|m| m.resharding_id.clone())
                else {
                    return self.done();
                };
                self.record(id, points, 1)
            }
            (Phase::Recording { id, points, .. }, Answer::Written(Ok(Some(s)))) => {
                self.stream = s.clone();
                self.phase = Phase::Reported(Box::new(s));
                Progress::Step(Step::Report(Event::SwitchPointsRecorded {
                    resharding_id: id,
                    shards: points.len(),
                }))
            }
            (Phase::Recording { id, .. }, Answer::Written(Err(_))) => {
                self.phase = Phase::Reported(Box::new(self.stream.clone()));
                Progress::Step(Step::Report(Event::SwitchPointsNotRecorded {
                    resharding_id: id,
                }))
            }
            (
                Phase::Recording {
                    id,
                    points,
                    attempts,
                },
                Answer::Written(Ok(None)),
            ) => {
                self.phase = Phase::Recording {
                    id,
                    points,
                    attempts,
                };
                Progress::Step(Step::LoadStream)
            }
            (
                Phase::Recording {
                    id,
                    points,
                    attempts,
                },
                Answer::Stream(Ok(Some(s))),
            ) => {
                self.stream = s;
                if attempts >= MAX_CAS_ATTEMPTS {
                    return self.done();
                }
                self.record(id, points, attempts + 1)
            }
            (Phase::Reported(s), Answer::Done) => {
                self.stream = *s;
                self.done()
            }
            _ => self.done(),
        }
    }
}
