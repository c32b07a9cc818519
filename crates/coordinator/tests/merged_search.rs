//! The bounded search of the merged view (issue #37, point 2) against a real redis-server: `field`/`search`
//! on `GET …/groups/{g}/messages` scan every shard in time order within one shared budget (`scanLimit`
//! records, `scanMaxBytes` bytes), answer the matches in time order with a scan summary, and continue from
//! each shard's last record scanned. Walked page by page with small pages and small budgets, both ways and
//! from a jump, the matches equal a brute-force filter of every record sorted by (id, shard): none lost,
//! none twice, and every record scanned exactly once. Bad parameters are refused with 400; READ may not search.

use crate::find::config;
use crate::support;

use serde_json::Value;
use support::*;

const MERGED: &str = "/coord/v1/monitoring/streams/msearch/groups/msearch/messages";
const SHARDS: u32 = 3;

/// One record written: its shard, id parts, and what the filters look at.
#[derive(Debug, Clone)]
struct Rec {
    shard: u32,
    ms: u64,
    seq: u64,
    kind: &'static str,
    payload: String,
}

impl Rec {
    fn id(&self) -> String {
        format!("{}-{}", self.ms, self.seq)
    }
}

/// Records on every shard, several sharing a millisecond (on one shard and across shards), about a third
/// with "needle" in the payload, of varied sizes; in merged order (id, then shard).
fn records() -> Vec<Rec> {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    let mut out = Vec::new();
    for t in 0..50u64 {
        for shard in 0..SHARDS {
            for seq in 0..next() % 3 {
                let needle = if next() % 3 == 0 { "needle" } else { "hay" };
                let kind = if next() % 2 == 0 { "a" } else { "b" };
                let pad = "x".repeat((next() % 200) as usize);
                out.push(Rec {
                    shard,
                    ms: 1000 + t,
                    seq,
                    kind,
                    payload: format!(
                        "{{\"t\":{t},\"s\":{shard},\"w\":\"{needle}\",\"pad\":\"{pad}\"}}"
                    ),
                });
            }
        }
    }
    out.sort_by_key(|r| (r.ms, r.seq, r.shard));
    out
}

async fn write(url: &str, recs: &[Rec]) {
    let mut conn = redis_conn(url).await;
    let mut pipe = redis::pipe();
    for r in recs {
        pipe.cmd("XADD")
            .arg(format!("msearch:{}", r.shard))
            .arg(r.id())
            .arg("payload")
            .arg(&r.payload)
            .arg("kind")
            .arg(r.kind)
            .ignore();
    }
    let () = pipe.query_async(&mut conn).await.unwrap();
}

/// A filter as the query string gives it, and the same condition over a [`Rec`].
struct Case {
    query: &'static str,
    keeps: fn(&Rec) -> bool,
}

const CASES: [Case; 2] = [
    Case {
        query: "search=needle",
        keeps: |r| r.payload.contains("needle"),
    },
    Case {
        query: "search=needle&field=kind%3Da",
        keeps: |r| r.payload.contains("needle") && r.kind == "a",
    },
];

/// What one walk saw: the matches `(shard, id)` in answer order, and the records scanned over all pages.
struct Walk {
    matches: Vec<(u64, String)>,
    scanned: u64,
    pages: usize,
}

/// Pages through the merged search `query` (its `from…` start on the first page only), checking each page's
/// bounds: at most `limit` matches and `scanLimit` records scanned; a page that stopped at a bound spent it;
/// a page that did not stop at a bound but has a cursor is full; a page a cursor led to scanned a record.
async fn walk(api: &Api, query: &str, limit: u64, scan_limit: u64, scan_max_bytes: u64) -> Walk {
    let continued: Vec<&str> = query
        .split('&')
        .filter(|p| !p.starts_with("from"))
        .collect();
    let continued = continued.join("&");
    let mut w = Walk {
        matches: Vec::new(),
        scanned: 0,
        pages: 0,
    };
    let mut cursor: Option<String> = None;
    for _ in 0..1000 {
        let path = match &cursor {
            Some(c) => format!("{MERGED}?{continued}&cursor={c}"),
            None => format!("{MERGED}?{query}"),
        };
        let r = api.send("GET", &path, None).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        let page = r.body;
        w.pages += 1;
        let s = &page["search"];
        let scanned = s["scanned"].as_u64().unwrap();
        let records = page["records"].as_array().unwrap();
        assert!(scanned <= scan_limit, "{path}: {page}");
        assert!(records.len() as u64 <= limit, "{path}: {page}");
        assert_eq!(s["scanLimit"], scan_limit);
        assert_eq!(s["scanMaxBytes"], scan_max_bytes);
        if s["stoppedAtBound"] == true {
            assert!(
                scanned == scan_limit || s["scannedBytes"].as_u64().unwrap() >= scan_max_bytes,
                "{path}: stopped at a bound it did not reach: {page}"
            );
        } else if page["nextCursor"].is_string() {
            assert_eq!(records.len() as u64, limit, "{path}: {page}");
        }
        if cursor.is_some() {
            assert!(scanned > 0, "{path}: a cursor that led to nothing: {page}");
        }
        w.scanned += scanned;
        for rec in records {
            w.matches.push((
                rec["shard"]["shardIndex"].as_u64().unwrap(),
                rec["recordId"].as_str().unwrap().to_owned(),
            ));
        }
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return w,
        }
    }
    panic!("the merged search {query} does not end");
}

