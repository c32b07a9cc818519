//! Publishing once admitted: route each record with the cached table, append through the store's guarded
//! script (`rsc_scripts::guarded_append`, sent on the producer's own data connection), and retry on the right
//! shard after a routing refresh when an append was refused.
//!
//! A guarded append is refused — nothing written — when the routing version it was routed with is older than
//! the shard's routing boundary (raised by the coordinator on every shard, old and new, when a scale switches
//! routing). So a stale producer never adds a record of a moved key behind its newer records: it refreshes
//! and appends on the shard the key now routes to. No duplicate (the refused append wrote nothing) and no
//! loss (the record is retried).

use super::*;
use rsc_protocol::names::shard_routing_key;
use rsc_scripts::AppendReply;
use std::sync::atomic::Ordering::Relaxed;

/// Attempts of one publish: the first, and up to two after a routing refresh (a refusal right after a switch
/// may meet a coordinator replica answering the old routing once more).
const ATTEMPTS: usize = 3;

impl Producer {
    /// [`Producer::publish_batch`] once admitted (see `producer/quiesced.rs`).
    pub(super) async fn publish_admitted(
        &self,
        records: &[Record],
    ) -> Result<Vec<Published>, ClientError> {
        for r in records {
            if r.fields.is_empty() {
                return Err(ClientError::InvalidConfig(
                    "a record needs at least one field (Redis streams cannot store empty entries)"
                        .into(),
                ));
            }
        }
        let mut results: Vec<Option<Published>> = vec![None; records.len()];
        let mut todo: Vec<usize> = (0..records.len()).collect();
        let mut redis_failures = 0;
        for attempt in 0..ATTEMPTS {
            let last = attempt + 1 == ATTEMPTS;
            let table = self.inner.table().await?;
            let version = table.routing_version.unwrap_or(0);
            let mut cmds = Vec::with_capacity(todo.len());
            let mut routed = Vec::with_capacity(todo.len());
            for &i in &todo {
                let (shard, stream_key) =
                    route(&table, &records[i].key).ok_or_else(|| ClientError::NoShards {
                        stream_prefix: self.inner.config.stream_prefix.clone(),
                    })?;
                let fields = records[i]
                    .fields
                    .iter()
                    .map(|(f, v)| (f.as_str(), v.as_slice()));
                cmds.push((
                    stream_key.to_owned(),
                    rsc_scripts::guarded_append(
                        stream_key,
                        &shard_routing_key(stream_key),
                        version,
                        self.inner.config.max_len,
                        fields,
                    ),
                ));
                routed.push((i, shard, stream_key.to_owned()));
            }
            match send_appends(&self.inner.conn, cmds).await {
                Ok(replies) => {
                    let mut again = Vec::new();
                    for ((i, shard, stream_key), reply) in routed.into_iter().zip(replies) {
                        match reply {
                            AppendReply::Appended(id) => {
                                results[i] = Some(Published {
                                    shard,
                                    stream_key,
                                    id,
                                })
                            }
                            AppendReply::StreamMissing => {
                                self.inner.stale_route_writes.fetch_add(1, Relaxed);
                                if last {
                                    return Err(ClientError::StreamMissing { stream_key });
                                }
                                again.push(i);
                            }
                            AppendReply::StaleRouting { floor } => {
                                self.inner.stale_routing_refusals.fetch_add(1, Relaxed);
                                tracing::debug!(
                                    stream_key,
                                    floor,
                                    routing_version = version,
                                    "append refused: routing older than the shard's boundary; refreshing"
                                );
                                if last {
                                    return Err(ClientError::StaleRouting {
                                        stream_key,
                                        routing_version: version,
                                        floor,
                                    });
                                }
                                again.push(i);
                            }
                            AppendReply::AheadOfRouting { ceiling } => {
                                // Routing this coordinator never published for the stream (held across a
                                // lifecycle, or made up): refresh and retry with what it publishes now.
                                self.inner.stale_routing_refusals.fetch_add(1, Relaxed);
                                tracing::debug!(
                                    stream_key,
                                    ceiling,
                                    routing_version = version,
                                    "append refused: routing newer than the stream's published routing; refreshing"
                                );
                                if last {
                                    return Err(ClientError::RoutingAhead {
                                        stream_key,
                                        routing_version: version,
                                        ceiling,
                                    });
                                }
                                again.push(i);
                            }
                        }
                    }
                    if again.is_empty() {
                        break;
                    }
                    todo = again;
                }
                Err(e) if redis_failures == 0 && !last => {
                    redis_failures += 1;
                    tracing::warn!(error = %e, "publish failed; refreshing routing and retrying once");
                }
                Err(e) => return Err(e),
            }
            // A stale route, a refusal (or a failure): refresh now, then retry the remainder.
            self.inner.cache_lock().mark_stale();
            if let Err(e) = self.inner.refresh(None).await {
                tracing::warn!(error = %e, "routing refresh after a stale route failed");
            }
        }
        results
            .into_iter()
            .map(|r| r.ok_or_else(|| ClientError::Protocol("record left unpublished".into())))
            .collect()
    }
}

/// Sends the appends in one pipelined round trip; on a Redis Cluster one pipeline per stream key (a pipeline
/// must stay within one slot), all at once. Replies in input order.
async fn send_appends(
    conn: &DataConn,
    cmds: Vec<(String, redis::Cmd)>,
) -> Result<Vec<AppendReply>, ClientError> {
    let decode = |values: Vec<redis::Value>| -> Result<Vec<AppendReply>, ClientError> {
        values
            .iter()
            .map(|v| AppendReply::from_value(v).map_err(|e| ClientError::Protocol(e.to_string())))
            .collect()
    };
    if !conn.is_cluster() {
        let mut pipe = redis::pipe();
        for (_, cmd) in cmds {
            pipe.add_command(cmd);
        }
        let mut c = conn.clone();
        let values: Vec<redis::Value> = pipe.query_async(&mut c).await?;
        return decode(values);
    }
    let count = cmds.len();
    let mut by_key: std::collections::BTreeMap<String, (Vec<usize>, redis::Pipeline)> =
        std::collections::BTreeMap::new();
    for (i, (key, cmd)) in cmds.into_iter().enumerate() {
        let (indexes, pipe) = by_key
            .entry(key)
            .or_insert_with(|| (Vec::new(), redis::pipe()));
        indexes.push(i);
        pipe.add_command(cmd);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for (indexes, pipe) in by_key.into_values() {
        let mut c = conn.clone();
        tasks.spawn(async move {
            let values: redis::RedisResult<Vec<redis::Value>> = pipe.query_async(&mut c).await;
            (indexes, values)
        });
    }
    let mut out: Vec<Option<AppendReply>> = vec![None; count];
    let mut failure = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((indexes, Ok(values))) => {
                for (i, reply) in indexes.into_iter().zip(decode(values)?) {
                    out[i] = Some(reply);
                }
            }
            Ok((_, Err(e))) => failure = Some(ClientError::Redis(e)),
            Err(e) => {
                failure = Some(ClientError::Redis(redis::RedisError::from(
                    std::io::Error::other(e.to_string()),
                )))
            }
        }
    }
    match failure {
        Some(e) => Err(e),
        None => out
            .into_iter()
            .map(|r| r.ok_or_else(|| ClientError::Protocol("append left unanswered".into())))
            .collect(),
    }
}
