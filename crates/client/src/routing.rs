//! The producer's routing cache: pure bookkeeping of which routing table may be used, and until when.
//!
//! - A table fetched at `t` may be used until `t + lease` (the **routing lease**), even if the coordinator is
//!   down meanwhile; after that, publishing fails closed with a retryable error until a refresh succeeds.
//! - It is refreshed every `refresh_interval` (shorter than the lease) while the coordinator answers.
//! - Versions only move forward: a table with a lower `metadataVersion` than one already seen is refused
//!   and counted (a metadata rollback, runbook "Metadata Durability"); the cached table is kept but its
//!   lease is not renewed, so the producer fails closed if the coordinator keeps answering with the older
//!   version. The coordinator "says otherwise" by answering 404 for the group (its lifecycle ended): then
//!   the cache is forgotten and the next table is accepted whatever its version.
//!
//! Time is passed in; nothing here reads a clock.

use rsc_protocol::routing::shard_for_key;
use rsc_protocol::wire::ProducerRoutingResponse;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the cache can offer for a publish at a given instant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lookup {
    /// Use this table; no refresh is due.
    Fresh(Arc<ProducerRoutingResponse>),
    /// Use this table (its lease is valid), but a refresh is due.
    Stale(Arc<ProducerRoutingResponse>),
    /// No usable table: refresh, and fail closed if that fails.
    Expired,
}

/// What happened to a fetched table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offer {
    Accepted,
    /// Lower metadataVersion than already seen: refused.
    Regressed,
}

#[derive(Debug, Default)]
pub(crate) struct RoutingCache {
    table: Option<Arc<ProducerRoutingResponse>>,
    fetched_at: Option<Instant>,
    valid_until: Option<Instant>,
    highest_version: i64,
    /// A stale-route signal asked for a refresh before the interval is up.
    refresh_requested: bool,
    /// How many refused (older) tables were offered.
    pub regressions: u64,
}

impl RoutingCache {
    pub fn lookup(&self, now: Instant, refresh_interval: Duration) -> Lookup {
        match (&self.table, self.fetched_at, self.valid_until) {
            (Some(t), Some(fetched), Some(until)) if now < until => {
                if !self.refresh_requested
                    && now.saturating_duration_since(fetched) < refresh_interval
                {
                    Lookup::Fresh(t.clone())
                } else {
                    Lookup::Stale(t.clone())
                }
            }
            _ => Lookup::Expired,
        }
    }

    /// Offers a table fetched (requested) at `fetched_at`.
    pub fn offer(
        &mut self,
        table: ProducerRoutingResponse,
        fetched_at: Instant,
        lease: Duration,
    ) -> Offer {
        if table.metadata_version < self.highest_version {
            self.regressions += 1;
            // Not renewed: if this persists, the lease runs out and publishing fails closed.
            self.fetched_at = Some(fetched_at);
            return Offer::Regressed;
        }
        self.highest_version = table.metadata_version;
        self.refresh_requested = false;
        self.table = Some(Arc::new(table));
        self.fetched_at = Some(fetched_at);
        self.valid_until = Some(fetched_at + lease);
        Offer::Accepted
    }

    /// Marks the table as due for refresh now (after a stale-route signal), keeping its lease.
    pub fn mark_stale(&mut self) {
        self.refresh_requested = true;
    }

    /// The coordinator no longer knows the group: forget everything, including the highest version seen.
    pub fn forget(&mut self) {
        *self = RoutingCache {
            regressions: self.regressions,
            ..RoutingCache::default()
        };
    }

    pub fn highest_version(&self) -> i64 {
        self.highest_version
    }
}

/// Where a key goes under `table`: `(shard index, stream key)`, or None if the stream has no shards.
pub(crate) fn route<'t>(table: &'t ProducerRoutingResponse, key: &[u8]) -> Option<(u32, &'t str)> {
    let shard = shard_for_key(key, table.shard_count)?;
    table
        .shards
        .get(shard as usize)
        .filter(|s| s.shard_index == shard)
        .map(|s| (shard, s.stream_key.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsc_protocol::wire::RoutingShard;

    fn table(version: i64, n: u32) -> ProducerRoutingResponse {
        ProducerRoutingResponse {
            stream_prefix: "orders".into(),
            consumer_group: "orders".into(),
            metadata_version: version,
            shard_count: n,
            stream_key_pattern: "orders:{shardIndex}".into(),
            shards: (0..n)
                .map(|i| RoutingShard {
                    shard_index: i,
                    stream_key: format!("orders:{i}"),
                    redis_slot: 0,
                })
                .collect(),
            routing_version: None,
            quiesce: None,
        }
    }

    #[test]
    fn lease_and_refresh_interval() {
        let mut c = RoutingCache::default();
        let t0 = Instant::now();
        let refresh = Duration::from_secs(5);
        assert_eq!(c.lookup(t0, refresh), Lookup::Expired);
        assert_eq!(
            c.offer(table(3, 4), t0, Duration::from_secs(30)),
            Offer::Accepted
        );
        assert!(matches!(
            c.lookup(t0 + Duration::from_secs(1), refresh),
            Lookup::Fresh(_)
        ));
        assert!(matches!(
            c.lookup(t0 + Duration::from_secs(6), refresh),
            Lookup::Stale(_)
        ));
        assert_eq!(
            c.lookup(t0 + Duration::from_secs(30), refresh),
            Lookup::Expired
        );
    }

    #[test]
    fn versions_only_move_forward_unless_the_group_is_gone() {
        let mut c = RoutingCache::default();
        let t0 = Instant::now();
        let lease = Duration::from_secs(30);
        c.offer(table(5, 4), t0, lease);
        let later = t0 + Duration::from_secs(20);
        assert_eq!(c.offer(table(4, 8), later, lease), Offer::Regressed);
        assert_eq!(c.regressions, 1);
        assert_eq!(c.highest_version(), 5);
        // The old table stays, and its lease is not renewed by the refused offer.
        match c.lookup(later, Duration::from_secs(60)) {
            Lookup::Fresh(t) | Lookup::Stale(t) => assert_eq!(t.shard_count, 4),
            Lookup::Expired => panic!("lease should still be valid"),
        }
        assert_eq!(
            c.lookup(t0 + lease, Duration::from_secs(60)),
            Lookup::Expired
        );
        // Equal and higher versions are accepted.
        assert_eq!(c.offer(table(5, 4), later, lease), Offer::Accepted);
        assert_eq!(c.offer(table(9, 8), later, lease), Offer::Accepted);
        c.forget();
        assert_eq!(c.offer(table(1, 2), later, lease), Offer::Accepted);
        assert_eq!(c.regressions, 1);
    }

    #[test]
    fn mark_stale_forces_a_refresh_but_keeps_the_lease() {
        let mut c = RoutingCache::default();
        let t0 = Instant::now();
        c.offer(table(1, 4), t0, Duration::from_secs(30));
        c.mark_stale();
        assert!(matches!(
            c.lookup(t0, Duration::from_secs(5)),
            Lookup::Stale(_)
        ));
    }

    #[test]
    fn routes_follow_the_contract_hash() {
        let t = table(1, 8);
        assert_eq!(route(&t, b"order-123"), Some((5, "orders:5")));
        assert_eq!(route(&t, "café".as_bytes()), Some((0, "orders:0")));
        let t3 = table(1, 3);
        assert_eq!(route(&t3, b"user-42"), Some((2, "orders:2")));
        assert_eq!(route(&table(1, 0), b"x"), None);
    }
}
