//! Tests of the shard reader against Redis: one XACK per handled batch, a read answered after the lease
//! lapsed stays pending, a delivery read before a Redis restart is acked on retry.
use super::*;
use redis::AsyncCommands;
use redis::streams::StreamPendingReply;
use rsc_testkit::RedisServer;
use tokio::sync::mpsc;

const STREAM: &str = "orders:0";
const GROUP: &str = "orders";
/// Bound on every wait of the test (a delivery arriving, a retried ack succeeding, the loop ending).
const WAIT: Duration = Duration::from_secs(20);

/// A fresh connection for the test's own commands.
async fn admin(client: &redis::Client) -> redis::aio::MultiplexedConnection {
    client
        .get_multiplexed_async_connection()
        .await
        .expect("connect to the test redis")
}

async fn pending(client: &redis::Client) -> usize {
    let reply: StreamPendingReply = admin(client)
        .await
        .xpending(STREAM, GROUP)
        .await
        .expect("XPENDING");
    reply.count()
}

/// Acks like an application that retries a failed ack; returns (still pending, failed attempts).
async fn ack_with_retries(d: &Delivery) -> (bool, usize) {
    let deadline = Instant::now() + WAIT;
    let mut failures = 0;
    loop {
        match d.ack().await {
            Ok(was_pending) => return (was_pending, failures),
            Err(e) => {
                failures += 1;
                assert!(
                    Instant::now() < deadline,
                    "ack still failing after {failures} attempts: {e}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Tells a loop to stop and waits (bounded) until it ended without panicking.
async fn stop_and_join(stop: &watch::Sender<bool>, task: tokio::task::JoinHandle<()>) {
    stop.send_replace(true);
    tokio::time::timeout(WAIT, task)
        .await
        .expect("loop ends when told to stop")
        .expect("loop did not panic");
}

/// A read loop of shard 0 for member m1 whose handler passes every delivery to `tx` without acking it.
fn test_reader(
    client: &redis::Client,
    tx: mpsc::UnboundedSender<Delivery>,
    stop: watch::Receiver<bool>,
    lease: watch::Receiver<Option<Instant>>,
    poll_timeout: Duration,
) -> ReaderCtx<impl Handler> {
    ReaderCtx {
        member_id: "m1".into(),
        group: GROUP.into(),
        stream_key: STREAM.into(),
        boundary: None,
        shard: 0,
        reclaim: false,
        client: crate::redis_target::RedisTarget::standalone(format!(
            "redis://{}",
            client.get_connection_info().addr()
        ))
        .endpoint()
        .expect("test redis target"),
        handler: Arc::new(move |d: Delivery| {
            let _ = tx.send(d);
            std::future::ready(())
        }),
        local: Arc::new(ShardLocal::default()),
        stop,
        lease,
        workers: Arc::new(Semaphore::new(1)),
        worker_count: 1,
        reading_count: Arc::new(AtomicUsize::new(1)),
        handled: Arc::new(AtomicU64::new(0)),
        batch_size: 10,
        ack_after_handle: false,
        poll_timeout,
        events: None,
        fences: watch::channel(ReadFences::default()).1,
    }
}

/// The read fences an answer assigning shard 0 with `fences` and `routingVersion` `version` sets.
fn fences_answered(fences: &[(u32, &str)], version: Option<i64>) -> ReadFences {
    let resp = rsc_protocol::wire::HeartbeatResponse {
        response_to: "r".into(),
        status: rsc_protocol::wire::HeartbeatStatus::Ok,
        member_id: "m1".into(),
        member_epoch: 1,
        heartbeat_interval_ms: 1000,
        rebalance_timeout_ms: 1000,
        group_epoch: 1,
        assignment_epoch: 1,
        metadata_version: 1,
        assignment: rsc_protocol::wire::AssignmentView {
            assigned_shards: vec![rsc_protocol::wire::ShardId::new(0)],
            pending_shards: Vec::new(),
            metadata_version: 1,
        },
        message: None,
        read_fences: fences
            .iter()
            .map(|(s, id)| (s.to_string(), (*id).to_owned()))
            .collect(),
        routing_version: version,
    };
    let mut f = ReadFences::default();
    f.apply_answer(&resp);
    f
}

/// With `ack_after_handle`, the entries of a batch are acknowledged by one XACK once their handler
/// returned, and the shard's progress says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_after_handle_acknowledges_a_handled_batch_with_one_xack() {
    let redis_server = RedisServer::builder().start();
    let client = redis::Client::open(redis_server.url()).expect("redis url");
    let mut c = admin(&client).await;
    let _: () = c
        .xgroup_create_mkstream(STREAM, GROUP, "0")
        .await
        .expect("XGROUP CREATE");
    let mut ids = Vec::new();
    for n in 0..3 {
        let id: String = c.xadd(STREAM, "*", &[("n", n)]).await.expect("XADD");
        ids.push(id);
    }
    let before = rsc_testkit::command_calls(&redis_server.url()).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (stop_tx, stop) = watch::channel(false);
    let (_lease_tx, lease) = watch::channel(Some(Instant::now() + Duration::from_secs(3600)));
    let mut reader = test_reader(&client, tx, stop, lease, Duration::from_millis(200));
    reader.ack_after_handle = true;
    let local = reader.local.clone();
    let task = tokio::spawn(reader.run());
    for id in &ids {
        let d = tokio::time::timeout(WAIT, rx.recv())
            .await
            .expect("delivered in time")
            .expect("reader alive");
        assert_eq!(d.id(), id);
    }
    let deadline = Instant::now() + WAIT;
    while pending(&client).await > 0 {
        assert!(
            Instant::now() < deadline,
            "the handled batch was never acknowledged"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let after = rsc_testkit::command_calls(&redis_server.url()).await;
    let xacks = after.get("xack").copied().unwrap_or(0) - before.get("xack").copied().unwrap_or(0);
    assert_eq!(xacks, 1, "one XACK for the batch of three");
    {
        let p = local.lock();
        assert_eq!(p.last_acked_id.as_deref(), Some(ids[2].as_str()));
        assert_eq!(p.pending, 0);
    }
    stop_and_join(&stop_tx, task).await;
}

/// The process was paused while Redis answered a blocking read, and resumed after the lease lapsed: the
/// entries must not reach the handler (the shard may be another member's by now). They stay pending
/// under this member for the next owner, and this member's next loop of the shard reclaims them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_answered_after_the_lease_lapsed_is_not_handed_over_and_stays_pending() {
    let redis_server = RedisServer::builder().start();
    let client = redis::Client::open(redis_server.url()).expect("redis url");
    let mut c = admin(&client).await;
    let _: () = c
        .xgroup_create_mkstream(STREAM, GROUP, "0")
        .await
        .expect("XGROUP CREATE");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_stop_tx, stop) = watch::channel(false);
    let (lease_tx, lease) = watch::channel(Some(Instant::now() + Duration::from_secs(3600)));
    let reader = test_reader(&client, tx, stop, lease, Duration::from_secs(10));
    let local = reader.local.clone();
    let task = tokio::spawn(reader.run());

    // Wait until the loop blocks in XREADGROUP, then let the lease lapse (as a pause would) and publish.
    let deadline = Instant::now() + WAIT;
    loop {
        let info: redis::InfoDict = redis::cmd("INFO")
            .arg("clients")
            .query_async(&mut c)
            .await
            .expect("INFO");
        if info.get::<i64>("blocked_clients") == Some(1) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the loop never blocked in a read"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    lease_tx.send_replace(Some(Instant::now()));
    let id: String = c.xadd(STREAM, "*", &[("n", "1")]).await.expect("XADD");

    tokio::time::timeout(WAIT, task)
        .await
        .expect("the loop ends once its lease lapsed")
        .expect("loop did not panic");
    assert!(
        rx.try_recv().is_err(),
        "an entry read after the lease lapsed reached the handler"
    );
    let reply: StreamPendingReply = c.xpending(STREAM, GROUP).await.expect("XPENDING");
    assert_eq!(reply.count(), 1, "the entry stays pending");
    assert_eq!(
        local.in_flight.load(Ordering::SeqCst),
        0,
        "nothing counted in flight"
    );
    assert!(
        local.left_pending.load(Ordering::SeqCst),
        "the next loop of the shard is told to reclaim"
    );

    // The next loop (renewed lease, reclaiming) hands the entry over.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (stop_tx, stop) = watch::channel(false);
    let (_lease_tx, lease) = watch::channel(Some(Instant::now() + Duration::from_secs(3600)));
    let mut reader = test_reader(&client, tx, stop, lease, Duration::from_millis(200));
    reader.reclaim = true;
    let task = tokio::spawn(reader.run());
    let d = tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("the pending entry is reclaimed in time")
        .expect("reader alive");
    assert_eq!(d.id(), id);
    assert!(d.reclaimed(), "it came from the pending list");
    stop_and_join(&stop_tx, task).await;
}

/// A Redis restart broke the connection a delivery was read with; the application's retried ack must
/// still succeed (the delivery's connection reconnects), and the loop itself must read on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_read_before_a_redis_restart_is_acked_on_retry_after_it() {
    let redis_server = RedisServer::builder().appendonly(true).start();
    let client = redis::Client::open(redis_server.url()).expect("redis url");
    let mut c = admin(&client).await;
    let _: () = c
        .xgroup_create_mkstream(STREAM, GROUP, "0")
        .await
        .expect("XGROUP CREATE");
    let first: String = c.xadd(STREAM, "*", &[("n", "1")]).await.expect("XADD");

    let (tx, mut rx) = mpsc::unbounded_channel();
    let (stop_tx, stop) = watch::channel(false);
    let (_lease_tx, lease) = watch::channel(Some(Instant::now() + Duration::from_secs(3600)));
    let reader = test_reader(&client, tx, stop, lease, Duration::from_millis(200));
    let task = tokio::spawn(reader.run());

    let d1 = tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("first entry delivered in time")
        .expect("reader alive");
    assert_eq!(d1.id(), first);

    // AOF on: the stream and its pending entry survive the restart.
    let redis_server = tokio::task::spawn_blocking(move || {
        let mut r = redis_server;
        r.restart();
        r
    })
    .await
    .expect("restart");
    assert_eq!(pending(&client).await, 1, "the entry survived, pending");

    let (was_pending, failures) = ack_with_retries(&d1).await;
    assert!(was_pending, "the retried ack removed the pending entry");
    assert_eq!(pending(&client).await, 0, "XPENDING after the ack");
    eprintln!("ack after restart succeeded after {failures} failed attempt(s)");

    // The loop replaced its own connection after the failed read and reads new entries.
    let second: String = admin(&client)
        .await
        .xadd(STREAM, "*", &[("n", "2")])
        .await
        .expect("XADD");
    let d2 = tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("entry after the restart delivered in time")
        .expect("reader alive");
    assert_eq!(d2.id(), second);
    assert!(
        ack_with_retries(&d2).await.0,
        "the second entry was pending"
    );
    assert_eq!(pending(&client).await, 0);

    stop_and_join(&stop_tx, task).await;
    drop(redis_server);
}

/// Ordered streams: with a read fence on its shard, the loop hands over the entries up to the fence and
/// none after it (they stay pending); once the fence is lifted it claims them and hands them over in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_after_the_read_fence_wait_pending_until_it_is_lifted() {
    let redis_server = RedisServer::builder().start();
    let client = redis::Client::open(redis_server.url()).expect("redis url");
    let mut c = admin(&client).await;
    let _: () = c
        .xgroup_create_mkstream(STREAM, GROUP, "0")
        .await
        .expect("XGROUP CREATE");
    let mut ids = Vec::new();
    for n in 0..5 {
        let id: String = c.xadd(STREAM, "*", &[("n", n)]).await.expect("XADD");
        ids.push(id);
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (stop_tx, stop) = watch::channel(false);
    let (_lease_tx, lease) = watch::channel(Some(Instant::now() + Duration::from_secs(3600)));
    let (fences_tx, fences) = watch::channel(fences_answered(&[(0, &ids[2])], Some(1)));
    let mut reader = test_reader(&client, tx, stop, lease, Duration::from_millis(200));
    reader.fences = fences;
    let local = reader.local.clone();
    let task = tokio::spawn(reader.run());

    for id in &ids[..3] {
        let d = tokio::time::timeout(WAIT, rx.recv())
            .await
            .expect("delivered in time")
            .expect("reader alive");
        assert_eq!(d.id(), id);
        assert!(ack_with_retries(&d).await.0);
    }
    // The batch of five was read; the loop is done with it once nothing is in flight: the two entries
    // after the fence were either handed over (and would be in the channel) or held back.
    let deadline = Instant::now() + WAIT;
    while local.in_flight.load(Ordering::SeqCst) > 0 {
        assert!(Instant::now() < deadline, "the batch was never finished");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        rx.try_recv().is_err(),
        "nothing after the fence handed over"
    );
    assert_eq!(pending(&client).await, 2, "held entries stay pending");

    fences_tx.send_replace(fences_answered(&[], Some(1)));
    for id in &ids[3..] {
        let d = tokio::time::timeout(WAIT, rx.recv())
            .await
            .expect("delivered once the fence is lifted")
            .expect("reader alive");
        assert_eq!(d.id(), id, "held entries handed over in order");
        assert!(d.reclaimed());
        assert!(ack_with_retries(&d).await.0);
    }
    assert_eq!(pending(&client).await, 0);
    stop_and_join(&stop_tx, task).await;
}

/// A loop that ends while entries wait behind its read fence (stopped, or its lease lapsed while the
/// process was paused) leaves them pending under this member and says so, so that the member's next loop of
/// the shard claims them rather than reading only new entries (they would stay pending forever: found by
/// the fault suite, seed 1796050501562180087).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_held_behind_a_fence_are_claimed_by_the_next_loop_when_this_one_ends() {
    let redis_server = RedisServer::builder().start();
    let client = redis::Client::open(redis_server.url()).expect("redis url");
    let mut c = admin(&client).await;
    let _: () = c
        .xgroup_create_mkstream(STREAM, GROUP, "0")
        .await
        .expect("XGROUP CREATE");
    let mut ids = Vec::new();
    for n in 0..4 {
        let id: String = c.xadd(STREAM, "*", &[("n", n)]).await.expect("XADD");
        ids.push(id);
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (stop_tx, stop) = watch::channel(false);
    let (_lease_tx, lease) = watch::channel(Some(Instant::now() + Duration::from_secs(3600)));
    let (_fences_tx, fences) = watch::channel(fences_answered(&[(0, &ids[1])], Some(1)));
    let mut reader = test_reader(
        &client,
        tx.clone(),
        stop,
        lease.clone(),
        Duration::from_millis(200),
    );
    reader.fences = fences;
    let local = reader.local.clone();
    let task = tokio::spawn(reader.run());
    for id in &ids[..2] {
        assert_eq!(&next_acked(&mut rx, "entries up to the fence").await, id);
    }
    let deadline = Instant::now() + WAIT;
    while local.in_flight.load(Ordering::SeqCst) > 0 {
        assert!(Instant::now() < deadline, "the batch was never finished");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        pending(&client).await,
        2,
        "two entries held behind the fence"
    );
    // The loop ends while it waits for the fence to lift.
    stop_and_join(&stop_tx, task).await;
    assert!(
        local.left_pending.load(Ordering::SeqCst),
        "the held entries are left for the next loop"
    );

    // The next loop (the fence lifted) claims them, in order, as the member starts it.
    let (stop_tx, stop) = watch::channel(false);
    let mut next = test_reader(&client, tx, stop, lease, Duration::from_millis(200));
    next.local = local.clone();
    next.reclaim = local.left_pending.swap(false, Ordering::SeqCst);
    let task = tokio::spawn(next.run());
    for id in &ids[2..] {
        let d = tokio::time::timeout(WAIT, rx.recv())
            .await
            .expect("held entries delivered by the next loop")
            .expect("reader alive");
        assert_eq!(d.id(), id, "in order");
        assert!(d.reclaimed());
        assert!(ack_with_retries(&d).await.0);
    }
    assert_eq!(pending(&client).await, 0);
    assert!(
        !local.left_pending.load(Ordering::SeqCst),
        "its claim reached the end of the pending list: nothing left for a later loop"
    );
    stop_and_join(&stop_tx, task).await;
}

/// Receives the next delivery (bounded) and acks it; returns its id.
async fn next_acked(rx: &mut mpsc::UnboundedReceiver<Delivery>, what: &str) -> String {
    let d = tokio::time::timeout(WAIT, rx.recv())
        .await
        .unwrap_or_else(|_| panic!("{what}"))
        .expect("reader alive");
    assert!(ack_with_retries(&d).await.0);
    d.id().to_owned()
}

/// Ordered streams, between a switch and the answer that reflects it: the shard's routing boundary, raised by
/// a guarded append with a newer routing version while the loop reads, fences the shard at its switch point
/// by itself. The coordinator's annotation saying the switch does not make the shard a child lifts it; an
/// annotation saying it does keeps it until an answer reflects the switch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_boundary_raised_by_a_newer_switch_fences_the_shard_until_told_otherwise() {
    let redis_server = RedisServer::builder().start();
    let client = redis::Client::open(redis_server.url()).expect("redis url");
    let mut c = admin(&client).await;
    let _: () = c
        .xgroup_create_mkstream(STREAM, GROUP, "0")
        .await
        .expect("XGROUP CREATE");
    let routing_key = rsc_protocol::names::shard_routing_key(STREAM);
    let guarded = |version: i64, n: &str| {
        rsc_scripts::guarded_append(STREAM, &routing_key, version, None, [("n", n.as_bytes())])
    };
    let appended = |v: redis::Value| match rsc_scripts::AppendReply::from_value(&v).expect("reply")
    {
        rsc_scripts::AppendReply::Appended(id) => id,
        other => panic!("not appended: {other:?}"),
    };
    let first = appended(guarded(4, "a").query_async(&mut c).await.expect("EVAL"));

    let (tx, mut rx) = mpsc::unbounded_channel();
    let (stop_tx, stop) = watch::channel(false);
    let (_lease_tx, lease) = watch::channel(Some(Instant::now() + Duration::from_secs(3600)));
    let (fences_tx, fences) = watch::channel(fences_answered(&[], Some(4)));
    let mut reader = test_reader(&client, tx, stop, lease, Duration::from_millis(100));
    reader.fences = fences;
    let task = tokio::spawn(reader.run());
    assert_eq!(next_acked(&mut rx, "read before the switch").await, first);

    // A producer with the next routing version appends first: it raises the boundary (switch point: `first`).
    let moved = appended(guarded(5, "b").query_async(&mut c).await.expect("EVAL"));
    assert!(
        tokio::time::timeout(Duration::from_millis(600), rx.recv())
            .await
            .is_err(),
        "a record after an unannotated newer boundary is held"
    );
    assert_eq!(pending(&client).await, 1, "held, pending");

    // The coordinator annotates the switch: 8 -> 3 on an ordered stream makes shard 0 a child: still held.
    let store = rsc_store::Store::connect(
        &rsc_store::RedisTopology::Standalone(redis_server.url()),
        Duration::from_secs(5),
    )
    .await
    .expect("store");
    let b = store
        .raise_routing_floor(&rsc_store::Shard::new("orders", 0), 5, "5 8 3 1")
        .await
        .expect("raise");
    assert_eq!(
        (b.raised, b.floor, b.switch_id.as_str()),
        (false, 5, first.as_str())
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(400), rx.recv())
            .await
            .is_err(),
        "a child of an ordered switch stays fenced until an answer reflects the switch"
    );
    // The answer reflecting the switch lifts it (the gate opened): the held record is handed over.
    fences_tx.send_replace(fences_answered(&[], Some(5)));
    assert_eq!(
        next_acked(&mut rx, "handed over once the answers reflect the switch").await,
        moved
    );

    // The next switch is annotated as a power-of-two scale-out, where shard 0 keeps its own keys: an append
    // after it is handed over without waiting for an answer.
    let after = appended(guarded(6, "c").query_async(&mut c).await.expect("EVAL"));
    store
        .raise_routing_floor(&rsc_store::Shard::new("orders", 0), 6, "6 4 8 1")
        .await
        .expect("annotate");
    assert_eq!(
        next_acked(&mut rx, "no fence for a shard that is no child").await,
        after
    );
    stop_and_join(&stop_tx, task).await;
}

#[test]
fn the_next_id_is_just_after() {
    assert_eq!(next_id("5-0"), "5-1");
    assert_eq!(next_id("5-18446744073709551615"), "6-0");
    assert_eq!(next_id("junk"), "0-0");
}
