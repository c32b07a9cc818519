//! A stream as a whole against a real redis-server: `GET /coord/v1/streams/{p}/describe` and
//! `GET …/history` after producing N records (XADD to the shard streams) and consuming M of them for one
//! group (XREADGROUP): produce and consume rates above zero, lag N − M for the group that read and N for the
//! one that did not, lengths per shard, the hottest shard; unknown streams (404) and bad `minutes` (400).

use crate::support;

use rsc_testkit::RedisServer;
use serde_json::Value;
use std::time::Duration;
use support::*;

const N: usize = 30;
const M: usize = 12;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_and_history_show_lag_and_rates_after_records_are_produced_and_consumed() {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    config.coordinator.metrics.refresh_interval =
        rsc_coordinator::config::Dur(Duration::from_millis(100));
    let (_running, api) = coordinator(config).await;
    assert_eq!(api.create_stream("sales", 2).await.status, 201);
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/sales/groups/audit",
            Some(serde_json::json!({"requestedBy": "test"})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);

    // A first sample before any record, so that the records below are counted as produced between samples.
    wait_for("a first sample", Duration::from_secs(20), || async {
        let h = api
            .send("GET", "/coord/v1/streams/sales/history", None)
            .await;
        assert_eq!(h.status, 200, "{}", h.body);
        (!h.body["points"].as_array().unwrap().is_empty()).then_some(())
    })
    .await;

    let mut conn = redis_conn(&redis.url()).await;
    let shard0 = rsc_store::Keyspace::shard_stream("sales", 0);
    let shard1 = rsc_store::Keyspace::shard_stream("sales", 1);
    // Two thirds on shard 0: it is the hottest.
    for i in 0..N {
        let key = if i % 3 == 2 { &shard1 } else { &shard0 };
        let _: String = redis::cmd("XADD")
            .arg(key)
            .arg("*")
            .arg("payload")
            .arg(format!("r{i}"))
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let _: redis::Value = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("sales")
        .arg("reader")
        .arg("COUNT")
        .arg(M)
        .arg("STREAMS")
        .arg(&shard0)
        .arg(">")
        .query_async(&mut conn)
        .await
        .unwrap();

    let d = wait_for(
        "describe: rates above zero and the lag of both groups",
        Duration::from_secs(30),
        || async {
            let r = api
                .send("GET", "/coord/v1/streams/sales/describe", None)
                .await;
            assert_eq!(r.status, 200, "{}", r.body);
            let d = r.body;
            let group = |g: &str| {
                d["groups"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|x| x["consumerGroup"] == g)
                    .cloned()
                    .unwrap()
            };
            // Each group's rate needs two samples of that group: wait for audit's too (sampled apart).
            let ok = f(&d["produceRate"]) > 0.0
                && f(&group("sales")["consumeRate"]) > 0.0
                && !group("audit")["consumeRate"].is_null()
                && group("sales")["lag"] == (N - M) as i64
                && group("audit")["lag"] == N as i64;
            ok.then_some(d)
        },
    )
    .await;
    assert_eq!(d["streamPrefix"], "sales");
    assert_eq!(d["shardCount"], 2);
    assert_eq!(d["ordering"], "NONE");
    assert!(d["routingVersion"].is_i64(), "{d}");
    assert_eq!(d["totalLength"], N as i64);
    assert!(f(&d["rateWindowSeconds"]) > 0.0, "{d}");
    let shards = d["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 2);
    assert_eq!(shards[0]["length"], 20);
    assert_eq!(shards[1]["length"], 10);
    assert!(
        f(&shards[0]["produceRate"]) > f(&shards[1]["produceRate"]),
        "{d}"
    );
    assert_eq!(d["hottestShards"][0], 0, "{d}");
    assert_eq!(shards[0]["hot"], true);
    let groups: Vec<&str> = d["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["consumerGroup"].as_str().unwrap())
        .collect();
    assert_eq!(groups, ["audit", "sales"], "by name");
    let sales = &d["groups"][1];
    assert_eq!(sales["pendingCount"], M as i64, "read, not acknowledged");
    assert_eq!(sales["sampled"], true);
    assert_eq!(d["groups"][0]["consumeRate"], 0.0, "audit read nothing");

    let h = api
        .send("GET", "/coord/v1/streams/sales/history?minutes=5", None)
        .await;
    assert_eq!(h.status, 200, "{}", h.body);
    assert_eq!(h.body["minutes"], 5);
    assert_eq!(h.body["groups"], serde_json::json!(["audit", "sales"]));
    let points = h.body["points"].as_array().unwrap();
    assert!(points.len() >= 2, "{}", h.body);
    assert!(
        points.iter().any(|p| f(&p["produceRate"]) > 0.0),
        "a point with records produced: {}",
        h.body
    );
    let last = points.last().unwrap();
    assert_eq!(last["totalLength"], N as i64);
    let last_sales = last["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["consumerGroup"] == "sales")
        .unwrap();
    assert_eq!(last_sales["lag"], (N - M) as i64);
    assert!(
        points
            .windows(2)
            .all(|w| f(&w[0]["atMs"]) < f(&w[1]["atMs"])),
        "oldest first"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_stream_is_404_and_minutes_out_of_range_is_400_naming_it() {
    let redis = RedisServer::start();
    let (_running, api) = coordinator(test_config(&redis.url())).await;
    for path in [
        "/coord/v1/streams/nosuch/describe",
        "/coord/v1/streams/nosuch/history",
    ] {
        let r = api.send("GET", path, None).await;
        assert_eq!(r.status, 404, "{path}: {}", r.body);
        assert_eq!(r.body["errorCode"], "STREAM_NOT_FOUND", "{path}");
        assert!(
            r.body["message"].as_str().unwrap().contains("nosuch"),
            "{}",
            r.body
        );
    }
    assert_eq!(api.create_stream("known", 1).await.status, 201);
    for bad in ["0", "16", "-1", "abc", "1.5", ""] {
        let r = api
            .send(
                "GET",
                &format!("/coord/v1/streams/known/history?minutes={bad}"),
                None,
            )
            .await;
        r.assert_invalid(&format!("minutes={bad}"), "minutes");
        assert!(
            r.body["message"].as_str().unwrap().contains("1 to 15"),
            "{}",
            r.body
        );
    }
    for good in ["1", "15"] {
        let r = api
            .send(
                "GET",
                &format!("/coord/v1/streams/known/history?minutes={good}"),
                None,
            )
            .await;
        assert_eq!(r.status, 200, "minutes={good}: {}", r.body);
    }
    // Before two samples a rate is null, never a guess.
    let r = api
        .send("GET", "/coord/v1/streams/known/describe", None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    if r.body["rateWindowSeconds"].is_null() {
        assert!(r.body["produceRate"].is_null(), "{}", r.body);
    }
    let bad = api
        .send("GET", "/coord/v1/streams/bad%7Bname%7D/describe", None)
        .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
}

/// The history's lag of `group` in the newest point, and whether any point shows it consuming.
async fn history_of(api: &Api, stream: &str, group: &str) -> (Option<i64>, bool) {
    let h = api
        .send("GET", &format!("/coord/v1/streams/{stream}/history"), None)
        .await;
    assert_eq!(h.status, 200, "{}", h.body);
    let points = h.body["points"].as_array().unwrap();
    let of = |p: &Value| {
        p["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["consumerGroup"] == group)
            .cloned()
    };
    let lag = points.last().and_then(of).and_then(|g| g["lag"].as_i64());
    let consumed = points
        .iter()
        .filter_map(of)
        .any(|g| f(&g["consumeRate"]) > 0.0);
    (lag, consumed)
}

/// A group without members (nobody reads through rsc) read by a plain `XREADGROUP` consumer after the last
/// append, so that no shard gets a new entry: the metrics refresh re-reads an idle group's positions every
/// fourth refresh (`shard_cache.rs`), so the history's lag and consume rate follow the outside reader within
/// a few refreshes, as `describe`'s live lag does; an offset reset through rsc then shows at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_group_s_history_follows_a_reader_outside_rsc_without_new_entries() {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    config.coordinator.metrics.refresh_interval =
        rsc_coordinator::config::Dur(Duration::from_millis(100));
    let (_running, api) = coordinator(config).await;
    assert_eq!(api.create_stream("quiet", 2).await.status, 201);
    let mut conn = redis_conn(&redis.url()).await;
    let shard0 = rsc_store::Keyspace::shard_stream("quiet", 0);
    let shard1 = rsc_store::Keyspace::shard_stream("quiet", 1);
    for (key, n) in [(&shard0, 10), (&shard1, 4)] {
        for i in 0..n {
            let _: String = redis::cmd("XADD")
                .arg(key)
                .arg("*")
                .arg("payload")
                .arg(format!("r{i}"))
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    }
    wait_for(
        "the history's lag is 14",
        Duration::from_secs(30),
        || async { (history_of(&api, "quiet", "quiet").await.0 == Some(14)).then_some(()) },
    )
    .await;

    // A reader outside rsc (it never joined) reads 6 records and acknowledges them; nothing is appended.
    let _: redis::Value = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("quiet")
        .arg("outsider")
        .arg("COUNT")
        .arg(6)
        .arg("STREAMS")
        .arg(&shard0)
        .arg(">")
        .query_async(&mut conn)
        .await
        .unwrap();
    wait_for(
        "the history's lag is 8 and shows the group consuming",
        Duration::from_secs(30),
        || async { (history_of(&api, "quiet", "quiet").await == (Some(8), true)).then_some(()) },
    )
    .await;
    let d = api
        .send("GET", "/coord/v1/streams/quiet/describe", None)
        .await;
    assert_eq!(d.body["groups"][0]["lag"], 8, "{}", d.body);

    // An offset reset (the group is idle, so it is allowed): the history's lag follows.
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/quiet/groups/quiet/offsets/reset",
            Some(serde_json::json!({"to": "LATEST", "requestedBy": "t", "reason": "skip"})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    wait_for(
        "the history's lag is 0",
        Duration::from_secs(30),
        || async { (history_of(&api, "quiet", "quiet").await.0 == Some(0)).then_some(()) },
    )
    .await;
}
