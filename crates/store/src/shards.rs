//! Shard streams, the data plane the coordinator provisions and watches: creating a stream with its
//! Redis consumer group, checking which shard streams exist, the `XINFO` evidence of how far a group has read
//! (offsets, drain evidence, pending entries up to a switch point), retiring a drained stream, and deleting
//! the keys an operator chose to purge.
//!
//! The caller names a shard by its ids ([`Shard`], or a [`DataKey`] where kinds mix) and the store names its
//! keys (`<streamPrefix>:<shard>` and the routing boundary beside it): shard streams carry no hash tag, so
//! every command here touches one key. `XINFO` replies are decoded in both RESP2 (flat arrays) and
//! RESP3 (maps). Retiring is one script (`lua/retire_if_drained.lua`) so that a late write between the
//! check and the delete is never lost.

use crate::data_key::DataKey;
use crate::shard::Shard;
use std::sync::LazyLock;

use redis::{Script, Value};

use crate::error::StoreError;
use crate::store::Store;

static RETIRE_IF_DRAINED: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/retire_if_drained.lua")));

/// What `XINFO STREAM` says about a stream that exists.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamInfo {
    pub length: i64,
    pub entries_added: Option<i64>,
    pub last_generated_id: Option<String>,
    pub first_entry_id: Option<String>,
    pub last_entry_id: Option<String>,
}

/// What `XINFO GROUPS` says about one Redis consumer group (None: the field is missing or null, e.g. a
/// lag Redis cannot compute).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerGroupInfo {
    pub name: Option<String>,
    pub pending: Option<i64>,
    pub lag: Option<i64>,
    pub entries_read: Option<i64>,
    pub last_delivered_id: Option<String>,
}

/// One shard stream as [`Store::shard_observations`] reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShardObservation {
    pub info: StreamInfo,
    pub groups: Vec<ConsumerGroupInfo>,
    /// `MEMORY USAGE` (None: Redis did not say).
    pub memory_bytes: Option<i64>,
}

/// The answer to [`Store::shard_retire_if_drained`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetireOutcome {
    /// The stream was deleted, or was not there.
    Retired,
    /// A consumer group has not read everything (a late write): the stream is kept.
    KeptUnread,
}

