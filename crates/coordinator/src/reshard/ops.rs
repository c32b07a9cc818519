//! Resharding operations: scale a stream (record, provision, activate), scale one group, and end a
//! migration (rollback / force-complete).

use super::*;

impl Resharding<'_> {
    /// `POST /coord/v1/streams/{p}/scale`: scales every group of the stream together.
    pub async fn scale_stream(
        &self,
        prefix: &str,
        req: &ScaleRequest,
    ) -> Result<ScaleResponse, CoordError> {
        let target = match req.target_shard_count {
            Some(n) => validate::validate_shard_count("targetShardCount", n, 0)?,
            None => {
                return Err(CoordError::invalid(
                    "targetShardCount: is required (0 drains and removes every shard)",
                ));
            }
        };
        let requested_by = req.requested_by.clone().unwrap_or_default();
        validate::validate_text("requestedBy", &requested_by, true)?;
        let reason = req.reason.clone().unwrap_or_default();
        validate::validate_text("reason", &reason, true)?;
        let quiesce_timeout = quiesce::requested_timeout(req)?;
        self.ensure_running()?;
        let groups = self.stream_groups(prefix).await?;
        if groups.is_empty() {
            return Err(CoordError::StreamNotFound(format!(
                "stream {prefix:?} has no consumer groups; create it first"
            )));
        }
        let mut loaded = Vec::new();
        for name in &groups {
            let c = self.require_group(name).await?;
            self.durability().ensure_mutable(&c.group)?;
            if c.group.metadata_correction.is_some() {
                return Err(CoordError::CorrectionInProgress(format!(
                    "group {} is in a metadata-correction round; scale after it closes",
                    name.consumer_group
                )));
            }
            loaded.push(c);
        }
        let mut stream = self
            .ensure_stream(prefix, loaded[0].group.shard_count)
            .await?;

        // Record the migration (or resume / return the active one).
        let migration = loop {
            match &stream.record.active_migration {
                Some(m) if m.to_shard_count == target => break m.clone(),
                Some(m) => {
                    return Err(CoordError::MigrationInProgress(format!(
                        "migration {} ({} → {} shards, {}) is still active; wait for it, roll it back, or force-complete it",
                        m.resharding_id,
                        m.from_shard_count,
                        m.to_shard_count,
                        migration_state_in_groups(m, &loaded)
                    )));
                }
                None if stream.record.shard_count == target => {
                    let now = self.clock().now_ms();
                    let noop = Migration {
                        completed_at_ms: Some(now),
                        ..Migration::new(
                            "noop".into(),
                            target,
                            target,
                            MigrationState::Deprecated,
                            requested_by.clone(),
                            reason.clone(),
                            now,
                        )
                    };
                    let noops = vec![noop; groups.len()];
                    return Ok(self.scale_response(prefix, target, &groups, &noops));
                }
                None => {
                    self.refuse_foreign_shard_keys(prefix, &stream.record, target)
                        .await?;
                    let now = self.clock().now_ms();
                    let m = Migration::new(
                        format!("reshard-{}", uuid::Uuid::new_v4()),
                        stream.record.shard_count,
                        target,
                        MigrationState::Preparing,
                        requested_by.clone(),
                        reason.clone(),
                        now,
                    );
                    let mut next = stream.record.clone();
                    // The new keys were checked above: from now on they are the coordinator's.
                    next.provisioned_shard_count = Some(next.provisioned_upto().max(target));
                    next.producer_quiesce = quiesce_timeout.map(|t| {
                        rsc_group::quiesce::ProducerQuiesce::new(&m.resharding_id, t, now)
                    });
                    next.active_migration = Some(m);
                    match self.write_stream(prefix, &stream, next).await? {
                        Some(s) => stream = s,
                        None => {
                            stream = self
                                .load_stream(prefix)
                                .await?
                                .ok_or_else(|| CoordError::invalid("stream vanished"))?
                        }
                    }
                }
            }
        };
        let stream = self.activate(prefix, stream, &migration, &groups).await?;
        let mut per_group = Vec::new();
        for name in &groups {
            let c = self.sync_group_to_stream(name, &stream.record).await?;
            per_group.push(
                c.group
                    .migration(&migration.resharding_id)
                    .cloned()
                    .unwrap_or_else(|| migration.clone()),
            );
        }
        tracing::info!(stream = ?prefix, id = ?migration.resharding_id, from = migration.from_shard_count, to = target, "scale activated");
        Ok(self.scale_response(prefix, target, &groups, &per_group))
    }

    /// Steps 2–3: provision the target shards for every group, then switch routing (idempotent).
    pub(super) async fn activate(
        &self,
        prefix: &str,
        mut stream: CachedStream,
        migration: &Migration,
        groups: &[GroupName],
    ) -> Result<CachedStream, CoordError> {
        if stream
            .record
            .active_migration
            .as_ref()
            .is_some_and(|m| m.state != MigrationState::Preparing)
        {
            return Ok(stream);
        }
        if self.config().streams.provisioning_enabled && migration.to_shard_count > 0 {
            for name in groups {
                provision(self.store(), prefix, &name.consumer_group, 0..migration.to_shard_count).await.map_err(|e| {
                    CoordError::ProvisioningFailed(format!("{e}; the migration stays PREPARING and routing is unchanged — retry the same scale to resume"),
                    )
                })?;
            }
        }
        for _ in 0..MAX_CAS_ATTEMPTS {
            let outcome = match self.quiesce_gate(prefix, &stream.record, migration).await? {
                quiesce::Gate::Open(outcome) => outcome,
                quiesce::Gate::Closed => return Ok(stream),
            };
            let mut next = stream.record.clone();
            if let (Some(o), Some(q)) = (&outcome, next.producer_quiesce.as_mut()) {
                q.outcome = Some(o.clone());
            }
            let Some(m) = next.active_migration.as_mut() else {
                return Ok(stream);
            };
            if m.state != MigrationState::Preparing {
                return Ok(stream);
            }
            let now = self.clock().now_ms();
            m.state = MigrationState::Active;
            m.activated_at_ms = Some(now);
            m.updated_at_ms = now;
            next.shard_count = m.to_shard_count;
            next.routing_version =
                rsc_group::model::incremented("routingVersion", next.routing_version)?;
            match self.write_stream(prefix, &stream, next).await? {
                Some(s) => {
                    let s = self.guard_switch(prefix, s).await;
                    if let Some(o) = &outcome {
                        self.metrics()
                            .count_quiesce_switch(prefix, o.forced_by_timeout);
                        self.audit_quiesce_switch(prefix, migration, o).await;
                    }
                    return Ok(s);
                }
                None => {
                    stream = self
                        .load_stream(prefix)
                        .await?
                        .ok_or_else(|| CoordError::invalid("stream vanished"))?
                }
            }
        }
        Err(CoordError::Conflict(
            "stream record kept changing; retry".into(),
        ))
    }

    /// A scale-out must not adopt shard keys the coordinator did not provision (a later scale-in would retire
    /// them, data and all): 409 `STREAM_PREFIX_ALREADY_EXISTS`, as create answers, naming the keys. Checked
    /// before anything is recorded or provisioned. Keys below [`StreamRecord::provisioned_upto`] are the
    /// coordinator's own (e.g. a removed shard kept because it received late writes).
    pub(super) async fn refuse_foreign_shard_keys(
        &self,
        prefix: &str,
        record: &rsc_group::stream::StreamRecord,
        target: u32,
    ) -> Result<(), CoordError> {
        let ours = record.provisioned_upto();
        if !self.config().streams.provisioning_enabled || target <= ours {
            return Ok(());
        }
        let found = existing_shards(self.store(), prefix, ours..target)
            .await
            .map_err(|e| {
                CoordError::RedisUnavailable(format!(
                    "Redis is unavailable: {}",
                    store_error_text(&e)
                ))
            })?;
        if found.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = found.iter().map(|s| shard_stream_key(prefix, *s)).collect();
        Err(CoordError::StreamExists(format!(
            "Redis keys of stream {prefix:?} already exist, were not created by the coordinator and would be \
                 adopted as new shards (and deleted by a later scale-in): {}; delete them, or choose a target \
                 shard count of at most {}",
            keys.join(", "),
            found[0]
        )))
    }

    /// After removed shards were retired: the record stops counting keys that no longer exist as its own, so
    /// a key created there later by someone else is refused by the next scale-out rather than adopted.
    pub(super) async fn forget_retired_keys(&self, prefix: &str) {
        for _ in 0..MAX_CAS_ATTEMPTS {
            let Ok(Some(base)) = self.load_stream(prefix).await else {
                return;
            };
            let r = &base.record;
            let mut floor = r.shard_count;
            if let Some(m) = &r.active_migration {
                floor = floor.max(m.from_shard_count).max(m.to_shard_count);
            }
            let upto = r.provisioned_upto();
            if upto <= floor {
                return;
            }
            // Keys still there (kept after late writes, a rolled-back scale-out's shards) stay the coordinator's.
            let Ok(left) = existing_shards(self.store(), prefix, floor..upto).await else {
                return;
            };
            let keep = left.last().map_or(floor, |s| s + 1);
            if r.provisioned_shard_count == Some(keep) {
                return;
            }
            let mut next = r.clone();
            next.provisioned_shard_count = Some(keep);
            if let Ok(Some(_)) = self.write_stream(prefix, &base, next).await {
                return;
            }
        }
    }

    /// `POST …/groups/{g}/scale` (compatibility): the stream-level scale, answered with this group's migration.
    pub async fn scale_group(
        &self,
        name: &GroupName,
        req: &ScaleRequest,
    ) -> Result<Option<MigrationResponse>, CoordError> {
        self.require_group(name).await?;
        let mut migrations = self
            .scale_stream(&name.stream_prefix, req)
            .await?
            .migrations;
        let mine = migrations
            .iter()
            .position(|m| m.consumer_group.as_deref() == Some(name.consumer_group.as_str()))
            .unwrap_or(0);
        Ok((mine < migrations.len()).then(|| migrations.swap_remove(mine)))
    }

    /// Rollback (contract #10) or force-complete of the stream's active migration, applied to every group.
    pub async fn end_migration(
        &self,
        name: &GroupName,
        id: &str,
        req: &MigrationActionRequest,
        end: MigrationState,
    ) -> Result<MigrationResponse, CoordError> {
        let requested_by = req.requested_by.clone().unwrap_or_default();
        validate::validate_text("requestedBy", &requested_by, true)?;
        let reason = req.reason.clone().unwrap_or_default();
        validate::validate_text("reason", &reason, true)?;
        self.ensure_running()?;
        let group = self.require_group(name).await?;
        self.durability().ensure_mutable(&group.group)?;
        let m = group.group.migration(id).cloned();
        let prefix = &name.stream_prefix;
        let stream = self.ensure_stream(prefix, group.group.shard_count).await?;
        let active = stream
            .record
            .active_migration
            .clone()
            .filter(|a| a.resharding_id == id);
        match (&m, &active, end) {
            (Some(m), _, MigrationState::RolledBack) if m.state == MigrationState::RolledBack => {
                return Ok(migration_response(m));
            }
            (Some(m), None, MigrationState::RolledBack) => {
                migration::rollback_check(&group.group, id)?;
                return Err(CoordError::RollbackNotAllowed(format!(
                    "migration {id} is not the stream's active migration ({})",
                    m.state.as_str()
                )));
            }
            // Force-complete is idempotent like rollback: repeating it answers the migration it ended.
            (Some(m), None, _)
                if matches!(
                    m.state,
                    MigrationState::ForceCompleted | MigrationState::Aborted
                ) =>
            {
                return Ok(migration_response(m));
            }
            (Some(m), None, _) if m.state.is_terminal() => {
                return Err(CoordError::MigrationAlreadyEnded(format!(
                    "migration {id} already ended ({}), so there is nothing to force-complete; \
                         scale again to change the shard count",
                    m.state.as_str()
                )));
            }
            (None, None, _) => return Err(MigrationError::NotFound(id.to_owned()).into()),
            _ => {}
        }
        if let Some(a) = &active {
            if end == MigrationState::RolledBack {
                if a.state == MigrationState::Preparing {
                    return Err(CoordError::RollbackNotAllowed(format!(
                        "migration {id} has not switched routing yet; abort it with force-complete instead"
                    )));
                }
                if group.group.metadata_correction.is_some() {
                    return Err(CoordError::CorrectionInProgress(
                        "a metadata-correction round is open; retry after it closes".into(),
                    ));
                }
            }
            let final_state = if a.state == MigrationState::Preparing {
                MigrationState::Aborted
            } else {
                end
            };
            let mut base = stream;
            loop {
                let mut next = base.record.clone();
                if end == MigrationState::RolledBack {
                    next.shard_count = a.from_shard_count;
                    next.routing_version =
                        rsc_group::model::incremented("routingVersion", next.routing_version)?;
                }
                next.finish(final_state, Some(reason.clone()), self.clock().now_ms());
                match self.write_stream(prefix, &base, next).await? {
                    Some(s) => {
                        if end == MigrationState::RolledBack {
                            // Routing switched back: producers holding the scaled routing are refused too.
                            let back = super::boundary::boundary_scale(
                                &s.record,
                                a.to_shard_count,
                                a.from_shard_count,
                            );
                            self.raise_routing_boundaries(prefix, back).await;
                        }
                        for g in self.stream_groups(prefix).await? {
                            self.sync_group_to_stream(&g, &s.record).await?;
                        }
                        break;
                    }
                    None => {
                        base = self
                            .load_stream(prefix)
                            .await?
                            .ok_or_else(|| CoordError::invalid("stream vanished"))?;
                        if base
                            .record
                            .active_migration
                            .as_ref()
                            .is_none_or(|x| x.resharding_id != id)
                        {
                            break;
                        }
                    }
                }
            }
            tracing::warn!(stream = ?prefix, id = ?id, state = final_state.as_str(), requested_by = ?requested_by, reason = ?reason, "migration ended by operator");
        }
        let g = self.require_group(name).await?;
        match g.group.migration(id) {
            Some(m) => Ok(migration_response(m)),
            None => {
                let s = self.load_stream(prefix).await?;
                let m =
                    s.and_then(|s| s.record.history.into_iter().find(|m| m.resharding_id == id));
                m.map(|m| migration_response(&m))
                    .ok_or_else(|| MigrationError::NotFound(id.to_owned()).into())
            }
        }
    }
}
