//! End-to-end tests of the Rust SDK (rsc-client) against the real `rsc` binary and real redis-server
//! processes: message accounting through a crash and a graceful stop, the one-reader-per-shard promise for
//! a consumer cut off from the coordinator, routed publishing through a coordinator outage, and `rsc demo`
//! (its summary tells a backlog still in the stream from records lost).

use rsc_client::{
    ClientError, Consumer, ConsumerConfig, ConsumerEvent, CoordinatorClient, CreateStream,
    Credentials, Delivery, EventSink, Producer, ProducerConfig, Record, StopReason,
};
use rsc_testkit::{LoopbackProxy, RedisServer, RscBuilder, RscProcess};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

const ADMIN_PASSWORD: &str = "sdk-test-admin-password";
/// Coordinator timing for these tests: heartbeat 200 ms, member lease TTL 3 s.
const MEMBER_LEASE_TTL: Duration = Duration::from_secs(3);
/// Client assignment lease: the TTL minus a 1.2 s margin.
const CLIENT_LEASE: Duration = Duration::from_millis(1800);

/// A real `rsc serve` with test timings and the bootstrap admin, on `port` (or a free one).
fn start_rsc(redis_url: &str, port: Option<u16>) -> RscProcess {
    let mut b = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), redis_url)
        .fast_timings(MEMBER_LEASE_TTL, Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD);
    if let Some(p) = port {
        b = b.port(p);
    }
    b.start()
}

fn coordinator(urls: &[&str]) -> CoordinatorClient {
    CoordinatorClient::builder(urls.iter().copied())
        .credentials(Some(Credentials::new("admin", ADMIN_PASSWORD)))
        .request_timeout(Duration::from_secs(2))
        .build()
        .unwrap()
}

fn consumer_config(stream: &str, redis_url: &str, member: &str) -> ConsumerConfig {
    ConsumerConfig::new(stream, redis_url)
        .member_id(member)
        .batch_size(20)
        .poll_timeout(Duration::from_millis(100))
        .assignment_lease(CLIENT_LEASE)
        .heartbeat_timeout(Duration::from_millis(500))
        .shutdown_timeout(Duration::from_secs(10))
}

/// Polls `cond` every 50 ms until it holds or `timeout` passes (then panics with `what`).
async fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Read intervals per (shard, member), from ReadStarted/ReadStopped events.
#[derive(Default)]
struct OwnershipLog {
    events: Mutex<Vec<ConsumerEvent>>,
}

#[derive(Debug, Clone, Copy)]
struct Interval {
    start: SystemTime,
    stop: Option<SystemTime>,
    reason: Option<StopReason>,
}

impl OwnershipLog {
    fn sink(self: &Arc<Self>) -> EventSink {
        let log = self.clone();
        Arc::new(move |e: &ConsumerEvent| {
            if matches!(
                e,
                ConsumerEvent::ReadStarted { .. }
                    | ConsumerEvent::ReadStopped { .. }
                    | ConsumerEvent::LeaseExpired { .. }
            ) {
                log.events.lock().unwrap().push(e.clone());
            }
        })
    }

    /// (shard, member) → intervals in start order. A member listed in `killed_at` has its open intervals
    /// closed at that instant (its tasks were aborted then).
    fn intervals(
        &self,
        killed_at: &HashMap<String, SystemTime>,
    ) -> BTreeMap<(u32, String), Vec<Interval>> {
        let mut out: BTreeMap<(u32, String), Vec<Interval>> = BTreeMap::new();
        for e in self.events.lock().unwrap().iter() {
            match e {
                ConsumerEvent::ReadStarted {
                    member_id,
                    shard,
                    at,
                    ..
                } => out
                    .entry((*shard, member_id.clone()))
                    .or_default()
                    .push(Interval {
                        start: *at,
                        stop: None,
                        reason: None,
                    }),
                ConsumerEvent::ReadStopped {
                    member_id,
                    shard,
                    at,
                    reason,
                } => {
                    let list = out.entry((*shard, member_id.clone())).or_default();
                    let open = list
                        .iter_mut()
                        .rev()
                        .find(|i| i.stop.is_none())
                        .expect("a stop follows a start");
                    open.stop = Some(*at);
                    open.reason = Some(*reason);
                }
                _ => {}
            }
        }
        for ((_, member), list) in out.iter_mut() {
            if let Some(k) = killed_at.get(member) {
                for i in list.iter_mut().filter(|i| i.stop.is_none()) {
                    i.stop = Some(*k);
                }
            }
        }
        out
    }