/// Parses a stream id `<ms>-<seq>`.
pub fn parse_stream_id(id: &str) -> Option<(u64, u64)> {
    let (ms, seq) = id.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

impl Store {
    /// Creates (idempotently) the stream `key` and the Redis consumer group `group` on it, starting at
    /// the stream's end (`$`) with ENTRIESREAD set to the stream's entries-added, so its lag is known (0)
    /// from the start. A group that already exists (BUSYGROUP) is fine.
    pub async fn shard_provision(&self, shard: &Shard, group: &str) -> Result<(), StoreError> {
        let key = &shard.stream_key();
        let entries_added = match self.shard_stream_info(shard).await? {
            Some(info) => info.entries_added.unwrap_or(0),
            None => 0,
        };
        let created: redis::RedisResult<Value> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(key)
            .arg(group)
            .arg("$")
            .arg("MKSTREAM")
            .arg("ENTRIESREAD")
            .arg(entries_added)
            .query_async(&mut self.connection())
            .await;
        match created {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some("BUSYGROUP") => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the stream of each of `shards` exists, in order (EXISTS, as below).
    pub async fn shards_exist(&self, shards: &[Shard]) -> Result<Vec<bool>, StoreError> {
        let keys: Vec<String> = shards.iter().map(Shard::stream_key).collect();
        self.exist(&keys).await
    }

    /// Whether a plain key named exactly like the stream prefix `stream_prefix` exists (not a shard stream:
    /// someone else's data, or a typo, found where a stream is created).
    pub async fn prefix_key_exists(&self, stream_prefix: &str) -> Result<bool, StoreError> {
        let name = DataKey::Prefix(stream_prefix.to_owned()).name();
        Ok(self.exist(&[name]).await?.first().copied().unwrap_or(false))
    }

    /// Whether each of `keys` exists, in order. Standalone: EXISTS pipelined in chunks. Redis Cluster: the
    /// keys of a stream's shards lie in many slots and a cluster pipeline may not span slots, so each key
    /// gets its own EXISTS, sent concurrently in chunks (the cluster connection routes each to its node).
    async fn exist(&self, keys: &[String]) -> Result<Vec<bool>, StoreError> {
        let mut out = Vec::with_capacity(keys.len());
        let conn = self.connection();
        for chunk in keys.chunks(256) {
            if conn.is_cluster() {
                let mut asks = tokio::task::JoinSet::new();
                for (i, k) in chunk.iter().enumerate() {
                    let (mut c, k) = (conn.clone(), k.clone());
                    asks.spawn(async move {
                        let n: redis::RedisResult<i64> =
                            redis::cmd("EXISTS").arg(&k).query_async(&mut c).await;
                        (i, n)
                    });
                }
                let mut found = vec![false; chunk.len()];
                while let Some(joined) = asks.join_next().await {
                    let (i, n) = joined.map_err(|e| {
                        StoreError::from(redis::RedisError::from(std::io::Error::other(
                            e.to_string(),
                        )))
                    })?;
                    found[i] = n? > 0;
                }
                out.extend(found);
            } else {
                let mut pipe = redis::pipe();
                for k in chunk {
                    pipe.cmd("EXISTS").arg(k);
                }
                let exists: Vec<i64> = pipe.query_async(&mut conn.clone()).await?;
                out.extend(exists.into_iter().map(|n| n > 0));
            }
        }
        Ok(out)
    }

    /// Deletes the keys of `targets` one `DEL` each (shard streams carry no hash tag, so one command may not
    /// span them on a cluster); returns how many existed. For an operator's explicit choice about a stream's
    /// leftovers (`ADOPT` deletes their routing boundaries, `PURGE` everything), never for a group's own
    /// cleanup.
    pub async fn delete_data_keys(&self, targets: &[DataKey]) -> Result<u64, StoreError> {
        let mut deleted = 0;
        let mut conn = self.connection();
        for target in targets {
            let n: i64 = redis::cmd("DEL")
                .arg(target.name())
                .query_async(&mut conn)
                .await?;
            deleted += u64::try_from(n).unwrap_or(0);
        }
        Ok(deleted)
    }

    /// `XINFO STREAM`; None when the stream does not exist.
    pub async fn shard_stream_info(&self, shard: &Shard) -> Result<Option<StreamInfo>, StoreError> {
        self.stream_info(&shard.stream_key()).await
    }

    /// `XINFO STREAM key` (None when the stream does not exist).
    async fn stream_info(&self, key: &str) -> Result<Option<StreamInfo>, StoreError> {
        let reply: redis::RedisResult<Value> = redis::cmd("XINFO")
            .arg("STREAM")
            .arg(key)
            .query_async(&mut self.connection())
            .await;
        match reply {
            Ok(v) => Ok(Some(stream_info(&v))),
            Err(e) if is_missing_key(&e) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// `XINFO GROUPS`; None when the stream does not exist.
    pub async fn shard_groups(
        &self,
        shard: &Shard,
    ) -> Result<Option<Vec<ConsumerGroupInfo>>, StoreError> {
        self.groups_of(&shard.stream_key()).await
    }

    /// `XINFO GROUPS key` (None when the stream does not exist).
    async fn groups_of(&self, key: &str) -> Result<Option<Vec<ConsumerGroupInfo>>, StoreError> {
        let reply: redis::RedisResult<Value> = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(key)
            .query_async(&mut self.connection())
            .await;
        match reply {
            Ok(v) => Ok(Some(consumer_groups(&v))),
            Err(e) if is_missing_key(&e) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// `XINFO STREAM`, `XINFO GROUPS` and `MEMORY USAGE` of the stream of each of `shards` (streams the
    /// caller found to exist), in order; None for a stream that is not there (any more). Standalone: one
    /// pipeline for all shards, one round trip. Redis Cluster: the streams lie in many slots, so each is read
    /// on its own.
    pub async fn shard_observations(
        &self,
        shards: &[Shard],
    ) -> Result<Vec<Option<ShardObservation>>, StoreError> {
        let keys: Vec<String> = shards.iter().map(Shard::stream_key).collect();
        let conn = self.connection();
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        if conn.is_cluster() {
            let mut out = Vec::with_capacity(keys.len());
            for k in &keys {
                let Some(info) = self.stream_info(k).await? else {
                    out.push(None);
                    continue;
                };
                let groups = self.groups_of(k).await?.ok_or_else(|| vanished(k))?;
                let memory_bytes = self.memory_usage(k).await?;
                out.push(Some(ShardObservation {
                    info,
                    groups,
                    memory_bytes,
                }));
            }
            return Ok(out);
        }
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for k in &keys {
            pipe.cmd("XINFO").arg("STREAM").arg(k);
            pipe.cmd("XINFO").arg("GROUPS").arg(k);
            pipe.cmd("MEMORY").arg("USAGE").arg(k);
        }
        let replies: Vec<redis::RedisResult<Value>> = pipe.query_async(&mut conn.clone()).await?;
        let answered = replies.len();
        let mut replies = replies.into_iter();
        let mut out = Vec::with_capacity(keys.len());
        for k in &keys {
            let (Some(info), Some(groups), Some(memory)) =
                (replies.next(), replies.next(), replies.next())
            else {
                return Err(StoreError::UnexpectedReply {
                    detail: format!(
                        "the shard pipeline answered {answered} replies for {} keys",
                        keys.len()
                    ),
                });
            };
            let info = match info {
                Ok(v) => stream_info(&v),
                Err(e) if is_missing_key(&e) => {
                    out.push(None);
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let groups = match groups {
                Ok(v) => consumer_groups(&v),
                Err(e) if is_missing_key(&e) => return Err(vanished(k)),
                Err(e) => return Err(e.into()),
            };
            let memory_bytes = match memory? {
                Value::Int(n) => Some(n),
                _ => None,
            };
            out.push(Some(ShardObservation {
                info,
                groups,
                memory_bytes,
            }));
        }
        Ok(out)
    }

    /// `XINFO GROUPS` of the stream of each of `shards`, in order (None for a stream that is not there):
    /// where every Redis consumer group of each shard stands (last-delivered id, entries read, lag, pending),
    /// without the stream's own figures. What re-reads an idle group's position, which a reader outside rsc
    /// moves without appending anything. Standalone: one pipeline, one round trip; Redis Cluster: one command
    /// per shard (the streams lie in many slots). One command per shard either way.
    pub async fn shard_groups_of(
        &self,
        shards: &[Shard],
    ) -> Result<Vec<Option<Vec<ConsumerGroupInfo>>>, StoreError> {
        let keys: Vec<String> = shards.iter().map(Shard::stream_key).collect();
        let conn = self.connection();
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        if conn.is_cluster() {
            let mut out = Vec::with_capacity(keys.len());
            for k in &keys {
                out.push(self.groups_of(k).await?);
            }
            return Ok(out);
        }
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for k in &keys {
            pipe.cmd("XINFO").arg("GROUPS").arg(k);
        }
        let replies: Vec<redis::RedisResult<Value>> = pipe.query_async(&mut conn.clone()).await?;
        if replies.len() != keys.len() {
            return Err(StoreError::UnexpectedReply {
                detail: format!(
                    "XINFO GROUPS answered {} replies for {} keys",
                    replies.len(),
                    keys.len()
                ),
            });
        }
        replies
            .into_iter()
            .map(|r| match r {
                Ok(v) => Ok(Some(consumer_groups(&v))),
                Err(e) if is_missing_key(&e) => Ok(None),
                Err(e) => Err(e.into()),
            })
            .collect()
    }

    /// Whether each of `keys` has an entry after the matching id of `after` (a stream that is not there has
    /// none): what tells that an idle shard's figures may have moved since they were read. Standalone: one
    /// `XREAD COUNT 1` over every key, one command however many shards. Redis Cluster: one per key (the keys
    /// lie in many slots).
    pub async fn streams_grown_since(
        &self,
        shards: &[Shard],
        after: &[String],
    ) -> Result<Vec<bool>, StoreError> {
        let keys: Vec<String> = shards.iter().map(Shard::stream_key).collect();
        if keys.len() != after.len() {
            return Err(StoreError::UnexpectedReply {
                detail: format!("{} stream keys but {} ids", keys.len(), after.len()),
            });
        }
        let conn = self.connection();
        let mut grown = vec![false; keys.len()];
        if keys.is_empty() {
            return Ok(grown);
        }
        let batches: Vec<Vec<usize>> = if conn.is_cluster() {
            (0..keys.len()).map(|i| vec![i]).collect()
        } else {
            vec![(0..keys.len()).collect()]
        };
        for batch in batches {
            let mut cmd = redis::cmd("XREAD");
            cmd.arg("COUNT").arg(1).arg("STREAMS");
            for &i in &batch {
                cmd.arg(&keys[i]);
            }
            for &i in &batch {
                cmd.arg(&after[i]);
            }
            let reply: Value = cmd.query_async(&mut conn.clone()).await?;
            for key in streams_with_entries(&reply) {
                if let Some(&i) = batch.iter().find(|&&i| keys[i].as_bytes() == key) {
                    grown[i] = true;
                }
            }
        }
        Ok(grown)
    }

    /// How many entries the Redis consumer group `group` has pending on `key` at or before `end`, counting
    /// at most `cap` (an extended `XPENDING … - end cap`): the drain evidence of an ordered parent bounded by
    /// its switch point (`cap` 1: is there any), and what the migration view shows is left of it. None when
    /// the stream or the group does not exist.
    pub async fn shard_pending_up_to(
        &self,
        shard: &Shard,
        group: &str,
        end: &str,
        cap: usize,
    ) -> Result<Option<i64>, StoreError> {
        let key = &shard.stream_key();
        let reply: redis::RedisResult<Vec<Value>> = redis::cmd("XPENDING")
            .arg(key)
            .arg(group)
            .arg("-")
            .arg(end)
            .arg(cap.max(1))
            .query_async(&mut self.connection())
            .await;
        match reply {
            Ok(entries) => Ok(Some(entries.len() as i64)),
            Err(e) if e.code() == Some("NOGROUP") || is_missing_key(&e) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// `XLEN` (0 when the stream does not exist).
    pub async fn shard_length(&self, shard: &Shard) -> Result<i64, StoreError> {
        let key = &shard.stream_key();
        Ok(redis::cmd("XLEN")
            .arg(key)
            .query_async(&mut self.connection())
            .await?)
    }

    /// `MEMORY USAGE` of the stream in bytes (None when it does not exist).
    pub async fn shard_memory_usage(&self, shard: &Shard) -> Result<Option<i64>, StoreError> {
        self.memory_usage(&shard.stream_key()).await
    }

    /// `MEMORY USAGE key` (None when the key does not exist).
    async fn memory_usage(&self, key: &str) -> Result<Option<i64>, StoreError> {
        Ok(redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .query_async(&mut self.connection())
            .await?)
    }

    /// Deletes the stream only if every consumer group on it has read everything, atomically (see
    /// `lua/retire_if_drained.lua`).
    pub async fn shard_retire_if_drained(
        &self,
        shard: &Shard,
    ) -> Result<RetireOutcome, StoreError> {
        let key = &shard.stream_key();
        let n: i64 = RETIRE_IF_DRAINED
            .key(key)
            .invoke_async(&mut self.connection())
            .await?;
        Ok(if n == -1 {
            RetireOutcome::KeptUnread
        } else {
            RetireOutcome::Retired
        })
    }
}

fn vanished(key: &str) -> StoreError {
    StoreError::UnexpectedReply {
        detail: format!("XINFO GROUPS {key}: no such key (the stream vanished while read)"),
    }
}

fn stream_info(info: &Value) -> StreamInfo {
    StreamInfo {
        length: field_i64(info, "length").unwrap_or(0),
        entries_added: field_i64(info, "entries-added"),
        last_generated_id: field(info, "last-generated-id").and_then(text),
        first_entry_id: entry_id(field(info, "first-entry")),
        last_entry_id: entry_id(field(info, "last-entry")),
    }
}

fn consumer_groups(reply: &Value) -> Vec<ConsumerGroupInfo> {
    let Value::Array(groups) = reply else {
        return Vec::new();
    };
    groups
        .iter()
        .map(|g| ConsumerGroupInfo {
            name: field(g, "name").and_then(text),
            pending: field_i64(g, "pending"),
            lag: field_i64(g, "lag"),
            entries_read: field_i64(g, "entries-read"),
            last_delivered_id: field(g, "last-delivered-id").and_then(text),
        })
        .collect()
}

/// The keys of the streams an `XREAD` answered entries for: nil (none), `[[key, entries], …]` (RESP2) or a
/// map key → entries (RESP3).
fn streams_with_entries(reply: &Value) -> Vec<&[u8]> {
    fn key(k: &Value) -> Option<&[u8]> {
        match k {
            Value::BulkString(b) => Some(b.as_slice()),
            Value::SimpleString(s) => Some(s.as_bytes()),
            _ => None,
        }
    }
    let non_empty = |entries: &Value| match entries {
        Value::Nil => false,
        Value::Array(a) => !a.is_empty(),
        _ => true,
    };
    match reply {
        Value::Array(streams) => streams
            .iter()
            .filter_map(|s| match s {
                Value::Array(kv) if kv.len() == 2 && non_empty(&kv[1]) => key(&kv[0]),
                _ => None,
            })
            .collect(),
        Value::Map(pairs) => pairs
            .iter()
            .filter(|(_, entries)| non_empty(entries))
            .filter_map(|(k, _)| key(k))
            .collect(),
        _ => Vec::new(),
    }
}

fn is_missing_key(e: &redis::RedisError) -> bool {
    e.to_string().to_ascii_lowercase().contains("no such key")
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}

/// The id of an XINFO `first-entry`/`last-entry` value (`[id, [field, value, …]]` or nil).
fn entry_id(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Array(items) => items.first().and_then(text),
        _ => None,
    }
}

/// Reads an integer field from an XINFO-style reply (flat key/value array in RESP2, a map in RESP3).
fn field_i64(v: &Value, name: &str) -> Option<i64> {
    field(v, name).and_then(|f| match f {
        Value::Int(i) => Some(*i),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        Value::SimpleString(s) => s.parse().ok(),
        _ => None,
    })
}

/// Finds a named field in an XINFO-style reply.
fn field<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    let is_name = |k: &Value| match k {
        Value::BulkString(b) => b.as_slice() == name.as_bytes(),
        Value::SimpleString(s) => s == name,
        _ => false,
    };
    match v {
        Value::Array(items) => items
            .chunks(2)
            .find(|kv| kv.len() == 2 && is_name(&kv[0]))
            .map(|kv| &kv[1]),
        Value::Map(pairs) => pairs.iter().find(|(k, _)| is_name(k)).map(|(_, v)| v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xinfo_fields_in_resp2_and_resp3() {
        let name = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let flat = Value::Array(vec![name("lag"), Value::Int(3), name("pending"), name("0")]);
        assert_eq!(field_i64(&flat, "lag"), Some(3));
        assert_eq!(field_i64(&flat, "pending"), Some(0));
        assert_eq!(field_i64(&flat, "name"), None);
        let map = Value::Map(vec![(Value::SimpleString("lag".into()), Value::Nil)]);
        assert_eq!(field_i64(&map, "lag"), None);
        assert!(field(&map, "lag").is_some());
        assert_eq!(parse_stream_id("12-3"), Some((12, 3)));
        assert!(streams_with_entries(&Value::Nil).is_empty());
        let entry = Value::Array(vec![Value::Array(vec![name("1-1"), Value::Array(vec![])])]);
        let resp2 = Value::Array(vec![
            Value::Array(vec![name("p:0"), entry.clone()]),
            Value::Array(vec![name("p:1"), Value::Array(vec![])]),
        ]);
        assert_eq!(streams_with_entries(&resp2), vec![b"p:0".as_slice()]);
        let resp3 = Value::Map(vec![(name("p:2"), entry), (name("p:3"), Value::Nil)]);
        assert_eq!(streams_with_entries(&resp3), vec![b"p:2".as_slice()]);
        assert_eq!(parse_stream_id("12"), None);
    }
}