fn expected(recs: &[Rec], keeps: fn(&Rec) -> bool, backward: bool) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = recs
        .iter()
        .filter(|r| keeps(r))
        .map(|r| (u64::from(r.shard), r.id()))
        .collect();
    if backward {
        out.reverse();
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_merged_search_finds_every_match_once_in_time_order_within_a_shared_budget() {
    let redis = rsc_testkit::RedisServer::start();
    let url = redis.url();
    let (running, api) = coordinator(config(&url)).await;
    assert_eq!(api.create_stream("msearch", SHARDS).await.status, 201);
    let recs = records();
    assert!(recs.len() > 100, "{}", recs.len());
    for s in 0..SHARDS {
        assert!(recs.iter().any(|r| r.shard == s), "shard {s} has records");
    }
    write(&url, &recs).await;
    let total = recs.len() as u64;
    let default_bytes = 4 * 1024 * 1024;

    // The first answer of a budget of 5 records: the first 5 records of the merged walk are scanned, the
    // matches among them come in time order, and the cursor holds each shard's last record scanned.
    let r = api
        .send(
            "GET",
            &format!("{MERGED}?search=needle&scanLimit=5&direction=FORWARD"),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let first5 = &recs[..5];
    let want: Vec<Value> = first5
        .iter()
        .filter(|r| r.payload.contains("needle"))
        .map(|r| Value::from(r.id()))
        .collect();
    let got: Vec<Value> = r.body["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["recordId"].clone())
        .collect();
    assert_eq!(got, want, "{}", r.body);
    let cursor: Vec<String> = (0..SHARDS)
        .filter_map(|s| {
            first5
                .iter()
                .rfind(|r| r.shard == s)
                .map(|r| format!("{s}={}", r.id()))
        })
        .collect();
    assert_eq!(r.body["nextCursor"], cursor.join(","), "{}", r.body);
    assert_eq!(r.body["search"]["scanned"], 5);
    assert_eq!(r.body["search"]["stoppedAtBound"], true);
    assert_eq!(r.body["search"]["payloadContains"], "needle");
    assert_eq!(r.body["shards"].as_array().unwrap().len(), SHARDS as usize);
    // A plain page of the merged view has no scan summary.
    let plain = api.send("GET", MERGED, None).await;
    assert_eq!(plain.status, 200, "{}", plain.body);
    assert_eq!(plain.body["search"], Value::Null);

    // Page until done with small pages and small budgets, both ways: the matches are the brute-force
    // filter's, in time order, and every record is scanned exactly once over the walk.
    for case in &CASES {
        for (limit, scan_limit, scan_max_bytes) in [
            (25, 1000, default_bytes),
            (1, 1000, default_bytes),
            (4, 7, default_bytes),
            (25, 1, default_bytes),
            (3, 1000, 1024),
            (25, 13, 2048),
        ] {
            for (direction, backward) in [("FORWARD", false), ("BACKWARD", true)] {
                let mut query = format!("{}&direction={direction}&limit={limit}", case.query);
                if scan_limit != 1000 {
                    query.push_str(&format!("&scanLimit={scan_limit}"));
                }
                if scan_max_bytes != default_bytes {
                    query.push_str(&format!("&scanMaxBytes={scan_max_bytes}"));
                }
                let w = walk(&api, &query, limit, scan_limit, scan_max_bytes).await;
                assert_eq!(w.matches, expected(&recs, case.keeps, backward), "{query}");
                assert_eq!(w.scanned, total, "{query}: every record scanned once");
                if scan_limit < 1000 || scan_max_bytes < default_bytes {
                    assert!(w.pages > 3, "{query}: the bound cut the walk");
                }
            }
        }
    }

    // From a jump: every shard starts at the time (forward) or the id (backward), inclusive.
    let keeps = CASES[0].keeps;
    let w = walk(
        &api,
        "search=needle&direction=FORWARD&limit=4&scanLimit=9&fromTime=1970-01-01T00:00:01.020Z",
        4,
        9,
        default_bytes,
    )
    .await;
    let later: Vec<Rec> = recs.iter().filter(|r| r.ms >= 1020).cloned().collect();
    assert_eq!(w.matches, expected(&later, keeps, false));
    assert_eq!(w.scanned, later.len() as u64);
    let w = walk(
        &api,
        "search=needle&limit=4&scanLimit=9&fromId=1020-0",
        4,
        9,
        default_bytes,
    )
    .await;
    let earlier: Vec<Rec> = recs
        .iter()
        .filter(|r| (r.ms, r.seq) <= (1020, 0))
        .cloned()
        .collect();
    assert_eq!(w.matches, expected(&earlier, keeps, true));
    assert_eq!(w.scanned, earlier.len() as u64);

    // Refusals: 400 INVALID_REQUEST naming the parameter.
    for (query, needle) in [
        ("search=", "search"),
        ("field=kind", "field"),
        ("field=%3Da", "field"),
        ("search=x&scanLimit=0", "scanLimit"),
        ("search=x&scanLimit=100001", "scanLimit"),
        ("search=x&scanMaxBytes=1023", "scanMaxBytes"),
        ("search=x&scanMaxBytes=67108865", "scanMaxBytes"),
        ("search=x&fromId=1-0&cursor=0=1-0", "cursor"),
        ("search=x&cursor=9=1-0", "cursor"),
        ("search=x&fromTime=noon", "fromTime"),
    ] {
        let r = api.send("GET", &format!("{MERGED}?{query}"), None).await;
        r.assert_invalid(query, needle);
    }
    // A search reads payloads: READ is refused, DATA_READ may.
    let path = format!("{MERGED}?search=needle");
    let reader = api.with_auth(Auth::Basic("reader".into(), USER_PASSWORD.into()));
    assert_eq!(reader.send("GET", &path, None).await.status, 403);
    let data_reader = api.with_auth(Auth::Basic("data-reader".into(), USER_PASSWORD.into()));
    assert_eq!(data_reader.send("GET", &path, None).await.status, 200);
    running.shutdown().await.unwrap();
}
