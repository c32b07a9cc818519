//! Guarded publish in the coordinator: the routing boundary of every shard, raised when routing switches, and
//! the plain appends old shards received after the switch.
//!
//! When a scale switches routing (and when a rollback switches it back) the coordinator raises each shard's
//! boundary, old and new, to the new routing version (`Store::raise_routing_floor`, idempotent): from then on
//! an SDK producer still holding the old routing is refused, refreshes and appends on the right shard. The
//! reconciler repeats the raise while the migration is active, so a coordinator that stopped between the
//! switch and the raise leaves no shard unguarded.
//!
//! Plain-XADD clients bypass the script. On each old shard the store counts what was appended after the
//! switch point and how much of it came through guarded publish; the difference is
//! `unorderedAppendsAfterSwitch` (the migration view, and the gauge of the same name). Records carry no
//! partition key, so on an old shard that survives the scale every plain append after the switch is counted
//! (an upper bound: a plain client with fresh routing appending a key that still routes there counts too); on
//! a removed shard every key routes elsewhere, so the count is exact.

use super::*;
use serde::Serialize;

/// One old shard of a migration, for guarded publish: its switch point and the plain appends after it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SwitchedShard {
    pub shard_index: u32,
    pub stream_key: String,
    /// The shard's routing boundary: the routing version of the switch these counts are from.
    pub routing_boundary: i64,
    /// The shard stream's last id at the switch.
    pub switch_id: String,
    /// Entries appended after the switch point.
    pub appended_after_switch: i64,
    /// Of those, appends that bypassed guarded publish (plain XADD): at-least-once, but not ordered.
    pub unordered_appends_after_switch: i64,
}

/// How long after a migration ended its old shards' plain appends are still watched (the gauge).
pub const WATCH_AFTER_END_MS: i64 = 10 * 60 * 1000;

impl Resharding<'_> {
    /// Raises the boundary of every shard a switch to `record`'s routing touches (old and new) to its
    /// routing version. Best effort per shard: a failure is logged, and the reconciler raises again.
    pub(super) async fn raise_routing_boundaries(&self, prefix: &str, record: &StreamRecord) {
        let mut upto = record.shard_count;
        if let Some(m) = &record.active_migration {
            upto = upto.max(m.from_shard_count).max(m.to_shard_count);
        }
        for s in 0..upto {
            let key = shard_stream_key(prefix, s);
            if let Err(e) = self
                .store()
                .raise_routing_floor(
                    &key,
                    &names::shard_routing_key(&key),
                    record.routing_version,
                )
                .await
            {
                tracing::warn!(key, error = %store_error_text(&e), "routing boundary not raised (guarded publish); the reconciler retries");
            }
        }
    }

    /// The old shards `0..from` of a switched migration with their switch points (shards with none left out).
    pub(super) async fn switched_shards(&self, prefix: &str, from: u32) -> Vec<SwitchedShard> {
        let mut out = Vec::new();
        for s in 0..from {
            let key = shard_stream_key(prefix, s);
            match self
                .store()
                .appends_after_switch(&key, &names::shard_routing_key(&key))
                .await
            {
                Ok(Some(p)) => out.push(SwitchedShard {
                    shard_index: s,
                    stream_key: key,
                    routing_boundary: p.floor,
                    unordered_appends_after_switch: p.plain_appends(),
                    switch_id: p.switch_id,
                    appended_after_switch: p.appended,
                }),
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(key, error = %store_error_text(&e), "switch point unavailable")
                }
            }
        }
        out
    }

    /// Reconciler step for a stream whose migration switched routing: raise the boundaries again (idempotent)
    /// and publish each old shard's plain appends after the switch as a gauge (capped like shard series).
    /// After the migration ended, the gauge keeps being updated for [`WATCH_AFTER_END_MS`]: stale plain
    /// clients may still append to an old shard.
    pub(super) async fn watch_switched_shards(&self, prefix: &str, record: &StreamRecord) {
        let m = match (&record.active_migration, record.history.last()) {
            (Some(m), _) if m.state == MigrationState::Preparing => return,
            (Some(m), _) => {
                self.raise_routing_boundaries(prefix, record).await;
                m
            }
            (None, Some(m))
                if m.activated_at_ms.is_some()
                    && m.completed_at_ms.is_some_and(|t| {
                        self.clock().now_ms().saturating_sub(t) < WATCH_AFTER_END_MS
                    }) =>
            {
                m
            }
            (None, _) => return,
        };
        let cap = self.config().metrics.max_shard_series;
        for s in self
            .switched_shards(prefix, m.from_shard_count.min(cap))
            .await
        {
            self.metrics().set_unordered_appends(
                prefix,
                s.shard_index,
                s.unordered_appends_after_switch,
            );
        }
    }
}
