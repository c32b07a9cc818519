//! Producers of a stream as the coordinator sees them, for a scale's producer quiesce and for who may raise
//! a rollback suspicion: when each first and last fetched routing, and which resharding each last reported
//! quiesced for.
//!
//! Three hashes in the stream's hash tag (named by the store from the stream prefix, see
//! [`crate::ProducerKeys`]): `seen` maps a producer id to the epoch ms of its last routing fetch and the principal
//! that made it (`<ms> <principal>`; `<ms>` alone without authentication, and as written before);
//! `first-seen` maps it to the epoch ms of its first routing fetch, kept across later ones while the producer
//! stays in `seen` (a hash of its own, so that `seen` keeps the shape earlier versions read); `quiesced` maps
//! it to its last report, `<reshardingId> <observedRoutingVersion> <epoch ms>`. A sighting never overwrites a
//! report.
//! Entries not seen for a while are removed by [`Store::producers_forget`]; both hashes also expire a while
//! after their last write, a sighting is written only while the stream's record exists (producer_seen.lua: a
//! routing read of a stream that does not exist writes nothing), and a stream keeps at most a given number
//! of producers (issue #32, finding 8: READ callers grew Redis without bound with made-up streams and ids).

use crate::error::StoreError;
use crate::store::Store;
use redis::Script;
use std::collections::BTreeMap;
use std::sync::LazyLock;

static PRODUCER_SEEN: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/producer_seen.lua")));

/// What became of a sighting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sighting {
    Recorded,
    /// The stream has no record: nothing written.
    NoStream,
    /// The stream already has the most producers it keeps: nothing written.
    Full,
}

/// How sightings are kept: how long a stream's hashes live after their last write, and how many producers
/// one stream keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SightingLimits {
    pub ttl_ms: i64,
    pub max_producers: u32,
}

/// One producer's entries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProducerEntry {
    pub last_seen_ms: i64,
    /// When it was first seen (None for a producer whose sightings were all written by a version that did not
    /// keep this; its next sighting records the time of the one before).
    pub first_seen_ms: Option<i64>,
    /// The principal whose routing fetch registered the producer (None without authentication).
    pub principal: Option<String>,
    /// `(reshardingId, observedRoutingVersion, reported at ms)` of its last quiesced report.
    pub quiesced: Option<(String, i64, i64)>,
}

impl Store {
    /// Notes that `producer` fetched routing at `now_ms`, if the stream record exists and the stream has room;
    /// the first sighting's time is kept.
    pub async fn producer_seen(
        &self,
        stream_prefix: &str,
        producer: &str,
        principal: Option<&str>,
        now_ms: i64,
        limits: SightingLimits,
    ) -> Result<Sighting, StoreError> {
        let keys = &self.keyspace().producers(stream_prefix);
        let value = match principal {
            Some(p) => format!("{now_ms} {p}"),
            None => now_ms.to_string(),
        };
        let answer: i64 = PRODUCER_SEEN
            .key(&keys.record)
            .key(&keys.seen)
            .key(&keys.first_seen)
            .arg(producer)
            .arg(value)
            .arg(limits.ttl_ms.max(1))
            .arg(limits.max_producers)
            .arg(now_ms)
            .invoke_async(&mut self.connection())
            .await?;
        Ok(match answer {
            1 => Sighting::Recorded,
            0 => Sighting::NoStream,
            _ => Sighting::Full,
        })
    }

    /// Records `producer`'s quiesced report, then that it was seen at `now_ms` (the caller checked the stream
    /// exists and waits for this report).
    #[allow(clippy::too_many_arguments)]
    pub async fn producer_quiesced(
        &self,
        stream_prefix: &str,
        producer: &str,
        principal: Option<&str>,
        resharding_id: &str,
        routing_version: i64,
        now_ms: i64,
        limits: SightingLimits,
    ) -> Result<Sighting, StoreError> {
        let keys = &self.keyspace().producers(stream_prefix);
        let seen = self
            .producer_seen(stream_prefix, producer, principal, now_ms, limits)
            .await?;
        if seen != Sighting::Recorded {
            return Ok(seen);
        }
        let _: () = redis::pipe()
            .atomic()
            .cmd("HSET")
            .arg(&keys.quiesced)
            .arg(producer)
            .arg(format!("{resharding_id} {routing_version} {now_ms}"))
            .ignore()
            .cmd("PEXPIRE")
            .arg(&keys.quiesced)
            .arg(limits.ttl_ms.max(1))
            .ignore()
            .query_async(&mut self.connection())
            .await?;
        Ok(seen)
    }

    /// Every producer of the stream with its entries, by id. Unreadable values (not written by rsc) are
    /// left out.
    pub async fn producers(
        &self,
        stream_prefix: &str,
    ) -> Result<BTreeMap<String, ProducerEntry>, StoreError> {
        let keys = &self.keyspace().producers(stream_prefix);
        let (seen, first_seen, quiesced): (
            BTreeMap<String, String>,
            BTreeMap<String, String>,
            BTreeMap<String, String>,
        ) = redis::pipe()
            .cmd("HGETALL")
            .arg(&keys.seen)
            .cmd("HGETALL")
            .arg(&keys.first_seen)
            .cmd("HGETALL")
            .arg(&keys.quiesced)
            .query_async(&mut self.connection())
            .await?;
        let mut out = BTreeMap::new();
        for (id, value) in seen {
            let (ms, principal) = match value.split_once(' ') {
                Some((ms, p)) => (ms, Some(p.to_owned())),
                None => (value.as_str(), None),
            };
            if let Ok(ms) = ms.parse::<i64>() {
                let first_seen_ms = first_seen.get(&id).and_then(|f| f.parse().ok());
                out.insert(
                    id,
                    ProducerEntry {
                        last_seen_ms: ms,
                        first_seen_ms,
                        principal,
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

    /// Deletes the three hashes (the stream's last group is gone). One DEL: they share the stream's hash tag.
    pub async fn producers_clear(&self, stream_prefix: &str) -> Result<(), StoreError> {
        let keys = &self.keyspace().producers(stream_prefix);
        let _: i64 = redis::cmd("DEL")
            .arg(&keys.seen)
            .arg(&keys.first_seen)
            .arg(&keys.quiesced)
            .query_async(&mut self.connection())
            .await?;
        Ok(())
    }

    /// Removes these producers from the three hashes (those not seen for long).
    pub async fn producers_forget(
        &self,
        stream_prefix: &str,
        producers: &[String],
    ) -> Result<(), StoreError> {
        let keys = &self.keyspace().producers(stream_prefix);
        if producers.is_empty() {
            return Ok(());
        }
        for key in [&keys.seen, &keys.first_seen, &keys.quiesced] {
            let _: i64 = redis::cmd("HDEL")
                .arg(key)
                .arg(producers)
                .query_async(&mut self.connection())
                .await?;
        }
        Ok(())
    }
}
