//! The message browser (`GET …/shards/{i}/messages`) against a real redis-server: the contract's shape,
//! paging that walks every record exactly once in both directions, the refusals of bad shard indexes,
//! cursors, limits and directions, stream scopes; and what the offsets view now fills in (the consumer's
//! reported ids, and the cluster node and slot range of each shard on a Redis Cluster).

use crate::support;

use rsc_testkit::{RedisCluster, RedisServer};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use support::*;

const BASE: &str = "/coord/v1/monitoring/streams/browse/groups/browse";

fn config(url: &str) -> rsc_coordinator::config::Config {
    let mut c = test_config(url);
    c.coordinator.api.users = vec![
        user("reader", &["READ"], &[]),
        user("data-reader", &["DATA_READ"], &[]),
        user("other-team", &["DATA_READ"], &["other-*"]),
        user("browse-team", &["DATA_READ"], &["browse"]),
    ];
    c
}

fn basic(name: &str) -> Auth {
    Auth::Basic(name.into(), USER_PASSWORD.into())
}

async fn xadd(url: &str, key: &str, fields: &[(&str, &str)]) -> String {
    let mut conn = redis_conn(url).await;
    let mut cmd = redis::cmd("XADD");
    cmd.arg(key).arg("*");
    for (f, v) in fields {
        cmd.arg(*f).arg(*v);
    }
    cmd.query_async(&mut conn).await.unwrap()
}