    fn lease_expired(&self, member: &str) -> bool {
        self.events
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, ConsumerEvent::LeaseExpired { member_id } if member_id == member))
    }
}

/// Panics if two different members' read intervals of one shard overlap. Open intervals last until `now`.
fn assert_no_overlap(intervals: &BTreeMap<(u32, String), Vec<Interval>>) -> usize {
    let now = SystemTime::now();
    let mut by_shard: BTreeMap<u32, Vec<(&str, SystemTime, SystemTime)>> = BTreeMap::new();
    for ((shard, member), list) in intervals {
        for i in list {
            by_shard
                .entry(*shard)
                .or_default()
                .push((member, i.start, i.stop.unwrap_or(now)));
        }
    }
    let mut handovers = 0;
    for (shard, mut list) in by_shard {
        list.sort_by_key(|(_, start, _)| *start);
        for pair in list.windows(2) {
            let (a, _, a_stop) = pair[0];
            let (b, b_start, _) = pair[1];
            if a != b {
                handovers += 1;
                assert!(
                    a_stop <= b_start,
                    "shard {shard}: {a} read until {a_stop:?} but {b} started at {b_start:?}"
                );
            }
        }
        // Also across non-adjacent intervals: every interval must end before any later one of another member.
        for (i, (a, _, a_stop)) in list.iter().enumerate() {
            for (b, b_start, _) in &list[i + 1..] {
                if a != b {
                    assert!(a_stop <= b_start, "shard {shard}: {a} overlaps {b}");
                }
            }
        }
    }
    handovers
}

/// Who handled which message (by sequence number), and whether they acknowledged it.
#[derive(Default)]
struct Tally {
    handled: Mutex<HashMap<u64, Vec<(String, bool)>>>,
}

impl Tally {
    fn record(&self, seq: u64, member: &str, acked: bool) {
        self.handled
            .lock()
            .unwrap()
            .entry(seq)
            .or_default()
            .push((member.to_owned(), acked));
    }

    fn distinct(&self) -> usize {
        self.handled.lock().unwrap().len()
    }
}

fn seq_of(d: &Delivery) -> u64 {
    d.field_str("seq")
        .and_then(|s| s.parse().ok())
        .expect("test messages carry a seq")
}

