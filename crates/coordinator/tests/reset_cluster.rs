//! The offset reset (`POST …/groups/{g}/offsets/reset`) and the pending list (`GET …/shards/{i}/pending`) on a
//! 3-master Redis Cluster (issue #37): the group's keys and each shard stream lie in slots of their own (on
//! several nodes), so every step — the hold written into the group, the plan's `XINFO`, the counting and
//! shifting walk (`walk_ids.lua`, loaded on each node it runs on), `XGROUP SETID`, the `XPENDING`/`XACK` of
//! the pending rule — touches one slot per command. Each target (EARLIEST, LATEST, DATETIME, ID, SHIFT both
//! ways), with `shards` and `dryRun`, is checked per shard by what `XINFO GROUPS` says (last-delivered id,
//! pending count) and by what a consumer of the group is handed next (`XREADGROUP … >`).

use crate::support;

use redis::aio::ConnectionLike;
use rsc_testkit::RedisCluster;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use support::streams::{ids, xadd_at as xadd};
use support::*;

const RESET: &str = "/coord/v1/streams/rc/groups/rc/offsets/reset";
const SHARDS: u64 = 4;

fn key(shard: u64) -> String {
    format!("rc:{shard}")
}

/// What a consumer of the group is handed next on `key` (`XREADGROUP … >`, not blocking): the ids.
async fn read_next(conn: &mut impl ConnectionLike, key: &str, count: usize) -> Vec<String> {
    support::streams::read_next(conn, key, "rc", "tester", count).await
}

async fn ack(conn: &mut impl ConnectionLike, key: &str, ids: &[String]) {
    support::streams::ack(conn, key, "rc", ids).await
}

/// (last-delivered id, pending count) of the group on `key`, as `XINFO GROUPS` says.
async fn position(conn: &mut impl ConnectionLike, key: &str) -> (String, i64) {
    support::streams::group_position(conn, key, "rc").await
}

/// Every shard's [`position`], by shard.
async fn positions(conn: &mut impl ConnectionLike) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for s in 0..SHARDS {
        out.push(position(conn, &key(s)).await);
    }
    out
}

fn at(id: &str, pending: i64) -> (String, i64) {
    (id.to_owned(), pending)
}

async fn reset(api: &Api, body: Value) -> Reply {
    let mut body = body;
    body["requestedBy"] = json!("alice@ops");
    body["reason"] = json!("replay on the cluster");
    let r = api.send("POST", RESET, Some(body.clone())).await;
    assert_eq!(r.status, 200, "{body}: {}", r.body);
    r
}

