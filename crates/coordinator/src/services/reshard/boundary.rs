//! Guarded publish in the coordinator: the routing boundary of every shard, raised when routing switches, and
//! the plain appends old shards received after the switch.
//!
//! When a scale switches routing (and when a rollback switches it back) the coordinator raises each shard's
//! boundary, old and new, to the new routing version (`Store::raise_routing_floor`, idempotent): from then on
//! an SDK producer still holding the old routing is refused, refreshes and appends on the right shard. A
//! producer that learnt of the switch first has raised the boundary itself with its first append; either way
//! the raise records the shard's switch point. The coordinator annotates every boundary with the switch's
//! counts and ordering (`BoundaryScale`), which SDK consumers read to fence themselves until their answers
//! reflect the switch. When to raise, and recording an ordered switch's switch points on the migration
//! afterwards, is the core's (`rsc_group::replica::reshard::guard`); the reconciler repeats both while the
//! migration is active, so a coordinator that stopped between the switch and the raise leaves no shard
//! unguarded and no group waiting. Here: the raise itself, and the plain appends after a switch.
//!
//! Plain-XADD clients bypass the script. On each old shard the store counts what was appended after the
//! switch point and how much of it came through guarded publish; the difference is
//! `unorderedAppendsAfterSwitch` (the migration view, and the gauge of the same name). Records carry no
//! partition key, so on an old shard that survives the scale every plain append after the switch is counted
//! (an upper bound: a plain client with fresh routing appending a key that still routes there counts too); on
//! a removed shard every key routes elsewhere, so the count is exact.

use crate::http::error::store_error_text;
use crate::runtime::coordinator::Resharding;
use crate::runtime::shown_keys;
use rsc_group::reshard::record::raised_shards;
use rsc_protocol::ordering::BoundaryScale;
use rsc_store::Shard;
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

impl Resharding<'_> {
    /// Raises the routing ceiling of every shard the record routes or migrates (`0..max(shardCount, the active
    /// migration's counts)`) to its routing version: written before a record that publishes a new version,
    /// so an SDK producer holding it may raise a boundary to it, and nobody above it (issue #32, finding 11:
    /// one EVAL with 2^53 - 1 raised a shard's boundary for good and stopped every SDK producer of it).
    pub async fn publish_routing_ceilings(
        &self,
        prefix: &str,
        record: &rsc_group::stream::StreamRecord,
    ) -> Result<(), crate::domain_error::CoordError> {
        let mut upto = record.shard_count;
        if let Some(m) = &record.active_migration {
            upto = upto.max(m.from_shard_count).max(m.to_shard_count);
        }
        let shards: Vec<Shard> = (0..upto).map(|s| Shard::new(prefix, s)).collect();
        self.store()
            .raise_routing_ceilings(&shards, record.routing_version)
            .await
            .map_err(crate::domain_error::CoordError::from)
    }

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
        for s in raised_shards(&scale) {
            let shard = Shard::new(prefix, s);
            let key = shown_keys::shard_stream(&shard);
            match self
                .store()
                .raise_routing_floor(&shard, scale.version, &annotation)
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

    /// The old shards `0..from` of a switched migration with their switch points (shards with none left out).
    pub(super) async fn switched_shards(&self, prefix: &str, from: u32) -> Vec<SwitchedShard> {
        let mut out = Vec::new();
        for s in 0..from {
            let shard = Shard::new(prefix, s);
            let key = shown_keys::shard_stream(&shard);
            match self.store().appends_after_switch(&shard).await {
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

    /// Publishes the plain appends after the switch of the old shards `0..old_shards` of the watched
    /// migration as a gauge (capped like shard series).
    pub(super) async fn publish_unordered_appends(&self, prefix: &str, old_shards: u32) {
        let cap = self.config().metrics.max_shard_series;
        for s in self.switched_shards(prefix, old_shards.min(cap)).await {
            self.metrics().set_unordered_appends(
                prefix,
                s.shard_index,
                s.unordered_appends_after_switch,
            );
        }
    }
}
