//! The reconciler's pass over a stream (the core's `StreamPass`: resume, guard, sync, drain evidence,
//! completion), retiring removed shard streams, and the drain facts the migration view shows.

use super::perform::Performer;
use crate::http::error::store_error_text;
use crate::runtime::coordinator::Resharding;
use crate::runtime::shown_keys;
use rsc_group::model::Group;
use rsc_group::replica::reshard::pass::StreamPass;
use rsc_group::reshard::evidence::drain_evidence_from_ms;
use rsc_store::{RetireOutcome, Shard};

impl Resharding<'_> {
    /// When drain evidence starts to count for `g`: `coordinator.streams.drain-grace` after its routing last
    /// changed (a migration activated or was rolled back). Before that a producer may still write to a removed
    /// shard with routing it cached, and an empty shard proves nothing.
    pub fn drain_evidence_from_ms(&self, g: &Group) -> i64 {
        drain_evidence_from_ms(g, self.config().streams.drain_grace.ms())
    }

    /// Reconciler step for one stream: resume a PREPARING scale, make groups adopt the active migration,
    /// feed drain evidence (also for shards left draining by a rollback) and gated children's parents'
    /// evidence, and end the stream's migration (retiring removed shards) once every group is done.
    /// `listed`: the stream's live groups (sorted) if the caller has just read them from the index; else the
    /// pass reads the index.
    pub async fn reconcile_stream(&self, prefix: &str, listed: Option<Vec<String>>) {
        let mut p = Performer::on(prefix);
        p.listed = listed;
        let (mut pass, first) = StreamPass::start(&self.settings());
        self.drive(&mut p, &mut pass, first).await;
    }

    /// XINFO GROUPS evidence for one shard key: length, and pending/lag of `group` (None when unknown).
    pub(super) async fn shard_group_info(&self, shard: &Shard, group: &str) -> ShardInfo {
        let length = self.store().shard_length(shard).await.ok();
        let mut info = ShardInfo {
            length,
            pending: None,
            lag: None,
        };
        if let Ok(Some(groups)) = self.store().shard_groups(shard).await {
            for g in &groups {
                if g.name.as_deref() == Some(group) {
                    info.pending = g.pending;
                    info.lag = g.lag;
                }
            }
        }
        info
    }

    /// Retires removed shard streams (`Store::shard_retire_if_drained`: deleted only if every Redis
    /// consumer group on it has read everything, atomically); a shard that received a late write is kept
    /// and logged.
    pub(super) async fn retire_shards(&self, prefix: &str, shards: std::ops::Range<u32>) {
        for s in shards {
            let shard = Shard::new(prefix, s);
            let key = shown_keys::shard_stream(&shard);
            match self.store().shard_retire_if_drained(&shard).await {
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
