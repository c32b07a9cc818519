//! An offset reset that stops partway (issue #37), stopped deterministically between two shards by the
//! reset's pause hook (`offset_reset/pause.rs`): when its hold vanishes (here the group is deleted and
//! recreated, and another reset holds the new one) the reset moves no further shard and answers 409
//! `OFFSET_RESET_INCOMPLETE` whose `incompleteReset` lists the shards moved (from → to) and those not moved,
//! the audit record's `result` says the same, and the other reset's hold is left alone; when Redis fails on a
//! shard, that shard is named as in doubt. Positions are read back with `XINFO GROUPS`.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::streams::xadd_at as xadd;
use support::*;

/// The last-delivered id of `group` on `key`, as `XINFO GROUPS` says.
async fn position(conn: &mut redis::aio::MultiplexedConnection, key: &str, group: &str) -> String {
    support::streams::group_position(conn, key, group).await.0
}

fn body() -> Value {
    json!({"to": "LATEST", "requestedBy": "alice@ops", "reason": "skip a poisoned batch"})
}

/// The reset's audit records that failed, newest first.
async fn failed_resets(api: &Api) -> Vec<Value> {
    let audit = api
        .send(
            "GET",
            "/coord/v1/monitoring/audit?action=RESET_OFFSETS&outcome=FAILED",
            None,
        )
        .await;
    assert_eq!(audit.status, 200, "{}", audit.body);
    audit.body["records"].as_array().unwrap().clone()
}

