//! Static membership in the Rust SDK against the real `rsc` binary and redis-server: a rolling restart of
//! three static consumers (each stopped gracefully, then started again as a new process — a new member id —
//! with the same `groupInstanceId`, one after another) moves no shard to another instance. Asserted on what
//! the consumers observed: every read loop any process ever started was for a shard its instance held
//! before the restarts began.

use rsc_client::{
    Consumer, ConsumerConfig, ConsumerEvent, CoordinatorClient, CreateStream, Credentials,
    Delivery, EventSink,
};
use rsc_testkit::{RedisServer, RscBuilder};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ADMIN_PASSWORD: &str = "sdk-static-admin-password";
/// Coordinator member lease TTL; the static-member grace is its default, twice this.
const MEMBER_LEASE_TTL: Duration = Duration::from_secs(3);
const WAIT: Duration = Duration::from_secs(60);

/// The instance of a process's member id `<instance>.<n>`.
fn instance_of(member_id: &str) -> &str {
    member_id.split('.').next().unwrap_or(member_id)
}

async fn start(
    coord: &CoordinatorClient,
    redis_url: &str,
    instance: &str,
    generation: u32,
    log: &Arc<Mutex<Vec<(String, u32)>>>,
) -> Consumer {
    let config = ConsumerConfig::new("rolling", redis_url)
        .member_id(format!("{instance}.{generation}"))
        .group_instance_id(instance)
        .poll_timeout(Duration::from_millis(100))
        .assignment_lease(Duration::from_millis(1_800))
        .heartbeat_timeout(Duration::from_millis(500))
        .shutdown_timeout(Duration::from_secs(10));
    let log = log.clone();
    let sink: EventSink = Arc::new(move |e: &ConsumerEvent| {
        if let ConsumerEvent::ReadStarted {
            member_id, shard, ..
        } = e
        {
            log.lock().unwrap().push((member_id.clone(), *shard));
        }
    });
    Consumer::start_with_events(
        coord.clone(),
        config,
        |d: Delivery| async move {
            let _ = d.ack().await;
        },
        Some(sink),
    )
    .await
    .unwrap()
}

/// What one consumer reads now (its single member's running read loops), once it reads exactly what it owns.
fn reading(c: &Consumer) -> Option<Vec<u32>> {
    let s = c.snapshot().into_iter().next()?;
    (s.lease_valid && !s.owned.is_empty() && s.reading == s.owned && s.draining.is_empty())
        .then_some(s.reading)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_of_three_static_members_moves_no_shard() {
    let redis = RedisServer::start();
    let rsc = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .fast_timings(MEMBER_LEASE_TTL, Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD)
        .start();
    let coord = CoordinatorClient::builder([rsc.url().as_str()])
        .credentials(Some(Credentials::new("admin", ADMIN_PASSWORD)))
        .request_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let created = coord.create_stream("rolling", 6, "sdk-test").await.unwrap();
    assert!(matches!(created, CreateStream::Created(_)));

    let log = Arc::new(Mutex::new(Vec::new()));
    let instances = ["pod-a", "pod-b", "pod-c"];
    let mut consumers = BTreeMap::new();
    for i in instances {
        consumers.insert(i, start(&coord, &redis.url(), i, 1, &log).await);
    }
    let converged = |consumers: &BTreeMap<&str, Consumer>| {
        let mut owner = BTreeMap::new();
        for (i, c) in consumers {
            for s in reading(c)? {
                owner.insert(s, (*i).to_owned());
            }
        }
        (owner.len() == 6
            && consumers
                .values()
                .all(|c| reading(c).map(|r| r.len()) == Some(2)))
        .then_some(owner)
    };
    let deadline = Instant::now() + WAIT;
    let before = loop {
        if let Some(o) = converged(&consumers) {
            break o;
        }
        assert!(
            Instant::now() < deadline,
            "the three consumers never converged"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Only what the restarts do is judged: the start-up hand-overs are forgotten.
    log.lock().unwrap().clear();

    for i in instances {
        let old = consumers.remove(i).unwrap();
        let report = old.shutdown().await;
        assert!(
            report.timed_out.is_empty(),
            "{i} stopped cleanly: {report:?}"
        );
        consumers.insert(i, start(&coord, &redis.url(), i, 2, &log).await);
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(now) = converged(&consumers) {
                assert_eq!(
                    now, before,
                    "after restarting {i}, every shard is with its instance"
                );
                break;
            }
            assert!(Instant::now() < deadline, "{i} never got its shards back");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    let started = log.lock().unwrap().clone();
    assert!(
        started.len() >= 6,
        "each restarted process started its read loops: {started:?}"
    );
    for (member, shard) in &started {
        assert_eq!(
            instance_of(member),
            before[shard],
            "shard {shard} was read by {member}, not by its instance {}",
            before[shard]
        );
    }
    for c in consumers.into_values() {
        c.shutdown().await;
    }
}