fn row(body: &Value, shard: u64) -> &Value {
    body["shards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["shardIndex"] == shard)
        .unwrap_or_else(|| panic!("no row for shard {shard}: {body}"))
}

/// The ids of the pending list's page of `shard`.
async fn pending_ids(api: &Api, shard: u64) -> Vec<String> {
    let r = api
        .send(
            "GET",
            &format!("/coord/v1/monitoring/streams/rc/groups/rc/shards/{shard}/pending"),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["recordId"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_reset_target_and_the_pending_list_work_on_a_redis_cluster() {
    let cluster = RedisCluster::start();
    let mut config = test_config("");
    config.coordinator.redis_cluster_nodes = cluster.node_urls();
    let (running, api) = coordinator(config).await;
    assert_eq!(api.create_stream("rc", SHARDS as u32).await.status, 201);
    // The shard streams lie on more than one node (and each in a slot of its own).
    let nodes: BTreeSet<usize> = (0..SHARDS)
        .map(|s| cluster.node_index_for_key(&key(s)))
        .collect();
    assert!(nodes.len() >= 2, "shards on one node only: {nodes:?}");
    let mut conn = redis::cluster::ClusterClient::new(cluster.node_urls())
        .unwrap()
        .get_async_connection()
        .await
        .unwrap();
    // Six records on every shard; the group has read four and acknowledged two: 3000 and 4000 are pending.
    for s in 0..SHARDS {
        for ms in [1000, 2000, 3000, 4000, 5000, 6000] {
            xadd(&mut conn, &key(s), ms).await;
        }
        assert_eq!(
            read_next(&mut conn, &key(s), 4).await,
            ids(&[1000, 2000, 3000, 4000])
        );
        ack(&mut conn, &key(s), &ids(&[1000, 2000])).await;
    }
    assert_eq!(positions(&mut conn).await, vec![at("4000-0", 2); 4]);

    // The pending list of each shard, served from the node that holds it.
    for s in 0..SHARDS {
        assert_eq!(pending_ids(&api, s).await, ids(&[3000, 4000]), "shard {s}");
    }

    // A dry run of LATEST on shards 0 and 2: the plan, and nothing moves.
    let plan = reset(
        &api,
        json!({"to": "LATEST", "shards": [0, 2], "dryRun": true}),
    )
    .await;
    assert_eq!(plan.body["applied"], false);
    assert_eq!(plan.body["shards"].as_array().unwrap().len(), 2);
    for s in [0, 2] {
        let r = row(&plan.body, s);
        assert_eq!(r["currentId"], "4000-0", "{r}");
        assert_eq!(r["newId"], "6000-0", "{r}");
        assert_eq!(r["recordsSkipped"], 2, "{r}");
        assert_eq!(r["pendingAcknowledged"], 2, "{r}");
    }
    assert_eq!(positions(&mut conn).await, vec![at("4000-0", 2); 4]);

    // LATEST on shards 0 and 2: their pending entries are acknowledged (they lie in the skipped range) and
    // nothing is read next; shards 1 and 3 are untouched.
    let done = reset(&api, json!({"to": "LATEST", "shards": [0, 2]})).await;
    assert_eq!(done.body["applied"], true);
    assert_eq!(
        positions(&mut conn).await,
        vec![
            at("6000-0", 0),
            at("4000-0", 2),
            at("6000-0", 0),
            at("4000-0", 2)
        ]
    );
    assert_eq!(pending_ids(&api, 0).await, Vec::<String>::new());
    assert_eq!(pending_ids(&api, 1).await, ids(&[3000, 4000]));
    assert!(read_next(&mut conn, &key(0), 100).await.is_empty());

    // EARLIEST on every shard: every record is read again; pending entries are kept.
    let done = reset(&api, json!({"to": "EARLIEST"})).await;
    for s in 0..SHARDS {
        assert_eq!(row(&done.body, s)["newId"], "0-0");
    }
    assert_eq!(
        positions(&mut conn).await,
        vec![at("0-0", 0), at("0-0", 2), at("0-0", 0), at("0-0", 2)]
    );
    for s in 0..SHARDS {
        assert_eq!(
            read_next(&mut conn, &key(s), 100).await,
            ids(&[1000, 2000, 3000, 4000, 5000, 6000]),
            "shard {s}"
        );
    }
    // The reads above left all six pending on every shard.
    assert_eq!(positions(&mut conn).await, vec![at("6000-0", 6); 4]);

    // DATETIME on shard 1: records from 3 s after the epoch on are read again; moving back keeps its pending.
    let done = reset(
        &api,
        json!({"to": "DATETIME", "value": "1970-01-01T00:00:03Z", "shards": [1]}),
    )
    .await;
    let r = row(&done.body, 1);
    assert_eq!(r["newId"], "2999-18446744073709551615", "{r}");
    assert_eq!(r["recordsReread"], 4, "{r}");
    assert_eq!(r["pendingAfter"], 6, "{r}");
    assert_eq!(
        read_next(&mut conn, &key(1), 100).await,
        ids(&[3000, 4000, 5000, 6000])
    );

    // ID 2000-0 on shards 0 and 3 (moving back: pending kept), then 5000-0 on every shard (moving forward:
    // what is pending up to 5000 is acknowledged, 6000 stays pending).
    let done = reset(
        &api,
        json!({"to": "ID", "value": "2000-0", "shards": [0, 3]}),
    )
    .await;
    assert_eq!(row(&done.body, 3)["recordsReread"], 4);
    assert_eq!(position(&mut conn, &key(3)).await, at("2000-0", 6));
    let done = reset(&api, json!({"to": "ID", "value": "5000-0"})).await;
    assert_eq!(row(&done.body, 0)["direction"], "SKIP");
    assert_eq!(row(&done.body, 1)["direction"], "REREAD");
    assert_eq!(row(&done.body, 0)["pendingAcknowledged"], 5);
    assert_eq!(
        positions(&mut conn).await,
        vec![
            at("5000-0", 1),
            at("5000-0", 6),
            at("5000-0", 6),
            at("5000-0", 1)
        ]
    );
    assert_eq!(pending_ids(&api, 0).await, ids(&[6000]));
    assert_eq!(
        pending_ids(&api, 1).await,
        ids(&[1000, 2000, 3000, 4000, 5000, 6000])
    );

    // SHIFT back 3 (a dry run first, then applied on shards 2 and 3): the walk runs on each shard's node.
    let plan = reset(&api, json!({"to": "SHIFT", "shift": -3, "dryRun": true})).await;
    for s in 0..SHARDS {
        let r = row(&plan.body, s);
        assert_eq!(r["newId"], "2000-0", "{r}");
        assert_eq!(r["recordsReread"], 3, "{r}");
        assert_eq!(r["clamped"], false, "{r}");
    }
    assert_eq!(position(&mut conn, &key(2)).await, at("5000-0", 6));
    reset(&api, json!({"to": "SHIFT", "shift": -3, "shards": [2, 3]})).await;
    assert_eq!(position(&mut conn, &key(2)).await, at("2000-0", 6));
    assert_eq!(
        read_next(&mut conn, &key(2), 100).await,
        ids(&[3000, 4000, 5000, 6000])
    );
    // SHIFT forward 2 on every shard: from 5000 it meets the end after one record (clamped) and acknowledges
    // what was pending; at the end already, nothing moves; from 2000 it skips 3000 and 4000 (6000, pending,
    // lies beyond them and stays pending).
    let done = reset(&api, json!({"to": "SHIFT", "shift": 2})).await;
    let r0 = row(&done.body, 0);
    assert_eq!(r0["newId"], "6000-0", "{r0}");
    assert_eq!(r0["clamped"], true, "{r0}");
    let r3 = row(&done.body, 3);
    assert_eq!(r3["newId"], "4000-0", "{r3}");
    assert_eq!(r3["recordsSkipped"], 2, "{r3}");
    assert_eq!(r3["clamped"], false, "{r3}");
    assert_eq!(
        positions(&mut conn).await,
        vec![
            at("6000-0", 0),
            at("6000-0", 0),
            at("6000-0", 6),
            at("4000-0", 1)
        ]
    );
    assert_eq!(read_next(&mut conn, &key(3), 100).await, ids(&[5000, 6000]));
    assert_eq!(row(&done.body, 2)["direction"], "UNCHANGED");
    assert_eq!(
        pending_ids(&api, 2).await,
        ids(&[1000, 2000, 3000, 4000, 5000, 6000])
    );

    // Every reset, dry runs included, is audited.
    let audit = api
        .send(
            "GET",
            "/coord/v1/monitoring/audit?action=RESET_OFFSETS&outcome=SUCCESS",
            None,
        )
        .await;
    assert_eq!(
        audit.body["records"].as_array().unwrap().len(),
        9,
        "{}",
        audit.body
    );
    running.shutdown().await.unwrap();
}