async fn holds(api: &Api, p: &str, g: &str) -> Value {
    let a = api
        .send(
            "GET",
            &format!("/coord/v1/monitoring/streams/{p}/groups/{g}/assignments"),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    a.body["holds"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_whose_hold_vanished_stops_and_says_which_shards_moved_and_which_did_not() {
    // The reset of group "late" stops once its first shard has moved (a unique group name: the pause is per
    // group and process).
    let mut first =
        rsc_coordinator::services::offset_reset::pause::pause_after_shards("ri", "late", 1);
    let redis = rsc_testkit::RedisServer::start();
    let url = redis.url();
    let (running, api) = coordinator(test_config(&url)).await;
    assert_eq!(api.create_stream("ri", 3).await.status, 201);
    let group_path = "/coord/v1/streams/ri/groups/late";
    let create = json!({"requestedBy": "test", "reason": "test"});
    let r = api.send("POST", group_path, Some(create.clone())).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let mut conn = redis_conn(&url).await;
    for s in 0..3 {
        for ms in [1000, 2000, 3000] {
            xadd(&mut conn, &format!("ri:{s}"), ms).await;
        }
    }
    let reset_path = format!("{group_path}/offsets/reset");
    let running_reset = tokio::spawn({
        let api = api.clone();
        let path = reset_path.clone();
        async move { api.send("POST", &path, Some(body())).await }
    });
    assert!(
        tokio::time::timeout(Duration::from_secs(20), first.reached())
            .await
            .expect("the reset moved its first shard within 20 s"),
        "the reset stopped after its first shard"
    );
    assert_eq!(position(&mut conn, "ri:0", "late").await, "3000-0");
    assert_eq!(position(&mut conn, "ri:1", "late").await, "0-0");

    // The hold vanishes: the group is deleted and recreated (its Redis consumer groups stay where they are),
    // and a second reset of the new group holds its shards and stops there.
    let delete = json!({"requestedBy": "bob@ops", "reason": "recreate", "force": true});
    let r = api.send("DELETE", group_path, Some(delete)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = api.send("POST", group_path, Some(create)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(holds(&api, "ri", "late").await, json!([]));
    let mut second = rsc_coordinator::services::offset_reset::pause::pause_after_hold("ri", "late");
    let second_reset = tokio::spawn({
        let api = api.clone();
        let path = reset_path.clone();
        async move { api.send("POST", &path, Some(body())).await }
    });
    assert!(
        tokio::time::timeout(Duration::from_secs(20), second.reached())
            .await
            .expect("the second reset wrote its hold within 20 s"),
        "the second reset stopped after its hold"
    );
    let second_hold = holds(&api, "ri", "late").await;
    assert_eq!(
        second_hold[0]["memberId"], "{offset reset}",
        "{second_hold}"
    );

    // The first reset goes on: the hold it finds is not its own, so it moves nothing more and says so.
    first.release();
    let done = running_reset.await.unwrap();
    assert_eq!(done.status, 409, "{}", done.body);
    assert_eq!(done.body["errorCode"], "OFFSET_RESET_INCOMPLETE");
    let ir = &done.body["incompleteReset"];
    let moved = ir["moved"].as_array().unwrap();
    assert_eq!(moved.len(), 1, "{ir}");
    assert_eq!(moved[0]["shardIndex"], 0);
    assert_eq!(moved[0]["currentId"], "0-0");
    assert_eq!(moved[0]["newId"], "3000-0");
    assert_eq!(ir["notMoved"], json!([1, 2]), "{ir}");
    assert_eq!(ir["inDoubt"], Value::Null, "{ir}");
    assert!(
        ir["cause"].as_str().unwrap().contains("hold"),
        "{}",
        ir["cause"]
    );
    let message = done.body["message"].as_str().unwrap();
    for needle in [
        "stopped partway",
        "Moved: shards 0 (0-0 → 3000-0)",
        "Not moved: shards 1, 2",
        "([1, 2]",
    ] {
        assert!(message.contains(needle), "{needle}: {message}");
    }
    assert_eq!(position(&mut conn, "ri:0", "late").await, "3000-0");
    assert_eq!(position(&mut conn, "ri:1", "late").await, "0-0");
    assert_eq!(position(&mut conn, "ri:2", "late").await, "0-0");
    // The audit record says the same.
    let records = failed_resets(&api).await;
    assert_eq!(records.len(), 1, "{records:?}");
    let rec = &records[0];
    assert_eq!(rec["status"], 409);
    assert_eq!(rec["errorCode"], "OFFSET_RESET_INCOMPLETE");
    assert_eq!(
        rec["result"]["shardsMoved"],
        json!([{"shard": 0, "from": "0-0", "to": "3000-0"}]),
        "{rec}"
    );
    assert_eq!(rec["result"]["shardsNotMoved"], json!([1, 2]), "{rec}");
    // The other reset's hold is not lifted by the first one; released, that reset moves the rest.
    assert_eq!(holds(&api, "ri", "late").await, second_hold);
    second.release();
    let done = second_reset.await.unwrap();
    assert_eq!(done.status, 200, "{}", done.body);
    for s in 0..3 {
        assert_eq!(
            position(&mut conn, &format!("ri:{s}"), "late").await,
            "3000-0"
        );
    }
    assert_eq!(holds(&api, "ri", "late").await, json!([]));
    let ok = api
        .send(
            "GET",
            "/coord/v1/monitoring/audit?action=RESET_OFFSETS&outcome=SUCCESS",
            None,
        )
        .await;
    let rec = &ok.body["records"][0];
    assert_eq!(
        rec["result"]["shardsMoved"][1],
        json!({"shard": 1, "from": "0-0", "to": "3000-0"}),
        "{rec}"
    );
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_that_redis_fails_midway_names_the_shard_in_doubt_and_lifts_its_hold() {
    let mut pause =
        rsc_coordinator::services::offset_reset::pause::pause_after_shards("rj", "rj", 1);
    let redis = rsc_testkit::RedisServer::start();
    let url = redis.url();
    let (running, api) = coordinator(test_config(&url)).await;
    assert_eq!(api.create_stream("rj", 3).await.status, 201);
    let mut conn = redis_conn(&url).await;
    for s in 0..3 {
        for ms in [1000, 2000] {
            xadd(&mut conn, &format!("rj:{s}"), ms).await;
        }
    }
    let running_reset = tokio::spawn({
        let api = api.clone();
        async move {
            api.send(
                "POST",
                "/coord/v1/streams/rj/groups/rj/offsets/reset",
                Some(body()),
            )
            .await
        }
    });
    assert!(
        tokio::time::timeout(Duration::from_secs(20), pause.reached())
            .await
            .expect("the reset moved its first shard within 20 s"),
        "the reset stopped after its first shard"
    );
    // Shard 1's Redis consumer group disappears: its XGROUP SETID fails.
    let _: i64 = redis::cmd("XGROUP")
        .arg("DESTROY")
        .arg("rj:1")
        .arg("rj")
        .query_async(&mut conn)
        .await
        .unwrap();
    pause.release();
    let done = running_reset.await.unwrap();
    assert_eq!(done.status, 409, "{}", done.body);
    assert_eq!(done.body["errorCode"], "OFFSET_RESET_INCOMPLETE");
    let ir = &done.body["incompleteReset"];
    assert_eq!(ir["moved"][0]["shardIndex"], 0, "{ir}");
    assert_eq!(ir["moved"].as_array().unwrap().len(), 1, "{ir}");
    assert_eq!(ir["inDoubt"]["shardIndex"], 1, "{ir}");
    assert_eq!(ir["inDoubt"]["newId"], "2000-0", "{ir}");
    assert_eq!(ir["notMoved"], json!([2]), "{ir}");
    let message = done.body["message"].as_str().unwrap();
    assert!(message.contains("In doubt: shard 1"), "{message}");
    assert!(message.contains("([1, 2]"), "{message}");
    assert_eq!(position(&mut conn, "rj:0", "rj").await, "2000-0");
    assert_eq!(position(&mut conn, "rj:2", "rj").await, "0-0");
    // Its own hold is still there, so it was lifted: the group is not blocked.
    assert_eq!(holds(&api, "rj", "rj").await, json!([]));
    let records = failed_resets(&api).await;
    let rec = &records[0];
    assert_eq!(rec["result"]["shardInDoubt"]["shard"], 1, "{rec}");
    assert_eq!(rec["result"]["shardsNotMoved"], json!([2]), "{rec}");
    running.shutdown().await.unwrap();
}
