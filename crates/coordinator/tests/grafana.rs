//! The Grafana data routes (`/coord/v1/monitoring/grafana/*`) against a real redis-server: the contract's
//! row shapes, variable options, 400 on missing required parameters, paging of message rows (one shard and
//! every shard merged) that walks every record exactly once both ways, the `__rsc_last__` / `__rsc_tail__:<n>`
//! cursors (a tail page and the walk on from it), exact record search, and stream scopes (rows of other
//! streams hidden; naming one is 403).

use crate::support;

use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use support::*;

const G: &str = "/coord/v1/monitoring/grafana";

fn config(url: &str) -> rsc_coordinator::config::Config {
    let mut c = test_config(url);
    c.coordinator.metrics.refresh_interval =
        rsc_coordinator::config::Dur(std::time::Duration::from_millis(100));
    c.coordinator.api.users = vec![
        user("reader", &["READ"], &[]),
        user("other-team", &["READ"], &["other-*"]),
    ];
    c
}

fn basic(name: &str) -> Auth {
    Auth::Basic(name.into(), USER_PASSWORD.into())
}

async fn rows(api: &Api, path: &str) -> Vec<Value> {
    let r = api.send("GET", &format!("{G}/{path}"), None).await;
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.body
        .as_array()
        .unwrap_or_else(|| panic!("{path}: not an array: {}", r.body))
        .clone()
}

async fn beat(api: &Api, m: &mut Member) {
    let r = api
        .send(
            "POST",
            &format!(
                "/coord/v1/streams/gf/groups/gf/members/{}/heartbeat",
                m.id()
            ),
            Some(m.request()),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    m.adopt(&r.body);
}

/// Walks message rows with `query` (plus direction and limit), returning (shard, record id) in order.
async fn walk(api: &Api, query: &str, direction: &str, limit: u32) -> Vec<(u64, String)> {
    walk_from(api, query, direction, limit, None).await
}

/// Like [`walk`], starting at the cursor `start`.
async fn walk_from(
    api: &Api,
    query: &str,
    direction: &str,
    limit: u32,
    start: Option<&str>,
) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = start.map(str::to_owned);
    for _ in 0..100 {
        let mut path = format!("messages?{query}&direction={direction}&limit={limit}");
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={}", urlencode(c)));
        }
        let page = rows(api, &path).await;
        assert!(page.len() <= limit as usize);
        for r in &page {
            assert_eq!(r["pageDirection"], direction);
            assert_eq!(r["pageLimit"], limit);
            out.push((
                r["shardIndex"].as_u64().unwrap(),
                r["recordId"].as_str().unwrap().to_owned(),
            ));
        }
        match page.last().and_then(|r| r["pageNextCursor"].as_str()) {
            Some(next) => cursor = Some(next.to_owned()),
            None => return out,
        }
    }
    panic!("paging does not end");
}

