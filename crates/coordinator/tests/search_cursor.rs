//! A bounded search's continue cursor against a real redis-server: it is given only when a record follows the
//! last one scanned. A stream whose record count is an exact multiple of `scanLimit` (so the last answer's
//! scan ends on the last record, its last chunk full), searched to the end, has no cursor on the last page,
//! both ways, on a shard and in the merged view; one record more, and the cursor is there and the next page
//! scans exactly that record. A byte bound reached on a stream's last record gives no cursor either.

use crate::find::{config, xadd_at};
use crate::support;

use rsc_coordinator::server::Running;
use serde_json::Value;
use support::*;

const SHARD: &str = "/coord/v1/monitoring/streams/scur/groups/scur/shards";
const MERGED: &str = "/coord/v1/monitoring/streams/scur/groups/scur/messages";

/// Pages through `path` (a query string already started) by its `nextCursor`, returning every page.
async fn pages(api: &Api, path: &str) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..50 {
        let full = match &cursor {
            Some(c) => format!("{path}&cursor={c}"),
            None => path.to_owned(),
        };
        let r = api.send("GET", &full, None).await;
        assert_eq!(r.status, 200, "{full}: {}", r.body);
        let next = r.body["nextCursor"].as_str().map(str::to_owned);
        out.push(r.body);
        match next {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
    panic!("{path}: the walk does not end");
}

fn ids(pages: &[Value]) -> Vec<String> {
    pages
        .iter()
        .flat_map(|p| p["records"].as_array().unwrap().iter())
        .map(|r| r["recordId"].as_str().unwrap().to_owned())
        .collect()
}

fn scanned(pages: &[Value]) -> Vec<u64> {
    pages
        .iter()
        .map(|p| p["search"]["scanned"].as_u64().unwrap())
        .collect()
}

fn id_list(ms: impl Iterator<Item = u64>) -> Vec<String> {
    ms.map(|m| format!("{m}-0")).collect()
}

/// Searches `path` to the end, in `n_pages` answers of `scan_limit` records scanned each, finding `want` in
/// order, the last answer stopped at its bound. Returns the last answer.
async fn searched_to_the_end(
    api: &Api,
    path: &str,
    want: &[String],
    scan_limit: u64,
    n_pages: usize,
) -> Value {
    let got = pages(api, path).await;
    assert_eq!(got.len(), n_pages, "{path}: {got:?}");
    assert_eq!(ids(&got), want, "{path}");
    assert_eq!(scanned(&got), vec![scan_limit; n_pages], "{path}");
    let last = got.last().unwrap().clone();
    assert_eq!(last["search"]["stoppedAtBound"], true, "{path}: {last}");
    last
}

/// A redis-server and a coordinator on it, with stream `scur` of three shards.
async fn scur() -> (rsc_testkit::RedisServer, Running, Api) {
    let redis = rsc_testkit::RedisServer::start();
    let (running, api) = coordinator(config(&redis.url())).await;
    assert_eq!(api.create_stream("scur", 3).await.status, 201);
    (redis, running, api)
}

/// Appends record `n` (id `n-0`, payload `rec n`) to `key`.
async fn add_rec(url: &str, key: &str, n: u64) {
    xadd_at(
        url,
        key,
        &format!("{n}-0"),
        &[("payload", &format!("rec {n}"))],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_gives_a_cursor_only_when_a_record_follows() {
    let (redis, running, api) = scur().await;
    let url = redis.url();

    // Shard 0: ten records 1-0 … 10-0, every one a match.
    for n in 1..=10u64 {
        add_rec(&url, "scur:0", n).await;
    }
    // 10 records, 5 a page (one chunk each), and 10 a page (one first chunk of 10): the last page stopped at
    // the bound on the last record, and has no cursor.
    for (direction, order) in [("FORWARD", false), ("BACKWARD", true)] {
        let mut want = id_list(1..=10);
        if order {
            want.reverse();
        }
        for (scan_limit, n_pages) in [(5, 2), (10, 1), (2, 5)] {
            let path = format!(
                "{SHARD}/0/messages?search=rec&scanLimit={scan_limit}&limit=1000&direction={direction}"
            );
            let last = searched_to_the_end(&api, &path, &want, scan_limit, n_pages).await;
            assert_eq!(last["nextCursor"], Value::Null, "{path}: {last}");
        }
        // A search that matches nothing, bounded at the record count: nothing, no cursor.
        let path = format!("{SHARD}/0/messages?search=nowhere&scanLimit=10&direction={direction}");
        let got = pages(&api, &path).await;
        assert_eq!((got.len(), scanned(&got)), (1, vec![10]), "{path}");
        assert_eq!(got[0]["search"]["stoppedAtBound"], true);
    }
    // One record more: the page that ends on the old last record has a cursor; the next page scans the new
    // record and ends.
    add_rec(&url, "scur:0", 11).await;
    let path = format!("{SHARD}/0/messages?search=rec&scanLimit=5&direction=FORWARD");
    let got = pages(&api, &path).await;
    assert_eq!(scanned(&got), vec![5, 5, 1], "{path}");
    assert_eq!(got[1]["nextCursor"], "10-0");
    assert_eq!(ids(&got[2..]), id_list(11..=11));
    assert_eq!(got[2]["search"]["stoppedAtBound"], false);
    let path = format!("{SHARD}/0/messages?search=rec&scanLimit=5&direction=BACKWARD");
    let got = pages(&api, &path).await;
    assert_eq!(scanned(&got), vec![5, 5, 1], "{path}");
    assert_eq!(got[1]["nextCursor"], "2-0");
    assert_eq!(ids(&got[2..]), id_list(1..=1));

    // The byte bound reached on the stream's last record (a short chunk): no cursor. Two records of about
    // 700 bytes, at most 1024 bytes scanned.
    let big = format!("rec {}", "x".repeat(700));
    for n in 1..=2u64 {
        xadd_at(&url, "scur:1", &format!("{n}-0"), &[("payload", &big)]).await;
    }
    for direction in ["FORWARD", "BACKWARD"] {
        let path =
            format!("{SHARD}/1/messages?search=nowhere&scanMaxBytes=1024&direction={direction}");
        let got = pages(&api, &path).await;
        assert_eq!(got.len(), 1, "{path}: {got:?}");
        assert_eq!(got[0]["search"]["scanned"], 2);
        assert_eq!(got[0]["search"]["stoppedAtBound"], true);
    }
    xadd_at(&url, "scur:1", "3-0", &[("payload", &big)]).await;
    let path = format!("{SHARD}/1/messages?search=rec&scanMaxBytes=1024&direction=FORWARD");
    let got = pages(&api, &path).await;
    assert_eq!(scanned(&got), vec![2, 1], "{path}");
    assert_eq!(got[0]["nextCursor"], "2-0");
    assert_eq!(ids(&got), id_list(1..=3));
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merged_search_gives_a_cursor_only_when_a_record_follows_on_some_shard() {
    let (redis, running, api) = scur().await;
    let url = redis.url();
    // Six records, interleaved over the three shards: 1-0, 4-0 on shard 0, 2-0, 5-0 on 1, 3-0, 6-0 on 2.
    for n in 1..=6u64 {
        add_rec(&url, &format!("scur:{}", (n - 1) % 3), n).await;
    }
    // A budget of 1 or 2 records reads 1 or 2 a shard, so the last answer's shard read a full chunk: it ends
    // without a cursor.
    for (direction, order) in [("FORWARD", false), ("BACKWARD", true)] {
        let mut want = id_list(1..=6);
        if order {
            want.reverse();
        }
        for (scan_limit, n_pages) in [(1, 6), (2, 3), (3, 2), (6, 1)] {
            let path = format!(
                "{MERGED}?search=rec&scanLimit={scan_limit}&limit=1000&direction={direction}"
            );
            searched_to_the_end(&api, &path, &want, scan_limit, n_pages).await;
        }
    }
    // One record more on shard 0: the sixth answer of a budget of 1 hands on every shard's position; the
    // seventh scans the new record and ends.
    add_rec(&url, "scur:0", 7).await;
    let path = format!("{MERGED}?search=rec&scanLimit=1&direction=FORWARD");
    let got = pages(&api, &path).await;
    assert_eq!(scanned(&got), vec![1; 7], "{path}");
    assert_eq!(got[5]["nextCursor"], "0=4-0,1=5-0,2=6-0");
    assert_eq!(ids(&got[6..]), id_list(7..=7));
    assert_eq!(got[6]["nextCursor"], Value::Null);
    let path = format!("{MERGED}?search=rec&scanLimit=2&direction=BACKWARD");
    let got = pages(&api, &path).await;
    assert_eq!(scanned(&got), vec![2, 2, 2, 1], "{path}");
    assert_eq!(got[2]["nextCursor"], "0=4-0,1=2-0,2=3-0");
    assert_eq!(ids(&got[3..]), id_list(1..=1));
    running.shutdown().await.unwrap();
}
