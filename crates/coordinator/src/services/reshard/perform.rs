//! The performer of the replica core's resharding flows: each [`Step`] through `rsc-store` (or the
//! coordinator's own log, metrics and audit for a report), its [`Answer`] back to the flow, until the flow
//! is done. Nothing is decided here. A step that fails at the store answers `StoreFailed`; the error itself
//! is kept, and is what the operation reports if the flow gives up on it.

use super::coord_error;
use crate::domain_error::{CoordError, Unavailable};
use crate::http::error::store_error_text;
use crate::runtime::cache::{Cached, GroupName};
use crate::runtime::coordinator::{Commit, Resharding};
use crate::runtime::shown_keys;
use crate::services::provision::{existing_shards, provision};
use rsc_group::replica::CommitResult;
use rsc_group::replica::reshard::group_update::{GroupUpdate, UpdateStep};
use rsc_group::replica::reshard::{
    Answer, Event, Flow, Progress, ReshardError, Settings, Step, StoreFailed, UpdateFailed,
};
use rsc_group::reshard::evidence::ConsumerGroupInfo;
use rsc_group::reshard::sync::GroupChange;
use rsc_protocol::stream_id::parse_stream_id;
use rsc_store::Shard;

/// One flow's performance on stream `prefix`: what the steps left behind for the operation.
pub(super) struct Performer<'a> {
    pub prefix: &'a str,
    /// The last error a step failed with (reported if the flow gives up on it).
    pub failure: Option<CoordError>,
    /// Who asked, and why (an operator's end of a migration is logged with them).
    pub requested: Option<(String, String)>,
    /// The stream's live groups as the caller just read them from the index (the reconciler, which read the
    /// whole index anyway): `ListGroups` answers with them instead of reading the index again.
    pub listed: Option<Vec<String>>,
}

impl<'a> Performer<'a> {
    pub fn on(prefix: &'a str) -> Self {
        Performer {
            prefix,
            failure: None,
            requested: None,
            listed: None,
        }
    }

    /// The coordinator's error for the flow's `e`.
    pub fn error(&mut self, e: ReshardError) -> CoordError {
        coord_error(self.prefix, e, self.failure.take())
    }

    fn failed(&mut self, e: CoordError) -> StoreFailed {
        self.failure = Some(e);
        StoreFailed
    }
}

