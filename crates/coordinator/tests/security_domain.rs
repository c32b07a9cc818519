//! Domain-level security over a real redis-server:
//! - who may raise a metadata-rollback suspicion (a READ principal cannot freeze a group's admin changes),
//!   the per-principal limit, the evidence shown in the durability view, and the audited dismissal;
//! - observations beyond the JSON-safe range are refused, and a recreate never wraps an epoch;
//! - a scale-out never adopts a foreign stream key as a new shard;
//! - a member incarnation belongs to the principal that joined it.

use crate::support;

use rsc_coordinator::config::Config;
use rsc_coordinator::domain_error::Unrecorded;
use rsc_coordinator::runtime::cache::GroupName;
use rsc_coordinator::security::window;
use rsc_coordinator::services::durability::Recording;
use rsc_group::durability::Signal;
use rsc_group::model::SignalKind;
use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use std::time::Duration;
use support::*;

const WAIT: Duration = Duration::from_secs(20);

/// `test_config` plus: a READ, a MONITOR, a WRITE principal, a producer (READ + MEMBER), and two
/// consumer principals (MEMBER).
fn config(redis_url: &str) -> Config {
    let mut c = test_config(redis_url);
    c.coordinator.api.users = vec![
        user("reader", &["READ"], &[]),
        user("monitor", &["MONITOR"], &[]),
        user("writer", &["WRITE"], &[]),
        user("producer", &["READ", "MEMBER"], &[]),
        user("producer2", &["READ", "MEMBER"], &[]),
        user("other-team", &["READ"], &["other-*"]),
        user("alice", &["MEMBER"], &[]),
        user("bob", &["MEMBER"], &[]),
    ];
    c
}

fn as_user(api: &Api, name: &str) -> Api {
    api.with_auth(Auth::Basic(name.into(), USER_PASSWORD.into()))
}

fn group_path(p: &str) -> String {
    format!("/coord/v1/streams/{p}/groups/{p}")
}

