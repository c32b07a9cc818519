//! Redis data-plane provisioning: shard streams and their Redis consumer groups.
//!
//! Clients never run XGROUP CREATE and producers publish with NOMKSTREAM, so the coordinator must create
//! every shard stream and its consumer group before a shard appears in routing or in any assignment
//! (wire-contract §0.4). A new consumer group starts at the stream's end (`$`) with ENTRIESREAD set to the
//! stream's entries-added, so its lag is known (0) from the start. BUSYGROUP means "already there" and is fine.

use redis::Value;
use redis::aio::ConnectionLike;
use rsc_protocol::names::shard_stream_key;

#[derive(Debug, thiserror::Error)]
#[error("could not provision {key}: {source}")]
pub struct ProvisionError {
    pub key: String,
    #[source]
    pub source: redis::RedisError,
}

/// Creates (idempotently) the shard streams `prefix:i` for `i` in `shards` and the Redis consumer group
/// `group` on each.
pub async fn provision<C: ConnectionLike + Send>(
    conn: &mut C,
    prefix: &str,
    group: &str,
    shards: impl IntoIterator<Item = u32>,
) -> Result<(), ProvisionError> {
    for shard in shards {
        let key = shard_stream_key(prefix, shard);
        let entries_added = entries_added(conn, &key)
            .await
            .map_err(|source| ProvisionError {
                key: key.clone(),
                source,
            })?;
        let created: redis::RedisResult<Value> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&key)
            .arg(group)
            .arg("$")
            .arg("MKSTREAM")
            .arg("ENTRIESREAD")
            .arg(entries_added)
            .query_async(conn)
            .await;
        match created {
            Ok(_) => {}
            Err(e) if e.code() == Some("BUSYGROUP") => {}
            Err(source) => return Err(ProvisionError { key, source }),
        }
    }
    Ok(())
}

/// `entries-added` of a stream (0 when the key does not exist).
async fn entries_added<C: ConnectionLike + Send>(
    conn: &mut C,
    key: &str,
) -> redis::RedisResult<i64> {
    let reply: redis::RedisResult<Value> = redis::cmd("XINFO")
        .arg("STREAM")
        .arg(key)
        .query_async(conn)
        .await;
    match reply {
        Ok(v) => Ok(field_i64(&v, "entries-added").unwrap_or(0)),
        Err(e) if e.to_string().contains("no such key") => Ok(0),
        Err(e) => Err(e),
    }
}

/// Which of `prefix` and `prefix:0..count` already exist in Redis (a new stream must not adopt foreign data).
pub async fn existing_keys<C: ConnectionLike + Send>(
    conn: &mut C,
    prefix: &str,
    count: u32,
) -> redis::RedisResult<Vec<String>> {
    let mut keys = vec![prefix.to_owned()];
    keys.extend((0..count).map(|i| shard_stream_key(prefix, i)));
    let exists = existence(conn, &keys).await?;
    Ok(keys
        .into_iter()
        .zip(exists)
        .filter(|(_, e)| *e)
        .map(|(k, _)| k)
        .collect())
}

/// Which shard indexes of `shards` have a stream key in Redis (a scale-out must not adopt foreign data).
pub async fn existing_shards<C: ConnectionLike + Send>(
    conn: &mut C,
    prefix: &str,
    shards: std::ops::Range<u32>,
) -> redis::RedisResult<Vec<u32>> {
    let keys: Vec<String> = shards
        .clone()
        .map(|i| shard_stream_key(prefix, i))
        .collect();
    let exists = existence(conn, &keys).await?;
    Ok(shards
        .zip(exists)
        .filter(|(_, e)| *e)
        .map(|(i, _)| i)
        .collect())
}

/// Whether each of `keys` exists, in order (EXISTS, pipelined).
async fn existence<C: ConnectionLike + Send>(
    conn: &mut C,
    keys: &[String],
) -> redis::RedisResult<Vec<bool>> {
    let mut out = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(256) {
        let mut pipe = redis::pipe();
        for k in chunk {
            pipe.cmd("EXISTS").arg(k);
        }
        let exists: Vec<i64> = pipe.query_async(conn).await?;
        out.extend(exists.into_iter().map(|n| n > 0));
    }
    Ok(out)
}

/// Reads an integer field from an XINFO-style reply (flat key/value array in RESP2, a map in RESP3).
pub fn field_i64(v: &Value, name: &str) -> Option<i64> {
    field(v, name).and_then(|f| match f {
        Value::Int(i) => Some(*i),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        Value::SimpleString(s) => s.parse().ok(),
        _ => None,
    })
}

/// Finds a named field in an XINFO-style reply.
pub fn field<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
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
