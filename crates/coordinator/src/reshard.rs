//! Online resharding: scale a stream's shard count, drain removed shards, roll back, force-complete.
//!
//! The shard count belongs to the stream record (`<kp>:{<p>}:stream`), so routing for every group of a
//! stream is always identical. A scale runs as recorded steps, each resumable from Redis:
//! 1. the stream record gets the migration in PREPARING (compare-and-set) — unless a scale-out's new shard
//!    keys already exist and were not provisioned by the coordinator: like create, a scale never adopts a key
//!    someone else created (409 `STREAM_PREFIX_ALREADY_EXISTS`, nothing recorded or provisioned);
//! 2. every new shard stream and its Redis consumer group is provisioned for every group of the stream
//!    (a failure answers 503 `REDIS_STREAM_PROVISIONING_FAILED`, nothing is switched, a retry resumes);
//! 3. the stream record switches to the new shard count (ACTIVE) in one write — routing changes here;
//! 4. each group adopts the migration (`rsc_group::migration::adopt`), here or, after a crash, in the
//!    reconciler or on the next routing request;
//! 5. the reconciler collects drain evidence for removed shards (`XINFO GROUPS`: pending 0 and a known lag of
//!    0 for every Redis consumer group on the key), lets them leave the assignment, and completes the
//!    migration; when every group is done the stream's migration ends and removed shard streams are retired
//!    (and the record stops counting the keys that are gone as its own).

use crate::cache::{Cached, GroupName};
use crate::coordinator::{Commit, Coordinator, MAX_CAS_ATTEMPTS};
use crate::error::ApiError;
use crate::error::store_error_text;
use crate::provision::{existing_shards, provision};
use rsc_group::heartbeat::Transition;
use rsc_group::migration::{self, Migration, MigrationError, MigrationState};
use rsc_group::model::{Group, ShardSet};
use rsc_group::stream::StreamRecord;
use rsc_protocol::errors::ErrorCode;
use rsc_protocol::names::{self, shard_stream_key};
use rsc_protocol::validate;
use rsc_protocol::wire::{MigrationActionRequest, ScaleRequest};
use rsc_store::IndexState;
use rsc_store::{CasOutcome, CreateOutcome, RetireOutcome, parse_stream_id};
use serde_json::{Value, json};

/// A stream record and the revision it was read at.
#[derive(Debug, Clone)]
pub struct CachedStream {
    pub record: StreamRecord,
    pub revision: u64,
}

impl From<MigrationError> for ApiError {
    fn from(e: MigrationError) -> Self {
        match e {
            MigrationError::NotFound(id) => ApiError::new(
                ErrorCode::MigrationNotFound,
                format!("migration {id} does not exist for this group"),
            ),
            MigrationError::NotAllowed(why) => ApiError::new(ErrorCode::RollbackNotAllowed, why),
            MigrationError::EpochOverflow(e) => e.into(),
        }
    }
}

