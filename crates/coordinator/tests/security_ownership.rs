//! What belongs to a principal, over a real redis-server (issue #32): a static member's `groupInstanceId`
//! (finding 6), a producer's quiesced report (finding 7), and the right to raise a rollback suspicion on a
//! group (finding 12).

use crate::support;

use rsc_coordinator::config::Config;
use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::*;

const WAIT: Duration = Duration::from_secs(20);

fn config(redis_url: &str) -> Config {
    let mut c = test_config(redis_url);
    c.coordinator.api.users = vec![
        user("reader", &["READ"], &[]),
        user("member", &["READ", "MEMBER"], &[]),
        user("member2", &["READ", "MEMBER"], &[]),
        user("member3", &["READ", "MEMBER"], &[]),
        user("app", &["READ", "MEMBER"], &[]),
        user("writer", &["WRITE"], &[]),
    ];
    c
}

fn as_user(api: &Api, name: &str) -> Api {
    api.with_auth(Auth::Basic(name.into(), USER_PASSWORD.into()))
}

#[tokio::test]
async fn a_group_instance_id_belongs_to_the_principal_that_joined_with_it() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis.url())).await;
    let p = "inst";
    assert_eq!(api.create_stream(p, 4).await.status, 201);
    let (alice_api, mallory_api) = (as_user(&api, "member"), as_user(&api, "member2"));
    let mut alice = Member::with_instance("alice-0", "pod-a");
    for _ in 0..4 {
        let r = alice_api.heartbeat(p, p, &alice).await;
        alice.adopt(&r);
    }
    assert!(!alice.owned().is_empty());
    // Alice leaves temporarily: her shards stay reserved for "pod-a".
    alice.forged_epoch = Some(-2);
    let r = alice_api.heartbeat(p, p, &alice).await;
    assert_eq!(r["status"], "OK", "{r}");

    // Another principal joining with her instance id is refused, and gets nothing.
    let mallory = Member::with_instance("mallory-0", "pod-a");
    let r = mallory_api
        .send(
            "POST",
            &format!("/coord/v1/streams/{p}/groups/{p}/members/mallory-0/heartbeat"),
            Some(mallory.request()),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.body["errorCode"], "INSTANCE_OWNED_BY_ANOTHER_PRINCIPAL");
    assert!(
        r.body["message"].as_str().unwrap().contains("\"member\""),
        "{}",
        r.body
    );

    // Alice's restarted process gets her instance (and her shards) back.
    let mut restarted = Member::with_instance("alice-1", "pod-a");
    let deadline = Instant::now() + WAIT;
    loop {
        let r = alice_api.heartbeat(p, p, &restarted).await;
        assert_ne!(r["status"], "FENCED_INSTANCE_ID", "{r}");
        restarted.adopt(&r);
        if !restarted.owned().is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "alice-1 never got shards: {r}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    running.shutdown().await.unwrap();
}

async fn routing(api: &Api, p: &str, producer: &str) -> Reply {
    api.send(
        "GET",
        &format!("/coord/v1/streams/{p}/groups/{p}/producer-routing?producerId={producer}"),
        None,
    )
    .await
}

#[tokio::test]
async fn only_the_producers_own_principal_reports_it_quiesced() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis.url())).await;
    let p = "quiet";
    assert_eq!(api.create_stream(p, 2).await.status, 201);
    let app = as_user(&api, "app");
    assert_eq!(routing(&app, p, "real-prod").await.status, 200);
    let r = api
        .send(
            "POST",
            &format!("/coord/v1/streams/{p}/scale"),
            Some(
                json!({"targetShardCount": 3, "requestedBy": "t", "reason": "r",
                        "producerQuiesce": {"timeoutMs": 120000}}),
            ),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    let notice = routing(&app, p, "real-prod").await.body;
    let rid = notice["quiesce"]["reshardingId"]
        .as_str()
        .expect("a quiesce notice")
        .to_owned();
    let version = notice["routingVersion"].as_i64().unwrap();
    let report = |producer: &str| json!({"producerId": producer, "reshardingId": rid, "observedRoutingVersion": version});
    let path = format!("/coord/v1/streams/{p}/producers/quiesced");

    // A READ caller (what dashboards hold) may not report at all.
    let r = as_user(&api, "reader")
        .send("POST", &path, Some(report("real-prod")))
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    // Another MEMBER principal may not report the app's producer.
    let r = as_user(&api, "member2")
        .send("POST", &path, Some(report("real-prod")))
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        r.body["message"].as_str().unwrap().contains("\"app\""),
        "{}",
        r.body
    );
    // A made-up producer id is not a producer.
    let r = app.send("POST", &path, Some(report("ghost"))).await;
    assert_eq!(r.status, 409, "{}", r.body);
    // Routing has not switched: the scale still waits for the real producer.
    let now = routing(&app, p, "real-prod").await.body;
    assert_eq!(now["shardCount"], 2, "{now}");
    assert!(now["quiesce"].is_object(), "{now}");
    // The producer's own report switches it.
    let r = app.send("POST", &path, Some(report("real-prod"))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let switched = wait_for("routing switched", WAIT, || {
        let app = app.clone();
        async move {
            let r = routing(&app, "quiet", "real-prod").await;
            (r.body["shardCount"] == 3).then_some(r.body)
        }
    })
    .await;
    assert_eq!(switched["shardCount"], 3);
    running.shutdown().await.unwrap();
}

