//! Finding a record in the message browser (issue #37, point 2) against a real redis-server: jumps to a
//! record id or a time (`fromId`, `fromTime`), the bounded search by a field value or a payload substring
//! (`field`, `search`, `scanLimit`, `scanMaxBytes`) that says how much it scanned and where to continue, the
//! refusals of bad starts and bounds, that a search still needs DATA_READ; and the merged view of every
//! shard ordered by time, paged with per-shard cursors (its search: `merged_search.rs`).

use crate::support;

use serde_json::Value;
use support::*;

const BASE: &str = "/coord/v1/monitoring/streams/find/groups/find/shards";

pub(crate) fn config(url: &str) -> rsc_coordinator::config::Config {
    let mut c = test_config(url);
    c.coordinator.api.users = vec![
        user("reader", &["READ"], &[]),
        user("data-reader", &["DATA_READ"], &[]),
    ];
    c
}

/// Appends a record with an explicit id.
pub(crate) async fn xadd_at(url: &str, key: &str, id: &str, fields: &[(&str, &str)]) {
    let mut conn = redis_conn(url).await;
    let mut cmd = redis::cmd("XADD");
    cmd.arg(key).arg(id);
    for (f, v) in fields {
        cmd.arg(*f).arg(*v);
    }
    let _: String = cmd.query_async(&mut conn).await.unwrap();
}

async fn get(api: &Api, path: &str) -> Value {
    let r = api.send("GET", &format!("{BASE}{path}"), None).await;
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.body
}

fn ids(page: &Value) -> Vec<String> {
    page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["recordId"].as_str().unwrap().to_owned())
        .collect()
}

