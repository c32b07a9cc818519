//! `POST …/groups/{g}/offsets/reset` against a real redis-server: a dry run changes nothing; LATEST skips,
//! EARLIEST, DATETIME and ID read again, SHIFT moves each shard by a number of records (clamped at the
//! stream's ends) — checked by reading the shard streams with XREADGROUP as a consumer of the group does
//! (which records come next, and which are not delivered again); pending entries are acknowledged when
//! moving forward and kept when moving back; refused (409) while a member may read (a live member, or a hold
//! on a departed member's shards) or a migration is active, and for bad input (400); audited. A member that
//! joins while positions move (the reset stopped after writing its hold) gets no shard until they moved.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::streams::group_position as position_of;
use support::streams::{ids, xadd_at as xadd};
use support::*;

const RESET: &str = "/coord/v1/streams/rs/groups/rs/offsets/reset";

/// What a consumer of the group `rs` is handed next on `key`: the ids.
async fn read_next(
    conn: &mut redis::aio::MultiplexedConnection,
    key: &str,
    count: usize,
) -> Vec<String> {
    support::streams::read_next(conn, key, "rs", "tester", count).await
}

async fn ack(conn: &mut redis::aio::MultiplexedConnection, key: &str, ids: &[&str]) {
    support::streams::ack(conn, key, "rs", ids).await
}