/// Walks every page with `limit`, returning the record ids in order and the pages seen.
async fn walk(api: &Api, direction: &str, limit: u32) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut path = format!("{BASE}/shards/1/messages?direction={direction}&limit={limit}");
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let r = api.send("GET", &path, None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        pages += 1;
        assert_eq!(r.body["direction"], direction);
        assert_eq!(r.body["limit"], limit);
        let records = r.body["records"].as_array().unwrap();
        assert!(records.len() <= limit as usize);
        ids.extend(
            records
                .iter()
                .map(|x| x["recordId"].as_str().unwrap().to_owned()),
        );
        match r.body["nextCursor"].as_str() {
            Some(next) => {
                assert_eq!(
                    Some(next),
                    records.last().and_then(|x| x["recordId"].as_str())
                );
                cursor = Some(next.to_owned());
            }
            None => break,
        }
        assert!(pages < 100, "paging does not end");
    }
    (ids, pages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_are_paged_both_ways_with_the_contract_shape_and_refuse_bad_input() {
    let redis = RedisServer::start();
    let url = redis.url();
    let (running, api) = coordinator(config(&url)).await;
    assert_eq!(api.create_stream("browse", 2).await.status, 201);

    let empty = api
        .send("GET", &format!("{BASE}/shards/0/messages"), None)
        .await;
    assert_eq!(empty.status, 200, "{}", empty.body);
    assert_eq!(
        empty.body,
        json!({"streamPrefix": "browse", "consumerGroup": "browse", "shard": {"shardIndex": 0},
               "streamKey": "browse:0", "direction": "BACKWARD", "limit": 25, "records": [],
               "nextCursor": null, "fromId": null, "search": null})
    );

    let mut written = Vec::new();
    for i in 0..7 {
        let payload = format!("{{\"n\":{i}}}");
        written.push(
            xadd(
                &url,
                "browse:1",
                &[("payload", &payload), ("source", "test")],
            )
            .await,
        );
    }
    written.push(xadd(&url, "browse:1", &[("other", "no payload")]).await);

    // Default: newest first, 25 at most, everything on one page.
    let page = api
        .send("GET", &format!("{BASE}/shards/1/messages"), None)
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.body["direction"], "BACKWARD");
    assert_eq!(page.body["limit"], 25);
    assert_eq!(page.body["nextCursor"], Value::Null);
    let records = page.body["records"].as_array().unwrap();
    let newest_first: Vec<String> = written.iter().rev().cloned().collect();
    assert_eq!(
        records
            .iter()
            .map(|r| r["recordId"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>(),
        newest_first
    );
    assert_eq!(records[0]["payload"], Value::Null);
    assert_eq!(records[0]["fields"], json!({"other": "no payload"}));
    let r = &records[1];
    assert_eq!(r["payload"], "{\"n\":6}");
    // The payload is sent once: as `payload`, not again among the fields (issue #32, finding 13).
    assert_eq!(r["fields"], json!({"source": "test"}));
    assert_eq!(r["streamPrefix"], "browse");
    assert_eq!(r["consumerGroup"], "browse");
    assert_eq!(r["shard"], json!({"shardIndex": 1}));
    assert_eq!(r["streamKey"], "browse:1");
    let ms: i64 = written[6].split('-').next().unwrap().parse().unwrap();
    assert_eq!(r["recordTimestampMs"], ms);
    let time = r["recordTime"].as_str().unwrap();
    assert!(time.ends_with('Z') && time.len() == 24, "{time}");

    // Paging: every record exactly once, in order, both ways, for several page sizes.
    for limit in [1, 3, 8, 1000] {
        let (forward, pages) = walk(&api, "FORWARD", limit).await;
        assert_eq!(forward, written, "FORWARD limit {limit}");
        assert_eq!(pages, written.len().div_ceil(limit as usize).max(1));
        let (backward, _) = walk(&api, "BACKWARD", limit).await;
        assert_eq!(backward, newest_first, "BACKWARD limit {limit}");
        assert_eq!(forward.iter().collect::<BTreeSet<_>>().len(), written.len());
    }

    // Refusals: 400 with errorCode for bad index, cursor, limit, direction; 404 for an unknown group.
    for (path, needle) in [
        ("/shards/2/messages", "shardIndex"),
        ("/shards/-1/messages", "shardIndex"),
        ("/shards/x/messages", "shardIndex"),
        ("/shards/99999999999/messages", "shardIndex"),
        ("/shards/1/messages?cursor=abc", "cursor"),
        ("/shards/1/messages?cursor=1-2-3", "cursor"),
        ("/shards/1/messages?limit=0", "limit"),
        ("/shards/1/messages?limit=1001", "limit"),
        ("/shards/1/messages?limit=ten", "limit"),
        ("/shards/1/messages?direction=SIDEWAYS", "direction"),
    ] {
        let r = api.send("GET", &format!("{BASE}{path}"), None).await;
        r.assert_invalid(path, needle);
    }
    let missing = api
        .send(
            "GET",
            "/coord/v1/monitoring/streams/browse/groups/nope/shards/0/messages",
            None,
        )
        .await;
    assert_eq!(missing.status, 404, "{}", missing.body);
    assert_eq!(missing.body["errorCode"], "GROUP_NOT_FOUND");

    // Access: payloads need DATA_READ (READ is refused, issue #32 finding 13); a DATA_READ principal scoped
    // to other streams is refused; none at all is 401.
    let reader = api.with_auth(basic("reader"));
    let refused = reader
        .send("GET", &format!("{BASE}/shards/1/messages"), None)
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["errorCode"], "FORBIDDEN");
    assert!(
        refused.body["message"]
            .as_str()
            .unwrap()
            .contains("DATA_READ"),
        "{}",
        refused.body
    );
    let data_reader = api.with_auth(basic("data-reader"));
    assert_eq!(
        data_reader
            .send("GET", &format!("{BASE}/shards/1/messages"), None)
            .await
            .status,
        200
    );
    let scoped = api.with_auth(basic("browse-team"));
    assert_eq!(
        scoped
            .send("GET", &format!("{BASE}/shards/1/messages"), None)
            .await
            .status,
        200
    );
    let other = api.with_auth(basic("other-team"));
    let refused = other
        .send("GET", &format!("{BASE}/shards/1/messages"), None)
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let anonymous = api.with_auth(Auth::None);
    assert_eq!(
        anonymous
            .send("GET", &format!("{BASE}/shards/1/messages"), None)
            .await
            .status,
        401
    );
    running.shutdown().await.unwrap();
}

/// A heartbeat body with one shard-progress row per owned shard.
fn with_progress(m: &Member) -> Value {
    let mut body = m.request();
    body["shardProgress"] = json!(m.owned().iter().map(|s| json!({
        "shard": {"shardIndex": s}, "streamKey": format!("browse:{s}"),
        "lastDeliveredId": format!("{}-1", 100 + s), "lastAckedId": format!("{}-0", 100 + s),
        "pendingCount": 1, "updatedAt": "2026-12-01T00:00:00.000Z"
    })).collect::<Vec<_>>());
    body
}

async fn beat(api: &Api, m: &mut Member) {
    let r = api
        .send(
            "POST",
            &format!(
                "/coord/v1/streams/browse/groups/browse/members/{}/heartbeat",
                m.id()
            ),
            Some(with_progress(m)),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    m.adopt(&r.body);
}

/// Offsets on a standalone Redis: consumer ids from the owner's report, no cluster node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_show_the_owner_s_reported_ids_and_no_node_on_standalone() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis.url())).await;
    assert_eq!(api.create_stream("browse", 2).await.status, 201);
    let mut a = Member::new("a");
    for _ in 0..3 {
        beat(&api, &mut a).await;
    }
    assert_eq!(a.owned(), vec![0, 1]);
    let offsets = api.send("GET", &format!("{BASE}/offsets"), None).await;
    assert_eq!(offsets.status, 200, "{}", offsets.body);
    for s in [0u32, 1] {
        let row = &offsets.body["shards"][s as usize];
        assert_eq!(
            row["consumerLastDeliveredId"],
            format!("{}-1", 100 + s),
            "{row}"
        );
        assert_eq!(
            row["consumerLastAckedId"],
            format!("{}-0", 100 + s),
            "{row}"
        );
        for k in [
            "redisNodeEndpoint",
            "redisNodeId",
            "redisSlotRangeStart",
            "redisSlotRangeEnd",
        ] {
            assert_eq!(row[k], Value::Null, "{k} on standalone");
        }
    }
    running.shutdown().await.unwrap();
}

/// Offsets and messages on a 3-master Redis Cluster: each shard names the node serving its slot and that
/// node's slot range.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_name_each_shard_s_cluster_node_and_slot_range() {
    let cluster = RedisCluster::start();
    let mut c = config("");
    c.coordinator.redis_cluster_nodes = cluster.node_urls();
    let (running, api) = coordinator(c).await;
    assert_eq!(
        api.create_stream("browse", 4).await.status,
        201,
        "create on the cluster"
    );
    let offsets = api.send("GET", &format!("{BASE}/offsets"), None).await;
    assert_eq!(offsets.status, 200, "{}", offsets.body);
    let mut nodes = BTreeSet::new();
    for s in 0..4usize {
        let row = &offsets.body["shards"][s];
        let key = format!("browse:{s}");
        let node = &cluster.nodes()[cluster.node_index_for_key(&key)];
        assert_eq!(
            row["redisNodeEndpoint"],
            format!("127.0.0.1:{}", node.port()),
            "{row}"
        );
        assert_eq!(row["redisNodeId"].as_str().map(str::len), Some(40), "{row}");
        let slot = row["redisSlot"].as_i64().unwrap();
        let (start, end) = (
            row["redisSlotRangeStart"].as_i64().unwrap(),
            row["redisSlotRangeEnd"].as_i64().unwrap(),
        );
        assert!(start <= slot && slot <= end, "{row}");
        nodes.insert(node.port());
    }
    let node = &cluster.nodes()[cluster.node_index_for_key("browse:3")];
    let url = format!("redis://127.0.0.1:{}", node.port());
    let id = xadd(&url, "browse:3", &[("payload", "on a cluster")]).await;
    let page = api
        .send(
            "GET",
            "/coord/v1/monitoring/streams/browse/groups/browse/shards/3/messages",
            None,
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.body["records"][0]["recordId"], id);
    assert_eq!(page.body["records"][0]["payload"], "on a cluster");
    running.shutdown().await.unwrap();
}

