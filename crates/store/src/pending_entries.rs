//! A Redis consumer group's pending entries on one shard stream, entry by entry (`XPENDING key group start
//! end count [consumer]`, the extended form): for the pending list that links each entry to its record in
//! the message browser. Ids, consumer names, idle times and delivery counts only — no payload.

use crate::error::StoreError;
use crate::shard::Shard;
use crate::store::Store;

/// One entry a consumer of the group was handed and has not acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingEntry {
    /// The record's stream id.
    pub id: String,
    /// The Redis consumer it was last delivered to.
    pub consumer: String,
    /// Milliseconds since it was last delivered.
    pub idle_ms: i64,
    /// How many times it was delivered.
    pub deliveries: i64,
}

impl Store {
    /// At most `count` pending entries of the Redis consumer group `group` on `key` after `after`
    /// (exclusive; None: from the first), oldest first, only `consumer`'s when given. None when the stream
    /// or the group does not exist.
    pub async fn shard_pending_entries(
        &self,
        shard: &Shard,
        group: &str,
        after: Option<&str>,
        count: usize,
        consumer: Option<&str>,
    ) -> Result<Option<Vec<PendingEntry>>, StoreError> {
        let key = &shard.stream_key();
        let mut cmd = redis::cmd("XPENDING");
        cmd.arg(key)
            .arg(group)
            .arg(after.map_or_else(|| "-".to_owned(), |a| format!("({a}")))
            .arg("+")
            .arg(count);
        if let Some(c) = consumer {
            cmd.arg(c);
        }
        let reply: redis::RedisResult<Vec<(String, String, i64, i64)>> =
            cmd.query_async(&mut self.connection()).await;
        match reply {
            Ok(rows) => Ok(Some(
                rows.into_iter()
                    .map(|(id, consumer, idle_ms, deliveries)| PendingEntry {
                        id,
                        consumer,
                        idle_ms,
                        deliveries,
                    })
                    .collect(),
            )),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// A missing stream or group (`NOGROUP`, "no such key").
fn is_missing(e: &redis::RedisError) -> bool {
    e.code() == Some("NOGROUP") || e.to_string().to_ascii_lowercase().contains("no such key")
}
