//! The timed loops of `rsc bench dataplane`: raw and SDK producers, the raw consumer, and the waits and
//! batching they share.

use super::*;
use std::collections::BTreeMap;

/// A data-plane connection (standalone or cluster), over TLS with `--redis-tls-*`.
async fn connect(target: &RedisTarget, tls: Option<&RedisTls>) -> Result<DataConn, String> {
    match tls {
        Some(tls) => target.connect_with_tls(tls).await,
        None => target.connect().await,
    }
    .map_err(|e| format!("connecting to Redis: {e}"))
}

/// Waits until no entry of the bench stream is pending (the SDK's last XACKs landed).
pub(super) async fn wait_acked(
    client: &RedisTarget,
    tls: Option<&RedisTls>,
    prefix: &str,
    shards: u32,
) -> Result<(), String> {
    let mut conn = connect(client, tls).await?;
    let deadline = Instant::now() + PHASE_TIMEOUT;
    loop {
        let mut pending = 0;
        for shard in 0..shards {
            let reply: redis::streams::StreamPendingReply = redis::AsyncCommands::xpending(
                &mut conn,
                rsc_store::Keyspace::shard_stream(prefix, shard),
                prefix,
            )
            .await
            .map_err(|e| format!("XPENDING: {e}"))?;
            pending += reply.count();
        }
        if pending == 0 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{pending} entries still pending after the SDK consumer phase"
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until every shard is read by exactly one member, the members are balanced (within one shard) and
/// none is still draining.
pub(super) async fn wait_converged(consumer: &Consumer, shards: u32) -> Result<(), String> {
    let deadline = Instant::now() + PHASE_TIMEOUT;
    loop {
        let snap = consumer.snapshot();
        let mut reading = BTreeSet::new();
        let mut duplicate = false;
        for m in &snap {
            for &s in &m.reading {
                duplicate |= !reading.insert(s);
            }
        }
        let settled = snap
            .iter()
            .all(|m| m.lease_valid && m.draining.is_empty() && m.owned.len() == m.reading.len());
        // Balanced too: a member that joined last may own nothing yet while the first still reads all.
        let counts = snap.iter().map(|m| m.reading.len());
        let spread = counts.clone().max().unwrap_or(0) - counts.min().unwrap_or(0);
        if settled && !duplicate && reading.len() == shards as usize && spread <= 1 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the SDK consumer did not converge within {}s",
                PHASE_TIMEOUT.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The records task `t` of `tasks` publishes, in batches: keys `key-<i>`, fields `seq` and `payload`.
pub(super) fn batches(args: &DataplaneArgs, task: usize, payload: &[u8]) -> Vec<Vec<Record>> {
    let tasks = args.producers as u64;
    let mine: Vec<u64> = (task as u64..args.count).step_by(tasks as usize).collect();
    mine.chunks(args.batch)
        .map(|c| {
            c.iter()
                .map(|i| {
                    Record::new(format!("key-{i}"))
                        .field("seq", i.to_string())
                        .field("payload", payload)
                })
                .collect()
        })
        .collect()
}

/// Runs `tasks` futures at once and returns the wall time until all finished.
pub(super) async fn timed<F>(futures: Vec<F>) -> Result<Duration, String>
where
    F: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    let start = Instant::now();
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    for h in handles {
        h.await.map_err(|e| format!("bench task failed: {e}"))??;
    }
    Ok(start.elapsed())
}

pub(super) async fn produce_raw(
    args: &DataplaneArgs,
    coord: &CoordinatorClient,
    redis_client: &RedisTarget,
    prefix: &str,
) -> Result<f64, String> {
    let routing = coord
        .producer_routing(prefix, prefix)
        .await
        .map_err(|e| format!("reading routing: {e}"))?;
    let keys: Arc<Vec<String>> = Arc::new(
        routing
            .shards
            .iter()
            .map(|s| s.stream_key.clone())
            .collect(),
    );
    let shard_count = routing.shard_count;
    let conn = connect(redis_client, args.target.cluster.tls()?.as_ref()).await?;
    let payload = vec![b'x'; args.payload];
    let work: Vec<_> = (0..args.producers)
        .map(|t| {
            let batches = batches(args, t, &payload);
            let mut conn = conn.clone();
            let keys = keys.clone();
            async move {
                for batch in batches {
                    // One pipeline per batch; on a cluster one per shard stream (a pipeline stays in
                    // one slot), sent one after the other.
                    let mut pipes: BTreeMap<u32, redis::Pipeline> = BTreeMap::new();
                    for r in &batch {
                        let shard = rsc_protocol::routing::shard_for_key(&r.key, shard_count)
                            .ok_or("no shards")?;
                        let group = if conn.is_cluster() { shard } else { 0 };
                        let cmd = pipes
                            .entry(group)
                            .or_insert_with(redis::pipe)
                            .cmd("XADD")
                            .arg(&keys[shard as usize])
                            .arg("NOMKSTREAM")
                            .arg("*");
                        for (f, v) in &r.fields {
                            cmd.arg(f.as_str()).arg(v.as_slice());
                        }
                    }
                    for pipe in pipes.values() {
                        let ids: Vec<Option<String>> = pipe
                            .query_async(&mut conn)
                            .await
                            .map_err(|e| format!("raw XADD: {e}"))?;
                        if ids.iter().any(Option::is_none) {
                            return Err("raw XADD found a shard stream missing".to_string());
                        }
                    }
                }
                Ok(())
            }
        })
        .collect();
    let took = timed(work).await?;
    Ok(args.count as f64 / took.as_secs_f64())
}

pub(super) async fn produce_sdk(
    args: &DataplaneArgs,
    coord: &CoordinatorClient,
    prefix: &str,
) -> Result<f64, String> {
    let producer = Arc::new(
        Producer::connect(
            coord.clone(),
            ProducerConfig {
                redis_tls: args.target.cluster.tls()?,
                ..ProducerConfig::new(prefix, &args.target.redis_url)
                    .redis(args.target.redis()?)
                    .max_len(None)
            },
        )
        .await
        .map_err(|e| format!("starting the SDK producer: {e}"))?,
    );
    let payload = vec![b'x'; args.payload];
    let work: Vec<_> = (0..args.producers)
        .map(|t| {
            let batches = batches(args, t, &payload);
            let producer = producer.clone();
            async move {
                for batch in batches {
                    producer
                        .publish_batch(&batch)
                        .await
                        .map_err(|e| format!("SDK publish_batch: {e}"))?;
                }
                Ok(())
            }
        })
        .collect();
    let took = timed(work).await?;
    Ok(args.count as f64 / took.as_secs_f64())
}

/// One read loop per shard in a fresh Redis consumer group (from the start of each stream) until every
/// shard is exhausted; `batch_ack`: one XACK per batch instead of one per entry.
pub(super) async fn consume_raw(
    args: &DataplaneArgs,
    redis_client: &RedisTarget,
    prefix: &str,
    total: u64,
    batch_ack: bool,
) -> Result<f64, String> {
    let group = format!("raw-{}", if batch_ack { "batch-ack" } else { "entry-ack" });
    let mut setup = connect(redis_client, args.target.cluster.tls()?.as_ref()).await?;
    let mut loops = Vec::new();
    for shard in 0..args.shards {
        let key = rsc_store::Keyspace::shard_stream(prefix, shard);
        let _: () = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&key)
            .arg(&group)
            .arg("0")
            .query_async(&mut setup)
            .await
            .map_err(|e| format!("XGROUP CREATE {key} {group}: {e}"))?;
        // Its own connection, as each SDK read loop has.
        let conn = connect(redis_client, args.target.cluster.tls()?.as_ref()).await?;
        loops.push((key, conn));
    }
    let consumed = Arc::new(AtomicU64::new(0));
    let work: Vec<_> = loops
        .into_iter()
        .map(|(key, mut conn)| {
            let group = group.clone();
            let consumed = consumed.clone();
            let batch = args.batch;
            async move {
                let opts = StreamReadOptions::default()
                    .group(&group, "raw")
                    .count(batch);
                loop {
                    let reply: Option<StreamReadReply> = redis::AsyncCommands::xread_options(
                        &mut conn,
                        &[key.as_str()],
                        &[">"],
                        &opts,
                    )
                    .await
                    .map_err(|e| format!("raw XREADGROUP: {e}"))?;
                    let ids: Vec<String> = reply
                        .map(|r| {
                            r.keys
                                .into_iter()
                                .flat_map(|k| k.ids)
                                .map(|e| e.id)
                                .collect()
                        })
                        .unwrap_or_default();
                    if ids.is_empty() {
                        return Ok(());
                    }
                    if batch_ack {
                        let _: i64 = redis::cmd("XACK")
                            .arg(&key)
                            .arg(&group)
                            .arg(&ids)
                            .query_async(&mut conn)
                            .await
                            .map_err(|e| format!("raw XACK: {e}"))?;
                    } else {
                        for id in &ids {
                            let _: i64 = redis::cmd("XACK")
                                .arg(&key)
                                .arg(&group)
                                .arg(id)
                                .query_async(&mut conn)
                                .await
                                .map_err(|e| format!("raw XACK: {e}"))?;
                        }
                    }
                    consumed.fetch_add(ids.len() as u64, Ordering::Relaxed);
                }
            }
        })
        .collect();
    let took = timed(work).await?;
    let n = consumed.load(Ordering::Relaxed);
    if n != total {
        return Err(format!("raw consumer read {n} entries, expected {total}"));
    }
    Ok(total as f64 / took.as_secs_f64())
}