/// The state of the stream's active migration as its groups' migration views show it (a group drains on
/// its own, so the stream record's `ACTIVE` can be `DRAINING` there): one state when every group agrees,
/// else each group's.
fn migration_state_in_groups(m: &Migration, groups: &[Cached]) -> String {
    let states: Vec<(&str, &'static str)> = groups
        .iter()
        .map(|c| {
            let state = c
                .group
                .migration(&m.resharding_id)
                .map_or(m.state, |gm| gm.state);
            (c.group.consumer_group.as_str(), state.as_str())
        })
        .collect();
    match states.first() {
        None => m.state.as_str().to_owned(),
        Some((_, first)) if states.iter().all(|(_, s)| s == first) => (*first).to_owned(),
        Some(_) => states
            .iter()
            .map(|(g, s)| format!("{s} in group {g}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn migration_json(m: &Migration) -> Value {
    let iso = |ms: Option<i64>| ms.map(crate::clock::iso_ms);
    json!({
        "reshardingId": m.resharding_id,
        "fromShardCount": m.from_shard_count,
        "toShardCount": m.to_shard_count,
        "state": m.state.as_str(),
        "createdAt": crate::clock::iso_ms(m.created_at_ms),
        "updatedAt": crate::clock::iso_ms(m.updated_at_ms),
        "requestedBy": m.requested_by,
        "reason": m.reason,
        "activatedAt": iso(m.activated_at_ms),
        "drainingAt": iso(m.draining_at_ms),
        "completedAt": iso(m.completed_at_ms),
        "endReason": m.end_reason,
    })
}

impl Coordinator {
    /// The key of the stream record of `prefix`.
    pub fn stream_record_key(&self, prefix: &str) -> String {
        names::stream_record_key(&self.config.store.key_prefix, prefix)
    }

    pub async fn load_stream(&self, prefix: &str) -> Result<Option<CachedStream>, ApiError> {
        let key = self.stream_record_key(prefix);
        let Some(stored) = self.store.stream_record_load(&key).await.map_err(|e| {
            self.note_store_error(&e);
            ApiError::from(e)
        })?
        else {
            return Ok(None);
        };
        let record = StreamRecord::from_json(&stored.aggregate).map_err(|e| {
            ApiError::new(
                ErrorCode::MetadataCorrupt,
                format!("stream record {key} is unreadable: {e}"),
            )
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
    ) -> Result<CachedStream, ApiError> {
        for _ in 0..MAX_CAS_ATTEMPTS {
            if let Some(s) = self.load_stream(prefix).await? {
                return Ok(s);
            }
            let record = StreamRecord::new(prefix, shard_count, self.clock.now_ms());
            let created = self
                .store
                .stream_record_create(
                    &self.stream_record_key(prefix),
                    &record.to_json(),
                    &crate::clock::iso_ms(record.created_at_ms),
                )
                .await
                .map_err(ApiError::from)?;
            if let CreateOutcome::Created { revision, .. } = created {
                return Ok(CachedStream { record, revision });
            }
        }
        Err(ApiError::new(
            ErrorCode::StateVersionConflict,
            "stream record kept changing; retry",
        ))
    }

    /// Starts the stream record afresh for the first group of a stream (a record left by an earlier
    /// lifecycle of the same prefix must not carry its shard count over).
    pub async fn reset_stream(
        &self,
        prefix: &str,
        shard_count: u32,
    ) -> Result<CachedStream, ApiError> {
        for _ in 0..MAX_CAS_ATTEMPTS {
            let Some(old) = self.load_stream(prefix).await? else {
                return self.ensure_stream(prefix, shard_count).await;
            };
            if old.record.shard_count == shard_count && old.record.active_migration.is_none() {
                return Ok(old);
            }
            let fresh = StreamRecord::new(prefix, shard_count, self.clock.now_ms());
            if let Some(s) = self.write_stream(prefix, &old, fresh).await? {
                return Ok(s);
            }
        }
        Err(ApiError::new(
            ErrorCode::StateVersionConflict,
            "stream record kept changing; retry",
        ))
    }

    /// Deletes the stream record once the stream has no group left.
    pub async fn forget_stream_if_unused(&self, prefix: &str) {
        if !self.stream_groups(prefix).await.is_ok_and(|g| g.is_empty()) {
            return;
        }
        if let Ok(Some(s)) = self.load_stream(prefix).await {
            let _ = self
                .store
                .stream_record_delete(&self.stream_record_key(prefix), s.revision)
                .await;
        }
    }

    /// Compare-and-sets a stream record. Ok(None) = lost the race, decide again.
    async fn write_stream(
        &self,
        prefix: &str,
        base: &CachedStream,
        mut next: StreamRecord,
    ) -> Result<Option<CachedStream>, ApiError> {
        next.store_revision = base.revision.checked_add(1).ok_or_else(|| {
            ApiError::new(
                ErrorCode::MetadataCorrupt,
                format!(
                    "stream record {} has a store revision that cannot be incremented; restore it from backup",
                    self.stream_record_key(prefix)
                ),
            )
        })?;
        next.updated_at_ms = self.clock.now_ms();
        match self
            .store
            .stream_record_cas(
                &self.stream_record_key(prefix),
                base.revision,
                &next.to_json(),
                &crate::clock::iso_ms(next.updated_at_ms),
            )
            .await
            .map_err(ApiError::from)?
        {
            CasOutcome::Written { revision, now_ms } => {
                self.clock.observe(now_ms);
                Ok(Some(CachedStream {
                    record: next,
                    revision,
                }))
            }
            _ => Ok(None),
        }
    }

    /// Live groups of a stream, by name.
    pub async fn stream_groups(&self, prefix: &str) -> Result<Vec<GroupName>, ApiError> {
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
    pub async fn update_group<F>(&self, name: &GroupName, mut change: F) -> Result<Cached, ApiError>
    where
        F: FnMut(&mut Group, i64) -> Result<bool, ApiError>,
    {
        let lock = self.cache.lock_for(name);
        let _guard = lock.lock().await;
        for _ in 0..MAX_CAS_ATTEMPTS {
            let base = self.require_group(name).await?;
            let mut next = (*base.group).clone();
            let now = self.clock.now_ms();
            if !change(&mut next, now)? {
                return Ok(base);
            }
            match self.commit(name, &base, Transition::new(next)).await? {
                Commit::Written(c) => return Ok(c),
                Commit::Conflict | Commit::ConditionFailed { .. } => continue,
            }
        }
        Err(ApiError::new(
            ErrorCode::StateVersionConflict,
            "the group kept changing; retry",
        ))
    }

    /// Brings a group in line with its stream record: adopts the active migration, or applies the rollback /
    /// force-complete the stream recorded. Used by scale, routing and the reconciler.
    pub async fn sync_group_to_stream(
        &self,
        name: &GroupName,
        stream: &StreamRecord,
    ) -> Result<Cached, ApiError> {
        let timing = self.timing;
        self.update_group(name, |g, now| {
            let mut changed = false;
            for ended in &stream.history {
                let active_here = g
                    .migration(&ended.resharding_id)
                    .is_some_and(|m| !m.state.is_terminal());
                if !active_here {
                    continue;
                }
                let reason = ended.end_reason.clone().unwrap_or_default();
                changed |= match ended.state {
                    MigrationState::RolledBack => {
                        migration::rollback(g, &ended.resharding_id, &reason, now, &timing)?
                    }
                    MigrationState::ForceCompleted | MigrationState::Aborted => {
                        migration::force_complete(g, &ended.resharding_id, &reason, now, &timing)?
                    }
                    _ => false,
                };
            }
            if let Some(m) = &stream.active_migration
                && m.state == MigrationState::Active
            {
                changed |= migration::adopt(g, m, now, &timing)?;
            }
            Ok(changed)
        })
        .await
    }

    /// `POST /coord/v1/streams/{p}/scale`: scales every group of the stream together.
    pub async fn scale_stream(&self, prefix: &str, req: &ScaleRequest) -> Result<Value, ApiError> {
        validate::validate_stream_prefix(prefix)?;
        let target = match req.target_shard_count {
            Some(n) => validate::validate_shard_count("targetShardCount", n, 0)?,
            None => {
                return Err(ApiError::invalid(
                    "targetShardCount: is required (0 drains and removes every shard)",
                ));
            }
        };
        let requested_by = req.requested_by.clone().unwrap_or_default();
        validate::validate_text("requestedBy", &requested_by, true)?;
        let reason = req.reason.clone().unwrap_or_default();
        validate::validate_text("reason", &reason, true)?;
        self.ensure_running()?;
        let groups = self.stream_groups(prefix).await?;
        if groups.is_empty() {
            return Err(ApiError::new(
                ErrorCode::StreamNotFound,
                format!("stream {prefix:?} has no consumer groups; create it first"),
            ));
        }
        let mut loaded = Vec::new();
        for name in &groups {
            let c = self.require_group(name).await?;
            self.ensure_mutable(&c.group)?;
            if c.group.metadata_correction.is_some() {
                return Err(ApiError::new(
                    ErrorCode::MetadataSyncInProgress,
                    format!(
                        "group {} is in a metadata-correction round; scale after it closes",
                        name.consumer_group
                    ),
                ));
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
                    return Err(ApiError::new(
                        ErrorCode::ActiveMigrationExists,
                        format!(
                            "migration {} ({} → {} shards, {}) is still active; wait for it, roll it back, or force-complete it",
                            m.resharding_id,
                            m.from_shard_count,
                            m.to_shard_count,
                            migration_state_in_groups(m, &loaded)
                        ),
                    ));
                }
                None if stream.record.shard_count == target => {
                    let now = self.clock.now_ms();
                    let noop = Migration {
                        resharding_id: "noop".into(),
                        from_shard_count: target,
                        to_shard_count: target,
                        state: MigrationState::Deprecated,
                        requested_by: requested_by.clone(),
                        reason: reason.clone(),
                        created_at_ms: now,
                        updated_at_ms: now,
                        activated_at_ms: None,
                        draining_at_ms: None,
                        completed_at_ms: Some(now),
                        end_reason: None,
                    };
                    let noops = vec![noop; groups.len()];
                    return Ok(self.scale_response(prefix, target, &groups, &noops));
                }
                None => {
                    self.refuse_foreign_shard_keys(prefix, &stream.record, target)
                        .await?;
                    let now = self.clock.now_ms();
                    let m = Migration {
                        resharding_id: format!("reshard-{}", uuid::Uuid::new_v4()),
                        from_shard_count: stream.record.shard_count,
                        to_shard_count: target,
                        state: MigrationState::Preparing,
                        requested_by: requested_by.clone(),
                        reason: reason.clone(),
                        created_at_ms: now,
                        updated_at_ms: now,
                        activated_at_ms: None,
                        draining_at_ms: None,
                        completed_at_ms: None,
                        end_reason: None,
                    };
                    let mut next = stream.record.clone();
                    // The new keys were checked above: from now on they are the coordinator's.
                    next.provisioned_shard_count = Some(next.provisioned_upto().max(target));
                    next.active_migration = Some(m);
                    match self.write_stream(prefix, &stream, next).await? {
                        Some(s) => stream = s,
                        None => {
                            stream = self
                                .load_stream(prefix)
                                .await?
                                .ok_or_else(|| ApiError::invalid("stream vanished"))?
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
    async fn activate(
        &self,
        prefix: &str,
        mut stream: CachedStream,
        migration: &Migration,
        groups: &[GroupName],
    ) -> Result<CachedStream, ApiError> {
        if stream
            .record
            .active_migration
            .as_ref()
            .is_some_and(|m| m.state != MigrationState::Preparing)
        {
            return Ok(stream);
        }
        if self.config.streams.provisioning_enabled && migration.to_shard_count > 0 {
            for name in groups {
                provision(&self.store, prefix, &name.consumer_group, 0..migration.to_shard_count).await.map_err(|e| {
                    ApiError::new(
                        ErrorCode::RedisStreamProvisioningFailed,
                        format!("{e}; the migration stays PREPARING and routing is unchanged — retry the same scale to resume"),
                    )
                })?;
            }
        }
        for _ in 0..MAX_CAS_ATTEMPTS {
            let mut next = stream.record.clone();
            let Some(m) = next.active_migration.as_mut() else {
                return Ok(stream);
            };
            if m.state != MigrationState::Preparing {
                return Ok(stream);
            }
            let now = self.clock.now_ms();
            m.state = MigrationState::Active;
            m.activated_at_ms = Some(now);
            m.updated_at_ms = now;
            next.shard_count = m.to_shard_count;
            next.routing_version =
                rsc_group::model::incremented("routingVersion", next.routing_version)?;
            match self.write_stream(prefix, &stream, next).await? {
                Some(s) => return Ok(s),
                None => {
                    stream = self
                        .load_stream(prefix)
                        .await?
                        .ok_or_else(|| ApiError::invalid("stream vanished"))?
                }
            }
        }
        Err(ApiError::new(
            ErrorCode::StateVersionConflict,
            "stream record kept changing; retry",
        ))
    }

    fn scale_response(
        &self,
        prefix: &str,
        target: u32,
        groups: &[GroupName],
        migrations: &[Migration],
    ) -> Value {
        // One migration per group, in the order of `affectedConsumerGroups`, each naming its group.
        let migrations: Vec<Value> = groups
            .iter()
            .zip(migrations)
            .map(|(g, m)| {
                let mut v = migration_json(m);
                v["consumerGroup"] = json!(g.consumer_group);
                v
            })
            .collect();
        json!({
            "streamPrefix": prefix,
            "targetShardCount": target,
            "affectedConsumerGroups": groups.iter().map(|g| g.consumer_group.clone()).collect::<Vec<_>>(),
            "migrations": migrations,
        })
    }

    /// A scale-out must not adopt shard keys the coordinator did not provision (a later scale-in would retire
    /// them, data and all): 409 `STREAM_PREFIX_ALREADY_EXISTS`, as create answers, naming the keys. Checked
    /// before anything is recorded or provisioned. Keys below [`StreamRecord::provisioned_upto`] are the
    /// coordinator's own (e.g. a removed shard kept because it received late writes).
    async fn refuse_foreign_shard_keys(
        &self,
        prefix: &str,
        record: &rsc_group::stream::StreamRecord,
        target: u32,
    ) -> Result<(), ApiError> {
        let ours = record.provisioned_upto();
        if !self.config.streams.provisioning_enabled || target <= ours {
            return Ok(());
        }
        let found = existing_shards(&self.store, prefix, ours..target)
            .await
            .map_err(|e| {
                ApiError::new(
                    ErrorCode::RedisUnavailable,
                    format!("Redis is unavailable: {}", store_error_text(&e)),
                )
            })?;
        if found.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = found.iter().map(|s| shard_stream_key(prefix, *s)).collect();
        Err(ApiError::new(
            ErrorCode::StreamPrefixAlreadyExists,
            format!(
                "Redis keys of stream {prefix:?} already exist, were not created by the coordinator and would be \
                 adopted as new shards (and deleted by a later scale-in): {}; delete them, or choose a target \
                 shard count of at most {}",
                keys.join(", "),
                found[0]
            ),
        ))
    }

    /// After removed shards were retired: the record stops counting keys that no longer exist as its own, so
    /// a key created there later by someone else is refused by the next scale-out rather than adopted.
    async fn forget_retired_keys(&self, prefix: &str) {
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
            let Ok(left) = existing_shards(&self.store, prefix, floor..upto).await else {
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
    ) -> Result<Value, ApiError> {
        self.require_group(name).await?;
        let all = self.scale_stream(&name.stream_prefix, req).await?;
        let migrations = all["migrations"].as_array().cloned().unwrap_or_default();
        Ok(migrations
            .iter()
            .find(|m| m["consumerGroup"] == name.consumer_group.as_str())
            .or(migrations.first())
            .cloned()
            .unwrap_or(Value::Null))
    }

    /// Rollback (contract #10) or force-complete of the stream's active migration, applied to every group.
    pub async fn end_migration(
        &self,
        name: &GroupName,
        id: &str,
        req: &MigrationActionRequest,
        end: MigrationState,
    ) -> Result<Value, ApiError> {
        let requested_by = req.requested_by.clone().unwrap_or_default();
        validate::validate_text("requestedBy", &requested_by, true)?;
        let reason = req.reason.clone().unwrap_or_default();
        validate::validate_text("reason", &reason, true)?;
        self.ensure_running()?;
        let group = self.require_group(name).await?;
        self.ensure_mutable(&group.group)?;
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
                return Ok(migration_json(m));
            }
            (Some(m), None, MigrationState::RolledBack) => {
                migration::rollback_check(&group.group, id)?;
                return Err(ApiError::new(
                    ErrorCode::RollbackNotAllowed,
                    format!(
                        "migration {id} is not the stream's active migration ({})",
                        m.state.as_str()
                    ),
                ));
            }
            // Force-complete is idempotent like rollback: repeating it answers the migration it ended.
            (Some(m), None, _)
                if matches!(
                    m.state,
                    MigrationState::ForceCompleted | MigrationState::Aborted
                ) =>
            {
                return Ok(migration_json(m));
            }
            (Some(m), None, _) if m.state.is_terminal() => {
                return Err(ApiError::new(
                    ErrorCode::MigrationAlreadyEnded,
                    format!(
                        "migration {id} already ended ({}), so there is nothing to force-complete; \
                         scale again to change the shard count",
                        m.state.as_str()
                    ),
                ));
            }
            (None, None, _) => return Err(MigrationError::NotFound(id.to_owned()).into()),
            _ => {}
        }
        if let Some(a) = &active {
            if end == MigrationState::RolledBack {
                if a.state == MigrationState::Preparing {
                    return Err(ApiError::new(
                        ErrorCode::RollbackNotAllowed,
                        format!(
                            "migration {id} has not switched routing yet; abort it with force-complete instead"
                        ),
                    ));
                }
                if group.group.metadata_correction.is_some() {
                    return Err(ApiError::new(
                        ErrorCode::MetadataSyncInProgress,
                        "a metadata-correction round is open; retry after it closes",
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
                next.finish(final_state, Some(reason.clone()), self.clock.now_ms());
                match self.write_stream(prefix, &base, next).await? {
                    Some(s) => {
                        for g in self.stream_groups(prefix).await? {
                            self.sync_group_to_stream(&g, &s.record).await?;
                        }
                        break;
                    }
                    None => {
                        base = self
                            .load_stream(prefix)
                            .await?
                            .ok_or_else(|| ApiError::invalid("stream vanished"))?;
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
            Some(m) => Ok(migration_json(m)),
            None => {
                let s = self.load_stream(prefix).await?;
                let m =
                    s.and_then(|s| s.record.history.into_iter().find(|m| m.resharding_id == id));
                m.map(|m| migration_json(&m))
                    .ok_or_else(|| MigrationError::NotFound(id.to_owned()).into())
            }
        }
    }

    /// `GET …/migrations/{id}`: phase, age, per-shard drain progress, rollback eligibility and triage facts.
    pub async fn migration_detail(&self, name: &GroupName, id: &str) -> Result<Value, ApiError> {
        let c = self.require_group(name).await?;
        let g = &c.group;
        let stream = self.load_stream(&name.stream_prefix).await?;
        let m = match g.migration(id) {
            Some(m) => m.clone(),
            None => stream
                .as_ref()
                .and_then(|s| {
                    s.record
                        .active_migration
                        .iter()
                        .chain(&s.record.history)
                        .find(|m| m.resharding_id == id)
                        .cloned()
                })
                .ok_or_else(|| ApiError::from(MigrationError::NotFound(id.to_owned())))?,
        };
        let mut detail = migration_json(&m);
        let removed: Vec<u32> =
            (m.to_shard_count..m.from_shard_count.max(m.to_shard_count)).collect();
        let mut shards = Vec::new();
        for s in removed.iter().copied().chain(
            g.draining_shards
                .iter()
                .copied()
                .filter(|s| !removed.contains(s)),
        ) {
            let owner: Vec<&str> = g
                .members
                .values()
                .filter(|x| x.state.is_live() && x.holds(s))
                .map(|x| x.member_id.as_str())
                .collect();
            let info = self
                .shard_group_info(
                    &shard_stream_key(&name.stream_prefix, s),
                    &name.consumer_group,
                )
                .await;
            shards.push(json!({
                "shardIndex": s, "streamKey": shard_stream_key(&name.stream_prefix, s),
                "draining": g.draining_shards.contains(&s),
                "streamLength": info.length, "pending": info.pending, "lag": info.lag,
                "owners": owner,
                "inCurrentAssignments": g.members.values().any(|x| x.state.is_live() && x.reported_owned.contains(&s)),
                "inRevokeProgress": g.members.values().any(|x| x.state.is_live() && x.revoking.contains_key(&s)),
            }));
        }
        let now = self.clock.now_ms();
        detail["ageSeconds"] = json!((now - m.created_at_ms) as f64 / 1000.0);
        // Drain evidence is ignored until producers' cached routing has certainly expired (drain-grace).
        detail["drainEvidenceFrom"] = json!(crate::clock::iso_ms(self.drain_evidence_from_ms(g)));
        detail["rollbackAllowed"] = json!(
            migration::rollback_check(g, id).is_ok() && m.state != MigrationState::RolledBack
        );
        detail["routingShardCount"] = json!(
            stream
                .as_ref()
                .map_or(g.shard_count, |s| s.record.shard_count)
        );
        detail["consumersConverged"] = json!(g.state != rsc_group::model::GroupState::Reconciling);
        detail["removedShards"] = json!(shards);
        Ok(detail)
    }

    /// XINFO GROUPS evidence for one shard key: length, and pending/lag of `group` (None when unknown).
    async fn shard_group_info(&self, key: &str, group: &str) -> ShardInfo {
        let length = self.store.shard_length(key).await.ok();
        let mut info = ShardInfo {
            length,
            pending: None,
            lag: None,
        };
        if let Ok(Some(groups)) = self.store.shard_groups(key).await {
            for g in &groups {
                if g.name.as_deref() == Some(group) {
                    info.pending = g.pending;
                    info.lag = g.lag;
                }
            }
        }
        info
    }

    /// The stream's `last-generated-id` (`XINFO STREAM`), None when unknown.
    async fn last_generated_id(&self, key: &str) -> Option<(u64, u64)> {
        let info = self.store.shard_stream_info(key).await.ok()??;
        parse_stream_id(info.last_generated_id.as_deref()?)
    }

    /// When drain evidence starts to count for `g`: `coordinator.streams.drain-grace` after its routing last
    /// changed (a migration activated or was rolled back). Before that a producer may still write to a removed shard
    /// with routing it cached, and an empty shard proves nothing.
    pub fn drain_evidence_from_ms(&self, g: &Group) -> i64 {
        // Routing changes when a migration activates, and back again when one is rolled back.
        let changed = g
            .migrations
            .iter()
            .flat_map(|m| {
                let rolled_back = (m.state == MigrationState::RolledBack)
                    .then_some(m.completed_at_ms)
                    .flatten();
                [m.activated_at_ms, rolled_back]
            })
            .flatten()
            .max()
            .unwrap_or(0);
        changed.saturating_add(self.config.streams.drain_grace.ms())
    }

    /// Draining shards whose every Redis consumer group has nothing pending and a known lag of 0 (or whose
    /// stream no longer exists), once the drain grace has passed. A lag Redis cannot compute (null, e.g. after
    /// entries were deleted) is not evidence: such a shard keeps draining until an operator force-completes.
    pub async fn drained_shards(&self, g: &Group) -> ShardSet {
        let mut drained = ShardSet::new();
        if self.clock.now_ms() < self.drain_evidence_from_ms(g) {
            return drained;
        }
        for &s in &g.draining_shards {
            let key = shard_stream_key(&g.stream_prefix, s);
            match self.store.shard_groups(&key).await {
                Ok(Some(groups)) => {
                    let nothing_pending = groups.iter().all(|x| x.pending == Some(0));
                    let lag_zero = groups.iter().all(|x| x.lag == Some(0));
                    // The lag Redis reports can stay above 0 after a restart although every entry was
                    // delivered; then a last-delivered id at or past the stream's last id is the evidence.
                    let all_delivered = || async {
                        let last = self.last_generated_id(&key).await;
                        last.is_some()
                            && groups.iter().all(|x| {
                                x.last_delivered_id.as_deref().and_then(parse_stream_id) >= last
                            })
                    };
                    if nothing_pending && (lag_zero || all_delivered().await) {
                        drained.insert(s);
                    }
                }
                Ok(None) => {
                    drained.insert(s);
                }
                Err(e) => tracing::warn!(
                    key,
                    error = %store_error_text(&e),
                    "drain evidence unavailable"
                ),
            }
        }
        drained
    }

    /// Reconciler step for one stream: resume a PREPARING scale, make groups adopt the active migration,
    /// feed drain evidence (also for shards left draining by a rollback), and end the stream's migration
    /// (retiring removed shards) once every group is done.
    pub async fn reconcile_stream(&self, prefix: &str) {
        let Ok(groups) = self.stream_groups(prefix).await else {
            return;
        };
        let mut stream = match self.load_stream(prefix).await {
            Ok(s) => s,
            Err(_) => return,
        };
        let active = stream
            .as_ref()
            .and_then(|s| s.record.active_migration.clone());
        if let (Some(s), Some(a)) = (stream.clone(), &active)
            && a.state == MigrationState::Preparing
        {
            match self.activate(prefix, s, a, &groups).await {
                Ok(s) => stream = Some(s),
                Err(e) => {
                    return tracing::warn!(stream = prefix, error = %e, "resuming a PREPARING migration failed");
                }
            }
        }
        let mut all_done = true;
        for name in &groups {
            let synced = match &stream {
                Some(s) => self.sync_group_to_stream(name, &s.record).await,
                None => self.require_group(name).await,
            };
            let Ok(c) = synced else {
                all_done = false;
                continue;
            };
            let c = if c.group.draining_shards.is_empty() {
                c
            } else {
                let drained = self.drained_shards(&c.group).await;
                let timing = self.timing;
                if drained.is_empty() {
                    c
                } else {
                    self.update_group(name, |g, now| {
                        Ok(migration::release_drained(g, &drained, now, &timing)?)
                    })
                    .await
                    .unwrap_or(c)
                }
            };
            if let Some(a) = &active {
                all_done &= c
                    .group
                    .migration(&a.resharding_id)
                    .is_some_and(|m| m.state.is_terminal());
            }
        }
        if let Some(a) = active
            && a.state != MigrationState::Preparing
            && all_done
        {
            self.complete_stream_migration(prefix, &a).await;
        }
    }

    async fn complete_stream_migration(&self, prefix: &str, active: &Migration) {
        for _ in 0..MAX_CAS_ATTEMPTS {
            let Ok(Some(base)) = self.load_stream(prefix).await else {
                return;
            };
            if base
                .record
                .active_migration
                .as_ref()
                .is_none_or(|m| m.resharding_id != active.resharding_id)
            {
                return;
            }
            let mut next = base.record.clone();
            next.finish(MigrationState::Deprecated, None, self.clock.now_ms());
            if let Ok(Some(_)) = self.write_stream(prefix, &base, next).await {
                if self.config.streams.retire_removed_shards && active.is_scale_in() {
                    self.retire_shards(prefix, active.to_shard_count..active.from_shard_count)
                        .await;
                    self.forget_retired_keys(prefix).await;
                }
                tracing::info!(stream = prefix, id = ?active.resharding_id, "migration complete");
                return;
            }
        }
    }
}

impl Coordinator {
    /// Retires removed shard streams (`Store::shard_retire_if_drained`: deleted only if every Redis
    /// consumer group on it has read everything, atomically); a shard that received a late write is kept
    /// and logged.
    async fn retire_shards(&self, prefix: &str, shards: std::ops::Range<u32>) {
        for s in shards {
            let key = shard_stream_key(prefix, s);
            match self.store.shard_retire_if_drained(&key).await {
                Ok(RetireOutcome::KeptUnread) => tracing::warn!(
                    key,
                    "removed shard received writes after it drained; kept, not deleted"
                ),
                Ok(RetireOutcome::Retired) => tracing::info!(key, "retired removed shard stream"),
                Err(e) => tracing::warn!(
                    key,
                    error = %store_error_text(&e),
                    "could not retire removed shard stream"
                ),
            }
        }
    }
}

struct ShardInfo {
    length: Option<i64>,
    pending: Option<i64>,
    lag: Option<i64>,
}
