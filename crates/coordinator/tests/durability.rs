//! Metadata durability against a real redis-server: a group's metadata key is snapshotted (DUMP), the group
//! advances, the old snapshot is restored (RESTORE … REPLACE). The coordinator must detect it (store revision
//! and member metadataVersion regressions), answer SYNC_METADATA, show it in health, monitoring and metrics,
//! fail admin mutations closed, refuse producers that saw newer routing, and be repaired only by restoring a
//! good backup or by the audited recreate-as-new-lifecycle operation.

use crate::support;

use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use support::*;

const WAIT: Duration = Duration::from_secs(20);
const KEY: &str = "redis-stream:coord:{dur:dur}:metadata";
const GROUP: &str = "/coord/v1/streams/dur/groups/dur";

async fn dump(conn: &mut redis::aio::MultiplexedConnection) -> Vec<u8> {
    redis::cmd("DUMP").arg(KEY).query_async(conn).await.unwrap()
}

async fn restore(conn: &mut redis::aio::MultiplexedConnection, snapshot: &[u8]) {
    let () = redis::cmd("RESTORE")
        .arg(KEY)
        .arg(0)
        .arg(snapshot)
        .arg("REPLACE")
        .query_async(conn)
        .await
        .unwrap();
}

async fn beat(api: &Api, m: &mut Member) -> Value {
    let body = api.heartbeat("dur", "dur", m).await;
    m.adopt(&body);
    body
}

async fn health(api: &Api) -> Value {
    api.send("GET", "/coord/v1/monitoring/health", None)
        .await
        .body
}

async fn wait_health(api: &Api, status: &str) -> Value {
    wait_for(&format!("health {status}"), WAIT, || async {
        let h = health(api).await;
        (h["status"] == status).then_some(h)
    })
    .await
}

fn metric(text: &str, prefix: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit_once(' '))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0.0)
}

/// Deletes the group at `group_path` (`/coord/v1/streams/{p}/groups/{g}`), forced, as an operator.
async fn delete(api: &Api, group_path: &str) -> Reply {
    api.send(
        "DELETE",
        group_path,
        Some(json!({"requestedBy": "ops", "reason": "test", "force": true})),
    )
    .await
}

