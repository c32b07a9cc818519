//! The coordinator replicas' shared records: the deployment's cluster id (set once, read by every replica), the
//! replica registry (who is alive, by lease) and the change feed (which groups and streams were written, so that
//! the replica that owns one hears of it at once).
//!
//! The registry is one sorted set, replica id → lease end in Redis-server milliseconds: a replica renews its
//! entry every second or so with one script that also drops ended leases and returns the live ids
//! (`replica_register.lua`); a replica that stops gracefully removes its entry. The change feed is one capped
//! stream (`XADD MAXLEN ~`) of `(stream prefix, consumer group)` entries (an empty group for a stream record's
//! change), appended after a write and read by every replica from where it left off (`XREAD`, not blocking,
//! so it can share the multiplexed connection). Both are hints for spending work, never conditions of safety:
//! losing an entry delays a visit, it cannot cause a wrong write.

use crate::error::StoreError;
use crate::store::Store;
use redis::Script;
use std::sync::LazyLock;

static REGISTER: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/replica_register.lua")));

/// Field names of a change feed entry.
const PREFIX_FIELD: &str = "p";
const GROUP_FIELD: &str = "g";

/// The live replicas as the registry holds them, and Redis time when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveReplicas {
    pub now_ms: i64,
    pub ids: Vec<String>,
    /// The earliest lease end (Redis ms) among the other replicas: when, if that replica does not renew, the
    /// live set next changes.
    pub next_lease_end_ms: Option<i64>,
}

/// One entry of the change feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeEntry {
    /// The stream entry id, to read on from.
    pub id: String,
    pub stream_prefix: String,
    /// Empty for a change of the stream record.
    pub consumer_group: String,
}

impl Store {
    /// Registers or renews `replica` in the replica registry with a lease of `lease_ms`; returns the live
    /// replicas (this one included) and the earliest lease end of the others.
    pub async fn replica_register(
        &self,
        replica: &str,
        lease_ms: i64,
    ) -> Result<LiveReplicas, StoreError> {
        let key = &self.keyspace().replicas();
        let (now_ms, flat): (i64, Vec<String>) = REGISTER
            .key(key)
            .arg(replica)
            .arg(lease_ms.max(1))
            .invoke_async(&mut self.connection())
            .await?;
        let mut ids = Vec::with_capacity(flat.len() / 2);
        let mut next_lease_end_ms: Option<i64> = None;
        for pair in flat.chunks(2) {
            let [id, end] = pair else {
                return Err(StoreError::UnexpectedReply {
                    detail: format!("the replica registry answered an odd list: {flat:?}"),
                });
            };
            let end = end.parse::<f64>().map_err(|_| StoreError::Corrupt {
                key: key.to_owned(),
                detail: format!("the lease end of replica {id:?} is not a number: {end:?}"),
            })? as i64;
            if id != replica {
                next_lease_end_ms = Some(next_lease_end_ms.map_or(end, |e| e.min(end)));
            }
            ids.push(id.clone());
        }
        Ok(LiveReplicas {
            now_ms,
            ids,
            next_lease_end_ms,
        })
    }

    /// Removes `replica` from the registry (a graceful stop): its work moves at once.
    pub async fn replica_leave(&self, replica: &str) -> Result<(), StoreError> {
        let key = &self.keyspace().replicas();
        let _: i64 = redis::cmd("ZREM")
            .arg(key)
            .arg(replica)
            .query_async(&mut self.connection())
            .await?;
        Ok(())
    }

    /// Appends a change of `(stream_prefix, consumer_group)` to the change feed, trimmed to about `max_len`.
    pub async fn change_publish(
        &self,
        max_len: u32,
        stream_prefix: &str,
        consumer_group: &str,
    ) -> Result<(), StoreError> {
        let key = &self.keyspace().changes();
        let _: String = redis::cmd("XADD")
            .arg(key)
            .arg("MAXLEN")
            .arg("~")
            .arg(max_len)
            .arg("*")
            .arg(PREFIX_FIELD)
            .arg(stream_prefix)
            .arg(GROUP_FIELD)
            .arg(consumer_group)
            .query_async(&mut self.connection())
            .await?;
        Ok(())
    }

    /// The id of the feed's newest entry (`0-0` when it is empty): where a replica starting up reads on from.
    pub async fn change_latest_id(&self) -> Result<String, StoreError> {
        let key = &self.keyspace().changes();
        let newest: Vec<(String, Vec<String>)> = redis::cmd("XREVRANGE")
            .arg(key)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1)
            .query_async(&mut self.connection())
            .await?;
        Ok(newest
            .into_iter()
            .next()
            .map_or_else(|| "0-0".to_owned(), |(id, _)| id))
    }

    /// Up to `count` entries of the feed after `after` (oldest first), without blocking.
    pub async fn change_read(
        &self,
        after: &str,
        count: usize,
    ) -> Result<Vec<ChangeEntry>, StoreError> {
        let key = &self.keyspace().changes();
        let page: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
            .arg(key)
            .arg(format!("({after}"))
            .arg("+")
            .arg("COUNT")
            .arg(count)
            .query_async(&mut self.connection())
            .await?;
        Ok(page
            .into_iter()
            .map(|(id, fields)| {
                let field = |name: &str| {
                    fields
                        .chunks(2)
                        .find(|kv| kv.first().map(String::as_str) == Some(name))
                        .and_then(|kv| kv.get(1))
                        .cloned()
                        .unwrap_or_default()
                };
                ChangeEntry {
                    stream_prefix: field(PREFIX_FIELD),
                    consumer_group: field(GROUP_FIELD),
                    id,
                }
            })
            .collect())
    }
}

impl Store {
    /// The deployment's cluster id: the one stored, else `fresh`, stored now (`SET NX`, so replicas
    /// starting together agree on the first one written).
    pub async fn cluster_id(&self, fresh: &str) -> Result<String, StoreError> {
        let key = &self.keyspace().cluster_id();
        let mut conn = self.connection();
        let _: Option<String> = redis::cmd("SET")
            .arg(key)
            .arg(fresh)
            .arg("NX")
            .query_async(&mut conn)
            .await?;
        let id: String = redis::cmd("GET").arg(key).query_async(&mut conn).await?;
        Ok(id)
    }
}
