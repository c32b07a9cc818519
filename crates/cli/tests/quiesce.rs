//! Producer quiesce (a scale with `producerQuiesce`) against the real `rsc` binary and real redis-server:
//! SDK producers publishing continuously through a proxy that cuts their Redis connections (so publishes
//! are retried, some after Redis had already taken them) across a quiesced scale publish no event to both
//! the old and the new shard count; a reader that never reports (a plain HTTP routing fetch) forces the
//! switch at the timeout, and the migration view and the audit name it; bad requests are 400s.

use rsc_client::{
    ClientError, CoordinatorClient, CreateStream, Credentials, Method, Producer, ProducerConfig,
};
use rsc_testkit::{LoopbackProxy, RedisServer, RscBuilder, RscProcess};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_quiesced_scale_publishes_no_event_to_both_shard_counts_while_publishes_are_retried() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url());
    let c = coordinator(&rsc.url());
    let stream = "quiesced";
    create(&c, stream, 4).await;
    // The producers reach Redis through a proxy: every chunk delayed, every connection cut now and then,
    // so XADDs in flight fail (some after Redis appended them) and the SDK refreshes routing and retries.
    let proxy = LoopbackProxy::start(redis.port()).await;
    proxy.set_latency(Duration::from_millis(40));
    let data_url = format!("redis://127.0.0.1:{}", proxy.port());
    let mut producers = Vec::new();
    for _ in 0..3 {
        producers.push(Arc::new(
            Producer::connect(coordinator(&rsc.url()), producer_config(stream, &data_url))
                .await
                .unwrap(),
        ));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for (k, p) in producers.iter().enumerate() {
        let (p, stop, failed) = (p.clone(), stop.clone(), failed.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let event = format!("p{k}-e{n}");
                if p.publish(&event, &[("event", event.as_str())])
                    .await
                    .is_err()
                {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
                n += 1;
            }
            n
        }));
    }
    let cuts = Arc::new(AtomicU64::new(0));
    let injector = {
        let (stop, cuts) = (stop.clone(), cuts.clone());
        let proxy = Arc::new(proxy);
        let p = proxy.clone();
        (
            proxy,
            tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(130)).await;
                    p.cut();
                    p.heal();
                    cuts.fetch_add(1, Ordering::Relaxed);
                }
            }),
        )
    };
    tokio::time::sleep(Duration::from_secs(2)).await;

    let answer = scale(
        &c,
        stream,
        json!({"targetShardCount": 8, "requestedBy": "test", "reason": "quiesced scale",
               "producerQuiesce": {"timeoutMs": 30000}}),
    )
    .await
    .unwrap();
    let id = answer["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    let done = wait_migration(&c, stream, &id, Duration::from_secs(25), |m| {
        m["producerQuiesce"]["waiting"] == json!(false)
    })
    .await;
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
    assert_eq!(done["routingShardCount"], json!(8));

    // Publishing resumes on the new routing; then stop everything.
    let before: u64 = producers.iter().map(|p| p.stats().publishes_held).sum();
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::SeqCst);
    let mut published = 0;
    for t in tasks {
        published += t.await.unwrap();
    }
    injector.1.await.unwrap();
    for p in &producers {
        assert_eq!(p.stats().quiesce_pauses, 1, "each producer paused once");
    }
    assert!(before > 0, "callers waited while producers were quiesced");

    // Every entry of every shard stream, old and new: event id → stream keys it was written to.
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
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
    let across: Vec<(&String, BTreeSet<&String>)> = seen
        .iter()
        .map(|(e, keys)| (e, keys.iter().collect::<BTreeSet<_>>()))
        .filter(|(_, keys)| keys.len() > 1)
        .collect();
    eprintln!(
        "published {published} events ({} failed), {} cuts, {} events written twice by a retry, {} in two shard streams",
        failed.load(Ordering::Relaxed),
        cuts.load(Ordering::Relaxed),
        retried_twice,
        across.len()
    );
    assert!(
        retried_twice > 0,
        "the injected cuts made the SDK retry publishes Redis had already taken"
    );
    assert!(
        across.is_empty(),
        "events published under both shard counts: {:?}",
        &across[..across.len().min(10)]
    );
    let audit = switch_audit(&c, stream).await;
    assert_eq!(
        audit["requestSummary"]["forcedByTimeout"],
        json!(false),
        "{audit}"
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
        m["producerQuiesce"]["waiting"] == json!(false)
    })
    .await;
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