/// Rolls the group back to `old` and waits until a heartbeat from `a` (which saw newer metadata) is
/// answered SYNC_METADATA.
async fn roll_back_and_detect(
    api: &Api,
    conn: &mut redis::aio::MultiplexedConnection,
    old: &[u8],
    a: &Member,
    old_version: i64,
) {
    restore(conn, old).await;
    let reply = api.heartbeat("dur", "dur", a).await;
    assert_eq!(reply["status"], "SYNC_METADATA", "{reply}");
    assert_eq!(
        reply["metadataVersion"], old_version,
        "told to sync down to what Redis holds"
    );
    // Shards A already reads and may keep; nothing new is granted during the correction round.
    let assigned = shards(&reply["assignment"]["assignedShards"]);
    assert!(assigned.iter().all(|s| a.owned().contains(s)), "{reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_old_snapshot_is_detected_fails_closed_and_is_repaired() {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    config.coordinator.metrics.refresh_interval =
        rsc_coordinator::config::Dur(Duration::from_millis(100));
    let (running, api) = coordinator(config).await;
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    assert_eq!(api.create_stream("dur", 2).await.status, 201);

    // A alone, converged: snapshot the metadata key.
    let mut a = Member::new("a");
    for _ in 0..3 {
        beat(&api, &mut a).await;
    }
    assert_eq!(a.owned(), vec![0, 1]);
    let old_version = a.metadata_version();
    let old = dump(&mut conn).await;

    // B joins; both converge. The group is now ahead of the snapshot.
    let mut b = Member::new("b");
    for _ in 0..4 {
        beat(&api, &mut b).await;
        beat(&api, &mut a).await;
    }
    assert_eq!((a.owned().len(), b.owned().len()), (1, 1));
    assert!(a.metadata_version() > old_version);
    let good = dump(&mut conn).await;

    // Roll back: detected on A's next heartbeat.
    roll_back_and_detect(&api, &mut conn, &old, &a, old_version).await;

    // Shown in health, monitoring and metrics.
    let h = wait_health(&api, "DEGRADED").await;
    let component = &h["components"]["metadataDurability"];
    assert_eq!(component["status"], "SUSPECTED_ROLLBACK", "{h}");
    assert_eq!(component["suspectedGroups"][0]["consumerGroup"], "dur");
    let signals = component["suspectedGroups"][0]["signals"].to_string();
    assert!(
        signals.contains("STORE_REVISION") && signals.contains("MEMBER_METADATA_VERSION"),
        "{signals}"
    );
    let group = api
        .send("GET", "/coord/v1/monitoring/streams/dur/groups/dur", None)
        .await;
    let durability = &group.body["metadataDurability"];
    assert_eq!(durability["status"], "SUSPECTED_ROLLBACK");
    assert_eq!(
        durability["rollbackSuspicion"]["highestObservedMetadataVersion"],
        a.metadata_version()
    );
    assert_eq!(durability["rollbackSuspicion"]["mutationsBlocked"], true);
    assert!(
        durability["metadataCorrection"].is_object(),
        "a correction round is open: {durability}"
    );
    let text = api
        .send("GET", "/metrics", None)
        .await
        .body
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        metric(&text, "redis_stream_coord_store_revision_regression_total") >= 1.0,
        "{text}"
    );
    assert!(
        metric(
            &text,
            "redis_stream_coord_metadata_version_regression_total"
        ) >= 1.0
    );
    let suspected = wait_for("the suspected gauge", WAIT, || async {
        let t = api
            .send("GET", "/metrics", None)
            .await
            .body
            .as_str()
            .unwrap_or("")
            .to_owned();
        (metric(
            &t,
            "redis_stream_coord_metadata_rollback_suspected{stream=\"dur\",group=\"dur\"}",
        ) == 1.0)
            .then_some(())
    });
    suspected.await;

    // Admin mutations fail closed with a clear code.
    let refused = delete(&api, GROUP).await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(refused.body["errorCode"], "METADATA_ROLLBACK_SUSPECTED");
    assert!(
        refused.body["message"]
            .as_str()
            .unwrap()
            .contains("/recreate")
    );

    // A producer that saw the newer version is refused, not moved backwards; one that reports nothing is served.
    let routing = format!("{GROUP}/producer-routing");
    let r = api
        .send(
            "GET",
            &format!("{routing}?observedMetadataVersion={}", a.metadata_version()),
            None,
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.body["errorCode"], "METADATA_ROLLBACK_SUSPECTED");
    assert_eq!(api.send("GET", &routing, None).await.status, 200);
    let bad = api
        .send(
            "GET",
            &format!("{routing}?observedMetadataVersion=soon"),
            None,
        )
        .await;
    assert_eq!(
        (bad.status, bad.body["errorCode"].as_str()),
        (400, Some("INVALID_REQUEST"))
    );

    // Repair 1: restore a backup that is as new as what was observed. The suspicion goes with the old document.
    restore(&mut conn, &good).await;
    let ok = beat(&api, &mut a).await;
    assert_eq!(ok["status"], "OK", "{ok}");
    wait_health(&api, "UP").await;
    let group = api
        .send("GET", "/coord/v1/monitoring/streams/dur/groups/dur", None)
        .await;
    assert_eq!(group.body["metadataDurability"]["status"], "OK");

    // Repair 2: roll back again, then recreate the group as a new lifecycle.
    roll_back_and_detect(&api, &mut conn, &old, &a, old_version).await;
    let missing = api
        .send(
            "POST",
            &format!("{GROUP}/recreate"),
            Some(json!({"requestedBy": "ops", "reason": "restore lost"})),
        )
        .await;
    assert_eq!(
        missing.status, 400,
        "shardCount is required: {}",
        missing.body
    );
    let recreated = api
        .send(
            "POST",
            &format!("{GROUP}/recreate"),
            Some(json!({"requestedBy": "ops", "reason": "Redis restored from an old backup", "shardCount": 2})),
        )
        .await;
    assert_eq!(recreated.status, 200, "{}", recreated.body);
    let version = recreated.body["metadataVersion"].as_i64().unwrap();
    assert!(
        version > a.metadata_version(),
        "the new lifecycle starts above every observed version"
    );
    assert_ne!(
        recreated.body["lifecycleId"],
        recreated.body["previousLifecycleId"]
    );
    assert_eq!(
        recreated.body["targetAssignmentSummary"],
        json!({}),
        "nothing carried over"
    );
    wait_health(&api, "UP").await;

    // Old members are told to rejoin and then proceed normally in the new lifecycle.
    let reply = beat(&api, &mut a).await;
    assert_eq!(reply["status"], "UNKNOWN_MEMBER_ID", "{reply}");
    wait_for(
        "A to own both shards in the new lifecycle",
        WAIT,
        || async {
            let mut m = a.clone();
            let r = api.heartbeat("dur", "dur", &m).await;
            m.adopt(&r);
            let done = r["status"] == "OK" && m.owned() == vec![0, 1];
            Some(m).filter(|_| done)
        },
    )
    .await;
    let healthy = api
        .send(
            "POST",
            &format!("{GROUP}/recreate"),
            Some(json!({"requestedBy": "ops", "reason": "again", "shardCount": 2})),
        )
        .await;
    assert_eq!(
        healthy.status, 400,
        "recreate refuses a healthy group: {}",
        healthy.body
    );

    // Mutations work again.
    assert_eq!(delete(&api, GROUP).await.status, 200);
    running.shutdown().await.unwrap();
}

