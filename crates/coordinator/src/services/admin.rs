//! Admin operations: create a stream (its first group), create a further group (compatibility endpoint),
//! read and delete a group, and producer routing.
//!
//! Creation order makes a crash at any step safe and a retry resume it: the index entry is written as
//! CREATING, then every shard stream and Redis consumer group is provisioned, then the metadata key is created
//! (create-only), then the index entry turns LIVE. Nothing is routed or assigned before its streams exist, and
//! a provisioning failure leaves no metadata behind.
//!
//! Deleting a group never touches its shard streams: deleting a stream's last group keeps its records, and
//! creating the prefix again decides what to do with them by `existingRecords` (`leftovers.rs`).

use crate::domain_error::{
    ActiveMembers, BadRequest, Conflict, CoordError, Provisioning, StreamExists, Unavailable,
};
use crate::http::views::{group_response, routing_response};
use crate::observability::stats::Stats;
use crate::runtime::cache::{Cached, GroupName};
use crate::runtime::coordinator::Admin;
use crate::runtime::coordinator::MAX_CAS_ATTEMPTS;
use crate::services::leftovers;
use crate::services::provision::provision;
use rsc_group::model::{Group, MemberState};
use rsc_protocol::existing_records::ExistingRecords;
use rsc_protocol::validate;
use rsc_protocol::wire::{
    CreateStreamRequest, CreateStreamResponse, DeleteGroupRequest, GroupResponse,
    ProducerRoutingResponse,
};
use rsc_store::DeleteOutcome;
use rsc_store::{IndexEntry, IndexState};