/// (last-delivered id, pending count) of the group `rs` on `key`, as `XINFO GROUPS` says.
async fn position(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> (String, i64) {
    position_of(conn, key, "rs").await
}

async fn reset(api: &Api, body: Value) -> Reply {
    let mut body = body;
    body["requestedBy"] = json!("alice@ops");
    body["reason"] = json!("replay after a bad deploy");
    api.send("POST", RESET, Some(body)).await
}

fn row(body: &Value, shard: u64) -> &Value {
    body["shards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["shardIndex"] == shard)
        .unwrap_or_else(|| panic!("no row for shard {shard}: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_changes_nothing_latest_skips_and_earliest_datetime_and_id_read_again() {
    let redis = rsc_testkit::RedisServer::start();
    let url = redis.url();
    let (running, api) = coordinator(test_config(&url)).await;
    assert_eq!(api.create_stream("rs", 2).await.status, 201);
    let mut conn = redis_conn(&url).await;
    for ms in [1000, 2000, 3000, 4000, 5000, 6000] {
        xadd(&mut conn, "rs:0", ms).await;
    }
    for ms in [1500, 2500] {
        xadd(&mut conn, "rs:1", ms).await;
    }
    // The group has read four records of shard 0 and acknowledged two: 3000 and 4000 are pending.
    assert_eq!(
        read_next(&mut conn, "rs:0", 4).await,
        ids(&[1000, 2000, 3000, 4000])
    );
    ack(&mut conn, "rs:0", &["1000-0", "2000-0"]).await;

    // A dry run: the plan, and nothing moves.
    let plan = reset(&api, json!({"to": "LATEST", "dryRun": true})).await;
    assert_eq!(plan.status, 200, "{}", plan.body);
    assert_eq!(plan.body["dryRun"], true);
    assert_eq!(plan.body["applied"], false);
    assert_eq!(plan.body["to"], "LATEST");
    let s0 = row(&plan.body, 0);
    assert_eq!(s0["currentId"], "4000-0", "{s0}");
    assert_eq!(s0["newId"], "6000-0");
    assert_eq!(s0["direction"], "SKIP");
    assert_eq!(s0["recordsSkipped"], 2);
    assert_eq!(s0["recordsReread"], 0);
    assert_eq!(s0["countCapped"], false);
    assert_eq!(s0["pendingBefore"], 2);
    assert_eq!(s0["pendingAcknowledged"], 2);
    assert_eq!(s0["pendingAfter"], 0);
    let s1 = row(&plan.body, 1);
    assert_eq!(s1["currentId"], "0-0", "{s1}");
    assert_eq!(s1["newId"], "2500-0");
    assert_eq!(s1["recordsSkipped"], 2);
    assert_eq!(position(&mut conn, "rs:0").await, ("4000-0".into(), 2));
    assert_eq!(position(&mut conn, "rs:1").await, ("0-0".into(), 0));

    // LATEST on shard 0 only: 5000 and 6000 are never delivered, the pending 3000 and 4000 are acknowledged,
    // and the next record appended is the next one read. Shard 1 is untouched.
    let done = reset(&api, json!({"to": "LATEST", "shards": [0]})).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(done.body["applied"], true);
    assert_eq!(done.body["shards"].as_array().unwrap().len(), 1);
    assert_eq!(row(&done.body, 0)["pendingAfter"], 0);
    assert_eq!(position(&mut conn, "rs:0").await, ("6000-0".into(), 0));
    assert_eq!(
        read_next(&mut conn, "rs:0", 100).await,
        Vec::<String>::new()
    );
    xadd(&mut conn, "rs:0", 7000).await;
    assert_eq!(read_next(&mut conn, "rs:0", 100).await, ids(&[7000]));
    assert_eq!(position(&mut conn, "rs:1").await, ("0-0".into(), 0));

    // EARLIEST: every record of shard 0 is delivered again; the pending 7000 is kept (and read again).
    let done = reset(&api, json!({"to": "EARLIEST", "shards": [0]})).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let s0 = row(&done.body, 0);
    assert_eq!(s0["currentId"], "7000-0", "{s0}");
    assert_eq!(s0["newId"], "0-0");
    assert_eq!(s0["direction"], "REREAD");
    assert_eq!(s0["recordsReread"], 7);
    assert_eq!(s0["pendingBefore"], 1);
    assert_eq!(s0["pendingAcknowledged"], 0);
    assert_eq!(s0["pendingAfter"], 1);
    assert_eq!(
        read_next(&mut conn, "rs:0", 100).await,
        ids(&[1000, 2000, 3000, 4000, 5000, 6000, 7000])
    );

    // DATETIME: records from 3 s after the epoch on are read again, the ones before are not.
    let done = reset(
        &api,
        json!({"to": "DATETIME", "value": "1970-01-01T00:00:03Z", "shards": [0]}),
    )
    .await;
    assert_eq!(done.status, 200, "{}", done.body);
    let s0 = row(&done.body, 0);
    assert_eq!(s0["newId"], "2999-18446744073709551615", "{s0}");
    assert_eq!(s0["recordsReread"], 5);
    assert_eq!(
        read_next(&mut conn, "rs:0", 100).await,
        ids(&[3000, 4000, 5000, 6000, 7000])
    );

    // ID: the records after the id are read next; moving forward acknowledges what is pending up to it.
    let done = reset(&api, json!({"to": "ID", "value": "4000-0"})).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(row(&done.body, 0)["recordsReread"], 3);
    let s1 = row(&done.body, 1);
    assert_eq!(s1["direction"], "SKIP", "{s1}");
    assert_eq!(s1["recordsSkipped"], 2);
    assert_eq!(
        read_next(&mut conn, "rs:0", 100).await,
        ids(&[5000, 6000, 7000])
    );
    assert_eq!(
        read_next(&mut conn, "rs:1", 100).await,
        Vec::<String>::new()
    );
    let done = reset(&api, json!({"to": "ID", "value": "6000", "shards": [0]})).await;
    let s0 = row(&done.body, 0);
    assert_eq!(s0["direction"], "REREAD", "{s0}");
    assert_eq!(read_next(&mut conn, "rs:0", 100).await, ids(&[7000]));

    // Every applied reset and the dry run are audited with who asked and why.
    let audit = api
        .send(
            "GET",
            "/coord/v1/monitoring/audit?action=RESET_OFFSETS&outcome=SUCCESS",
            None,
        )
        .await;
    let records = audit.body["records"].as_array().unwrap();
    assert_eq!(records.len(), 6, "{}", audit.body);
    assert_eq!(records[0]["requestedBy"], "alice@ops");
    assert_eq!(records[0]["reason"], "replay after a bad deploy");
    assert_eq!(records[0]["consumerGroup"], "rs");
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_is_refused_while_a_member_may_read_and_while_a_migration_is_active() {
    let redis = rsc_testkit::RedisServer::start();
    let url = redis.url();
    let (running, api) = coordinator(test_config(&url)).await;
    assert_eq!(api.create_stream("rs", 2).await.status, 201);
    let mut conn = redis_conn(&url).await;
    xadd(&mut conn, "rs:0", 1000).await;

    // A live member: refused, with force too (its lease is live); nothing moved.
    let mut m = Member::new("m1");
    let answer = api.heartbeat("rs", "rs", &m).await;
    m.adopt(&answer);
    for body in [
        json!({"to": "LATEST"}),
        json!({"to": "LATEST", "force": true}),
    ] {
        let r = reset(&api, body).await;
        assert_eq!(r.status, 409, "{}", r.body);
        assert_eq!(r.body["errorCode"], "GROUP_HAS_ACTIVE_MEMBERS");
        assert!(
            r.body["message"].as_str().unwrap().contains("m1"),
            "{}",
            r.body
        );
    }
    let r = reset(&api, json!({"to": "LATEST", "force": true})).await;
    assert!(
        r.body["message"].as_str().unwrap().contains("live lease"),
        "{}",
        r.body
    );
    // A dry run is refused as well: its plan would not hold while the member reads.
    let r = reset(&api, json!({"to": "LATEST", "dryRun": true})).await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(position(&mut conn, "rs:0").await, ("0-0".into(), 0));

    // Once the member has left, the reset proceeds.
    m.membership.begin_leave();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let answer = api.heartbeat("rs", "rs", &m).await;
        m.adopt(&answer);
        let members = api
            .send(
                "GET",
                "/coord/v1/monitoring/streams/rs/groups/rs/members",
                None,
            )
            .await;
        let gone = members.body["members"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["state"] != "ACTIVE" && x["state"] != "LEAVING");
        if gone {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the member left: {}",
            members.body
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Its shards stay on a hold until its client lease has certainly run out: refused until then.
    let r = reset(&api, json!({"to": "LATEST"})).await;
    if r.status == 409 {
        assert!(
            r.body["message"].as_str().unwrap().contains("held"),
            "{}",
            r.body
        );
    }
    wait_for(
        "the hold on its shards ended",
        Duration::from_secs(15),
        || {
            let api = api.clone();
            async move {
                let a = api
                    .send(
                        "GET",
                        "/coord/v1/monitoring/streams/rs/groups/rs/assignments",
                        None,
                    )
                    .await;
                (a.body["holds"] == json!([])).then_some(())
            }
        },
    )
    .await;
    let r = reset(&api, json!({"to": "LATEST"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(position(&mut conn, "rs:0").await, ("1000-0".into(), 0));

    // A migration held active (another Redis group has not read the shard a scale-in removes): refused.
    let _: () = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg("rs:1")
        .arg("nobody-reads-this")
        .arg("0")
        .query_async(&mut conn)
        .await
        .unwrap();
    xadd(&mut conn, "rs:1", 1000).await;
    let scale = api
        .send(
            "POST",
            "/coord/v1/streams/rs/scale",
            Some(json!({"targetShardCount": 1, "requestedBy": "t", "reason": "t"})),
        )
        .await;
    assert_eq!(scale.status, 202, "{}", scale.body);
    let r = reset(&api, json!({"to": "EARLIEST", "dryRun": true})).await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.body["errorCode"], "ACTIVE_MIGRATION_EXISTS");
    assert_eq!(position(&mut conn, "rs:0").await, ("1000-0".into(), 0));
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_400_and_what_to_send() {
    let redis = rsc_testkit::RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    assert_eq!(api.create_stream("rs", 2).await.status, 201);
    for (body, needle) in [
        (json!({}), "to: required"),
        (json!({"to": "NEWEST"}), "to"),
        (json!({"to": "LATEST", "value": "x"}), "takes no value"),
        (json!({"to": "DATETIME"}), "value: required"),
        (
            json!({"to": "DATETIME", "value": "last tuesday"}),
            "RFC 3339",
        ),
        (
            json!({"to": "DATETIME", "value": "2999-01-01T00:00:00Z"}),
            "future",
        ),
        (json!({"to": "ID", "value": "abc"}), "not a stream id"),
        (json!({"to": "ID", "value": "99999999999999-0"}), "future"),
        (json!({"to": "LATEST", "shards": [2]}), "not a shard"),
        (json!({"to": "LATEST", "shards": [-1]}), "not a shard"),
        (json!({"to": "LATEST", "shards": []}), "empty list"),
        (json!({"to": "LATEST", "shards": [0, 0]}), "twice"),
        (json!({"to": "LATEST", "shards": "0"}), "shards"),
        (json!({"to": "LATEST", "dryRun": "yes"}), "dryRun"),
        (json!({"to": "LATEST", "offset": 3}), "offset"),
        (json!({"to": "SHIFT"}), "shift: required"),
        (json!({"to": "SHIFT", "shift": 0}), "moves nothing"),
        (json!({"to": "SHIFT", "shift": 10_001}), "beyond"),
        (json!({"to": "SHIFT", "shift": -20_000}), "beyond"),
        (json!({"to": "SHIFT", "shift": "-5"}), "shift"),
        (
            json!({"to": "SHIFT", "shift": -5, "value": "x"}),
            "takes no value",
        ),
        (json!({"to": "LATEST", "shift": 5}), "only with"),
    ] {
        let r = reset(&api, body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert_eq!(r.body["errorCode"], "INVALID_REQUEST", "{body}");
        assert!(
            r.body["message"].as_str().unwrap().contains(needle),
            "{body}: {needle}: {}",
            r.body
        );
    }
    // The reason is required: the audit log says why a position moved.
    for body in [
        json!({"to": "LATEST", "requestedBy": "a"}),
        json!({"to": "LATEST", "requestedBy": "a", "reason": "  "}),
    ] {
        let r = api.send("POST", RESET, Some(body.clone())).await;
        r.assert_invalid("reason", "reason: required");
    }
    let r = api
        .send("POST", RESET, Some(json!({"to": "LATEST", "reason": "r"})))
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.body["message"].as_str().unwrap().contains("requestedBy"),
        "{}",
        r.body
    );
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/rs/groups/nope/offsets/reset",
            Some(json!({"to": "LATEST", "requestedBy": "a", "reason": "r"})),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.body);
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_waives_a_member_whose_lease_lapsed_but_not_a_live_one() {
    let redis = rsc_testkit::RedisServer::start();
    let url = redis.url();
    let mut config = test_config(&url);
    // No reconciler: a member that stopped stays ACTIVE in the group after its lease lapsed (as it does for
    // the moments before the reconciler expires it).
    config.coordinator.reconciler.enabled = false;
    let key_prefix = config.coordinator.store.key_prefix.clone();
    let (running, api) = coordinator(config).await;
    assert_eq!(api.create_stream("rs", 1).await.status, 201);
    let mut conn = redis_conn(&url).await;
    xadd(&mut conn, "rs:0", 1000).await;
    let mut m = Member::new("stopped");
    let answer = api.heartbeat("rs", "rs", &m).await;
    m.adopt(&answer);

    // Its lease is live: refused, force or not.
    let r = reset(&api, json!({"to": "LATEST", "force": true})).await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(
        r.body["message"].as_str().unwrap().contains("live lease"),
        "{}",
        r.body
    );

    // The process stops heartbeating; once Redis shows its lease lapsed, force proceeds (without it, refused).
    let leases = rsc_protocol::names::group_leases_key(&key_prefix, "rs", "rs");
    wait_for(
        "the member's lease lapsed in Redis",
        Duration::from_secs(10),
        || {
            let mut conn = conn.clone();
            let leases = leases.clone();
            async move {
                let until: Option<f64> = redis::cmd("ZSCORE")
                    .arg(&leases)
                    .arg("stopped")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                let (secs, micros): (i64, i64) =
                    redis::cmd("TIME").query_async(&mut conn).await.unwrap();
                until
                    .is_some_and(|u| (u as i64) < secs * 1000 + micros / 1000)
                    .then_some(())
            }
        },
    )
    .await;
    let r = reset(&api, json!({"to": "LATEST"})).await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.body["errorCode"], "GROUP_HAS_ACTIVE_MEMBERS");
    assert_eq!(position(&mut conn, "rs:0").await, ("0-0".into(), 0));
    let r = reset(&api, json!({"to": "LATEST", "force": true})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(position(&mut conn, "rs:0").await, ("1000-0".into(), 0));
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shift_moves_each_shard_by_that_many_records_and_says_when_a_stream_end_clamped_it() {
    let redis = rsc_testkit::RedisServer::start();
    let url = redis.url();
    let (running, api) = coordinator(test_config(&url)).await;
    assert_eq!(api.create_stream("rs", 2).await.status, 201);
    let mut conn = redis_conn(&url).await;
    for ms in (1..=10).map(|i| i * 1000) {
        xadd(&mut conn, "rs:0", ms).await;
    }
    for ms in [1500, 2500] {
        xadd(&mut conn, "rs:1", ms).await;
    }
    // The group has read (and acknowledged) six records of shard 0 and both of shard 1.
    let read = read_next(&mut conn, "rs:0", 6).await;
    assert_eq!(read, ids(&[1000, 2000, 3000, 4000, 5000, 6000]));
    let read: Vec<&str> = read.iter().map(String::as_str).collect();
    ack(&mut conn, "rs:0", &read).await;
    assert_eq!(read_next(&mut conn, "rs:1", 10).await, ids(&[1500, 2500]));
    ack(&mut conn, "rs:1", &["1500-0", "2500-0"]).await;

    // Back 3: shard 0 reads 4000..6000 again; shard 1 has only two records, so it goes to its start (clamped).
    let plan = reset(&api, json!({"to": "SHIFT", "shift": -3, "dryRun": true})).await;
    assert_eq!(plan.status, 200, "{}", plan.body);
    assert_eq!(plan.body["to"], "SHIFT");
    assert_eq!(plan.body["shift"], -3);
    let s0 = row(&plan.body, 0);
    assert_eq!(s0["currentId"], "6000-0", "{s0}");
    assert_eq!(s0["newId"], "3000-0");
    assert_eq!(s0["direction"], "REREAD");
    assert_eq!(s0["recordsReread"], 3);
    assert_eq!(s0["clamped"], false);
    let s1 = row(&plan.body, 1);
    assert_eq!(s1["newId"], "0-0", "{s1}");
    assert_eq!(s1["recordsReread"], 2);
    assert_eq!(s1["clamped"], true);
    assert_eq!(position(&mut conn, "rs:0").await, ("6000-0".into(), 0));

    let done = reset(&api, json!({"to": "SHIFT", "shift": -3, "shards": [0]})).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(
        read_next(&mut conn, "rs:0", 3).await,
        ids(&[4000, 5000, 6000])
    );

    // Forward 2 from 6000: 7000 and 8000 are never delivered, the pending 4000..6000 are acknowledged.
    let done = reset(&api, json!({"to": "SHIFT", "shift": 2, "shards": [0]})).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let s0 = row(&done.body, 0);
    assert_eq!(s0["newId"], "8000-0", "{s0}");
    assert_eq!(s0["direction"], "SKIP");
    assert_eq!(s0["recordsSkipped"], 2);
    assert_eq!(s0["pendingAcknowledged"], 3);
    assert_eq!(s0["clamped"], false);
    assert_eq!(read_next(&mut conn, "rs:0", 100).await, ids(&[9000, 10000]));

    // At the end already: forward 5 moves nothing (clamped); back 100 goes to the start with every record.
    let done = reset(&api, json!({"to": "SHIFT", "shift": 5, "shards": [0]})).await;
    let s0 = row(&done.body, 0);
    assert_eq!(s0["direction"], "UNCHANGED", "{s0}");
    assert_eq!(s0["recordsSkipped"], 0);
    assert_eq!(s0["clamped"], true);
    let done = reset(&api, json!({"to": "SHIFT", "shift": -100, "shards": [0]})).await;
    let s0 = row(&done.body, 0);
    assert_eq!(s0["newId"], "0-0", "{s0}");
    assert_eq!(s0["recordsReread"], 10);
    assert_eq!(s0["clamped"], true);
    assert_eq!(read_next(&mut conn, "rs:0", 100).await.len(), 10);
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_joining_while_positions_move_gets_no_shard_until_they_moved() {
    // The reset of this group stops once its hold is written, before any position moves (a unique group
    // name: the pause is per group and process).
    let mut pause =
        rsc_coordinator::services::offset_reset::pause::pause_after_hold("rsjoin", "rsjoin");
    let redis = rsc_testkit::RedisServer::start();
    let url = redis.url();
    let (running, api) = coordinator(test_config(&url)).await;
    assert_eq!(api.create_stream("rsjoin", 2).await.status, 201);
    let mut conn = redis_conn(&url).await;
    for key in ["rsjoin:0", "rsjoin:1"] {
        for ms in [1000, 2000] {
            xadd(&mut conn, key, ms).await;
        }
    }
    // Everything was read and acknowledged; the reset reads it all again.
    for key in ["rsjoin:0", "rsjoin:1"] {
        let _: redis::Value = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg("rsjoin")
            .arg("old")
            .arg("STREAMS")
            .arg(key)
            .arg(">")
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: i64 = redis::cmd("XACK")
            .arg(key)
            .arg("rsjoin")
            .arg("1000-0")
            .arg("2000-0")
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let reset_path = "/coord/v1/streams/rsjoin/groups/rsjoin/offsets/reset";
    let body = json!({"to": "EARLIEST", "requestedBy": "alice@ops", "reason": "replay"});
    let running_reset = tokio::spawn({
        let api = api.clone();
        let body = body.clone();
        async move { api.send("POST", reset_path, Some(body)).await }
    });
    assert!(
        tokio::time::timeout(Duration::from_secs(20), pause.reached())
            .await
            .expect("the reset wrote its hold within 20 s"),
        "the reset stopped after its hold"
    );

    // In the window: the hold is in the group, no position has moved yet, and a member that joins (and
    // heartbeats again) is granted nothing. A second reset is refused.
    let a = api
        .send(
            "GET",
            "/coord/v1/monitoring/streams/rsjoin/groups/rsjoin/assignments",
            None,
        )
        .await;
    assert_eq!(
        a.body["holds"][0]["memberId"], "{offset reset}",
        "{}",
        a.body
    );
    assert_eq!(a.body["holds"][0]["reason"], "offset reset");
    assert_eq!(
        shards(&a.body["holds"][0]["shards"]),
        vec![0, 1],
        "{}",
        a.body
    );
    let mut m = Member::new("joiner");
    for _ in 0..3 {
        let answer = api.heartbeat("rsjoin", "rsjoin", &m).await;
        m.adopt(&answer);
        assert_eq!(
            shards(&answer["assignment"]["assignedShards"]),
            Vec::<u32>::new(),
            "{answer}"
        );
    }
    assert!(m.owned().is_empty());
    for key in ["rsjoin:0", "rsjoin:1"] {
        assert_eq!(position_of(&mut conn, key, "rsjoin").await.0, "2000-0");
    }
    let second = api.send("POST", reset_path, Some(body.clone())).await;
    assert_eq!(second.status, 409, "{}", second.body);
    assert_eq!(second.body["errorCode"], "GROUP_HAS_ACTIVE_MEMBERS");

    // Released: the positions move, the hold is lifted, and the member is granted both shards, which it
    // reads from the new position (every record again).
    pause.release();
    let done = running_reset.await.unwrap();
    assert_eq!(done.status, 200, "{}", done.body);
    let notes = done.body["notes"].to_string();
    assert!(
        notes.contains("joiner") && notes.contains("only after"),
        "{}",
        done.body
    );
    for key in ["rsjoin:0", "rsjoin:1"] {
        assert_eq!(
            position_of(&mut conn, key, "rsjoin").await,
            ("0-0".into(), 0)
        );
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while m.owned().len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the member is granted both shards within 10 s: {:?}",
            m.owned()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        let answer = api.heartbeat("rsjoin", "rsjoin", &m).await;
        m.adopt(&answer);
    }
    assert_eq!(m.owned(), vec![0, 1]);
    let a = api
        .send(
            "GET",
            "/coord/v1/monitoring/streams/rsjoin/groups/rsjoin/assignments",
            None,
        )
        .await;
    assert_eq!(a.body["holds"], json!([]), "{}", a.body);
    running.shutdown().await.unwrap();
}
