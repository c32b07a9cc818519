//! Collecting drain evidence for one group, one shard at a time, with the rules of
//! [`crate::reshard::evidence`]: [`DrainEvidence`] for its removed (draining) shards, [`ParentEvidence`] for
//! the parents its gates wait for. A read that fails leaves that shard out (no evidence); the next pass looks
//! again. Both are ended by a set of shards, possibly empty.

use super::{Answer, Flow, Progress, Step};
use crate::model::{Group, ShardSet};
use crate::reshard::evidence::{
    ConsumerGroupInfo, Look, drain_evidence_from_ms, parent, parent_delivered, parent_pending,
    removed_shard, removed_shard_delivered,
};
use std::collections::VecDeque;

/// The draining shards of a group that Redis shows drained (every consumer group on them read and
/// acknowledged everything, or the stream is gone), once the drain grace has passed.
#[derive(Debug)]
pub struct DrainEvidence {
    todo: VecDeque<u32>,
    /// The shard being looked at and its consumer groups, while its last id is read.
    looking: Option<(u32, Vec<ConsumerGroupInfo>)>,
    drained: ShardSet,
}

impl DrainEvidence {
    /// `grace_ms`: how long after routing last changed evidence starts to count.
    pub fn start(g: &Group, grace_ms: i64, now_ms: i64) -> (Self, Progress<ShardSet>) {
        let mut flow = DrainEvidence {
            todo: VecDeque::new(),
            looking: None,
            drained: ShardSet::new(),
        };
        if now_ms >= drain_evidence_from_ms(g, grace_ms) {
            flow.todo = g.draining_shards.iter().copied().collect();
        }
        let progress = flow.next();
        (flow, progress)
    }

    fn next(&mut self) -> Progress<ShardSet> {
        self.looking = None;
        match self.todo.pop_front() {
            Some(s) => {
                self.looking = Some((s, Vec::new()));
                Progress::Step(Step::ShardGroups(s))
            }
            None => Progress::Done(std::mem::take(&mut self.drained)),
        }
    }
}

impl<S> Flow<S> for DrainEvidence {
    type Output = ShardSet;

    fn answer(&mut self, answer: Answer<S>, _now_ms: i64) -> Progress<ShardSet> {
        let Some((shard, groups)) = self.looking.take() else {
            return Progress::Done(std::mem::take(&mut self.drained));
        };
        match answer {
            Answer::ShardGroups(Ok(read)) => match removed_shard(read.as_deref()) {
                Look::Drained => {
                    self.drained.insert(shard);
                    self.next()
                }
                Look::LastIdNeeded => {
                    self.looking = Some((shard, read.unwrap_or_default()));
                    Progress::Step(Step::LastGeneratedId(shard))
                }
                Look::NotDrained | Look::PendingNeeded => self.next(),
            },
            Answer::LastId(last) => {
                if removed_shard_delivered(&groups, last) {
                    self.drained.insert(shard);
                }
                self.next()
            }
            _ => self.next(),
        }
    }
}

/// The parents a group's gates wait for whose pre-switch records the group's Redis consumer group has
/// consumed (up to the parent's switch point; a parent without one, only once the drain grace passed and
/// the whole stream is consumed). A parent whose stream is gone holds nothing.
#[derive(Debug)]
pub struct ParentEvidence {
    group: String,
    todo: VecDeque<(u32, Option<String>)>,
    looking: Option<(u32, Option<String>, Vec<ConsumerGroupInfo>)>,
    drained: ShardSet,
}

impl ParentEvidence {
    /// Starts looking at the parents `g`'s gates wait for; `grace_ms`: how long after routing last changed
    /// evidence starts to count.
    pub fn start(g: &Group, grace_ms: i64, now_ms: i64) -> (Self, Progress<ShardSet>) {
        let mut flow = ParentEvidence {
            group: g.consumer_group.clone(),
            todo: VecDeque::new(),
            looking: None,
            drained: ShardSet::new(),
        };
        if !g.ordering_gates.is_empty() {
            let grace_passed = now_ms >= drain_evidence_from_ms(g, grace_ms);
            flow.todo = g
                .waited_parents()
                .into_iter()
                .map(|p| (p, g.ordering_switch_points.get(&p).cloned()))
                .filter(|(_, point)| point.is_some() || grace_passed)
                .collect();
        }
        let progress = flow.next();
        (flow, progress)
    }

    fn next(&mut self) -> Progress<ShardSet> {
        self.looking = None;
        match self.todo.pop_front() {
            Some((p, point)) => {
                self.looking = Some((p, point, Vec::new()));
                Progress::Step(Step::ShardGroups(p))
            }
            None => Progress::Done(std::mem::take(&mut self.drained)),
        }
    }

    fn consumed(&mut self, shard: u32) -> Progress<ShardSet> {
        self.drained.insert(shard);
        self.next()
    }
}

impl<S> Flow<S> for ParentEvidence {
    type Output = ShardSet;

    fn answer(&mut self, answer: Answer<S>, _now_ms: i64) -> Progress<ShardSet> {
        let Some((shard, point, groups)) = self.looking.take() else {
            return Progress::Done(std::mem::take(&mut self.drained));
        };
        match answer {
            Answer::ShardGroups(Ok(read)) => {
                match parent(read.as_deref(), &self.group, point.as_deref()) {
                    Look::Drained => self.consumed(shard),
                    Look::NotDrained => self.next(),
                    Look::PendingNeeded => {
                        let Some(point) = point else {
                            return self.next();
                        };
                        let step = Step::PendingUpTo {
                            shard,
                            group: self.group.clone(),
                            point: point.clone(),
                        };
                        self.looking = Some((shard, Some(point), Vec::new()));
                        Progress::Step(step)
                    }
                    Look::LastIdNeeded => {
                        self.looking = Some((shard, point, read.unwrap_or_default()));
                        Progress::Step(Step::LastGeneratedId(shard))
                    }
                }
            }
            Answer::Pending(pending) if parent_pending(pending) => self.consumed(shard),
            Answer::LastId(last) if parent_delivered(&groups, &self.group, last) => {
                self.consumed(shard)
            }
            _ => self.next(),
        }
    }
}