/// Health used to read durability from the background metrics pass, so it said UP for up to a refresh
/// interval after a suspicion was recorded. Now a suspicion (or its repair) seen by this replica makes health
/// read the groups at once.
#[tokio::test]
async fn health_reports_a_suspicion_and_its_repair_at_once() {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    // A background pass that would answer health for a long while.
    config.coordinator.metrics.refresh_interval =
        rsc_coordinator::config::Dur(Duration::from_secs(60));
    let (running, api) = coordinator(config).await;
    assert_eq!(api.create_stream("dur", 2).await.status, 201);
    // Wait for a background pass that already lists the group, so health answers from it.
    wait_for("a background pass answers health", WAIT, || async {
        let h = health(&api).await;
        (h["components"]["metadataDurability"]["checkedBy"] == "background check").then_some(())
    })
    .await;
    assert_eq!(health(&api).await["status"], "UP");

    // A producer saw a newer metadataVersion: rollback evidence, recorded in the aggregate.
    let r = api
        .send(
            "GET",
            &format!("{GROUP}/producer-routing?observedMetadataVersion=999"),
            None,
        )
        .await;
    assert_eq!(
        r.body["errorCode"], "METADATA_ROLLBACK_SUSPECTED",
        "{}",
        r.body
    );
    let h = health(&api).await;
    assert_eq!(
        h["status"], "DEGRADED",
        "at once, not at the next pass: {h}"
    );
    assert_eq!(
        h["components"]["metadataDurability"]["suspectedGroups"][0]["consumerGroup"],
        "dur"
    );

    // The repair shows at once too.
    let recreated = api
        .send(
            "POST",
            &format!("{GROUP}/recreate"),
            Some(json!({"requestedBy": "ops", "reason": "repair", "shardCount": 2})),
        )
        .await;
    assert_eq!(recreated.status, 200, "{}", recreated.body);
    let h = health(&api).await;
    assert_eq!(h["status"], "UP", "{h}");
    running.shutdown().await.unwrap();
}

/// The dead end of issue #33 (point 7): a member reports a newer metadataVersion (a correction round opens
/// and a suspicion is raised), the operator dismisses the suspicion, the member goes away. Before, every admin
/// change of the stream answered 409 METADATA_SYNC_IN_PROGRESS until some member joined; now the round closes
/// once the last member's lease lapses, and the scale is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correction_round_closes_when_its_last_member_expires() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    assert_eq!(api.create_stream("dur", 2).await.status, 201);
    let mut a = Member::new("a");
    for _ in 0..3 {
        beat(&api, &mut a).await;
    }
    a.forged_metadata_version = Some(a.metadata_version() + 5);
    let reply = api.heartbeat("dur", "dur", &a).await;
    assert_eq!(reply["status"], "SYNC_METADATA", "{reply}");

    let scale = json!({"targetShardCount": 3, "requestedBy": "ops", "reason": "test"});
    let dismissed = api
        .send(
            "POST",
            &format!("{GROUP}/durability/dismiss"),
            Some(json!({"requestedBy": "ops", "reason": "a test client"})),
        )
        .await;
    assert_eq!(dismissed.status, 200, "{}", dismissed.body);
    let refused = api
        .send("POST", "/coord/v1/streams/dur/scale", Some(scale.clone()))
        .await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(
        refused.body["errorCode"], "METADATA_SYNC_IN_PROGRESS",
        "{}",
        refused.body
    );

    // a stops heartbeating: its lease lapses (1.5 s), the reconciler expires it and closes the round.
    let accepted = wait_for("the scale to be accepted", WAIT, || async {
        let r = api
            .send("POST", "/coord/v1/streams/dur/scale", Some(scale.clone()))
            .await;
        (r.status == 202).then_some(r)
    })
    .await;
    assert_eq!(accepted.body["targetShardCount"], 3, "{}", accepted.body);
    running.shutdown().await.unwrap();
}

