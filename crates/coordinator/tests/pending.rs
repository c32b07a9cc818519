//! The per-entry pending list (`GET …/shards/{i}/pending`, issue #37) against a real redis-server: a
//! group's unacknowledged entries on one shard, oldest first, with the consumer each was handed to and how
//! often; one consumer's only; paged by cursor; each entry's `messagesPath` opens the message browser at that
//! record. READ is enough for the list (no payload) but not for the record it links to; bad queries are 400s
//! naming the parameter, a missing group a 404.

use crate::support;

use serde_json::Value;
use support::*;

const BASE: &str = "/coord/v1/monitoring/streams/pd/groups/pd/shards";

/// An `XREADGROUP` answer: per stream, its entries (id, fields).
type ReadReply = Option<Vec<(String, Vec<(String, Vec<(String, String)>)>)>>;

/// Records handed to `consumer` of group `pd` on `key` (`XREADGROUP … >`): their ids.
async fn read_as(
    conn: &mut redis::aio::MultiplexedConnection,
    key: &str,
    consumer: &str,
    n: usize,
) -> Vec<String> {
    let reply: ReadReply = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("pd")
        .arg(consumer)
        .arg("COUNT")
        .arg(n)
        .arg("STREAMS")
        .arg(key)
        .arg(">")
        .query_async(conn)
        .await
        .unwrap();
    reply
        .unwrap_or_default()
        .into_iter()
        .flat_map(|(_, entries)| entries.into_iter().map(|(id, _)| id))
        .collect()
}

fn entry_ids(page: &Value) -> Vec<&str> {
    page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["recordId"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_each_pending_entry_with_its_consumer_and_a_link_to_its_record() {
    let redis = rsc_testkit::RedisServer::start();
    let url = redis.url();
    let mut config = test_config(&url);
    config.coordinator.api.users = vec![user("reader", &["READ"], &[])];
    let (running, api) = coordinator(config).await;
    assert_eq!(api.create_stream("pd", 2).await.status, 201);
    let mut conn = redis_conn(&url).await;
    for n in 1..=5u64 {
        let _: String = redis::cmd("XADD")
            .arg("pd:0")
            .arg(format!("{}-0", n * 1000))
            .arg("payload")
            .arg(format!("record {n}"))
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    // c1 is handed 1000..3000 and acknowledges 2000; c2 is handed 4000 and 5000.
    assert_eq!(read_as(&mut conn, "pd:0", "c1", 3).await.len(), 3);
    assert_eq!(read_as(&mut conn, "pd:0", "c2", 2).await.len(), 2);
    let _: i64 = redis::cmd("XACK")
        .arg("pd:0")
        .arg("pd")
        .arg("2000-0")
        .query_async(&mut conn)
        .await
        .unwrap();

    let all = api.send("GET", &format!("{BASE}/0/pending"), None).await;
    assert_eq!(all.status, 200, "{}", all.body);
    assert_eq!(
        entry_ids(&all.body),
        ["1000-0", "3000-0", "4000-0", "5000-0"],
        "{}",
        all.body
    );
    let first = &all.body["entries"][0];
    assert_eq!(first["consumer"], "c1", "{first}");
    assert_eq!(first["deliveries"], 1);
    assert_eq!(first["recordTime"], "1970-01-01T00:00:01.000Z");
    assert!(first["idleMs"].as_i64().unwrap() >= 0);
    assert_eq!(all.body["entries"][2]["consumer"], "c2");
    assert_eq!(all.body["count"], 100);
    assert_eq!(all.body["nextCursor"], Value::Null);
    assert_eq!(all.body["streamKey"], "pd:0");

    // The link opens the browser at the record (the admin may read payloads).
    let path = all.body["entries"][1]["messagesPath"].as_str().unwrap();
    let record = api.send("GET", path, None).await;
    assert_eq!(record.status, 200, "{path}: {}", record.body);
    assert_eq!(
        record.body["records"][0]["recordId"], "3000-0",
        "{}",
        record.body
    );
    assert_eq!(record.body["records"][0]["payload"], "record 3");

    // One consumer's entries; pages by cursor.
    let c2 = api
        .send("GET", &format!("{BASE}/0/pending?consumer=c2"), None)
        .await;
    assert_eq!(entry_ids(&c2.body), ["4000-0", "5000-0"], "{}", c2.body);
    assert_eq!(c2.body["consumer"], "c2");
    let page1 = api
        .send("GET", &format!("{BASE}/0/pending?count=3"), None)
        .await;
    assert_eq!(entry_ids(&page1.body), ["1000-0", "3000-0", "4000-0"]);
    let cursor = page1.body["nextCursor"].as_str().unwrap();
    assert_eq!(cursor, "4000-0");
    let page2 = api
        .send(
            "GET",
            &format!("{BASE}/0/pending?count=3&cursor={cursor}"),
            None,
        )
        .await;
    assert_eq!(entry_ids(&page2.body), ["5000-0"], "{}", page2.body);
    assert_eq!(page2.body["nextCursor"], Value::Null);
    // A shard with nothing read: an empty list.
    let none = api.send("GET", &format!("{BASE}/1/pending"), None).await;
    assert_eq!(none.status, 200, "{}", none.body);
    assert_eq!(none.body["entries"], serde_json::json!([]));

    // READ lists the entries, but the record behind the link needs DATA_READ.
    let reader = api.with_auth(Auth::Basic("reader".into(), USER_PASSWORD.into()));
    let listed = reader.send("GET", &format!("{BASE}/0/pending"), None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(reader.send("GET", path, None).await.status, 403);

    // Bad queries name the parameter; a missing group is a 404.
    for (query, needle) in [
        ("count=0", "count"),
        ("count=1001", "count"),
        ("count=many", "count"),
        ("cursor=later", "cursor"),
        ("shard=1", "shard"),
    ] {
        let r = api
            .send("GET", &format!("{BASE}/0/pending?{query}"), None)
            .await;
        r.assert_invalid(query, needle);
    }
    api.send("GET", &format!("{BASE}/2/pending"), None)
        .await
        .assert_invalid("a shard beyond the group's", "shardIndex");
    let missing = api
        .send(
            "GET",
            "/coord/v1/monitoring/streams/pd/groups/nope/shards/0/pending",
            None,
        )
        .await;
    assert_eq!(missing.status, 404, "{}", missing.body);
    running.shutdown().await.unwrap();
}