fn id_list(ms: &[u64]) -> Vec<String> {
    ms.iter().map(|m| format!("{}-0", m * 1000)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jumps_to_an_id_or_a_time_and_searches_within_bounds() {
    let redis = rsc_testkit::RedisServer::start();
    let url = redis.url();
    let (running, api) = coordinator(config(&url)).await;
    assert_eq!(api.create_stream("find", 2).await.status, 201);
    // Shard 1: records 1000-0 … 20000-0, payload {"n":N,"parity":"odd|even"}, field orderId=N.
    for n in 1..=20u64 {
        let parity = if n % 2 == 1 { "odd" } else { "even" };
        let payload = format!("{{\"n\":{n},\"parity\":\"{parity}\"}}");
        let order = n.to_string();
        xadd_at(
            &url,
            "find:1",
            &format!("{}-0", n * 1000),
            &[("payload", &payload), ("orderId", &order)],
        )
        .await;
    }

    // Jump to an id, forward and backward (inclusive), and with the millisecond part only.
    let page = get(&api, "/1/messages?fromId=5000-0&direction=FORWARD&limit=3").await;
    assert_eq!(ids(&page), id_list(&[5, 6, 7]));
    assert_eq!(page["fromId"], "5000-0");
    assert_eq!(page["nextCursor"], "7000-0");
    assert_eq!(page["search"], Value::Null);
    let page = get(&api, "/1/messages?fromId=5000-0&limit=3").await;
    assert_eq!(ids(&page), id_list(&[5, 4, 3]));
    let page = get(&api, "/1/messages?fromId=5000&direction=FORWARD&limit=1").await;
    assert_eq!(ids(&page), id_list(&[5]));
    // Jump to a time: the id <ms>-0, so the first record at or after it (forward), at or before (backward).
    let page = get(
        &api,
        "/1/messages?fromTime=1970-01-01T00:00:04.500Z&direction=FORWARD&limit=2",
    )
    .await;
    assert_eq!(ids(&page), id_list(&[5, 6]));
    assert_eq!(page["fromId"], "4500-0");
    let page = get(
        &api,
        "/1/messages?fromTime=1970-01-01T01:00:04.500%2B01:00&limit=2",
    )
    .await;
    assert_eq!(ids(&page), id_list(&[4, 3]));

    // Search by a field value: the whole shard scanned, one match, the end reached.
    let page = get(&api, "/1/messages?field=orderId%3D7&direction=FORWARD").await;
    assert_eq!(ids(&page), id_list(&[7]));
    assert_eq!(
        page["records"][0]["payload"],
        "{\"n\":7,\"parity\":\"odd\"}"
    );
    let s = &page["search"];
    assert_eq!(s["scanned"], 20);
    assert_eq!(s["stoppedAtBound"], false);
    assert_eq!(s["field"], "orderId=7");
    assert_eq!(s["scanLimit"], 1000);
    assert_eq!(page["nextCursor"], Value::Null);
    // A field value matches exactly, not as a substring.
    let page = get(&api, "/1/messages?field=orderId%3D1&direction=FORWARD").await;
    assert_eq!(ids(&page), id_list(&[1]));

    // Search a payload substring, at most 5 records scanned a request: each answer says it stopped at the
    // bound and where to continue; following the cursor finds every match once.
    let mut found = Vec::new();
    let mut cursor: Option<String> = None;
    let (mut scanned, mut pages) = (0, 0);
    for _ in 0..10 {
        pages += 1;
        let mut path = "/1/messages?search=odd&scanLimit=5&direction=FORWARD".to_owned();
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let page = get(&api, &path).await;
        scanned += page["search"]["scanned"].as_u64().unwrap();
        assert!(page["search"]["scanned"].as_u64().unwrap() <= 5);
        found.extend(ids(&page));
        match page["nextCursor"].as_str() {
            Some(next) => {
                assert_eq!(page["search"]["stoppedAtBound"], true, "{page}");
                cursor = Some(next.to_owned());
            }
            None => break,
        }
    }
    assert_eq!(found, id_list(&[1, 3, 5, 7, 9, 11, 13, 15, 17, 19]));
    // 20 records, 5 a request: four answers, the last without a cursor (none follows its last record).
    assert_eq!((scanned, pages), (20, 4));
    // The first bounded answer: 5 scanned, matches 1, 3, 5, continue after 5000-0.
    let page = get(&api, "/1/messages?search=odd&scanLimit=5&direction=FORWARD").await;
    assert_eq!(ids(&page), id_list(&[1, 3, 5]));
    assert_eq!(page["search"]["scanned"], 5);
    assert_eq!(page["nextCursor"], "5000-0");
    // A full page (limit) stops the scan before the next match; the cursor resumes just before it.
    let page = get(&api, "/1/messages?search=odd&limit=2&direction=FORWARD").await;
    assert_eq!(ids(&page), id_list(&[1, 3]));
    assert_eq!(page["search"]["stoppedAtBound"], false);
    assert_eq!(page["search"]["scanned"], 4);
    assert_eq!(page["nextCursor"], "4000-0");
    let page = get(
        &api,
        "/1/messages?search=odd&limit=2&direction=FORWARD&cursor=4000-0",
    )
    .await;
    assert_eq!(ids(&page), id_list(&[5, 7]));
    // A search from a jump, newest first; both conditions must hold.
    let page = get(&api, "/1/messages?fromId=10000-0&search=even&limit=2").await;
    assert_eq!(ids(&page), id_list(&[10, 8]));
    let page = get(&api, "/1/messages?search=even&field=orderId%3D7").await;
    assert_eq!(ids(&page), Vec::<String>::new());
    assert_eq!(page["search"]["scanned"], 20);

    // The bytes bound: records of about 700 bytes, at most 1024 bytes scanned → 2 records.
    let big = "x".repeat(700);
    for n in 1..=5u64 {
        xadd_at(&url, "find:0", &format!("{n}-0"), &[("payload", &big)]).await;
    }
    let page = get(&api, "/0/messages?search=nowhere&scanMaxBytes=1024").await;
    assert_eq!(page["search"]["scanned"], 2, "{page}");
    assert_eq!(page["search"]["stoppedAtBound"], true);
    assert_eq!(page["nextCursor"], "4-0");
    assert_eq!(page["records"], serde_json::json!([]));

    // Refusals: 400 INVALID_REQUEST naming the parameter.
    for (path, needle) in [
        ("/1/messages?fromId=abc", "fromId"),
        ("/1/messages?fromId=1-2-3", "fromId"),
        ("/1/messages?fromTime=yesterday", "fromTime"),
        ("/1/messages?fromTime=1969-12-31T23:59:59Z", "fromTime"),
        (
            "/1/messages?fromId=1-0&fromTime=2026-12-03T10:00:00Z",
            "fromTime",
        ),
        ("/1/messages?fromId=1-0&cursor=1-0", "cursor"),
        ("/1/messages?field=orderId", "field"),
        ("/1/messages?field=%3D7", "field"),
        ("/1/messages?search=", "search"),
        ("/1/messages?search=a&scanLimit=0", "scanLimit"),
        ("/1/messages?search=a&scanLimit=100001", "scanLimit"),
        ("/1/messages?search=a&scanMaxBytes=10", "scanMaxBytes"),
        (
            "/1/messages?search=a&scanMaxBytes=99999999999999999999",
            "scanMaxBytes",
        ),
    ] {
        let r = api.send("GET", &format!("{BASE}{path}"), None).await;
        r.assert_invalid(path, needle);
    }

    // A search reads payloads: READ is refused, DATA_READ may.
    let path = format!("{BASE}/1/messages?search=odd");
    let reader = api.with_auth(Auth::Basic("reader".into(), USER_PASSWORD.into()));
    let refused = reader.send("GET", &path, None).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let data_reader = api.with_auth(Auth::Basic("data-reader".into(), USER_PASSWORD.into()));
    assert_eq!(data_reader.send("GET", &path, None).await.status, 200);
    running.shutdown().await.unwrap();
}

/// Walks the merged view with `query` (its `fromId`/`fromTime` on the first page only: the cursor continues
/// the walk), returning `(shard, id)` in order.
async fn merged_walk(api: &Api, query: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    let continued: Vec<&str> = query
        .split('&')
        .filter(|p| !p.starts_with("from"))
        .collect();
    let continued = continued.join("&");
    for _ in 0..20 {
        let path = match &cursor {
            Some(c) => format!("{MERGED}?{continued}&cursor={c}"),
            None => format!("{MERGED}?{query}"),
        };
        let r = api.send("GET", &path, None).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        for rec in r.body["records"].as_array().unwrap() {
            out.push((
                rec["shard"]["shardIndex"].as_u64().unwrap(),
                rec["recordId"].as_str().unwrap().to_owned(),
            ));
        }
        match r.body["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return out,
        }
    }
    panic!("the merged walk does not end: {out:?}");
}

const MERGED: &str = "/coord/v1/monitoring/streams/merged/groups/merged/messages";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_merged_view_orders_every_shard_by_time_and_pages_with_per_shard_cursors() {
    let redis = rsc_testkit::RedisServer::start();
    let url = redis.url();
    let (running, api) = coordinator(config(&url)).await;
    assert_eq!(api.create_stream("merged", 3).await.status, 201);
    for (shard, id) in [
        (0, "1000-0"),
        (0, "4000-0"),
        (1, "2000-0"),
        (1, "4000-0"),
        (2, "3000-0"),
        (2, "5000-0"),
        (2, "5000-1"),
    ] {
        let payload = format!("{shard}/{id}");
        xadd_at(
            &url,
            &format!("merged:{shard}"),
            id,
            &[("payload", &payload)],
        )
        .await;
    }
    let want: Vec<(u64, String)> = [
        (0, "1000-0"),
        (1, "2000-0"),
        (2, "3000-0"),
        (0, "4000-0"),
        (1, "4000-0"),
        (2, "5000-0"),
        (2, "5000-1"),
    ]
    .iter()
    .map(|(s, id)| (*s, id.to_string()))
    .collect();
    for limit in [1, 2, 3, 25] {
        let forward = merged_walk(&api, &format!("direction=FORWARD&limit={limit}")).await;
        assert_eq!(forward, want, "FORWARD limit {limit}");
        let mut backward = merged_walk(&api, &format!("limit={limit}")).await;
        backward.reverse();
        assert_eq!(backward, want, "BACKWARD limit {limit}");
    }
    // One page names the shards and hands on each shard's position.
    let r = api
        .send("GET", &format!("{MERGED}?direction=FORWARD&limit=3"), None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["shards"].as_array().unwrap().len(), 3);
    assert_eq!(r.body["nextCursor"], "0=1000-0,1=2000-0,2=3000-0");
    assert_eq!(r.body["records"][2]["payload"], "2/3000-0");
    // A jump starts every shard at the time.
    let from = merged_walk(
        &api,
        "direction=FORWARD&limit=2&fromTime=1970-01-01T00:00:03Z",
    )
    .await;
    assert_eq!(from, want[2..].to_vec());
    let from = merged_walk(&api, "limit=2&fromId=4000-0").await;
    assert_eq!(
        from,
        vec![
            (1, "4000-0".to_owned()),
            (0, "4000-0".to_owned()),
            (2, "3000-0".to_owned()),
            (1, "2000-0".to_owned()),
            (0, "1000-0".to_owned())
        ]
    );
    // Refusals, and payloads need DATA_READ.
    for (query, needle) in [
        ("cursor=0=abc", "cursor"),
        ("cursor=7=1-0", "cursor"),
        ("cursor=zero", "cursor"),
        ("fromId=1-0&cursor=0=1-0", "cursor"),
        ("fromTime=noon", "fromTime"),
        ("limit=0", "limit"),
    ] {
        let r = api.send("GET", &format!("{MERGED}?{query}"), None).await;
        r.assert_invalid(query, needle);
    }
    let reader = api.with_auth(Auth::Basic("reader".into(), USER_PASSWORD.into()));
    assert_eq!(reader.send("GET", MERGED, None).await.status, 403);
    running.shutdown().await.unwrap();
}