impl Admin<'_> {
    /// `POST /coord/v1/streams/{p}`: creates the stream's first group, named after the prefix (a valid
    /// prefix, `api/extract.rs::StreamPrefix`, that must also be a valid group name).
    pub async fn create_stream(
        &self,
        prefix: &str,
        req: &CreateStreamRequest,
    ) -> Result<CreateStreamResponse, CoordError> {
        let name = GroupName::new(prefix, prefix);
        validate::validate_consumer_group(prefix).map_err(|_| BadRequest::PrefixNotAGroup {
            stream: prefix.to_owned(),
        })?;
        let shard_count = self.requested_shard_count(req)?;
        let entries = self.index_entries_for_create(&name).await?;
        let live_on_prefix: Vec<&IndexEntry> = entries
            .iter()
            .filter(|e| e.stream_prefix == prefix && e.state == IndexState::Live)
            .collect();
        if !live_on_prefix.is_empty() {
            return Err(StreamExists::Live {
                stream: prefix.to_owned(),
                groups: live_on_prefix
                    .iter()
                    .map(|e| e.consumer_group.clone())
                    .collect(),
            }
            .into());
        }
        let g = self
            .create(
                &name,
                shard_count,
                &entries,
                true,
                req.existing_records.unwrap_or_default(),
            )
            .await?;
        if let Some(ordering) = req.ordering {
            self.resharding()
                .set_stream_ordering(prefix, ordering)
                .await?;
        }
        Ok(CreateStreamResponse {
            stream_prefix: prefix.to_owned(),
            shard_count: g.group.shard_count,
            metadata_version: g.group.metadata_version,
        })
    }

    /// `POST /coord/v1/streams/{p}/groups/{g}`: adds a consumer group. The shard count belongs to the stream:
    /// a further group adopts it, and asking for a different one is an error. Also says whether the group
    /// created its stream (the first group of a prefix), which is audited as a stream create.
    pub async fn create_group(
        &self,
        name: &GroupName,
        req: &CreateStreamRequest,
    ) -> Result<(GroupResponse, bool), CoordError> {
        let requested = self.requested_shard_count(req)?;
        let entries = self.index_entries_for_create(name).await?;
        if entries.iter().any(|e| {
            e.stream_prefix == name.stream_prefix
                && e.consumer_group == name.consumer_group
                && e.state == IndexState::Live
        }) && self.load(name).await?.is_some()
        {
            return Err(CoordError::group_exists(
                &name.stream_prefix,
                &name.consumer_group,
            ));
        }
        let sibling = entries.iter().find(|e| {
            e.stream_prefix == name.stream_prefix
                && e.consumer_group != name.consumer_group
                && e.state == IndexState::Live
        });
        let stream_count = match sibling {
            Some(_) => self
                .resharding()
                .load_stream(&name.stream_prefix)
                .await?
                .map(|s| s.record.shard_count),
            None => None,
        };
        let (shard_count, first_of_prefix) = match sibling {
            Some(s) => {
                let sibling_name = GroupName::new(&s.stream_prefix, &s.consumer_group);
                match self.load(&sibling_name).await? {
                    Some(c) => {
                        let count = stream_count.unwrap_or(c.group.shard_count);
                        if req.initial_shard_count.is_some() && requested != count {
                            return Err(BadRequest::ShardCountMismatch {
                                stream: name.stream_prefix.clone(),
                                count,
                            }
                            .into());
                        }
                        (count, false)
                    }
                    None => (requested, true),
                }
            }
            None => (requested, true),
        };
        let g = self
            .create(
                name,
                shard_count,
                &entries,
                first_of_prefix,
                req.existing_records.unwrap_or_default(),
            )
            .await?;
        if let Some(ordering) = req.ordering {
            self.resharding()
                .set_stream_ordering(&name.stream_prefix, ordering)
                .await?;
        }
        Ok((group_response(&g.group), first_of_prefix))
    }

    fn requested_shard_count(&self, req: &CreateStreamRequest) -> Result<u32, CoordError> {
        validate::validate_attribution(
            req.requested_by.as_deref(),
            req.reason.as_deref(),
            validate::Reason::Optional,
        )?;
        match req.initial_shard_count {
            None => Ok(self.config().defaults.initial_shard_count),
            Some(n) => Ok(validate::validate_shard_count(
                "initialShardCount",
                n,
                rsc_protocol::bounds::INITIAL_SHARD_COUNT.min(),
            )?),
        }
    }

    /// Provisions and creates one group (see the module comment for the order of steps).
    async fn create(
        &self,
        name: &GroupName,
        shard_count: u32,
        entries: &[IndexEntry],
        first_of_prefix: bool,
        existing_records: ExistingRecords,
    ) -> Result<Cached, CoordError> {
        let resuming = entries.iter().any(|e| {
            e.stream_prefix == name.stream_prefix
                && e.consumer_group == name.consumer_group
                && e.state == IndexState::Creating
        });
        if first_of_prefix && !resuming && self.config().streams.provisioning_enabled {
            let found = leftovers::find(self.store(), &name.stream_prefix, shard_count)
                .await
                .map_err(|e| Unavailable::step(&e))?;
            let decision =
                leftovers::decide(&name.stream_prefix, shard_count, existing_records, &found)?;
            leftovers::carry_out(self.store(), &name.stream_prefix, &decision).await?;
        }
        self.put_index(name, IndexState::Creating).await?;
        if self.config().streams.provisioning_enabled {
            provision(
                self.store(),
                &name.stream_prefix,
                &name.consumer_group,
                0..shard_count,
            )
            .await
            .map_err(|e| Provisioning::Create {
                cause: e.to_string(),
            })?;
        }
        let now = self.clock().now_ms();
        let lifecycle = uuid::Uuid::new_v4().to_string();
        let group = Group::new(
            &name.stream_prefix,
            &name.consumer_group,
            shard_count,
            now,
            &lifecycle,
        );
        match self.create_metadata(name, group).await? {
            Some(_) => {
                self.put_index(name, IndexState::Live).await?;
                let stream = if first_of_prefix {
                    self.resharding()
                        .reset_stream(&name.stream_prefix, shard_count)
                        .await?
                } else {
                    self.resharding()
                        .ensure_stream(&name.stream_prefix, shard_count)
                        .await?
                };
                // The group takes the stream's routing version (and any migration it must take in) before
                // its first member joins, so every answer carries `routingVersion`.
                let cached = self
                    .resharding()
                    .sync_group_to_stream(name, &stream.record)
                    .await?;
                tracing::info!(stream = ?name.stream_prefix, group = ?name.consumer_group, shard_count, "group created");
                Ok(cached)
            }
            None => {
                self.put_index(name, IndexState::Live).await?;
                Err(CoordError::group_exists(
                    &name.stream_prefix,
                    &name.consumer_group,
                ))
            }
        }
    }

    pub async fn get_group(&self, name: &GroupName) -> Result<GroupResponse, CoordError> {
        Ok(group_response(&self.require_group(name).await?.group))
    }

    /// `DELETE …/groups/{g}`: removes the group's coordinator metadata (never its streams).
    pub async fn delete_group(
        &self,
        name: &GroupName,
        req: &DeleteGroupRequest,
    ) -> Result<GroupResponse, CoordError> {
        validate::validate_attribution(
            req.requested_by.as_deref(),
            req.reason.as_deref(),
            validate::Reason::Required,
        )?;
        let force = req.force.unwrap_or(false);
        for _ in 0..MAX_CAS_ATTEMPTS {
            let base = self.require_group(name).await?;
            self.durability().ensure_mutable(&base.group)?;
            let active: Vec<&str> = base
                .group
                .members
                .values()
                .filter(|m| m.state == MemberState::Active)
                .map(|m| m.member_id.as_str())
                .collect();
            if !active.is_empty() && !force {
                return Err(ActiveMembers::Delete {
                    members: active.iter().map(|m| (*m).to_owned()).collect(),
                }
                .into());
            }
            let outcome = self
                .store()
                .delete(name, base.revision)
                .await
                .map_err(|e| {
                    self.note_store_error(&e);
                    CoordError::from(e)
                })?;
            match outcome {
                DeleteOutcome::Deleted => {
                    let _ = self.store().group_index_remove(name).await;
                    self.cache().forget(name);
                    self.resharding()
                        .forget_stream_if_unused(&name.stream_prefix)
                        .await;
                    // The owner drops the group from its schedule at once, and the stream's pass (a
                    // migration may have been waiting on this group) runs at its next tick.
                    self.announce_change(&name.stream_prefix, &name.consumer_group)
                        .await;
                    tracing::info!(stream = ?name.stream_prefix, group = ?name.consumer_group, force, "group deleted");
                    return Ok(group_response(&base.group));
                }
                DeleteOutcome::Conflict { .. } => {
                    Stats::bump(&self.stats().state_conflicts);
                    continue;
                }
            }
        }
        Err(Conflict::DeleteKeptChanging.into())
    }

    /// `GET …/producer-routing`. Re-provisions the shard streams (idempotent) so routing also self-heals.
    pub async fn producer_routing(
        &self,
        name: &GroupName,
    ) -> Result<ProducerRoutingResponse, CoordError> {
        let result = self.producer_routing_inner(name).await;
        match &result {
            Ok(_) => Stats::bump(&self.stats().routing_success),
            Err(_) => Stats::bump(&self.stats().routing_error),
        }
        result
    }

    async fn producer_routing_inner(
        &self,
        name: &GroupName,
    ) -> Result<ProducerRoutingResponse, CoordError> {
        let mut cached = self.require_group(name).await?;
        // Routing is the stream record's: its shard count and routing version, read together once. The group
        // is brought in line first if a scale, rollback or force-complete has not reached it yet (on an
        // ordered stream a switch reaches groups once its switch points are recorded; routing does not wait).
        let stream = self.resharding().load_stream(&name.stream_prefix).await?;
        if let Some(stream) = &stream
            && (stream.record.shard_count != cached.group.shard_count
                || stream.record.active_migration.as_ref().is_some_and(|m| {
                    m.state != rsc_group::model::MigrationState::Preparing
                        && cached.group.migration(&m.resharding_id).is_none()
                }))
        {
            cached = self
                .resharding()
                .sync_group_to_stream(name, &stream.record)
                .await?;
        }
        let record = stream.as_ref().map(|s| &s.record);
        let routed = record.map_or(cached.group.shard_count, |r| r.shard_count);
        if self.config().streams.provisioning_enabled && routed > 0 {
            provision(
                self.store(),
                &name.stream_prefix,
                &name.consumer_group,
                0..routed,
            )
            .await
            .map_err(|e| Provisioning::Shards {
                cause: e.to_string(),
            })?;
        }
        let mut routing = routing_response(&cached.group, record);
        if let Some(r) = record {
            self.resharding().add_quiesce_notice(r, &mut routing);
        }
        Ok(routing)
    }

    /// Every live group, sorted by prefix then group.
    pub async fn list_groups(
        &self,
        visible: impl Fn(&str) -> bool,
    ) -> Result<Vec<GroupResponse>, CoordError> {
        let mut out = Vec::new();
        for e in self
            .index_entries()
            .await?
            .into_iter()
            .filter(|e| e.state == IndexState::Live && visible(&e.stream_prefix))
        {
            let name = GroupName::new(&e.stream_prefix, &e.consumer_group);
            match self.load(&name).await {
                Ok(Some(c)) => out.push(group_response(&c.group)),
                Ok(None) => {}
                Err(err) => {
                    tracing::warn!(error = %err, group = %name, "group unreadable; left out of the listing")
                }
            }
        }
        Ok(out)
    }
}