/// Joins members `m<i>` for every `i` in `ids` to group `p/p`, from [`JOINERS`] tasks at once (each join is
/// one write), until `stop` is set (if given) or every id has joined.
async fn join_members(
    api: &Api,
    p: &str,
    ids: std::ops::Range<usize>,
    stop: Option<Arc<AtomicBool>>,
) {
    let mut tasks = tokio::task::JoinSet::new();
    for first in 0..JOINERS {
        let (api, p, stop, ids) = (api.clone(), p.to_owned(), stop.clone(), ids.clone());
        tasks.spawn(async move {
            for i in ids.skip(first).step_by(JOINERS) {
                if stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
                    return;
                }
                let body = api.heartbeat(&p, &p, &Member::new(&format!("m{i}"))).await;
                assert_eq!(body["status"], "OK", "{body}");
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.expect("a joiner task");
    }
}

/// How many tasks [`join_members`] joins from.
const JOINERS: usize = 16;

/// A replica's load of a large group that its own writes overtake while the read is under way (a join
/// storm: reading and parsing a thousand members takes longer than the gap between two writes) finds a
/// revision below those the replica has just committed. That is no rollback: nothing is recorded, the group
/// stays mutable, and the load answers with the newest aggregate. Before, the second such read in a row was
/// recorded as a store-revision rollback (the group's admin changes then failed closed and health turned
/// DEGRADED: seen in `rsc bench heartbeat`'s rolling restart of a 10,000-member group).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loads_that_the_replicas_own_writes_overtake_are_no_rollback() {
    const MEMBERS: usize = 1_500;
    // Loads until this many were overtaken by writes, at most MAX_LOADS.
    const OVERTAKEN: usize = 10;
    const MAX_LOADS: usize = 500;
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    // Nobody heartbeats after joining: the members must outlive the test.
    config.coordinator.member_lease_ttl = rsc_coordinator::config::Dur(Duration::from_secs(300));
    let (running, api) = coordinator(config).await;
    assert_eq!(api.create_stream("big", 4).await.status, 201);
    join_members(&api, "big", 0..MEMBERS, None).await;

    // A stream of joins keeps writing while the group is loaded again and again.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn({
        let (api, stop) = (api.clone(), stop.clone());
        async move { join_members(&api, "big", MEMBERS..usize::MAX, Some(stop)).await }
    });
    let name = rsc_coordinator::runtime::cache::GroupName::new("big", "big");
    let mut conn = redis_conn(&redis.url()).await;
    let (mut overtaken, mut loads) = (0, 0);
    while overtaken < OVERTAKEN && loads < MAX_LOADS {
        loads += 1;
        let before: u64 = redis::cmd("HGET")
            .arg("redis-stream:coord:{big:big}:metadata")
            .arg("revision")
            .query_async(&mut conn)
            .await
            .unwrap();
        let loaded = running
            .coordinator
            .load(&name)
            .await
            .expect("loads")
            .expect("exists");
        assert!(loaded.revision >= before, "{} < {before}", loaded.revision);
        if loaded.revision > before {
            overtaken += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.await.expect("the writer");
    assert_eq!(
        overtaken, OVERTAKEN,
        "writes must land while the loads are under way for this test to mean anything: {overtaken} of {loads}"
    );

    assert_eq!(
        metric_total(&api, "store_revision_regression_total").await,
        0.0
    );
    let view = api
        .send("GET", "/coord/v1/monitoring/streams/big/groups/big", None)
        .await
        .body;
    assert!(
        view["metadataDurability"]["rollbackSuspicion"].is_null(),
        "{}",
        view["metadataDurability"]
    );
    let deleted = delete(&api, "/coord/v1/streams/big/groups/big").await;
    assert_eq!(deleted.status, 200, "still mutable: {}", deleted.body);
    running.shutdown().await.unwrap();
}