async fn durability(api: &Api, p: &str) -> Value {
    let r = api
        .send(
            "GET",
            &format!("/coord/v1/monitoring/streams/{p}/groups/{p}"),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["metadataDurability"].clone()
}

async fn group(api: &Api, p: &str) -> Value {
    let r = api.send("GET", &group_path(p), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

async fn observe(api: &Api, p: &str, observed: &str) -> Reply {
    api.send(
        "GET",
        &format!(
            "{}/producer-routing?observedMetadataVersion={observed}",
            group_path(p)
        ),
        None,
    )
    .await
}

/// Creates stream `p` (2 shards) through a first group, `feed`, whose routing these principals fetch as
/// producers, then group `p`: they were producing to the stream before group `p` existed, so they have a
/// stake in it (only a principal with a member in the group, or a producer of its stream first seen before the
/// group's routing last changed, raises a suspicion: issue #32, finding 12).
async fn stream_with_producers(api: &Api, redis_url: &str, p: &str, producers: &[&str]) {
    let body = json!({"initialShardCount": 2, "requestedBy": "test", "reason": "test"});
    let r = api
        .send(
            "POST",
            &format!("/coord/v1/streams/{p}/groups/feed"),
            Some(body),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    for who in producers {
        let r = as_user(api, who)
            .send(
                "GET",
                &format!("/coord/v1/streams/{p}/groups/feed/producer-routing?producerId={who}-1"),
                None,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    wait_past_producer_sightings(redis_url, p).await;
    let body = json!({"requestedBy": "test", "reason": "test"});
    let r = api.send("POST", &group_path(p), Some(body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
}

/// An admin mutation that only a rollback suspicion refuses: scaling to the current shard count (a no-op).
async fn noop_scale(api: &Api, p: &str, shards: u32) -> Reply {
    api.send(
        "POST",
        &format!("/coord/v1/streams/{p}/scale"),
        Some(json!({"targetShardCount": shards, "requestedBy": "ops", "reason": "no-op"})),
    )
    .await
}

async fn dismiss(api: &Api, p: &str, body: Value) -> Reply {
    api.send(
        "POST",
        &format!("{}/durability/dismiss", group_path(p)),
        Some(body),
    )
    .await
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit_once(' '))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0.0)
}

async fn metrics(api: &Api) -> String {
    api.send("GET", "/metrics", None)
        .await
        .body
        .as_str()
        .unwrap_or("")
        .to_owned()
}

fn heartbeat_path(p: &str, m: &str) -> String {
    format!("{}/members/{m}/heartbeat", group_path(p))
}

async fn beat_as(api: &Api, p: &str, m: &Member) -> Reply {
    api.send("POST", &heartbeat_path(p, m.id()), Some(m.request()))
        .await
}

/// Item 2: a READ (or MONITOR, or WRITE-only) principal's observation is counted and that producer is refused,
/// but nothing is recorded and admin changes go on; a producer principal (MEMBER) raises a suspicion, which
/// records who raised it and is shown in the durability view; a WRITE principal dismisses it (audited,
/// compare-and-set, no version bumped), and the dismissed evidence does not raise it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_principal_cannot_freeze_admin_changes_and_a_writer_dismisses_an_unsupported_suspicion()
 {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis.url())).await;
    let p = "frz";
    stream_with_producers(&api, &redis.url(), p, &["producer", "producer2"]).await;
    let writer = as_user(&api, "writer");
    let before = group(&api, p).await;

    for who in ["reader", "monitor", "writer"] {
        let r = observe(&as_user(&api, who), p, "1000").await;
        assert_eq!(r.status, 409, "{who}: {}", r.body);
        assert_eq!(r.body["errorCode"], "METADATA_ROLLBACK_SUSPECTED");
        assert!(
            r.body["message"]
                .as_str()
                .unwrap()
                .contains("not recorded as rollback evidence"),
            "{}",
            r.body
        );
    }
    assert_eq!(durability(&api, p).await["status"], "OK");
    let r = noop_scale(&writer, p, 2).await;
    assert_eq!(
        r.status, 202,
        "a READ request froze admin changes: {}",
        r.body
    );
    assert!(
        metric(
            &metrics(&api).await,
            "redis_stream_coord_rollback_observation_ignored_total"
        ) >= 3.0
    );

    // A producer principal (MEMBER) is the application: its observation raises the suspicion.
    let r = observe(&as_user(&api, "producer"), p, "1000").await;
    assert_eq!(r.status, 409, "{}", r.body);
    let d = durability(&api, p).await;
    assert_eq!(d["status"], "SUSPECTED_ROLLBACK", "{d}");
    let s = &d["rollbackSuspicion"];
    assert_eq!(s["raisedBy"]["principal"], "producer", "{d}");
    assert_eq!(s["raisedBy"]["signal"], "PRODUCER_METADATA_VERSION");
    assert_eq!(s["raisedBy"]["observed"], 1000);
    assert_eq!(s["raisedBy"]["stored"], before["metadataVersion"]);
    assert!(s["raisedBy"]["at"].is_string());
    assert_eq!(s["evidence"].as_array().unwrap().len(), 1);
    // Health names the suspected group to an unscoped caller, and neither names nor counts it for a principal
    // scoped to other streams (issue #32, Low).
    let health = |who: Api| async move {
        let r = who.send("GET", "/coord/v1/monitoring/health", None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body["components"]["metadataDurability"].clone()
    };
    let all = health(as_user(&api, "reader")).await;
    assert_eq!(all["status"], "SUSPECTED_ROLLBACK", "{all}");
    assert_eq!(all["suspectedGroups"][0]["streamPrefix"], p, "{all}");
    let scoped = health(as_user(&api, "other-team")).await;
    assert_eq!(scoped["status"], "UP", "{scoped}");
    assert_eq!(scoped["suspectedGroups"], json!([]), "{scoped}");
    assert!(!scoped.to_string().contains(p), "{scoped}");
    let r = noop_scale(&writer, p, 2).await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("/durability/dismiss"),
        "{}",
        r.body
    );

    // Dismissal: WRITE only, reasons required, compare-and-set on the suspicion reviewed.
    let updated_at = s["updatedAt"].clone();
    let body = json!({"requestedBy": "alice@ops", "reason": "a test producer reported a bogus version",
                      "expectedUpdatedAt": updated_at});
    let r = dismiss(&as_user(&api, "reader"), p, body.clone()).await;
    assert_eq!(r.status, 403, "{}", r.body);
    let r = dismiss(&as_user(&api, "producer"), p, body.clone()).await;
    assert_eq!(r.status, 403, "{}", r.body);
    let r = dismiss(
        &writer,
        p,
        json!({"requestedBy": "alice@ops", "reason": " ", "expectedUpdatedAt": updated_at}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().starts_with("reason"));
    let r = dismiss(
        &writer,
        p,
        json!({"requestedBy": "alice@ops", "reason": "stale view", "expectedUpdatedAt": "2001-01-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(
        (r.status, r.body["errorCode"].as_str()),
        (409, Some("STATE_VERSION_CONFLICT")),
        "{}",
        r.body
    );
    assert_eq!(durability(&api, p).await["status"], "SUSPECTED_ROLLBACK");

    let r = dismiss(&writer, p, body.clone()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let d = &r.body["metadataDurability"];
    assert_eq!(d["status"], "OK", "{d}");
    assert_eq!(d["lastDismissal"]["principal"], "writer");
    assert_eq!(d["lastDismissal"]["requestedBy"], "alice@ops");
    assert_eq!(d["lastDismissal"]["evidence"][0]["principal"], "producer");
    let after = group(&api, p).await;
    for field in ["metadataVersion", "groupEpoch", "assignmentEpoch"] {
        assert_eq!(after[field], before[field], "{field} must not be bumped");
    }
    let r = dismiss(&writer, p, body.clone()).await;
    assert_eq!(r.status, 400, "nothing left to dismiss: {}", r.body);

    // Audited like every admin mutation.
    let audit = api
        .send(
            "GET",
            "/coord/v1/monitoring/audit?action=DISMISS_ROLLBACK_SUSPICION&outcome=SUCCESS",
            None,
        )
        .await;
    let records = audit.body["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{}", audit.body);
    assert_eq!(records[0]["principal"], "writer");
    assert_eq!(records[0]["requestedBy"], "alice@ops");
    assert_eq!(records[0]["consumerGroup"], p);

    // Admin changes work again; the dismissed evidence does not raise it again, nor, for the quiet period
    // after a dismissal, anything from the principal whose evidence was dismissed (it re-froze the group
    // with one more, issue #32 Low); another principal's newer evidence does.
    assert_eq!(noop_scale(&writer, p, 2).await.status, 202);
    let producer = as_user(&api, "producer");
    assert_eq!(observe(&producer, p, "1000").await.status, 409);
    assert_eq!(durability(&api, p).await["status"], "OK");
    assert_eq!(observe(&producer, p, "1001").await.status, 409);
    assert_eq!(durability(&api, p).await["status"], "OK");
    assert_eq!(noop_scale(&writer, p, 2).await.status, 202);
    let producer2 = as_user(&api, "producer2");
    let r = producer2
        .send(
            "GET",
            &format!(
                "{}/producer-routing?producerId=second-producer",
                group_path(p)
            ),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(observe(&producer2, p, "1001").await.status, 409);
    let d = durability(&api, p).await;
    assert_eq!(d["status"], "SUSPECTED_ROLLBACK", "{d}");
    assert_eq!(d["rollbackSuspicion"]["raisedBy"]["principal"], "producer2");
    running.shutdown().await.unwrap();
}

/// Item 2: a member's heartbeat evidence records its principal, and a principal raises at most 5
/// suspicions per window; another principal's evidence is still recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspicions_record_their_principal_and_are_limited_per_principal() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis.url())).await;
    let p = "lim";
    stream_with_producers(&api, &redis.url(), p, &["producer"]).await;

    // A consumer (MEMBER alice) reports a newer metadataVersion than Redis holds.
    let alice = as_user(&api, "alice");
    let mut m = Member::new("m1");
    let r = beat_as(&alice, p, &m).await;
    assert_eq!(r.status, 200, "{}", r.body);
    m.adopt(&r.body);
    m.forged_metadata_version = Some(m.metadata_version() + 50);
    let r = beat_as(&alice, p, &m).await;
    assert_eq!(r.body["status"], "SYNC_METADATA", "{}", r.body);
    let s = durability(&api, p).await["rollbackSuspicion"].clone();
    assert_eq!(s["raisedBy"]["principal"], "alice", "{s}");
    assert_eq!(s["raisedBy"]["source"], "m1");
    assert_eq!(s["raisedBy"]["signal"], "MEMBER_METADATA_VERSION");
    let updated = s["updatedAt"].clone();
    let r = dismiss(
        &as_user(&api, "writer"),
        p,
        json!({"requestedBy": "ops", "reason": "test", "expectedUpdatedAt": updated}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);

    // A producer principal raises (writes new evidence) at most 5 times per window.
    let producer = as_user(&api, "producer");
    for v in 100..106 {
        assert_eq!(observe(&producer, p, &v.to_string()).await.status, 409);
    }
    let s = durability(&api, p).await["rollbackSuspicion"].clone();
    assert_eq!(s["highestObservedMetadataVersion"], 104, "{s}");
    assert_eq!(s["evidence"].as_array().unwrap().len(), 5);
    assert!(
        metric(
            &metrics(&api).await,
            "redis_stream_coord_rollback_observation_ignored_total"
        ) >= 1.0
    );
    // The budget is the principal's: the admin's evidence is recorded.
    assert_eq!(observe(&api, p, "200").await.status, 409);
    let s = durability(&api, p).await["rollbackSuspicion"].clone();
    assert_eq!(s["highestObservedMetadataVersion"], 200, "{s}");
    assert_eq!(s["evidence"][5]["principal"], "admin");
    running.shutdown().await.unwrap();
}

/// Item 3: epochs and versions a client reports beyond 2^53 - 1 are refused with 400 naming the field; a high
/// accepted one leads to a recreate whose epochs are above it and heartbeats then work; the largest one leaves
/// no room for a recreate, which is then refused (409 EPOCHS_EXHAUSTED) rather than wrapped (before the fix:
/// i64::MAX was recorded and recreate wrapped the epochs to i64::MIN, and every heartbeat then got 400).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reported_versions_beyond_the_json_safe_range_are_refused_and_recreate_never_wraps() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis.url())).await;
    let p = "wrap";
    assert_eq!(api.create_stream(p, 2).await.status, 201);
    const MAX_SAFE: i64 = (1 << 53) - 1;

    for bad in [i64::MAX.to_string(), (MAX_SAFE + 1).to_string()] {
        let r = observe(&api, p, &bad).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        assert_eq!(r.body["errorCode"], "INVALID_REQUEST");
        assert!(
            r.body["message"]
                .as_str()
                .unwrap()
                .starts_with("observedMetadataVersion"),
            "{}",
            r.body
        );
    }
    assert_eq!(
        durability(&api, p).await["status"],
        "OK",
        "nothing recorded"
    );

    let mut m = Member::new("m1");
    for (field, edit) in [
        (
            "memberEpoch",
            (|m: &mut Member| m.forged_epoch = Some(i64::MAX)) as fn(&mut Member),
        ),
        ("metadataVersion", |m: &mut Member| {
            m.forged_metadata_version = Some(MAX_SAFE + 1)
        }),
    ] {
        let mut bad = m.clone();
        edit(&mut bad);
        let r = beat_as(&api, p, &bad).await;
        assert_eq!(r.status, 400, "{field}: {}", r.body);
        assert!(
            r.body["message"].as_str().unwrap().starts_with(field),
            "{}",
            r.body
        );
    }
    let r = api
        .send(
            "POST",
            &format!("{}/recreate", group_path(p)),
            Some(
                json!({"requestedBy": "ops", "reason": "test", "shardCount": 2,
                        "minimumMetadataVersion": i64::MAX}),
            ),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .starts_with("minimumMetadataVersion")
    );

    // A high (accepted) observation, then a recreate: epochs start above it, and heartbeats work.
    assert_eq!(
        observe(&api, p, &(MAX_SAFE - 10).to_string()).await.status,
        409
    );
    let recreate = || async {
        api.send(
            "POST",
            &format!("{}/recreate", group_path(p)),
            Some(json!({"requestedBy": "ops", "reason": "test", "shardCount": 2})),
        )
        .await
    };
    let r = recreate().await;
    assert_eq!(r.status, 200, "{}", r.body);
    for field in ["metadataVersion", "groupEpoch", "assignmentEpoch"] {
        let v = r.body[field].as_i64().unwrap();
        assert!(v > MAX_SAFE - 10 && v <= MAX_SAFE, "{field} {v}");
    }
    let join = api.heartbeat(p, p, &m).await;
    assert_eq!(join["status"], "OK", "{join}");
    assert!(
        join["groupEpoch"].as_i64().unwrap() > MAX_SAFE - 10,
        "{join}"
    );
    m.adopt(&join);
    let steady = api.heartbeat(p, p, &m).await;
    assert_eq!(steady["status"], "OK", "{steady}");

    // The largest accepted observation leaves no epoch for a new lifecycle: a typed refusal, not a wrap.
    assert_eq!(observe(&api, p, &MAX_SAFE.to_string()).await.status, 409);
    let r = recreate().await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.body["errorCode"], "EPOCHS_EXHAUSTED");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("/durability/dismiss"),
        "{}",
        r.body
    );
    let d = durability(&api, p).await;
    assert_eq!(
        d["status"], "SUSPECTED_ROLLBACK",
        "nothing was written: {d}"
    );
    let g = group(&api, p).await;
    assert!(g["metadataVersion"].as_i64().unwrap() > 0, "{g}");
    let steady = api.heartbeat(p, p, &m).await;
    assert_eq!(steady["status"], "OK", "{steady}");
    running.shutdown().await.unwrap();
}

/// A suspicion whose compare-and-set loses to another write of the group (here a member's join landing between
/// the read the evidence was decided on and its write, as the reconciler's tick after a join can in the test
/// above) is decided again on the group as Redis now holds it and still recorded, counted once in the
/// principal's budget: the recreate it allows refuses, as without the race, to wrap an epoch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspicion_that_loses_its_compare_and_set_is_decided_again_and_recorded() {
    let redis = RedisServer::start();
    let mut c = config(&redis.url());
    // Only the join below writes the group.
    c.coordinator.reconciler.enabled = false;
    let (running, api) = coordinator(c).await;
    let p = "race";
    assert_eq!(api.create_stream(p, 2).await.status, 201);
    let coordinator = running.coordinator.clone();
    let name = GroupName::new(p, p);
    let base = coordinator
        .load(&name)
        .await
        .unwrap()
        .expect("the group exists");

    let join = api.heartbeat(p, p, &Member::new("m1")).await;
    assert_eq!(join["status"], "OK", "{join}");
    let moved = coordinator.load(&name).await.unwrap().unwrap();
    assert!(moved.revision > base.revision, "the join wrote the group");

    const MAX_SAFE: i64 = (1 << 53) - 1;
    let signal = Signal {
        kind: SignalKind::ProducerMetadataVersion,
        observed: MAX_SAFE,
        stored: base.group.metadata_version,
        source: "producer".into(),
        principal: Some("admin".into()),
    };
    let written = match coordinator
        .durability()
        .record_suspicion(&name, &base, &signal)
        .await
    {
        Recording::Written(c) => c,
        other => panic!("not recorded after losing the race to the join: {other:?}"),
    };
    assert!(written.revision > moved.revision);
    assert!(
        written.group.members.contains_key("m1"),
        "written on the group as Redis held it, the join kept"
    );
    let d = durability(&api, p).await;
    assert_eq!(d["status"], "SUSPECTED_ROLLBACK", "{d}");
    let budget = window::peek(
        coordinator.store(),
        window::Window::Suspicion(&window::key_part("admin")),
    )
    .await
    .unwrap();
    assert_eq!(budget.count, 1, "one suspicion, counted once");

    let r = api
        .send(
            "POST",
            &format!("{}/recreate", group_path(p)),
            Some(json!({"requestedBy": "ops", "reason": "test", "shardCount": 2})),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.body["errorCode"], "EPOCHS_EXHAUSTED", "{}", r.body);
    running.shutdown().await.unwrap();
}

/// Evidence decided on a group that is deleted before its write is not written into whatever replaces it:
/// the deciding again after the lost compare-and-set finds no group of that lifecycle, logs the evidence and
/// says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspicion_that_loses_to_a_deletion_is_not_written_into_what_follows() {
    let redis = RedisServer::start();
    let mut c = config(&redis.url());
    c.coordinator.reconciler.enabled = false;
    let (running, api) = coordinator(c).await;
    let p = "gone";
    assert_eq!(api.create_stream(p, 2).await.status, 201);
    let coordinator = running.coordinator.clone();
    let name = GroupName::new(p, p);
    let base = coordinator.load(&name).await.unwrap().unwrap();
    let r = api
        .send(
            "DELETE",
            &group_path(p),
            Some(json!({"requestedBy": "ops", "reason": "test", "force": true})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);

    let signal = Signal {
        kind: SignalKind::ProducerMetadataVersion,
        observed: base.group.metadata_version + 5,
        stored: base.group.metadata_version,
        source: "producer".into(),
        principal: None,
    };
    let recorded = coordinator
        .durability()
        .record_suspicion(&name, &base, &signal)
        .await;
    assert!(
        matches!(recorded, Recording::NotRecorded(Unrecorded::Replaced)),
        "{recorded:?}"
    );
    assert!(
        coordinator.load(&name).await.unwrap().is_none(),
        "nothing written"
    );
    running.shutdown().await.unwrap();
}

/// Item 13: a scale-out refuses (409, like create) shard keys that exist and were not created by the
/// coordinator: the foreign stream is left as it was and no migration starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_out_never_adopts_a_foreign_stream_key_as_a_shard() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis.url())).await;
    let mut conn = redis_conn(&redis.url()).await;
    let p = "fk";
    assert_eq!(api.create_stream(p, 2).await.status, 201);
    let id: String = redis::cmd("XADD")
        .arg("fk:2")
        .arg("*")
        .arg("owner")
        .arg("someone-else")
        .query_async(&mut conn)
        .await
        .unwrap();

    for target in [3, 4] {
        let r = noop_scale(&api, p, target).await;
        assert_eq!(r.status, 409, "scale to {target}: {}", r.body);
        assert_eq!(r.body["errorCode"], "STREAM_PREFIX_ALREADY_EXISTS");
        assert!(
            r.body["message"].as_str().unwrap().contains("fk:2"),
            "{}",
            r.body
        );
    }
    // The foreign stream is unchanged: same entry, no consumer group added; nothing else provisioned.
    let range: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
        .arg("fk:2")
        .arg("-")
        .arg("+")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        range,
        vec![(id, vec![("owner".to_owned(), "someone-else".to_owned())])]
    );
    let groups: Vec<redis::Value> = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg("fk:2")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(groups.is_empty(), "{groups:?}");
    let exists: i64 = redis::cmd("EXISTS")
        .arg("fk:3")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(exists, 0);
    // No migration started; routing unchanged.
    let migrations = api
        .send(
            "GET",
            &format!("/coord/v1/monitoring/streams/{p}/groups/{p}/migrations"),
            None,
        )
        .await;
    assert_eq!(
        migrations.body["migrations"],
        json!([]),
        "{}",
        migrations.body
    );
    assert_eq!(migrations.body["activeReshardingId"], Value::Null);
    let routing = api
        .send("GET", &format!("{}/producer-routing", group_path(p)), None)
        .await;
    assert_eq!(routing.body["shardCount"], 2, "{}", routing.body);

    // Once the foreign key is gone, the same scale goes ahead.
    let _: i64 = redis::cmd("DEL")
        .arg("fk:2")
        .query_async(&mut conn)
        .await
        .unwrap();
    let r = noop_scale(&api, p, 4).await;
    assert_eq!(r.status, 202, "{}", r.body);
    running.shutdown().await.unwrap();
}

/// Item 14: a member incarnation belongs to the principal that joined it: another MEMBER principal's
/// heartbeat, leave or rejoin for it is refused (403), the owner's go on, an ADMIN may act for it, and with
/// unauthenticated heartbeats nothing is recorded or checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_id_belongs_to_the_principal_that_joined_it() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis.url())).await;
    let p = "own";
    assert_eq!(api.create_stream(p, 2).await.status, 201);
    let alice = as_user(&api, "alice");
    let bob = as_user(&api, "bob");

    let mut m = Member::new("m1");
    let r = beat_as(&alice, p, &m).await;
    assert_eq!(r.status, 200, "{}", r.body);
    m.adopt(&r.body);
    let r = wait_for("alice's member to own both shards", WAIT, || async {
        let r = beat_as(&alice, p, &m).await;
        (r.body["status"] == "OK" && shards(&r.body["assignment"]["assignedShards"]).len() == 2)
            .then_some(r)
    })
    .await;
    m.adopt(&r.body);
    let epoch = m.epoch();

    // Bob's heartbeat, leave and rejoin for alice's member are refused, and change nothing.
    let mut leave = m.clone();
    leave.forged_epoch = Some(-1);
    let mut rejoin = m.clone();
    rejoin.forged_epoch = Some(0);
    for (what, req) in [("heartbeat", &m), ("leave", &leave), ("rejoin", &rejoin)] {
        let r = beat_as(&bob, p, req).await;
        assert_eq!(r.status, 403, "bob's {what}: {}", r.body);
        assert_eq!(r.body["errorCode"], "MEMBER_OWNED_BY_ANOTHER_PRINCIPAL");
        let message = r.body["message"].as_str().unwrap();
        assert!(
            message.contains("\"alice\"") && message.contains("\"bob\""),
            "{message}"
        );
    }
    let r = beat_as(&alice, p, &m).await;
    assert_eq!(r.body["status"], "OK", "{}", r.body);
    assert_eq!(
        r.body["memberEpoch"], epoch,
        "bob's requests changed nothing"
    );
    assert_eq!(shards(&r.body["assignment"]["assignedShards"]), vec![0, 1]);

    // Bob uses a member id of his own; an ADMIN may act for any member.
    let r = beat_as(&bob, p, &Member::new("m2")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = beat_as(&api, p, &m).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"], "OK");

    // The owner is in the aggregate; a member joined without authentication records none.
    let conn = redis_conn(&redis.url()).await;
    let key = format!("redis-stream:coord:{{{p}:{p}}}:metadata");
    let aggregate = || {
        let mut conn = conn.clone();
        let key = key.clone();
        async move {
            // The members as stored: one field each in the split layout (4), else in the whole document.
            let fields: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap();
            if let Some(json) = fields.get("aggregate") {
                return serde_json::from_str::<Value>(json).unwrap();
            }
            let members: serde_json::Map<String, Value> = fields
                .iter()
                .filter_map(|(f, v)| {
                    let id = f.strip_prefix("members/")?;
                    Some((id.to_owned(), serde_json::from_str(v).unwrap()))
                })
                .collect();
            serde_json::json!({ "members": members })
        }
    };
    let g = aggregate().await;
    assert_eq!(g["members"]["m1"]["owner"], "alice");
    assert_eq!(g["members"]["m2"]["owner"], "bob");
    running.shutdown().await.unwrap();

    let mut open = config(&redis.url());
    open.coordinator.api.authenticate_member_api = false;
    let (running, api) = coordinator(open).await;
    let anonymous = api.with_auth(Auth::None);
    let r = beat_as(&anonymous, p, &Member::new("m3")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"], "OK");
    let r = beat_as(&anonymous, p, &m).await;
    assert_eq!(
        r.status, 200,
        "unauthenticated heartbeats are not checked: {}",
        r.body
    );
    let g = aggregate().await;
    assert!(
        g["members"]["m3"].get("owner").is_none(),
        "{}",
        g["members"]["m3"]
    );
    running.shutdown().await.unwrap();
}