/// Pages are bounded by bytes as well as by count (issue #32, finding 13): with
/// `message-page-max-bytes` 4096, records of 1,100-byte payloads come three to a page whatever `limit`
/// says, every record exactly once in both directions; a record larger than the budget comes alone on its
/// page; Grafana's merged view of every shard is cut the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_bounded_by_bytes_and_walk_every_record_once() {
    let redis = RedisServer::start();
    let url = redis.url();
    let mut c = config(&url);
    c.coordinator.http.message_page_max_bytes = 4096;
    let (running, api) = coordinator(c).await;
    assert_eq!(api.create_stream("browse", 2).await.status, 201);
    let big = "x".repeat(1100);
    let mut written = Vec::new();
    for _ in 0..10 {
        written.push(xadd(&url, "browse:1", &[("payload", &big)]).await);
    }
    // One record of 5,000 bytes, over the budget by itself.
    let huge = "y".repeat(5000);
    written.push(xadd(&url, "browse:1", &[("payload", &huge)]).await);
    for _ in 0..2 {
        written.push(xadd(&url, "browse:1", &[("payload", &big)]).await);
    }

    let (forward, pages) = walk(&api, "FORWARD", 1000).await;
    assert_eq!(forward, written, "every record once, in order");
    // 10 small records three (about 3 × 1,120 bytes) to a page, the tenth alone before the huge one, which
    // comes alone too; then the last 2.
    assert_eq!(pages, 6);
    let (backward, _) = walk(&api, "BACKWARD", 1000).await;
    assert_eq!(backward, written.iter().rev().cloned().collect::<Vec<_>>());
    let first = api
        .send(
            "GET",
            &format!("{BASE}/shards/1/messages?direction=FORWARD&limit=1000"),
            None,
        )
        .await;
    let body = first.body.to_string();
    assert_eq!(first.body["records"].as_array().unwrap().len(), 3);
    assert!(body.len() < 4096 + 2048, "{} bytes", body.len());
    assert_eq!(first.body["nextCursor"], written[2]);

    // Grafana: every shard merged, walked with its cursors; every page within the budget.
    for _ in 0..4 {
        written.push(xadd(&url, "browse:0", &[("payload", &big)]).await);
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        assert!(page < 50, "paging does not end");
        let mut path =
            "/coord/v1/monitoring/grafana/messages?streamPrefix=browse&consumerGroup=browse\
                        &shardIndex=all&direction=FORWARD&limit=1000"
                .to_owned();
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let r = api.send("GET", &path, None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let rows = r.body.as_array().unwrap().clone();
        let payload_bytes: usize = rows
            .iter()
            .map(|row| row["payload"].as_str().unwrap().len())
            .sum();
        assert!(
            rows.len() == 1 || payload_bytes <= 4096,
            "{} rows of {payload_bytes} payload bytes",
            rows.len()
        );
        seen.extend(
            rows.iter()
                .map(|row| row["recordId"].as_str().unwrap().to_owned()),
        );
        match rows.last().and_then(|row| row["pageNextCursor"].as_str()) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let id = |id: &String| {
        let (ms, seq) = id.split_once('-').unwrap();
        (ms.parse::<u64>().unwrap(), seq.parse::<u64>().unwrap())
    };
    assert_eq!(seen.len(), written.len(), "every record once");
    assert_eq!(
        seen.iter().collect::<BTreeSet<_>>(),
        written.iter().collect::<BTreeSet<_>>()
    );
    assert!(
        seen.windows(2).all(|w| id(&w[0]) <= id(&w[1])),
        "in order: {seen:?}"
    );
    running.shutdown().await.unwrap();
}
