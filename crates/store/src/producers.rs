//! Producers of a stream as the coordinator sees them, for a scale's producer quiesce: when each last
//! fetched routing, and which resharding each last reported quiesced for.
//!
//! Two hashes in the stream's hash tag (key names are the caller's: `rsc_protocol::names::producers_*`):
//! `seen` maps a producer id to the epoch ms of its last routing fetch; `quiesced` maps it to its last
//! report, `<reshardingId> <observedRoutingVersion> <epoch ms>`. Each write is one HSET, so a sighting never
//! overwrites a report. Entries not seen for a while are removed by [`Store::producers_forget`].

use crate::error::StoreError;
use crate::store::Store;
use std::collections::BTreeMap;

/// One producer's entries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProducerEntry {
    pub last_seen_ms: i64,
    /// `(reshardingId, observedRoutingVersion, reported at ms)` of its last quiesced report.
    pub quiesced: Option<(String, i64, i64)>,
}

impl Store {
    /// Notes that `producer` fetched routing at `now_ms`.
    pub async fn producer_seen(
        &self,
        seen_key: &str,
        producer: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let _: i64 = redis::cmd("HSET")
            .arg(seen_key)
            .arg(producer)
            .arg(now_ms)
            .query_async(&mut self.connection())
            .await?;
        Ok(())
    }

    /// Records `producer`'s quiesced report, then that it was seen at `now_ms`.
    pub async fn producer_quiesced(
        &self,
        seen_key: &str,
        quiesced_key: &str,
        producer: &str,
        resharding_id: &str,
        routing_version: i64,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let _: i64 = redis::cmd("HSET")
            .arg(quiesced_key)
            .arg(producer)
            .arg(format!("{resharding_id} {routing_version} {now_ms}"))
            .query_async(&mut self.connection())
            .await?;
        self.producer_seen(seen_key, producer, now_ms).await
    }

    /// Every producer of the stream with its entries, by id. Unreadable values (not written by rsc) are
    /// left out.
    pub async fn producers(
        &self,
        seen_key: &str,
        quiesced_key: &str,
    ) -> Result<BTreeMap<String, ProducerEntry>, StoreError> {
        let seen: BTreeMap<String, String> = redis::cmd("HGETALL")
            .arg(seen_key)
            .query_async(&mut self.connection())
            .await?;
        let quiesced: BTreeMap<String, String> = redis::cmd("HGETALL")
            .arg(quiesced_key)
            .query_async(&mut self.connection())
            .await?;
        let mut out = BTreeMap::new();
        for (id, ms) in seen {
            if let Ok(ms) = ms.parse::<i64>() {
                out.insert(
                    id,
                    ProducerEntry {
                        last_seen_ms: ms,
                        quiesced: None,
                    },
                );
            }
        }
        for (id, report) in quiesced {
            let mut parts = report.split(' ');
            let (Some(rid), Some(version), Some(at), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let (Ok(version), Ok(at)) = (version.parse(), at.parse()) else {
                continue;
            };
            if let Some(e) = out.get_mut(&id) {
                e.quiesced = Some((rid.to_owned(), version, at));
            }
        }
        Ok(out)
    }

    /// Deletes both hashes (the stream's last group is gone). One DEL: they share the stream's hash tag.
    pub async fn producers_clear(
        &self,
        seen_key: &str,
        quiesced_key: &str,
    ) -> Result<(), StoreError> {
        let _: i64 = redis::cmd("DEL")
            .arg(seen_key)
            .arg(quiesced_key)
            .query_async(&mut self.connection())
            .await?;
        Ok(())
    }

    /// Removes these producers from both hashes (those not seen for long).
    pub async fn producers_forget(
        &self,
        seen_key: &str,
        quiesced_key: &str,
        producers: &[String],
    ) -> Result<(), StoreError> {
        if producers.is_empty() {
            return Ok(());
        }
        for key in [seen_key, quiesced_key] {
            let _: i64 = redis::cmd("HDEL")
                .arg(key)
                .arg(producers)
                .query_async(&mut self.connection())
                .await?;
        }
        Ok(())
    }
}
