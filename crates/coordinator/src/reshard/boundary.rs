//! Guarded publish in the coordinator: the routing boundary of every shard, raised when routing switches, and
//! the plain appends old shards received after the switch.
//!
//! When a scale switches routing (and when a rollback switches it back) the coordinator raises each shard's
//! boundary, old and new, to the new routing version (`Store::raise_routing_floor`, idempotent): from then on
//! an SDK producer still holding the old routing is refused, refreshes and appends on the right shard. A
//! producer that learnt of the switch first has raised the boundary itself with its first append; either way
//! the raise records the shard's switch point. The coordinator annotates every boundary with the switch's
//! counts and ordering (`BoundaryScale`), which SDK consumers read to fence themselves until their answers
//! reflect the switch. On an ordered stream the old shards' switch points are then recorded on the migration
//! (`record_switch_points`): groups adopt the switch once they are known. The reconciler repeats both while
//! the migration is active, so a coordinator that stopped between the switch and the raise leaves no shard
//! unguarded and no group waiting.
//!
//! Plain-XADD clients bypass the script. On each old shard the store counts what was appended after the
//! switch point and how much of it came through guarded publish; the difference is
//! `unorderedAppendsAfterSwitch` (the migration view, and the gauge of the same name). Records carry no
//! partition key, so on an old shard that survives the scale every plain append after the switch is counted
//! (an upper bound: a plain client with fresh routing appending a key that still routes there counts too); on
//! a removed shard every key routes elsewhere, so the count is exact.

use super::*;
use rsc_protocol::ordering::{BoundaryScale, Ordering};
use serde::Serialize;
use std::collections::BTreeMap;

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

/// The annotation of a switch from `from` to `to` shards at `record`'s routing version.
pub(super) fn boundary_scale(record: &StreamRecord, from: u32, to: u32) -> BoundaryScale {
    BoundaryScale {
        version: record.routing_version,
        from,
        to,
        ordered: record.ordering == Ordering::Key,
    }
}

impl Resharding<'_> {
    /// Raises the boundary of every shard `0..max(from, to)` of `scale` (old and new) to its routing version,
    /// annotated with it. Returns the switch points of the shards whose boundary now stands at that version.
    /// Best effort per shard: a failure is logged, and the reconciler raises again.
    pub(super) async fn raise_routing_boundaries(
        &self,
        prefix: &str,
        scale: BoundaryScale,
    ) -> BTreeMap<u32, String> {
        let annotation = scale.encode();
        let mut points = BTreeMap::new();
        for s in 0..scale.from.max(scale.to) {
            let key = shard_stream_key(prefix, s);
            match self
                .store()
                .raise_routing_floor(
                    &key,
                    &names::shard_routing_key(&key),
                    scale.version,
                    &annotation,
                )
                .await
            {
                Ok(b) if b.floor == scale.version => {
                    points.insert(s, b.switch_id);
                }
                Ok(b) => {
                    tracing::warn!(
                        key,
                        floor = b.floor,
                        version = scale.version,
                        "routing boundary already raised by a later switch"
                    );
                }
                Err(e) => {
                    tracing::warn!(key, error = %store_error_text(&e), "routing boundary not raised (guarded publish); the reconciler retries");
                }
            }
        }
        points
    }

    /// Raises the boundaries of the switch `record`'s active migration made and, on an ordered stream whose
    /// scale has children, records the old shards' switch points on the migration once all are known.
    pub(super) async fn guard_switch(&self, prefix: &str, stream: CachedStream) -> CachedStream {
        let Some(m) = stream.record.active_migration.clone() else {
            return stream;
        };
        let scale = boundary_scale(&stream.record, m.from_shard_count, m.to_shard_count);
        let points = self.raise_routing_boundaries(prefix, scale).await;
        if !ordering::needs_switch_points(&stream.record)
            || !m.switch_points.is_empty()
            || (0..m.from_shard_count).any(|s| !points.contains_key(&s))
        {
            return stream;
        }
        let old: BTreeMap<u32, String> = points
            .into_iter()
            .filter(|(s, _)| *s < m.from_shard_count)
            .collect();
        self.record_switch_points(prefix, stream, &m.resharding_id, old)
            .await
    }

    /// Records `points` on the stream's active migration `id` (compare-and-set; kept as they are when some are
    /// recorded already). Returns the record as it then stands.
    async fn record_switch_points(
        &self,
        prefix: &str,
        mut stream: CachedStream,
        id: &str,
        points: BTreeMap<u32, String>,
    ) -> CachedStream {
        for _ in 0..MAX_CAS_ATTEMPTS {
            let mut next = stream.record.clone();
            match next.active_migration.as_mut() {
                Some(m) if m.resharding_id == id && m.switch_points.is_empty() => {
                    m.switch_points = points.clone();
                }
                _ => return stream,
            }
            match self.write_stream(prefix, &stream, next).await {
                Ok(Some(s)) => {
                    tracing::info!(
                        stream = prefix,
                        id,
                        shards = points.len(),
                        "switch points recorded (ordered stream)"
                    );
                    return s;
                }
                Ok(None) => match self.load_stream(prefix).await {
                    Ok(Some(s)) => stream = s,
                    _ => return stream,
                },
                Err(e) => {
                    tracing::warn!(stream = prefix, id, error = %e, "switch points not recorded; the reconciler retries");
                    return stream;
                }
            }
        }
        stream
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

    /// Reconciler step for a stream whose migration switched routing: raise the boundaries again (idempotent),
    /// record an ordered migration's switch points if they are not yet, and publish each old shard's plain
    /// appends after the switch as a gauge (capped like shard series). Returns the record as it then stands.
    /// After the migration ended, the gauge keeps being updated for [`WATCH_AFTER_END_MS`]: stale plain
    /// clients may still append to an old shard.
    pub(super) async fn watch_switched_shards(
        &self,
        prefix: &str,
        stream: CachedStream,
    ) -> CachedStream {
        let stream = match &stream.record.active_migration {
            Some(m) if m.state == MigrationState::Preparing => return stream,
            Some(_) => self.guard_switch(prefix, stream).await,
            None => stream,
        };
        let record = &stream.record;
        let m = match (&record.active_migration, record.history.last()) {
            (Some(m), _) => m,
            (None, Some(m))
                if m.activated_at_ms.is_some()
                    && m.completed_at_ms.is_some_and(|t| {
                        self.clock().now_ms().saturating_sub(t) < WATCH_AFTER_END_MS
                    }) =>
            {
                m
            }
            (None, _) => return stream,
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
        stream
    }
}
