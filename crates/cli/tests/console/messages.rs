//! The merged view of the message browser in the browser: from the group page an operator opens every
//! shard's records merged by time (newest first, each naming its shard), pages them, searches a payload
//! substring over every shard (the summary says how many records it scanned; "Older →" continues the scan
//! where it stopped), jumps to a time, and follows a record's shard link to that shard's view at the record.

use super::browser::{Browser, WAIT};
use super::{ADMIN_PASSWORD, admin_call, sign_in, start_rsc};
use reqwest::Method;
use rsc_testkit::RedisServer;
use serde_json::json;

/// A script: the `data-id`s of the records shown, with their shard (`id@shard`), joined by spaces.
const SHOWN: &str = "return [...document.querySelectorAll('.record')].map((r) => r.getAttribute('data-id') + '@' + r.getAttribute('data-shard')).join(' ')";

/// `id@shard` of record `n` (records n = 0…29 at ids 1000+n, on shard n mod 3).
fn rec(n: u64) -> String {
    format!("{}-0@{}", 1000 + n, n % 3)
}

fn shown(ns: impl IntoIterator<Item = u64>) -> String {
    ns.into_iter().map(rec).collect::<Vec<_>>().join(" ")
}

/// A wait condition: the records shown are exactly `want` and the scan summary contains `summary`.
fn showing(want: &str, summary: &str) -> String {
    format!(
        "const s = document.querySelector('#scan-summary'); \
         return (function() {{ {SHOWN} }})() === {} && !!s && s.innerText.includes({})",
        json!(want),
        json!(summary)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_merged_view_pages_searches_and_links_each_record_to_its_shard() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis, None);
    let url = rsc.url();
    let (status, body) = admin_call(
        Method::POST,
        &format!("{url}/coord/v1/streams/clicks"),
        Some(json!({"initialShardCount": 3, "requestedBy": "test", "reason": "merged view test"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let client = redis::Client::open(redis.url()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    for n in 0..30u64 {
        let parity = if n % 2 == 0 { "even" } else { "odd" };
        let _: String = redis::cmd("XADD")
            .arg(rsc_protocol::names::shard_stream_key(
                "clicks",
                (n % 3) as u32,
            ))
            .arg(format!("{}-0", 1000 + n))
            .arg("payload")
            .arg(json!({"n": n, "parity": parity}).to_string())
            .query_async(&mut con)
            .await
            .unwrap();
    }

    let b = Browser::start().await;
    sign_in(&b, &url, "admin", ADMIN_PASSWORD).await;
    b.goto(&format!("{url}/console#/group/clicks/clicks")).await;
    b.click("#merged-messages").await;
    b.wait_for(
        "the newest 25 records of every shard, by time",
        &format!(
            "return (function() {{ {SHOWN} }})() === {}",
            json!(shown((5..30).rev()))
        ),
        WAIT,
    )
    .await;
    b.select("#page-size", "10").await;
    b.wait_for(
        "the newest 10 records of every shard, by time",
        &format!(
            "return (function() {{ {SHOWN} }})() === {}",
            json!(shown((20..30).rev()))
        ),
        WAIT,
    )
    .await;
    let title = b.text("#view h1").await;
    assert!(title.contains("all shards, by time"), "{title}");
    b.click("#older").await;
    b.wait_for(
        "the next 10",
        &format!(
            "return (function() {{ {SHOWN} }})() === {}",
            json!(shown((10..20).rev()))
        ),
        WAIT,
    )
    .await;

    // Search every shard: 10 matches per page; the page is full at the 11th match (record 8), so 21
    // records were scanned, and "Older →" continues from there.
    b.fill("#search-text", "\"even\"").await;
    b.click("#find-button").await;
    b.wait_for(
        "the even records 28…10, 21 scanned over 3 shards",
        &showing(
            &shown((10..30).rev().filter(|n| n % 2 == 0)),
            "Scanned 21 record(s)",
        ),
        WAIT,
    )
    .await;
    let summary = b.text("#scan-summary").await;
    assert!(summary.contains("over 3 shards"), "{summary}");
    b.screenshot("17-messages-merged-search").await;
    b.assert_accessible("17-messages-merged-search").await;
    b.click("#older").await;
    b.wait_for(
        "the even records 8…0, the 9 records left scanned",
        &showing(&shown([8, 6, 4, 2, 0]), "Scanned 9 record(s)"),
        WAIT,
    )
    .await;
    assert_eq!(
        b.js("return document.querySelector('#older').disabled")
            .await,
        json!(true),
        "the scan reached the end"
    );

    // Jump to a time over every shard, then follow a record to its shard's view.
    b.fill("#search-text", "").await;
    b.fill("#jump-to", "1970-01-01T00:00:01.015Z").await;
    b.click("#find-button").await;
    b.wait_for(
        "the page from 1015-0 back",
        &format!(
            "return (function() {{ {SHOWN} }})() === {}",
            json!(shown((6..16).rev()))
        ),
        WAIT,
    )
    .await;
    b.js("document.querySelectorAll('.record .shard-link')[1].click(); return true")
        .await;
    b.wait_for(
        "shard 2's view at record 1014-0",
        "const r = document.querySelectorAll('.record'); const h = document.querySelector('#view h1'); \
         return r.length > 0 && r[0].getAttribute('data-id') === '1014-0' && !!h && h.innerText.includes('shard 2') \
           && [...r].every((x) => x.getAttribute('data-shard') === '2')",
        WAIT,
    )
    .await;
    b.assert_accessible("18-messages-shard-from-merged").await;
    b.close().await;
}
