//! The stream record as the coordinator keeps it (load, create, reset, forget, compare-and-set through
//! `rsc-store`), the generic group update, and syncing a group to its stream's migration.

use super::*;

impl Resharding<'_> {
    /// The key of the stream record of `prefix`.
    pub fn stream_record_key(&self, prefix: &str) -> String {
        names::stream_record_key(&self.config().store.key_prefix, prefix)
    }

    pub async fn load_stream(&self, prefix: &str) -> Result<Option<CachedStream>, CoordError> {
        let key = self.stream_record_key(prefix);
        let Some(stored) = self.store().stream_record_load(&key).await.map_err(|e| {
            self.note_store_error(&e);
            CoordError::from(e)
        })?
        else {
            return Ok(None);
        };
        let record = StreamRecord::from_json(&stored.aggregate).map_err(|e| {
            CoordError::MetadataCorrupt(format!("stream record {key} is unreadable: {e}"))
        })?;
        Ok(Some(CachedStream {
            record,
            revision: stored.revision,
        }))
    }

    /// The stream record, created from the stream's groups' shard count if it does not exist yet.
    pub async fn ensure_stream(
        &self,
        prefix: &str,
        shard_count: u32,
    ) -> Result<CachedStream, CoordError> {
        for _ in 0..MAX_CAS_ATTEMPTS {
            if let Some(s) = self.load_stream(prefix).await? {
                return Ok(s);
            }
            let record = StreamRecord::new(prefix, shard_count, self.clock().now_ms());
            let created = self
                .store()
                .stream_record_create(
                    &self.stream_record_key(prefix),
                    &record.to_json(),
                    &crate::clock::iso_ms(record.created_at_ms),
                )
                .await
                .map_err(CoordError::from)?;
            if let CreateOutcome::Created { revision, .. } = created {
                return Ok(CachedStream { record, revision });
            }
        }
        Err(CoordError::Conflict(
            "stream record kept changing; retry".into(),
        ))
    }

    /// Starts the stream record afresh for the first group of a stream (a record left by an earlier
    /// lifecycle of the same prefix must not carry its shard count over).
    pub async fn reset_stream(
        &self,
        prefix: &str,
        shard_count: u32,
    ) -> Result<CachedStream, CoordError> {
        for _ in 0..MAX_CAS_ATTEMPTS {
            let Some(old) = self.load_stream(prefix).await? else {
                return self.ensure_stream(prefix, shard_count).await;
            };
            if old.record.shard_count == shard_count && old.record.active_migration.is_none() {
                return Ok(old);
            }
            let fresh = StreamRecord::new(prefix, shard_count, self.clock().now_ms());
            if let Some(s) = self.write_stream(prefix, &old, fresh).await? {
                return Ok(s);
            }
        }
        Err(CoordError::Conflict(
            "stream record kept changing; retry".into(),
        ))
    }

    /// Deletes the stream record, and the producer sightings of producer quiesce, once the stream has no
    /// group left.
    pub async fn forget_stream_if_unused(&self, prefix: &str) {
        if !self.stream_groups(prefix).await.is_ok_and(|g| g.is_empty()) {
            return;
        }
        if let Ok(Some(s)) = self.load_stream(prefix).await {
            let _ = self
                .store()
                .stream_record_delete(&self.stream_record_key(prefix), s.revision)
                .await;
        }
        let (seen, quiesced) = self.producer_keys(prefix);
        if let Err(e) = self.store().producers_clear(&seen, &quiesced).await {
            tracing::warn!(stream = prefix, error = %store_error_text(&e), "producer sightings not deleted");
        }
    }

    /// Compare-and-sets a stream record. Ok(None) = lost the race, decide again.
    pub(super) async fn write_stream(
        &self,
        prefix: &str,
        base: &CachedStream,
        mut next: StreamRecord,
    ) -> Result<Option<CachedStream>, CoordError> {
        next.store_revision = base.revision.checked_add(1).ok_or_else(|| {
            CoordError::MetadataCorrupt(format!(
                    "stream record {} has a store revision that cannot be incremented; restore it from backup",
                    self.stream_record_key(prefix)
                ),
            )
        })?;
        next.updated_at_ms = self.clock().now_ms();
        match self
            .store()
            .stream_record_cas(
                &self.stream_record_key(prefix),
                base.revision,
                &next.to_json(),
                &crate::clock::iso_ms(next.updated_at_ms),
            )
            .await
            .map_err(CoordError::from)?
        {
            CasOutcome::Written { revision, now_ms } => {
                self.clock().observe(now_ms);
                Ok(Some(CachedStream {
                    record: next,
                    revision,
                }))
            }
            _ => Ok(None),
        }
    }

    /// Live groups of a stream, by name.
    pub async fn stream_groups(&self, prefix: &str) -> Result<Vec<GroupName>, CoordError> {
        Ok(self
            .index_entries()
            .await?
            .into_iter()
            .filter(|e| e.stream_prefix == prefix && e.state == IndexState::Live)
            .map(|e| GroupName::new(&e.stream_prefix, &e.consumer_group))
            .collect())
    }

    /// Applies `change` to a group by compare-and-set (bounded retries). `change` returns whether it changed
    /// anything; unchanged groups are not written.
    pub async fn update_group<F>(
        &self,
        name: &GroupName,
        mut change: F,
    ) -> Result<Cached, CoordError>
    where
        F: FnMut(&mut Group, i64) -> Result<bool, CoordError>,
    {
        let lock = self.cache().lock_for(name);
        let _guard = lock.lock().await;
        for _ in 0..MAX_CAS_ATTEMPTS {
            let base = self.require_current_group(name).await?;
            let mut next = (*base.group).clone();
            let now = self.clock().now_ms();
            if !change(&mut next, now)? {
                return Ok(base);
            }
            match self.commit(name, &base, Transition::new(next)).await? {
                Commit::Written(c) => return Ok(c),
                Commit::Conflict | Commit::ConditionFailed { .. } => continue,
            }
        }
        Err(CoordError::Conflict(
            "the group kept changing; retry".into(),
        ))
    }

    /// Brings a group in line with its stream record: adopts the active migration (on an ordered stream once
    /// its switch points are recorded), or applies the rollback / force-complete the stream recorded, and
    /// takes the stream's routing version with it. Used by create, scale, routing and the reconciler.
    pub async fn sync_group_to_stream(
        &self,
        name: &GroupName,
        stream: &StreamRecord,
    ) -> Result<Cached, CoordError> {
        let timing = self.timing();
        self.update_group(name, |g, now| {
            let mut changed = false;
            for ended in &stream.history {
                // A switched migration force-completed before this group adopted it (an ordered one waits
                // for its switch points): take it in first, so the group ends on the stream's shard count.
                if ended.state == MigrationState::ForceCompleted
                    && ended.activated_at_ms.is_some()
                    && g.migration(&ended.resharding_id).is_none()
                    && g.shard_count == ended.from_shard_count
                    && stream.shard_count == ended.to_shard_count
                    && g.shard_count != stream.shard_count
                {
                    changed |= migration::adopt(g, ended, now, timing)?;
                }
                let active_here = g
                    .migration(&ended.resharding_id)
                    .is_some_and(|m| !m.state.is_terminal());
                if !active_here {
                    continue;
                }
                let reason = ended.end_reason.clone().unwrap_or_default();
                changed |= match ended.state {
                    MigrationState::RolledBack => {
                        migration::rollback(g, &ended.resharding_id, &reason, now, timing)?
                    }
                    MigrationState::ForceCompleted | MigrationState::Aborted => {
                        migration::force_complete(g, &ended.resharding_id, &reason, now, timing)?
                    }
                    _ => false,
                };
            }
            if let Some(m) = &stream.active_migration
                && m.state == MigrationState::Active
                && ordering::may_adopt(stream)
            {
                let adopted = migration::adopt(g, m, now, timing)?;
                if adopted && ordering::needs_switch_points(stream) {
                    // Gates by the stream's routing counts; surviving children fenced at their switch points.
                    rsc_group::ordering::close_gates(
                        g,
                        m.from_shard_count,
                        m.to_shard_count,
                        &m.switch_points,
                        now,
                        timing,
                    );
                }
                changed |= adopted;
            }
            // The routing version answers carry moves with the switch (or rollback) the group has taken in,
            // in the same write: never ahead of what its gates and fences reflect.
            let caught_up = stream.active_migration.as_ref().is_none_or(|m| {
                m.state == MigrationState::Preparing || g.migration(&m.resharding_id).is_some()
            });
            if caught_up && stream.routing_version > g.routing_version {
                g.routing_version = stream.routing_version;
                changed = true;
            }
            Ok(changed)
        })
        .await
    }
}
