//! The stream page and the charts in the browser: a stream with two groups and records on two of its four
//! shards; one group reads some. The overview draws each group's lag sparkline with its text alternative;
//! the stream page shows the groups side by side (lag from Redis), the shards with the busy ones marked hot,
//! and charts of the rates and lags whose text alternatives carry the latest value and the min/max; the
//! group page charts its own lag and rates. The coordinator samples every second here (the ring buffer
//! the charts read is filled at the metrics refresh). A second coordinator, sampling every 10 minutes, has
//! no point yet for a new stream ("collecting — first point in N s"), and a caller scoped to another
//! stream sees the 403 as such.

use super::browser::{Browser, WAIT};
use super::{ADMIN_PASSWORD, Members, admin_call, hash_password, produce, row, sign_in};
use reqwest::Method;
use rsc_testkit::{RedisServer, RscBuilder, RscProcess};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn start(redis: &RedisServer, sample_every: &str, config: Option<&std::path::Path>) -> RscProcess {
    let mut b = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD)
        .env("COORDINATOR_METRICS_REFRESH_INTERVAL", sample_every);
    if let Some(c) = config {
        b = b.env("RSC_CONFIG", c.to_str().unwrap());
    }
    b.start()
}

async fn create(url: &str, path: &str, body: Value) {
    let (status, answer) = admin_call(Method::POST, &format!("{url}{path}"), Some(body)).await;
    assert_eq!(status, 201, "POST {path}: {answer}");
}