fn urlencode(s: &str) -> String {
    s.replace(':', "%3A")
        .replace('=', "%3D")
        .replace(',', "%2C")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grafana_routes_answer_the_contract_rows_page_messages_and_respect_scopes() {
    let redis = RedisServer::start();
    let url = redis.url();
    let (running, api) = coordinator(config(&url)).await;
    assert_eq!(api.create_stream("gf", 3).await.status, 201);
    let mut a = Member::new("a");
    for _ in 0..4 {
        beat(&api, &mut a).await;
    }
    assert_eq!(a.owned(), vec![0, 1, 2]);
    let mut conn = redis_conn(&url).await;
    let mut written: Vec<(u64, String)> = Vec::new();
    for i in 0..9u64 {
        let shard = i % 3;
        let id: String = redis::cmd("XADD")
            .arg(format!("gf:{shard}"))
            // Explicit ids: ids are per stream, so `*` on three streams may give equal ids.
            .arg(format!("{}-1", 1_767_225_600_000u64 + i))
            .arg("payload")
            .arg(format!("m{i}"))
            .query_async(&mut conn)
            .await
            .unwrap();
        written.push((shard, id));
    }

    let groups = rows(&api, "groups").await;
    assert_eq!(groups.len(), 1, "{groups:?}");
    let g = &groups[0];
    for key in [
        "streamPrefix",
        "consumerGroup",
        "state",
        "groupEpoch",
        "assignmentEpoch",
        "metadataVersion",
        "shardCount",
        "activeMembers",
        "totalMembers",
        "currentShards",
        "targetShards",
        "assignedShardRatio",
        "revokingShards",
        "totalStreamLength",
        "totalPendingCount",
        "totalLag",
        "producedPerSecond",
        "consumedPerSecond",
        "totalMemoryUsageBytes",
        "memoryUsageKnown",
    ] {
        assert!(g.get(key).is_some(), "groups row lacks {key}: {g}");
    }
    assert_eq!(g["activeMembers"], 1);
    assert_eq!(g["assignedShardRatio"], "3 / 3");
    assert_eq!(g["totalStreamLength"], 9);
    // Rates come from the rate history (a sample per metrics refresh, every 100 ms here): numbers once it
    // has two samples of the group.
    let again = wait_for(
        "the groups row's rates from two samples",
        std::time::Duration::from_secs(20),
        || async {
            let r = rows(&api, "groups?streamPrefix=gf").await;
            (r[0]["producedPerSecond"].is_number() && r[0]["consumedPerSecond"].is_number())
                .then_some(r)
        },
    )
    .await;
    assert!(again[0]["producedPerSecond"].as_f64().unwrap() >= 0.0);

    assert_eq!(
        rows(&api, "options/streams").await,
        vec![json!({"__text": "gf", "__value": "gf"})]
    );
    assert_eq!(
        rows(&api, "options/consumer-groups?streamPrefix=gf").await,
        vec![json!({"__text": "gf / gf", "__value": "gf"})]
    );
    assert_eq!(
        rows(&api, "options/shards?streamPrefix=gf&consumerGroup=gf").await,
        vec![
            json!({"__text": ":0", "__value": "0"}),
            json!({"__text": ":1", "__value": "1"}),
            json!({"__text": ":2", "__value": "2"})
        ]
    );
    assert!(
        rows(&api, "options/shards?streamPrefix=&consumerGroup=")
            .await
            .is_empty()
    );

    let members = rows(&api, "members?streamPrefix=gf&consumerGroup=gf").await;
    assert_eq!(members.len(), 1);
    assert_eq!(members[0]["memberId"], "a");
    assert_eq!(members[0]["state"], "ACTIVE");
    assert_eq!(members[0]["currentShardCount"], 3);
    assert!(members[0].get("memberLeaseExpiresAt").is_some());

    let shards = rows(&api, "shards?streamPrefix=gf&consumerGroup=gf").await;
    assert_eq!(shards.len(), 3);
    for (i, s) in shards.iter().enumerate() {
        assert_eq!(s["shardIndex"], i);
        assert_eq!(s["shardLabel"], format!(":{i}"));
        assert_eq!(s["shardCount"], 3);
        assert_eq!(s["streamLength"], 3);
        assert_eq!(s["ownerState"], "CURRENT", "{s}");
        assert_eq!(s["targetOwnerMemberIds"], "a");
        assert_eq!(s["currentOwnerMemberIds"], "a");
        assert_eq!(s["ownerMemberIds"], "a");
        assert_eq!(s["lagKnown"], true);
    }
    let assignments = rows(&api, "assignments").await;
    assert_eq!(assignments.len(), 3);
    assert_eq!(
        assignments[1],
        json!({"streamPrefix": "gf", "consumerGroup": "gf", "shardIndex": 1, "targetOwners": "a",
               "currentOwners": "a", "revokingOwners": ""})
    );

    // Messages: one shard (default 0), then every shard merged by record id, both ways, pages of 2.
    let q = "streamPrefix=gf&consumerGroup=gf";
    let shard0: Vec<(u64, String)> = written.iter().filter(|(s, _)| *s == 0).cloned().collect();
    assert_eq!(walk(&api, q, "FORWARD", 2).await, shard0);
    let mut rev = shard0.clone();
    rev.reverse();
    assert_eq!(walk(&api, q, "BACKWARD", 2).await, rev);
    for selector in ["all", "__all", "%24__all"] {
        let all = format!("{q}&shardIndex={selector}");
        assert_eq!(walk(&api, &all, "FORWARD", 2).await, written, "{selector}");
        let mut rev = written.clone();
        rev.reverse();
        assert_eq!(walk(&api, &all, "BACKWARD", 4).await, rev, "{selector}");
    }
    let first = rows(&api, &format!("messages?{q}&shardIndex=1&limit=1")).await;
    let row = &first[0];
    for key in [
        "streamPrefix",
        "consumerGroup",
        "shardIndex",
        "shardSelector",
        "shardLabel",
        "streamKey",
        "recordId",
        "payload",
        "fieldsJson",
        "pageDirection",
        "pageLimit",
        "pageNextCursor",
        "pageTotalMessages",
        "recordTimestampMs",
        "recordTime",
    ] {
        assert!(row.get(key).is_some(), "message row lacks {key}: {row}");
    }
    assert_eq!(row["payload"], "m7");
    // The payload is sent once: not again among the fields (issue #32, finding 13).
    assert_eq!(row["fieldsJson"], "{}");
    assert_eq!(row["pageTotalMessages"], 3);
    let (_, wanted) = &written[4];
    let found = rows(
        &api,
        &format!("messages?{q}&shardIndex=all&recordId={wanted}"),
    )
    .await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["recordId"], wanted.as_str());
    assert_eq!(found[0]["shardIndex"], 1);

    // Refusals.
    for path in [
        "members?streamPrefix=gf",
        "members?consumerGroup=gf",
        "options/shards?consumerGroup=gf",
        "messages?streamPrefix=gf",
        "messages?streamPrefix=gf&consumerGroup=gf&shardIndex=3",
        "messages?streamPrefix=gf&consumerGroup=gf&shardIndex=x",
        "messages?streamPrefix=gf&consumerGroup=gf&cursor=nope",
        "messages?streamPrefix=gf&consumerGroup=gf&shardIndex=all&cursor=all%3A9%3D1-0",
        "messages?streamPrefix=gf&consumerGroup=gf&cursor=__rsc_tail__%3Ax",
        "messages?streamPrefix=gf&consumerGroup=gf&limit=0",
        "messages?streamPrefix=gf&consumerGroup=gf&direction=UP",
    ] {
        let r = api.send("GET", &format!("{G}/{path}"), None).await;
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        assert_eq!(r.body["errorCode"], "INVALID_REQUEST", "{path}");
    }
    let missing = api
        .send(
            "GET",
            &format!("{G}/members?streamPrefix=gf&consumerGroup=nope"),
            None,
        )
        .await;
    assert_eq!(missing.status, 404, "{}", missing.body);

    // Scopes: an unscoped reader sees everything; a reader scoped to other streams sees nothing of gf and is
    // refused when it names gf.
    let reader = api.with_auth(basic("reader"));
    assert_eq!(rows(&reader, "groups").await.len(), 1);
    // Record payloads need DATA_READ (or ADMIN): READ sees the coordination state only.
    let r = reader
        .send(
            "GET",
            &format!("{G}/messages?streamPrefix=gf&consumerGroup=gf"),
            None,
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        r.body["message"].as_str().unwrap().contains("DATA_READ"),
        "{}",
        r.body
    );
    let other = api.with_auth(basic("other-team"));
    for path in [
        "groups",
        "options/streams",
        "options/consumer-groups",
        "shards",
        "assignments",
    ] {
        assert!(rows(&other, path).await.is_empty(), "{path}");
    }
    for path in [
        "groups?streamPrefix=gf",
        "members?streamPrefix=gf&consumerGroup=gf",
        "messages?streamPrefix=gf&consumerGroup=gf",
        "options/shards?streamPrefix=gf&consumerGroup=gf",
    ] {
        let r = other.send("GET", &format!("{G}/{path}"), None).await;
        assert_eq!(r.status, 403, "{path}: {}", r.body);
    }
    let anonymous = api.with_auth(Auth::None);
    assert_eq!(
        anonymous
            .send("GET", &format!("{G}/groups"), None)
            .await
            .status,
        401
    );
    let ids: BTreeSet<&String> = written.iter().map(|(_, id)| id).collect();
    assert_eq!(ids.len(), 9);
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_and_tail_cursors_page_from_the_end_and_walk_on_to_it() {
    let redis = RedisServer::start();
    let url = redis.url();
    let (running, api) = coordinator(config(&url)).await;
    assert_eq!(api.create_stream("gf", 3).await.status, 201);
    let mut conn = redis_conn(&url).await;
    let base = 1_767_225_600_000u64;
    // Shard 0: 7 records. Shards 1 and 2: records whose ids equal some of shard 0's (ties between shards).
    let mut merged: Vec<((u64, u64), u64, String)> = Vec::new();
    for (shard, offsets) in [
        (0u64, vec![0, 1, 2, 3, 4, 5, 6]),
        (1, vec![0, 2, 3]),
        (2, vec![1, 2, 7]),
    ] {
        for o in offsets {
            let id: String = redis::cmd("XADD")
                .arg(format!("gf:{shard}"))
                .arg(format!("{}-1", base + o))
                .arg("payload")
                .arg(format!("s{shard}-{o}"))
                .query_async(&mut conn)
                .await
                .unwrap();
            merged.push(((base + o, 1), shard, id));
        }
    }
    merged.sort();
    let merged: Vec<(u64, String)> = merged.into_iter().map(|(_, s, id)| (s, id)).collect();
    let shard0: Vec<(u64, String)> = merged.iter().filter(|(s, _)| *s == 0).cloned().collect();
    let q = "streamPrefix=gf&consumerGroup=gf";

    // The last page of one shard, each way: full, in the page's order, with nothing after it.
    let last = rows(
        &api,
        &format!("messages?{q}&direction=FORWARD&limit=3&cursor=__rsc_last__"),
    )
    .await;
    let ids: Vec<&str> = last
        .iter()
        .map(|r| r["recordId"].as_str().unwrap())
        .collect();
    let newest: Vec<&str> = shard0[4..].iter().map(|(_, id)| id.as_str()).collect();
    assert_eq!(ids, newest);
    for r in &last {
        assert_eq!(r["pageNextCursor"], Value::Null, "{r}");
        assert_eq!(r["pageDirection"], "FORWARD");
        assert_eq!(r["pageTotalMessages"], 7);
    }
    let last = rows(
        &api,
        &format!("messages?{q}&direction=BACKWARD&limit=3&cursor=__rsc_last__"),
    )
    .await;
    let ids: Vec<&str> = last
        .iter()
        .map(|r| r["recordId"].as_str().unwrap())
        .collect();
    let oldest: Vec<&str> = shard0[..3]
        .iter()
        .rev()
        .map(|(_, id)| id.as_str())
        .collect();
    assert_eq!(ids, oldest);
    assert_eq!(last[0]["pageNextCursor"], Value::Null);

    // From `__rsc_tail__:<n>` the walk goes on to the end: exactly the records of the last n + 1 pages.
    for (selector, all) in [("0", &shard0), ("all", &merged)] {
        let query = format!("{q}&shardIndex={selector}");
        for limit in [2u32, 3] {
            for n in 0..6usize {
                let cursor = format!("__rsc_tail__:{n}");
                let start = all.len().saturating_sub((n + 1) * limit as usize);
                let expected: Vec<(u64, String)> = if n * (limit as usize) < all.len() {
                    all[start..].to_vec()
                } else {
                    Vec::new()
                };
                let forward = walk_from(&api, &query, "FORWARD", limit, Some(&cursor)).await;
                assert_eq!(
                    forward, expected,
                    "{selector} FORWARD limit={limit} {cursor}"
                );
                let mut reversed: Vec<(u64, String)> = all.iter().rev().cloned().collect();
                reversed = if n * (limit as usize) < all.len() {
                    reversed[start..].to_vec()
                } else {
                    Vec::new()
                };
                let backward = walk_from(&api, &query, "BACKWARD", limit, Some(&cursor)).await;
                assert_eq!(
                    backward, reversed,
                    "{selector} BACKWARD limit={limit} {cursor}"
                );
            }
        }
    }
    // `__rsc_last__` is `__rsc_tail__:0`.
    assert_eq!(
        rows(
            &api,
            &format!("messages?{q}&shardIndex=all&limit=4&cursor=__rsc_last__")
        )
        .await,
        rows(
            &api,
            &format!("messages?{q}&shardIndex=all&limit=4&cursor=__rsc_tail__%3A0")
        )
        .await
    );

    // Malformed or too deep tails are 400s that say what to send.
    for cursor in [
        "__rsc_tail__",
        "__rsc_tail__%3A",
        "__rsc_tail__%3A-1",
        "__rsc_tail__%3Ax",
        "__rsc_tail__%3A10",
        "__rsc_first__",
    ] {
        let path = format!("{G}/messages?{q}&limit=1000&cursor={cursor}");
        let r = api.send("GET", &path, None).await;
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        assert_eq!(r.body["errorCode"], "INVALID_REQUEST", "{path}");
        assert!(
            r.body["message"].as_str().unwrap().contains("__rsc_"),
            "{path}: {}",
            r.body
        );
    }
    running.shutdown().await.unwrap();
}
