//! Producer quiesce (a scale with `producerQuiesce`) against the real `rsc` binary and real redis-server:
//! SDK producers publishing continuously through a proxy that cuts their Redis connections (so publishes
//! are retried after Redis had already taken them) across a quiesced scale publish no event to both the old
//! and the new shard count, while without quiesce the same retries do; a reader that never reports (a plain HTTP routing fetch) forces the
//! switch at the timeout, and the migration view, the audit and the `quiesce_switch_total` counter say so;
//! bad requests are 400s.

use rsc_client::{
    ClientError, CoordinatorClient, CreateStream, Credentials, Method, Producer, ProducerConfig,
    Record, RetryPolicy,
};
use rsc_protocol::routing::shard_for_key;
use rsc_testkit::{LoopbackProxy, RedisServer, RscBuilder, RscProcess};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ADMIN_PASSWORD: &str = "quiesce-test-admin-password";

fn start_rsc(redis_url: &str) -> RscProcess {
    RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), redis_url)
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD)
        .start()
}

fn coordinator(url: &str) -> CoordinatorClient {
    CoordinatorClient::builder([url])
        .credentials(Some(Credentials::new("admin", ADMIN_PASSWORD)))
        .request_timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

async fn create(c: &CoordinatorClient, stream: &str, shards: u32) {
    assert!(matches!(
        c.create_stream(stream, shards, "quiesce-test")
            .await
            .unwrap(),
        CreateStream::Created(_)
    ));
}

async fn scale(c: &CoordinatorClient, stream: &str, body: Value) -> Result<Value, ClientError> {
    c.send_json(
        Method::POST,
        &["coord", "v1", "streams", stream, "scale"],
        &[],
        Some(&body),
        None,
    )
    .await
}

async fn migration(c: &CoordinatorClient, stream: &str, id: &str) -> Value {
    c.get_json(&[
        "coord",
        "v1",
        "streams",
        stream,
        "groups",
        stream,
        "migrations",
        id,
    ])
    .await
    .unwrap()
}

/// Polls the migration view until `cond` holds (bounded), returning the view.
async fn wait_migration(
    c: &CoordinatorClient,
    stream: &str,
    id: &str,
    bound: Duration,
    cond: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + bound;
    loop {
        let m = migration(c, stream, id).await;
        if cond(&m) {
            return m;
        }
        assert!(
            Instant::now() < deadline,
            "migration view never got there: {m}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn producer_config(stream: &str, redis_url: &str) -> ProducerConfig {
    ProducerConfig::new(stream, redis_url)
        .refresh_interval(Duration::from_millis(500))
        .routing_lease(Duration::from_secs(30))
        .publish_timeout(Duration::from_secs(20))
        .max_len(None)
}

async fn switch_audit(c: &CoordinatorClient, stream: &str) -> Value {
    let page = c
        .send_json(
            Method::GET,
            &["coord", "v1", "monitoring", "audit"],
            &[
                ("action", "PRODUCER_QUIESCE_SWITCH".to_string()),
                ("streamPrefix", stream.to_string()),
            ],
            None,
            None,
        )
        .await
        .unwrap();
    let records = page["records"].as_array().cloned().unwrap_or_default();
    assert_eq!(records.len(), 1, "one switch audited: {page}");
    records[0].clone()
}

/// What a run of [`scale_under_retries`] found in the shard streams.
struct Written {
    /// Events written more than once (a retry of a publish Redis had already taken).
    retried_twice: usize,
    /// Events written to two different shard streams: published under both shard counts.
    across: Vec<String>,
}

/// Whether Redis (read directly, not through the proxy) holds `event` on its shard of 4.
async fn applied(conn: &mut redis::aio::MultiplexedConnection, stream: &str, event: &str) -> bool {
    let shard = shard_for_key(event.as_bytes(), 4).unwrap();
    let entries: redis::streams::StreamRangeReply = redis::cmd("XREVRANGE")
        .arg(format!("{stream}:{shard}"))
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(20)
        .query_async(conn)
        .await
        .unwrap();
    entries
        .ids
        .iter()
        .any(|e| e.get::<String>("event").as_deref() == Some(event))
}

/// Three SDK producers publish continuously (each call with a retry window: [`Producer::publish_retrying`])
/// through a proxy that delays every chunk 300 ms. Once Redis holds producer 0's current event but its
/// answer is still in the proxy, the stream is scaled 4 → 8 (with producer quiesce or without), then the
/// proxy cuts every connection and refuses new ones for 500 ms, so the producers retry publishes Redis
/// already took. Event keys are chosen to live on different shards under 4 and 8 shards.
/// Then every shard stream is read back.
async fn scale_under_retries(stream: &str, quiesce: bool) -> Written {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url());
    let c = coordinator(&rsc.url());
    create(&c, stream, 4).await;
    let proxy = Arc::new(LoopbackProxy::start(redis.port()).await);
    proxy.set_latency(Duration::from_millis(300));
    let data_url = format!("redis://127.0.0.1:{}", proxy.port());
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut producers = Vec::new();
    let mut current = Vec::new();
    let mut tasks = Vec::new();
    for k in 0..3 {
        let p = Arc::new(
            Producer::connect(coordinator(&rsc.url()), producer_config(stream, &data_url))
                .await
                .unwrap(),
        );
        let now: Arc<Mutex<Option<String>>> = Arc::default();
        producers.push(p.clone());
        current.push(now.clone());
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            let mut published = 0u64;
            let policy = RetryPolicy {
                attempts: 40,
                backoff: Duration::from_millis(300),
            };
            for n in 0.. {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let event = format!("p{k}-e{n}");
                let key = event.as_bytes();
                if shard_for_key(key, 4) == shard_for_key(key, 8) {
                    continue;
                }
                *now.lock().unwrap() = Some(event.clone());
                let record = Record::new(&event).field("event", &event);
                p.publish_retrying(&[record], policy)
                    .await
                    .expect("published within the retry window");
                published += 1;
            }
            published
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Wait until Redis took producer 0's current event; while its answer is still in the proxy, scale, then
    // cut the connections so that the answer is lost and the publish retried.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let event = current[0].lock().unwrap().clone();
        if let Some(event) = event
            && applied(&mut conn, stream, &event).await
        {
            break;
        }
        assert!(Instant::now() < deadline, "producer 0 never published");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut request =
        json!({"targetShardCount": 8, "requestedBy": "test", "reason": "scale under retries"});
    if quiesce {
        request["producerQuiesce"] = json!({"timeoutMs": 30000});
    }
    let answer = scale(&c, stream, request).await.unwrap();
    proxy.cut();
    let id = answer["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.heal();
    let done = wait_migration(&c, stream, &id, Duration::from_secs(25), |m| {
        m["routingShardCount"] == json!(8)
    })
    .await;
    if quiesce {
        assert_eq!(done["producerQuiesce"]["waiting"], json!(false), "{done}");
        assert_eq!(
            done["producerQuiesce"]["forcedByTimeout"],
            json!(false),
            "{done}"
        );
        let mut ids: Vec<String> = producers
            .iter()
            .map(|p| p.producer_id().to_owned())
            .collect();
        ids.sort();
        let quiesced: Vec<String> =
            serde_json::from_value(done["producerQuiesce"]["quiescedProducers"].clone()).unwrap();
        assert_eq!(quiesced, ids, "every SDK producer reported quiesced");
    }

    // Publishing resumes on the new routing; then stop.
    let resumed_from = producers[0].stats();
    let deadline = Instant::now() + Duration::from_secs(10);
    while producers[0].stats() == resumed_from {
        assert!(
            Instant::now() < deadline,
            "producer 0 never published again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::SeqCst);
    let mut published = 0;
    for t in tasks {
        published += t.await.unwrap();
    }
    let held: u64 = producers.iter().map(|p| p.stats().publishes_held).sum();
    for p in &producers {
        assert_eq!(
            p.stats().quiesce_pauses,
            u64::from(quiesce),
            "each producer paused once with quiesce, never without"
        );
    }
    assert_eq!(
        held > 0,
        quiesce,
        "callers waited while producers were quiesced"
    );

    // Every entry of every shard stream, old and new: event id → stream keys it was written to.
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for shard in 0..8 {
        let key = format!("{stream}:{shard}");
        let entries: redis::streams::StreamRangeReply = redis::cmd("XRANGE")
            .arg(&key)
            .arg("-")
            .arg("+")
            .query_async(&mut conn)
            .await
            .unwrap();
        for e in entries.ids {
            let event: String = e.get("event").unwrap();
            seen.entry(event).or_default().push(key.clone());
        }
    }
    let retried_twice: usize = seen.values().filter(|keys| keys.len() > 1).count();
    let across: Vec<String> = seen
        .iter()
        .filter(|(_, keys)| keys.iter().collect::<BTreeSet<_>>().len() > 1)
        .map(|(e, keys)| format!("{e}: {keys:?}"))
        .collect();
    eprintln!(
        "quiesce={quiesce}: published {published} events, {held} publish calls held, {retried_twice} events written \
         twice by a retry, {} under both shard counts",
        across.len()
    );
    if quiesce {
        let audit = switch_audit(&c, stream).await;
        assert_eq!(
            audit["requestSummary"]["forcedByTimeout"],
            json!(false),
            "{audit}"
        );
    }
    Written {
        retried_twice,
        across,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_quiesced_scale_publishes_no_event_to_both_shard_counts_while_publishes_are_retried() {
    let w = scale_under_retries("quiesced", true).await;
    assert!(
        w.retried_twice > 0,
        "the injected cuts made the SDK retry publishes Redis had already taken"
    );
    assert!(
        w.across.is_empty(),
        "events published under both shard counts: {:?}",
        &w.across[..w.across.len().min(10)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_never_reports_forces_the_switch_at_the_timeout_and_is_named() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url());
    let c = coordinator(&rsc.url());
    let stream = "forced";
    create(&c, stream, 2).await;
    let producer = Producer::connect(
        coordinator(&rsc.url()),
        producer_config(stream, &redis.url()).producer_id("sdk-producer-1"),
    )
    .await
    .unwrap();
    producer.publish("k", &[("v", "1")]).await.unwrap();
    // A plain client: fetches routing, knows nothing of quiesce (no producerId, never reports).
    let plain = c
        .get_json(&[
            "coord",
            "v1",
            "streams",
            stream,
            "groups",
            stream,
            "producer-routing",
        ])
        .await
        .unwrap();
    assert_eq!(plain["shardCount"], json!(2));

    let started = Instant::now();
    let answer = scale(
        &c,
        stream,
        json!({"targetShardCount": 3, "requestedBy": "test", "reason": "forced quiesce",
               "producerQuiesce": {"timeoutMs": 3000}}),
    )
    .await
    .unwrap();
    assert_eq!(answer["migrations"][0]["state"], json!("PREPARING"));
    let id = answer["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    let plain_id = "unidentified:admin@127.0.0.1";
    // While waiting: the SDK producer has quiesced, the plain client is listed as not quiesced.
    let waiting = wait_migration(&c, stream, &id, Duration::from_secs(3), |m| {
        m["producerQuiesce"]["quiescedProducers"] == json!(["sdk-producer-1"])
    })
    .await;
    assert_eq!(
        waiting["producerQuiesce"]["waiting"],
        json!(true),
        "{waiting}"
    );
    assert_eq!(
        waiting["producerQuiesce"]["notQuiescedProducers"],
        json!([plain_id])
    );
    assert_eq!(waiting["routingShardCount"], json!(2));

    let done = wait_migration(&c, stream, &id, Duration::from_secs(10), |m| {
        m["routingShardCount"] == json!(3)
    })
    .await;
    assert_eq!(done["producerQuiesce"]["waiting"], json!(false), "{done}");
    assert!(
        started.elapsed() >= Duration::from_millis(2900),
        "switched before the timeout"
    );
    assert_eq!(
        done["producerQuiesce"]["forcedByTimeout"],
        json!(true),
        "{done}"
    );
    assert_eq!(
        done["producerQuiesce"]["notQuiescedProducers"],
        json!([plain_id])
    );
    assert_eq!(done["routingShardCount"], json!(3));
    let audit = switch_audit(&c, stream).await;
    assert_eq!(
        audit["requestSummary"]["forcedByTimeout"],
        json!(true),
        "{audit}"
    );
    assert_eq!(audit["requestSummary"]["notQuiesced"], json!([plain_id]));
    let reason = audit["reason"].as_str().unwrap();
    assert!(
        reason.contains("forced by timeout") && reason.contains(plain_id),
        "{reason}"
    );
    // Counted by outcome (the counter is raised before the audit record is written).
    let metrics = reqwest::Client::new()
        .get(format!("{}/metrics", rsc.url()))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(
            "redis_stream_coord_quiesce_switch_total{stream=\"forced\",outcome=\"forced_by_timeout\"} 1"
        ),
        "{metrics}"
    );
    // The SDK producer resumes on the new routing.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let p = producer.publish("k2", &[("v", "2")]).await.unwrap();
        if producer.stats().quiesce_pauses == 1 && !p.stream_key.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline);
    }
    producer.refresh_routing().await.unwrap();
    let after = c
        .get_json(&[
            "coord",
            "v1",
            "streams",
            stream,
            "groups",
            stream,
            "producer-routing",
        ])
        .await
        .unwrap();
    assert_eq!(after["shardCount"], json!(3));
    assert!(after.get("quiesce").is_none(), "flag cleared: {after}");
}

async fn expect_400(result: Result<Value, ClientError>, mentions: &str) {
    match result {
        Err(ClientError::Api {
            status: 400,
            error_code: Some(code),
            message,
        }) => {
            assert_eq!(code, "INVALID_REQUEST");
            assert!(
                message.contains(mentions),
                "{message:?} should mention {mentions}"
            );
        }
        other => panic!("expected 400 mentioning {mentions}, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_quiesce_requests_are_refused_with_400() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url());
    let c = coordinator(&rsc.url());
    create(&c, "v", 2).await;
    let base = |q: Value| json!({"targetShardCount": 3, "requestedBy": "t", "reason": "r", "producerQuiesce": q});
    for (q, mentions) in [
        (json!({}), "producerQuiesce.timeoutMs: is required"),
        (json!({"timeoutMs": 0}), "must be positive"),
        (json!({"timeoutMs": -5}), "must be positive"),
        (json!({"timeoutMs": 600001}), "more than 600000"),
        (json!({"timeoutMs": "soon"}), "timeoutMs"),
        (json!({"timeoutMs": 1000, "grace": 1}), "grace"),
    ] {
        expect_400(scale(&c, "v", base(q)).await, mentions).await;
    }
    // Nothing was recorded by the refused scales.
    let routing = c
        .get_json(&[
            "coord",
            "v1",
            "streams",
            "v",
            "groups",
            "v",
            "producer-routing",
        ])
        .await
        .unwrap();
    assert_eq!(routing["shardCount"], json!(2));
    assert!(routing.get("quiesce").is_none());

    let report = |body: Value| {
        let c = &c;
        async move {
            c.send_json(
                Method::POST,
                &["coord", "v1", "streams", "v", "producers", "quiesced"],
                &[],
                Some(&body),
                None,
            )
            .await
        }
    };
    expect_400(
        report(json!({"reshardingId": "r", "observedRoutingVersion": 1})).await,
        "producerId",
    )
    .await;
    expect_400(
        report(
            json!({"producerId": "has space", "reshardingId": "r", "observedRoutingVersion": 1}),
        )
        .await,
        "producerId",
    )
    .await;
    expect_400(
        report(json!({"producerId": "p", "observedRoutingVersion": 1})).await,
        "reshardingId",
    )
    .await;
    expect_400(
        report(json!({"producerId": "p", "reshardingId": "r"})).await,
        "observedRoutingVersion",
    )
    .await;
    expect_400(
        c.send_json(
            Method::GET,
            &[
                "coord",
                "v1",
                "streams",
                "v",
                "groups",
                "v",
                "producer-routing",
            ],
            &[("producerId", "x".repeat(201))],
            None,
            None,
        )
        .await,
        "producerId",
    )
    .await;
    // A report when no scale waits is accepted and changes nothing.
    let idle = report(json!({"producerId": "p", "reshardingId": "r", "observedRoutingVersion": 1}))
        .await
        .unwrap();
    assert_eq!(idle["waiting"], json!(false));
}

/// The control: the same producers, retries and scale without producer quiesce do publish events under both
/// shard counts, so the check above can fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_quiesce_the_same_retries_publish_events_under_both_shard_counts() {
    let w = scale_under_retries("unquiesced", false).await;
    assert!(w.retried_twice > 0, "the injected cuts made the SDK retry");
    assert!(
        !w.across.is_empty(),
        "expected retries across the switch to publish some event under both shard counts"
    );
}