async fn pending_total(redis_url: &str, stream: &str, shards: u32) -> i64 {
    let client = redis::Client::open(redis_url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let mut total = 0;
    for i in 0..shards {
        let summary: redis::Value = redis::cmd("XPENDING")
            .arg(format!("{stream}:{i}"))
            .arg(stream)
            .query_async(&mut conn)
            .await
            .unwrap();
        if let redis::Value::Array(items) = summary
            && let Some(redis::Value::Int(n)) = items.first()
        {
            total += n;
        }
    }
    total
}

async fn create_stream(coord: &CoordinatorClient, stream: &str, shards: u32) {
    let created = coord
        .create_stream(stream, shards, "sdk-test")
        .await
        .unwrap();
    assert!(matches!(created, CreateStream::Created(r) if r.shard_count == shards));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_messages_survive_a_kill_mid_batch_and_a_graceful_stop() {
    const TOTAL: u64 = 20_000;
    const SHARDS: u32 = 6;
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url(), None);
    let coord = coordinator(&[&rsc.url()]);
    create_stream(&coord, "orders", SHARDS).await;

    let tally = Arc::new(Tally::default());
    let log = Arc::new(OwnershipLog::default());
    let (killed_tx, killed_rx) = tokio::sync::oneshot::channel::<()>();
    let killed_tx = Arc::new(Mutex::new(Some(killed_tx)));
    let victim_handled = Arc::new(AtomicU64::new(0));
    let reclaimed = Arc::new(AtomicU64::new(0));

    let mut consumers = HashMap::new();
    for member in ["c1", "c2", "c3"] {
        let tally = tally.clone();
        let killed_tx = killed_tx.clone();
        let victim_handled = victim_handled.clone();
        let reclaimed = reclaimed.clone();
        let handler = move |d: Delivery| {
            let tally = tally.clone();
            let killed_tx = killed_tx.clone();
            let victim_handled = victim_handled.clone();
            let reclaimed = reclaimed.clone();
            async move {
                let seq = seq_of(&d);
                if d.reclaimed() {
                    reclaimed.fetch_add(1, Ordering::SeqCst);
                }
                if d.member_id() == "c1" && victim_handled.fetch_add(1, Ordering::SeqCst) == 1_500 {
                    // Crash in the middle of a batch: handled, not acknowledged, the rest of the batch
                    // never handled. The test aborts this consumer now.
                    tally.record(seq, "c1", false);
                    if let Some(tx) = killed_tx.lock().unwrap().take() {
                        let _ = tx.send(());
                    }
                    std::future::pending::<()>().await;
                }
                let acked = d.ack().await.is_ok();
                tally.record(seq, d.member_id(), acked);
            }
        };
        let consumer = Consumer::start_with_events(
            coord.clone(),
            consumer_config("orders", &redis.url(), member),
            handler,
            Some(log.sink()),
        )
        .await
        .unwrap();
        consumers.insert(member, consumer);
    }

    let producer = Producer::connect(
        coord.clone(),
        ProducerConfig::new("orders", redis.url()).max_len(None),
    )
    .await
    .unwrap();
    let producing = tokio::spawn(async move {
        let mut seq = 0u64;
        while seq < TOTAL {
            let records: Vec<Record> = (seq..seq + 200)
                .map(|s| {
                    Record::new(format!("customer-{}", s % 997))
                        .field("seq", s.to_string())
                        .field("payload", "x")
                })
                .collect();
            producer.publish_batch(&records).await.unwrap();
            seq += 200;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        producer
    });

    tokio::time::timeout(Duration::from_secs(60), killed_rx)
        .await
        .expect("c1 reaches its crash point")
        .unwrap();
    let killed_at = SystemTime::now();
    consumers.remove("c1").unwrap().abort();
    let _producer = producing.await.unwrap();

    let t = tally.clone();
    wait_for("two thirds handled", Duration::from_secs(60), || {
        t.distinct() as u64 >= TOTAL * 2 / 3
    })
    .await;
    let report = consumers.remove("c2").unwrap().shutdown().await;
    assert_eq!(report.left, vec!["c2".to_owned()], "{report:?}");

    let t = tally.clone();
    wait_for("every message handled", Duration::from_secs(90), || {
        t.distinct() as u64 == TOTAL
    })
    .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pending = pending_total(&redis.url(), "orders", SHARDS).await;
        if pending == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{pending} entries stay pending");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let c3 = consumers.remove("c3").unwrap();
    let c3_state = c3.snapshot();
    let report = c3.shutdown().await;
    assert_eq!(report.left, vec!["c3".to_owned()]);
    assert_eq!(
        c3_state[0].owned.len(),
        SHARDS as usize,
        "c3 took over everything"
    );

    let handled = tally.handled.lock().unwrap();
    assert_eq!(handled.len() as u64, TOTAL);
    assert!((0..TOTAL).all(|s| handled.contains_key(&s)));
    let duplicates: Vec<(&u64, &Vec<(String, bool)>)> =
        handled.iter().filter(|(_, h)| h.len() > 1).collect();
    // Duplicates occur only around the kill: each one was handled by c1 without being acknowledged.
    for (seq, handlers) in &duplicates {
        assert!(
            handlers.iter().any(|(m, acked)| m == "c1" && !acked),
            "message {seq} was handled twice without a crash: {handlers:?}"
        );
    }
    assert!(
        duplicates.len() <= 1,
        "only the entry in the handler at the kill may repeat: {duplicates:?}"
    );
    let unacked_by_c1 = handled
        .values()
        .filter(|h| h.iter().any(|(m, a)| m == "c1" && !a))
        .count();
    assert_eq!(unacked_by_c1, 1);
    assert_eq!(duplicates.len(), 1, "the crashed entry was redelivered");
    // The new owner reclaimed c1's pending entries (the crashed one and the unhandled rest of its batch).
    assert!(reclaimed.load(Ordering::SeqCst) >= 1);
    println!(
        "messages={TOTAL} duplicates={} handled_by_c1={} reclaimed={}",
        duplicates.len(),
        victim_handled.load(Ordering::SeqCst),
        reclaimed.load(Ordering::SeqCst)
    );

    let intervals = log.intervals(&HashMap::from([("c1".to_owned(), killed_at)]));
    let handovers = assert_no_overlap(&intervals);
    assert!(handovers > 0, "shards moved between members");
    drop(rsc);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_cut_off_from_the_coordinator_stops_reading_before_its_shards_move() {
    const SHARDS: u32 = 6;
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url(), None);
    let proxy = LoopbackProxy::start(rsc.port()).await;
    let direct = coordinator(&[&rsc.url()]);
    let proxied = coordinator(&[&proxy.url()]);
    create_stream(&direct, "cut", SHARDS).await;

    let log = Arc::new(OwnershipLog::default());
    let handled = Arc::new(Mutex::new(BTreeSet::new()));
    let handler = |handled: Arc<Mutex<BTreeSet<u64>>>| {
        move |d: Delivery| {
            let handled = handled.clone();
            async move {
                let seq = seq_of(&d);
                if d.ack().await.is_ok() {
                    handled.lock().unwrap().insert(seq);
                }
            }
        }
    };
    let a = Consumer::start_with_events(
        proxied,
        consumer_config("cut", &redis.url(), "a"),
        handler(handled.clone()),
        Some(log.sink()),
    )
    .await
    .unwrap();
    let b = Consumer::start_with_events(
        direct.clone(),
        consumer_config("cut", &redis.url(), "b"),
        handler(handled.clone()),
        Some(log.sink()),
    )
    .await
    .unwrap();

    // A steady trickle of messages so that both members really read.
    let producer = Producer::connect(direct.clone(), ProducerConfig::new("cut", redis.url()))
        .await
        .unwrap();
    let published = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (p, s) = (published.clone(), stop.clone());
    let producing = tokio::spawn(async move {
        let mut seq = 0u64;
        while !s.load(Ordering::SeqCst) {
            producer
                .publish(format!("k{}", seq % 50), &[("seq", seq.to_string())])
                .await
                .unwrap();
            seq += 1;
            p.store(seq, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });

    wait_for("a and b share the shards", Duration::from_secs(20), || {
        let (sa, sb) = (&a.snapshot()[0], &b.snapshot()[0]);
        sa.reading.len() == 3 && sb.reading.len() == 3 && sa.draining.is_empty()
    })
    .await;
    let a_shards: Vec<u32> = a.snapshot()[0].reading.clone();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let cut_at = Instant::now();
    proxy.cut();
    wait_for("a stops reading", Duration::from_secs(10), || {
        a.snapshot()[0].reading.is_empty()
    })
    .await;
    let a_stopped_after = cut_at.elapsed();
    wait_for("b takes over every shard", Duration::from_secs(20), || {
        b.snapshot()[0].reading.len() == SHARDS as usize
    })
    .await;
    let b_took_over_after = cut_at.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::SeqCst);
    producing.await.unwrap();
    let total = published.load(Ordering::SeqCst);
    let h = handled.clone();
    wait_for("every message handled", Duration::from_secs(20), || {
        h.lock().unwrap().len() as u64 == total
    })
    .await;

    assert!(log.lease_expired("a"), "a's lease expired");
    assert!(
        a_stopped_after <= CLIENT_LEASE + Duration::from_millis(500),
        "a stopped {a_stopped_after:?} after the cut"
    );
    assert!(
        b_took_over_after >= MEMBER_LEASE_TTL - CLIENT_LEASE,
        "b took over after {b_took_over_after:?}"
    );
    let intervals = log.intervals(&HashMap::new());
    for s in &a_shards {
        let last = intervals[&(*s, "a".to_owned())].last().unwrap();
        assert_eq!(last.reason, Some(StopReason::LeaseExpired), "shard {s}");
        assert!(
            intervals.contains_key(&(*s, "b".to_owned())),
            "b read shard {s} after a"
        );
    }
    let handovers = assert_no_overlap(&intervals);
    assert!(handovers >= a_shards.len());
    println!(
        "a stopped {a_stopped_after:?} after the cut; b owned all shards {b_took_over_after:?} after it; {total} messages"
    );

    a.abort();
    let report = b.shutdown().await;
    assert_eq!(report.left, vec!["b".to_owned()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_publishes_through_a_coordinator_outage_until_its_routing_lease_expires() {
    let redis = RedisServer::start();
    let mut rsc = start_rsc(&redis.url(), None);
    let coord = coordinator(&[&rsc.url()]);
    create_stream(&coord, "pub", 4).await;
    let lease = Duration::from_secs(2);
    let producer = Producer::connect(
        coord.clone(),
        ProducerConfig::new("pub", redis.url())
            .refresh_interval(Duration::from_millis(200))
            .routing_lease(lease),
    )
    .await
    .unwrap();
    // Routing matches the contract's hash: order-123 → shard 1 of 4, user-42 → shard 0.
    let p = producer.publish("order-123", &[("v", "1")]).await.unwrap();
    assert_eq!((p.shard, p.stream_key.as_str()), (1, "pub:1"));
    let p = producer.publish("user-42", &[("v", "2")]).await.unwrap();
    assert_eq!((p.shard, p.stream_key.as_str()), (0, "pub:0"));

    let refreshed_at = Instant::now();
    producer.refresh_routing().await.unwrap();
    let port = rsc.port();
    rsc.kill();
    // Within the lease, publishing keeps working on cached routing.
    let p = producer.publish("hello", &[("v", "3")]).await.unwrap();
    assert_eq!(p.shard, 3);
    assert!(refreshed_at.elapsed() < lease);
    // After it, publishing fails closed with a retryable error.
    // (A background refresh may have completed just before the kill, so allow a little extra.)
    tokio::time::sleep(lease.saturating_sub(refreshed_at.elapsed()) + Duration::from_millis(400))
        .await;
    let err = producer.publish("hello", &[("v", "4")]).await.unwrap_err();
    assert!(
        matches!(err, ClientError::RoutingUnavailable { .. }) && err.is_retryable(),
        "{err}"
    );
    // The coordinator comes back: publishing resumes.
    let _rsc = start_rsc(&redis.url(), Some(port));
    let p = producer.publish("hello", &[("v", "5")]).await.unwrap();
    assert_eq!(p.shard, 3);

    // A stale route (stream key gone) is refreshed and retried once; a stream that stays missing is a
    // typed error rather than a silent drop.
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: i64 = redis::cmd("DEL")
        .arg("pub:2")
        .query_async(&mut conn)
        .await
        .unwrap();
    // The routing refresh re-provisions the stream, so the retry succeeds.
    let stale_before = producer.stats().stale_route_writes;
    let p = producer.publish("a", &[("v", "6")]).await.unwrap();
    assert_eq!(p.stream_key, "pub:2");
    assert_eq!(
        producer.stats().stale_route_writes,
        stale_before + 1,
        "the stale write is counted"
    );
    let len: i64 = redis::cmd("XLEN")
        .arg("pub:2")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(len, 1);

    // Pipelined batches route every record by the same hash.
    let records: Vec<Record> = (0..500)
        .map(|i| Record::new(format!("order-{i}")).field("i", i.to_string()))
        .collect();
    let out = producer.publish_batch(&records).await.unwrap();
    assert_eq!(out.len(), 500);
    for (r, p) in records.iter().zip(&out) {
        assert_eq!(
            Some(p.shard),
            rsc_protocol::routing::shard_for_key(&r.key, 4)
        );
    }
}

#[test]
fn rsc_demo_prints_the_summary_line_and_loses_nothing() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url(), None);
    let out = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args([
            "demo",
            "--coordinator",
            &rsc.url(),
            "--redis-url",
            &redis.url(),
            "--duration",
            "4",
            "--rate",
            "300",
        ])
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", ADMIN_PASSWORD)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stdout.contains("rsc-demo-"),
        "live view lists members: {stdout}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    let fields: HashMap<&str, u64> = last
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k, v.parse().unwrap()))
        .collect();
    assert_eq!(
        fields.keys().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from(["published", "acked", "duplicates", "backlog", "lost"]),
        "{last}"
    );
    assert!(fields["published"] > 0, "{last}");
    assert_eq!(fields["acked"], fields["published"], "{last}");
    assert_eq!(fields["lost"], 0, "{last}");
    assert_eq!(fields["backlog"], 0, "{last}");

    // Without credentials against a coordinator that needs them, it says what to do.
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args([
            "demo",
            "--coordinator",
            &rsc.url(),
            "--redis-url",
            &redis.url(),
            "--duration",
            "1",
        ])
        .env_remove("RSC_USERNAME")
        .env_remove("RSC_PASSWORD")
        .env("RSC_CONFIG_DIR", empty.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("requires credentials: set RSC_USERNAME and RSC_PASSWORD"),
        "{stderr}"
    );

    // The password from stdin (issue #33), and then the login `rsc login` stored, with no password at all.
    let run = |args: &[&str], stdin: &str| {
        use std::io::Write;
        let mut child = Command::new(env!("CARGO_BIN_EXE_rsc"))
            .args(args)
            .env("RSC_COORDINATOR", rsc.url())
            .env("RSC_CONFIG_DIR", empty.path())
            .env_remove("RSC_USERNAME")
            .env_remove("RSC_PASSWORD")
            .env_remove("RSC_TOKEN")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let text = format!(
            "stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let redis_url = redis.url();
    let demo_args = [
        "demo",
        "--redis-url",
        &redis_url,
        "--duration",
        "1",
        "--rate",
        "50",
    ];
    let (ok, text) = run(
        &[&demo_args[..], &["--username", "admin", "--password-stdin"]].concat(),
        &format!("{ADMIN_PASSWORD}\n"),
    );
    assert!(ok && text.contains("lost=0"), "{text}");
    let (ok, text) = run(
        &["login", "--username", "admin", "--password-stdin"],
        &format!("{ADMIN_PASSWORD}\n"),
    );
    assert!(ok, "{text}");
    let (ok, text) = run(&demo_args, "");
    assert!(ok && text.contains("lost=0"), "{text}");
    assert!(text.contains("using the login rsc login stored"), "{text}");
}

/// The demo's summary line as numbers.
fn demo_summary(stdout: &str) -> HashMap<String, u64> {
    stdout
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.parse().unwrap()))
        .collect()
}

fn demo(rsc: &RscProcess, redis: &RedisServer, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rsc"));
    cmd.args([
        "demo",
        "--coordinator",
        &rsc.url(),
        "--redis-url",
        &redis.url(),
    ])
    .args(args)
    .env("RSC_USERNAME", "admin")
    .env("RSC_PASSWORD", ADMIN_PASSWORD);
    cmd
}

#[test]
fn rsc_demo_tells_a_backlog_still_in_the_stream_from_records_lost() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url(), None);

    // Consumers far slower than the producer, and no time to catch up: a backlog, nothing lost, exit 0.
    let out = demo(
        &rsc,
        &redis,
        &[
            "--stream",
            "slow",
            "--shards",
            "2",
            "--members",
            "1",
            "--handle-ms",
            "100",
            "--rate",
            "300",
            "--duration",
            "3",
            "--drain-timeout",
            "1",
        ],
    )
    .output()
    .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let f = demo_summary(&stdout);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(f["lost"], 0, "{stdout}");
    assert!(f["backlog"] > 0, "{stdout}");
    assert_eq!(f["acked"] + f["backlog"], f["published"], "{stdout}");
    assert!(stderr.contains("not a loss"), "{stderr}");

    // Records deleted from the stream before anyone read them: lost, exit 1.
    let child = demo(
        &rsc,
        &redis,
        &[
            "--stream",
            "trimmed",
            "--shards",
            "1",
            "--rate",
            "300",
            "--backlog",
            "5",
            "--duration",
            "2",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let mut conn = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let trimmed = loop {
        let len: i64 = redis::cmd("XLEN")
            .arg("trimmed:0")
            .query(&mut conn)
            .unwrap();
        if len >= 20 {
            // The consumers start 5 s after the first publish: nobody has read these.
            let n: i64 = redis::cmd("XTRIM")
                .arg("trimmed:0")
                .arg("MAXLEN")
                .arg(0)
                .query(&mut conn)
                .unwrap();
            break n as u64;
        }
        assert!(Instant::now() < deadline, "the demo never published");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let f = demo_summary(&stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(f["lost"] >= trimmed, "trimmed {trimmed}: {stdout}");
    assert_eq!(f["backlog"], 0, "{stdout}");
    assert_eq!(f["acked"] + f["lost"], f["published"], "{stdout}");
}
