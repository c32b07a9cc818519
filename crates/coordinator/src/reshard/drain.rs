//! Drain evidence for removed shards (XINFO GROUPS pending/lag) and the reconciler's step that completes a
//! stream's migration and retires drained shard streams.

use super::*;

impl Resharding<'_> {
    /// XINFO GROUPS evidence for one shard key: length, and pending/lag of `group` (None when unknown).
    pub(super) async fn shard_group_info(&self, key: &str, group: &str) -> ShardInfo {
        let length = self.store().shard_length(key).await.ok();
        let mut info = ShardInfo {
            length,
            pending: None,
            lag: None,
        };
        if let Ok(Some(groups)) = self.store().shard_groups(key).await {
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
    pub(super) async fn last_generated_id(&self, key: &str) -> Option<(u64, u64)> {
        let info = self.store().shard_stream_info(key).await.ok()??;
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
        changed.saturating_add(self.config().streams.drain_grace.ms())
    }

    /// Draining shards whose every Redis consumer group has nothing pending and a known lag of 0 (or whose
    /// stream no longer exists), once the drain grace has passed. A lag Redis cannot compute (null, e.g. after
    /// entries were deleted) is not evidence: such a shard keeps draining until an operator force-completes.
    pub async fn drained_shards(&self, g: &Group) -> ShardSet {
        let mut drained = ShardSet::new();
        if self.clock().now_ms() < self.drain_evidence_from_ms(g) {
            return drained;
        }
        for &s in &g.draining_shards {
            let key = shard_stream_key(&g.stream_prefix, s);
            match self.store().shard_groups(&key).await {
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
        if let Some(s) = stream.take() {
            stream = Some(self.watch_switched_shards(prefix, s).await);
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
                let timing = self.timing();
                if drained.is_empty() {
                    c
                } else {
                    self.update_group(name, |g, now| {
                        Ok(migration::release_drained(g, &drained, now, timing)?)
                    })
                    .await
                    .unwrap_or(c)
                }
            };
            let c = if c.group.ordering_gates.is_empty() {
                c
            } else {
                self.open_drained_gates(name, c).await
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

    pub(super) async fn complete_stream_migration(&self, prefix: &str, active: &Migration) {
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
            next.finish(MigrationState::Deprecated, None, self.clock().now_ms());
            if let Ok(Some(_)) = self.write_stream(prefix, &base, next).await {
                if self.config().streams.retire_removed_shards && active.is_scale_in() {
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

impl Resharding<'_> {
    /// Retires removed shard streams (`Store::shard_retire_if_drained`: deleted only if every Redis
    /// consumer group on it has read everything, atomically); a shard that received a late write is kept
    /// and logged.
    async fn retire_shards(&self, prefix: &str, shards: std::ops::Range<u32>) {
        for s in shards {
            let key = shard_stream_key(prefix, s);
            match self.store().shard_retire_if_drained(&key).await {
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

/// XINFO GROUPS evidence for one shard key (None when unknown).
pub(super) struct ShardInfo {
    pub(super) length: Option<i64>,
    pub(super) pending: Option<i64>,
    pub(super) lag: Option<i64>,
}