impl Resharding<'_> {
    /// The configuration the flows follow.
    pub(super) fn settings(&self) -> Settings {
        let streams = &self.config().streams;
        Settings {
            provisioning_enabled: streams.provisioning_enabled,
            retire_removed_shards: streams.retire_removed_shards,
            drain_grace_ms: streams.drain_grace.ms(),
            producer_refresh_window_ms: streams.producer_refresh_window.ms(),
            timing: *self.timing(),
        }
    }

    /// Drives `flow` from `first` to its result, performing each step it asks for.
    pub(super) async fn drive<F: Flow<Cached>>(
        &self,
        p: &mut Performer<'_>,
        flow: &mut F,
        first: Progress<F::Output>,
    ) -> F::Output {
        let mut next = first;
        loop {
            match next {
                Progress::Done(output) => return output,
                Progress::Step(step) => {
                    let answer = self.perform(p, step).await;
                    next = flow.answer(answer, self.clock().now_ms());
                }
            }
        }
    }

    async fn perform(&self, p: &mut Performer<'_>, step: Step) -> Answer<Cached> {
        let prefix = p.prefix;
        match step {
            Step::ListGroups => Answer::Groups(match &p.listed {
                Some(listed) => Ok(listed.clone()),
                None => match self.stream_groups(prefix).await {
                    Ok(groups) => Ok(groups.into_iter().map(|g| g.consumer_group).collect()),
                    Err(e) => Err(p.failed(e)),
                },
            }),
            Step::LoadStream => {
                Answer::Stream(self.load_stream(prefix).await.map_err(|e| p.failed(e)))
            }
            Step::CreateStream(record) => Answer::Created(
                self.create_stream(prefix, *record)
                    .await
                    .map_err(|e| p.failed(e)),
            ),
            Step::WriteStream { base, next } => Answer::Written(
                self.write_stream(prefix, base, *next)
                    .await
                    .map_err(|e| p.failed(e)),
            ),
            Step::LoadGroup(group) => Answer::Group(
                self.require_group(&GroupName::new(prefix, &group))
                    .await
                    .map_err(|e| p.failed(e)),
            ),
            Step::UpdateGroup { group, change } => {
                let (updated, failure) = self
                    .change_group(&GroupName::new(prefix, &group), change)
                    .await;
                if let Some(e) = failure {
                    p.failure = Some(e);
                }
                Answer::Updated(updated)
            }
            Step::Provision { groups, shards } => {
                for group in &groups {
                    if let Err(e) = provision(self.store(), prefix, group, shards.clone()).await {
                        return Answer::Provisioned(Err(e.to_string()));
                    }
                }
                Answer::Provisioned(Ok(()))
            }
            Step::ExistingShards(shards) => Answer::Existing(
                existing_shards(self.store(), prefix, shards)
                    .await
                    .map_err(|e| p.failed(Unavailable::step(&e).into())),
            ),
            Step::ShardGroups(shard) => {
                let shard = Shard::new(prefix, shard);
                Answer::ShardGroups(match self.store().shard_groups(&shard).await {
                    Ok(groups) => Ok(groups.map(|gs| gs.into_iter().map(evidence_of).collect())),
                    Err(e) => {
                        let key = shown_keys::shard_stream(&shard);
                        tracing::warn!(key, error = %store_error_text(&e), "drain evidence unavailable");
                        Err(StoreFailed)
                    }
                })
            }
            Step::LastGeneratedId(shard) => {
                Answer::LastId(self.last_generated_id(&Shard::new(prefix, shard)).await)
            }
            Step::PendingUpTo {
                shard,
                group,
                point,
            } => Answer::Pending(
                self.pending_up_to(&Shard::new(prefix, shard), &group, &point, 1)
                    .await,
            ),
            Step::RaiseBoundaries(scale) => {
                Answer::Raised(self.raise_routing_boundaries(prefix, scale).await)
            }
            Step::RetireShards(shards) => {
                self.retire_shards(prefix, shards).await;
                Answer::Done
            }
            Step::ReadSightings => {
                Answer::Sightings(self.sightings(prefix).await.map_err(|e| p.failed(e)))
            }
            Step::WatchAppends { old_shards } => {
                self.publish_unordered_appends(prefix, old_shards).await;
                Answer::Done
            }
            Step::Report(event) => {
                self.report(p, event).await;
                Answer::Done
            }
        }
    }

    /// Logs, counts or audits what a flow reports.
    async fn report(&self, p: &mut Performer<'_>, event: Event) {
        let prefix = p.prefix;
        match event {
            Event::QuiesceWaiting {
                resharding_id,
                pending,
            } => {
                tracing::debug!(stream = prefix, id = ?resharding_id, ?pending, "scale waits for producers to quiesce");
            }
            Event::QuiesceSwitched { migration, outcome } => {
                self.metrics()
                    .count_quiesce_switch(prefix, outcome.forced_by_timeout);
                self.audit_quiesce_switch(prefix, &migration, &outcome)
                    .await;
            }
            Event::SwitchPointsRecorded {
                resharding_id,
                shards,
            } => {
                tracing::info!(
                    stream = prefix,
                    id = resharding_id,
                    shards,
                    "switch points recorded (ordered stream)"
                );
            }
            Event::SwitchPointsNotRecorded { resharding_id } => {
                let error = p.failure.take().map(|e| e.to_string()).unwrap_or_default();
                tracing::warn!(
                    stream = prefix,
                    id = resharding_id,
                    error,
                    "switch points not recorded; the reconciler retries"
                );
            }
            Event::ResumeFailed(e) => {
                let e = p.error(e);
                tracing::warn!(stream = prefix, error = %e, "resuming a PREPARING migration failed");
            }
            Event::MigrationComplete { resharding_id } => {
                tracing::info!(stream = prefix, id = ?resharding_id, "migration complete");
            }
            Event::EndedByOperator {
                resharding_id,
                state,
            } => {
                let (requested_by, reason) = p.requested.clone().unwrap_or_default();
                tracing::warn!(stream = ?prefix, id = ?resharding_id, state = state.as_str(), requested_by = ?requested_by, reason = ?reason, "migration ended by operator");
            }
        }
    }

    /// Applies `change` to a group by driving the core's group update (read, apply, compare-and-set, again on
    /// a lost race) under the group's lock. The store's error, when a step failed there, comes with it.
    pub(super) async fn change_group(
        &self,
        name: &GroupName,
        change: GroupChange,
    ) -> (Result<Cached, UpdateFailed>, Option<CoordError>) {
        let lock = self.cache().lock_for(name);
        let _guard = lock.lock().await;
        let (mut update, mut step) = GroupUpdate::start(change, self.timing());
        let mut failure = None;
        loop {
            step = match step {
                UpdateStep::Read => {
                    let read = self.require_current_group(name).await.map_err(|e| {
                        failure = Some(e);
                        StoreFailed
                    });
                    update.on_read(read, self.clock().now_ms())
                }
                UpdateStep::Commit { base, transition } => {
                    match self.commit(name, &base, *transition).await {
                        Ok(Commit::Written(c)) => {
                            update.on_committed(CommitResult::Written, Some(c))
                        }
                        Ok(Commit::Conflict) => update.on_committed(CommitResult::Conflict, None),
                        Ok(Commit::ConditionFailed { member }) => {
                            update.on_committed(CommitResult::ConditionFailed { member }, None)
                        }
                        Err(e) => {
                            failure = Some(e);
                            update.on_committed(CommitResult::Unavailable, None)
                        }
                    }
                }
                UpdateStep::Done(result) => return (result, failure),
            };
        }
    }

    /// `Resharding::change_group` as an operation's result.
    pub async fn update_group(
        &self,
        name: &GroupName,
        change: GroupChange,
    ) -> Result<Cached, CoordError> {
        match self.change_group(name, change).await {
            (Ok(c), _) => Ok(c),
            (Err(e), failure) => Err(coord_error(
                &name.stream_prefix,
                ReshardError::from(e),
                failure,
            )),
        }
    }

    /// The stream's `last-generated-id` (`XINFO STREAM`), None when unknown.
    pub(super) async fn last_generated_id(&self, shard: &Shard) -> Option<(u64, u64)> {
        let info = self.store().shard_stream_info(shard).await.ok()??;
        parse_stream_id(info.last_generated_id.as_deref()?)
    }

    /// How many entries `group` has pending on `shard` up to `point`, counting at most `cap` (None: unknown,
    /// or no such group).
    pub(super) async fn pending_up_to(
        &self,
        shard: &Shard,
        group: &str,
        point: &str,
        cap: usize,
    ) -> Option<i64> {
        match self
            .store()
            .shard_pending_up_to(shard, group, point, cap)
            .await
        {
            Ok(answer) => answer,
            Err(e) => {
                let key = shown_keys::shard_stream(shard);
                tracing::warn!(key, error = %store_error_text(&e), "ordering evidence unavailable");
                None
            }
        }
    }
}

/// A consumer group of `XINFO GROUPS` as the evidence rules read it.
pub(super) fn evidence_of(g: rsc_store::ConsumerGroupInfo) -> ConsumerGroupInfo {
    ConsumerGroupInfo {
        name: g.name,
        pending: g.pending,
        lag: g.lag,
        last_delivered_id: g.last_delivered_id,
    }
}