/// Waits until the coordinator's history of `prefix` has a sample that includes every one of `groups`.
async fn wait_for_a_sample(url: &str, prefix: &str, groups: &[&str]) {
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, body) = admin_call(
            Method::GET,
            &format!("{url}/coord/v1/streams/{prefix}/history"),
            None,
        )
        .await;
        let sampled = status == 200
            && body["points"].as_array().is_some_and(|points| {
                points.iter().any(|p| {
                    groups.iter().all(|g| {
                        p["groups"]
                            .as_array()
                            .is_some_and(|gs| gs.iter().any(|x| x["consumerGroup"] == *g))
                    })
                })
            });
        if sampled {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no sample of {prefix} with {groups:?} within {WAIT:?}: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Reads `count` records of shard `shard` for group `group` (they stay pending; the group's lag drops).
async fn consume(redis_url: &str, prefix: &str, group: &str, shard: u32, count: usize) {
    let client = redis::Client::open(redis_url).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let read: redis::Value = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg(group)
        .arg("console-stream-reader")
        .arg("COUNT")
        .arg(count)
        .arg("STREAMS")
        .arg(rsc_protocol::names::shard_stream_key(prefix, shard))
        .arg(">")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(!matches!(read, redis::Value::Nil), "records were read");
}

/// A script returning the text alternative of the chart image under `css` (null until there is one).
fn label(css: &str) -> String {
    format!(
        "const e = document.querySelector({}); return e && e.getAttribute('role') === 'img' \
         && e.querySelector('title') && e.querySelector('title').textContent === e.getAttribute('aria-label') \
         ? e.getAttribute('aria-label') : null",
        json!(css)
    )
}

/// The highest value a chart's text alternative gives for the series `name` ("… name latest x …, min y,
/// max z"), as a script condition: true once it is above zero.
fn max_above_zero(css: &str, name: &str) -> String {
    format!(
        "const l = (function() {{ {} }})(); if (!l) return false; \
         const m = new RegExp({} + ' latest [0-9.]+ records/s, min [0-9.]+, max ([0-9.]+)').exec(l); \
         return !!m && Number(m[1]) > 0",
        label(css),
        json!(name)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_page_shows_groups_shards_and_charts_and_the_overview_a_lag_sparkline() {
    let redis = RedisServer::start();
    let rsc = start(&redis, "1s", None);
    let url = rsc.url();
    create(
        &url,
        "/coord/v1/streams/orders",
        json!({"initialShardCount": 4, "requestedBy": "test", "reason": "stream page test"}),
    )
    .await;
    create(
        &url,
        "/coord/v1/streams/orders/groups/billing",
        json!({"requestedBy": "test", "reason": "stream page test"}),
    )
    .await;
    // Records arrive after a sample of both groups, so the next sample sees them as a produce rate.
    wait_for_a_sample(&url, "orders", &["orders", "billing"]).await;
    produce(&redis.url(), "orders", 0, 20).await;
    produce(&redis.url(), "orders", 1, 10).await;

    // The overview: each group's lag sparkline, named by its text alternative.
    let b = Browser::start().await;
    sign_in(&b, &url, "admin", ADMIN_PASSWORD).await;
    for group in ["orders", "billing"] {
        b.wait_for(
            &format!("the lag sparkline of orders/{group} at 30"),
            &format!(
                "const l = (function() {{ {} }})(); return !!l && l.startsWith('lag of orders/{group} over the last 15 min: latest 30 records')",
                label(&format!("[data-group=\"orders/{group}\"] svg.sparkline"))
            ),
            WAIT,
        )
        .await;
    }
    b.screenshot("12-overview-sparklines").await;
    b.assert_accessible("12-overview-sparklines").await;

    // Group orders gets members (the coordinator samples the offsets of a group with members at every
    // refresh; an idle group's only when a shard got an entry) and reads 5 records of shard 0: its lag is
    // 25, billing's stays 30.
    let members = Members::start(&url, "orders", &["member-a", "member-b"]);
    b.wait_for(
        "two live members of orders/orders on the overview",
        &format!(
            "const t = (function() {{ {} }})(); return t === '2 / 2'",
            row("orders/orders", ".members")
        ),
        WAIT,
    )
    .await;
    consume(&redis.url(), "orders", "orders", 0, 5).await;

    // The stream page, from the overview's stream link.
    b.click("[data-group=\"orders/orders\"] a[href=\"#/stream/orders\"]")
        .await;
    b.wait_for(
        "the groups side by side with their lag",
        "const lag = (g) => { const e = document.querySelector('[data-stream-group=\"' + g + '\"] .lag'); return e && e.innerText; }; \
         return lag('orders') === '25' && lag('billing') === '30'",
        WAIT,
    )
    .await;
    let members_of = |g: &str| {
        format!("return document.querySelector('[data-stream-group=\"{g}\"] .members').innerText")
    };
    assert_eq!(b.js(&members_of("orders")).await, json!("2 / 2"));
    assert_eq!(b.js(&members_of("billing")).await, json!("0 / 0"));
    // Shards 0 and 1 hold records: both hot; 2 and 3 are empty.
    b.wait_for(
        "shard lengths, the busy shards hot",
        "const r = (s) => document.querySelector('#stream-shards-table tr[data-shard=\"' + s + '\"]'); \
         return !!r(3) && r(0).classList.contains('hot') && r(1).classList.contains('hot') \
           && !r(2).classList.contains('hot') && !r(3).classList.contains('hot') \
           && r(0).innerText.includes('20') && r(1).innerText.includes('10')",
        WAIT,
    )
    .await;
    let stats = b.text("#stream-stats").await;
    assert!(
        stats.contains("Routing version") && stats.contains("Hottest shards"),
        "{stats}"
    );
    // The charts: lag per group at its latest value, and produce and consume rates above zero at some point.
    b.wait_for(
        "the lag chart at 25 and 30",
        &format!(
            "const l = (function() {{ {} }})(); return !!l && l.includes('orders latest 25 records') && l.includes('billing latest 30 records')",
            label("#chart-lag svg")
        ),
        WAIT,
    )
    .await;
    b.wait_for(
        "a produce rate above zero",
        &max_above_zero("#chart-rates svg", "produce"),
        WAIT,
    )
    .await;
    b.wait_for(
        "a consume rate of orders above zero",
        &max_above_zero("#chart-rates svg", "consume orders"),
        WAIT,
    )
    .await;
    b.screenshot("13-stream").await;
    b.assert_accessible("13-stream").await;

    // The group page charts the group's own lag and rates.
    b.click("[data-stream-group=\"orders\"] a").await;
    b.wait_for(
        "the group's lag chart at 25",
        &format!(
            "const l = (function() {{ {} }})(); return !!l && l.startsWith('Lag of orders over the last 15 min: latest 25 records')",
            label("#chart-group-lag svg")
        ),
        WAIT,
    )
    .await;
    b.wait_for(
        "the group's consume rate above zero",
        &max_above_zero("#chart-group-rates svg", "consume \\(orders\\)"),
        WAIT,
    )
    .await;
    b.screenshot("14-group-charts").await;
    b.assert_accessible("14-group-charts").await;

    // The stream page is reachable by its address too, and back from the group page's crumbs.
    b.click(".crumbs a[href=\"#/stream/orders\"]").await;
    b.wait_css("#chart-lag svg").await;
    members.stop().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_page_says_collecting_before_a_sample_and_forbidden_outside_the_callers_streams()
{
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rsc.toml");
    std::fs::write(
        &config,
        format!(
            "[[coordinator.api.users]]\nusername = \"payments-reader\"\npassword-hash = \"{}\"\nroles = [\"READ\"]\nstream-prefixes = [\"payments\"]\n",
            hash_password("payments-reader-password")
        ),
    )
    .unwrap();
    let redis = RedisServer::start();
    // One sample at start, the next in 10 minutes: the streams created afterwards have no point yet.
    let rsc = start(&redis, "10m", Some(&config));
    let url = rsc.url();
    for prefix in ["payments", "orders"] {
        create(
            &url,
            &format!("/coord/v1/streams/{prefix}"),
            json!({"initialShardCount": 2, "requestedBy": "test", "reason": "collecting test"}),
        )
        .await;
    }
    let b = Browser::start().await;
    sign_in(&b, &url, "payments-reader", "payments-reader-password").await;
    b.goto(&format!("{url}/console#/stream/payments")).await;
    b.wait_for(
        "the groups table and the charts collecting",
        "const c = document.querySelector('#chart-lag .collecting'); \
         return !!document.querySelector('[data-stream-group=\"payments\"]') && !!c \
           && /Collecting — first point in [0-9]+ s/.test(c.innerText)",
        WAIT,
    )
    .await;
    b.screenshot("15-stream-collecting").await;
    b.assert_accessible("15-stream-collecting").await;

    b.goto(&format!("{url}/console#/stream/orders")).await;
    b.wait_for(
        "the 403 shown as such",
        "const r = document.querySelector('#stream-refused'); \
         return !!r && r.getAttribute('data-status') === '403' && r.innerText.includes('FORBIDDEN') \
           && r.innerText.includes('You may not read stream orders')",
        WAIT,
    )
    .await;
    b.assert_accessible("16-stream-forbidden").await;
    b.close().await;
}