/// Asserts that an observation was answered 409 and logged but not recorded as rollback evidence; returns
/// the answer's message.
fn assert_logged_not_recorded(r: &Reply) -> &str {
    assert_eq!(r.status, 409, "{}", r.body);
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message.contains("not recorded as rollback evidence"),
        "{message}"
    );
    message
}

async fn observe(api: &Api, p: &str, observed: i64) -> Reply {
    api.send(
        "GET",
        &format!(
            "/coord/v1/streams/{p}/groups/{p}/producer-routing?observedMetadataVersion={observed}"
        ),
        None,
    )
    .await
}

async fn durability_status(api: &Api, p: &str) -> Value {
    let r = api
        .send(
            "GET",
            &format!("/coord/v1/monitoring/streams/{p}/groups/{p}"),
            None,
        )
        .await;
    r.body["metadataDurability"]["status"].clone()
}

#[tokio::test]
async fn only_principals_with_a_stake_in_a_group_raise_a_rollback_suspicion() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis.url())).await;
    let p = "team-b";
    assert_eq!(api.create_stream(p, 2).await.status, 201);
    // member2 never joined team-b and produces nothing to it: its observation is logged, not recorded.
    let r = observe(&as_user(&api, "member2"), p, 1000).await;
    assert_logged_not_recorded(&r);
    assert_eq!(durability_status(&api, p).await, "OK");
    let r = as_user(&api, "writer")
        .send(
            "POST",
            &format!("/coord/v1/streams/{p}/scale"),
            Some(json!({"targetShardCount": 2, "requestedBy": "t", "reason": "no-op"})),
        )
        .await;
    assert_ne!(r.status, 409, "member2 froze the group: {}", r.body);

    // A principal with a live member in the group does raise it.
    let member = as_user(&api, "member");
    let m = Member::new("m-1");
    member.heartbeat(p, p, &m).await;
    let r = observe(&member, p, 1000).await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(durability_status(&api, p).await, "SUSPECTED_ROLLBACK");
    running.shutdown().await.unwrap();
}

/// Finding 12, the producer gap: one plain routing read made a MEMBER principal a "producer" of any stream,
/// and its next read, with an observation, froze the group. Now a producer has a stake only when it was first
/// seen producing to the stream before the group's routing last changed: its latest scale, or its creation if
/// it never scaled. A principal that appears afterwards is logged, not recorded, however often it reads; a
/// producer seen before the scale still raises a suspicion.
#[tokio::test]
async fn a_producer_first_seen_after_the_groups_routing_last_changed_raises_no_suspicion() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis.url())).await;
    let p = "team-c";
    assert_eq!(api.create_stream(p, 2).await.status, 201);
    let (app, member2, member3) = (
        as_user(&api, "app"),
        as_user(&api, "member2"),
        as_user(&api, "member3"),
    );
    // The application's producer fetches routing before the scale.
    assert_eq!(routing(&app, p, "app-prod").await.status, 200);

    // A group that never scaled: member2, which never joined, reads routing once, then reports.
    assert_eq!(routing(&member2, p, "m2-prod").await.status, 200);
    let r = observe(&member2, p, 1000).await;
    let message = assert_logged_not_recorded(&r);
    assert!(
        message.contains("after the group's routing last changed"),
        "{message}"
    );
    assert_eq!(durability_status(&api, p).await, "OK");

    // The stream scales (later than every sighting so far).
    wait_past_producer_sightings(&redis.url(), p).await;
    let r = as_user(&api, "writer")
        .send(
            "POST",
            &format!("/coord/v1/streams/{p}/scale"),
            Some(json!({"targetShardCount": 3, "requestedBy": "t", "reason": "grow"})),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);

    // member3 arrives after the scale: one routing read, then evidence, is logged and not recorded.
    assert_eq!(routing(&member3, p, "m3-prod").await.status, 200);
    for _ in 0..2 {
        let r = observe(&member3, p, 1000).await;
        assert_logged_not_recorded(&r);
    }
    assert_eq!(durability_status(&api, p).await, "OK");

    // The producer seen before the scale raises it.
    let r = observe(&app, p, 1000).await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(durability_status(&api, p).await, "SUSPECTED_ROLLBACK");
    let r = api
        .send(
            "GET",
            &format!("/coord/v1/monitoring/streams/{p}/groups/{p}"),
            None,
        )
        .await;
    assert_eq!(
        r.body["metadataDurability"]["rollbackSuspicion"]["raisedBy"]["principal"], "app",
        "{}",
        r.body
    );
    running.shutdown().await.unwrap();
}
