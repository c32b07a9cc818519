//! The web console in a real headless Chromium against a real `rsc serve` and redis-server: an operator
//! signs in, creates a stream from the console, watches its group converge as members join (the member
//! model the SDK runs, heartbeating), scales the stream with a reason and watches the migration finish,
//! browses a shard's messages (and finds one by payload text, then jumps to its id), finds the scale in the
//! audit log and signs out (the token stops working);
//! a READ user sees no admin buttons (and the coordinator refuses the action anyway), and a revoked token
//! returns the page to the sign-in form. The other admin actions (create group, rollback, force-complete,
//! delete group) are in `console/admin.rs`, the stream page and the charts in `console/stream.rs`, the merged view
//! of every shard (paged, searched, linked to each shard) in `console/messages.rs`.
//! Screenshots of each page go to `target/console-screenshots/`.

#[path = "console/admin.rs"]
mod admin;
#[path = "console/messages.rs"]
mod messages;
#[path = "console/stream.rs"]
mod stream;
use crate::browser;

use browser::{Browser, WAIT};
use rsc_client::{LocalShard, Membership, Outgoing};
use rsc_protocol::wire::{HeartbeatResponse, RuntimeConsumerCapacity};
use rsc_testkit::{RedisServer, RscBuilder, RscProcess};
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const ADMIN_PASSWORD: &str = "console-admin-password";
const READER_PASSWORD: &str = "console-reader-password";

fn start_rsc(redis: &RedisServer, config: Option<&std::path::Path>) -> RscProcess {
    let mut b = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD);
    if let Some(c) = config {
        b = b.env("RSC_CONFIG", c.to_str().unwrap());
    }
    b.start()
}

async fn admin_call(method: reqwest::Method, url: &str, body: Option<Value>) -> (u16, Value) {
    let mut r = reqwest::Client::new()
        .request(method, url)
        .basic_auth("admin", Some(ADMIN_PASSWORD));
    if let Some(b) = body {
        r = r.json(&b);
    }
    let resp = r.send().await.expect("request");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Members of group `p/p`, heartbeating with the SDK's member model until stopped: a shard given up is
/// reported DRAINING once, then REVOKED until confirmed.
struct Members {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Members {
    fn start(base: &str, prefix: &str, ids: &[&str]) -> Members {
        let stop = Arc::new(AtomicBool::new(false));
        let mut members: Vec<Membership> = ids
            .iter()
            .map(|id| Membership::new(id, Duration::from_secs(1)))
            .collect();
        let (base, prefix, flag) = (base.to_owned(), prefix.to_owned(), stop.clone());
        let task = tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut every = tokio::time::interval(Duration::from_millis(200));
            while !flag.load(Ordering::Relaxed) {
                every.tick().await;
                for m in &mut members {
                    heartbeat(&http, &base, &prefix, m).await;
                }
            }
        });
        Members { stop, task }
    }

    async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.expect("the member task ends cleanly");
    }
}

async fn heartbeat(http: &reqwest::Client, base: &str, prefix: &str, m: &mut Membership) {
    let req = m.request(
        Outgoing {
            capacity: RuntimeConsumerCapacity {
                runtime_max_concurrency: 1,
                available_concurrency: 1,
            },
            request_id_suffix: "",
            acked_at: None,
        },
        |_| LocalShard::default(),
    );
    let sent_at = Instant::now();
    let url = format!(
        "{base}/coord/v1/streams/{prefix}/groups/{prefix}/members/{}/heartbeat",
        m.member_id()
    );
    let Ok(resp) = http
        .post(url)
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .json(&req)
        .send()
        .await
    else {
        return;
    };
    if let Ok(answer) = resp.json::<HeartbeatResponse>().await {
        m.drained_all();
        m.on_response(sent_at, &answer);
    }
}

/// Records with JSON payloads on shard `shard` of `prefix` (written with XADD, as a producer would).
async fn produce(redis_url: &str, prefix: &str, shard: u32, count: usize) {
    let client = redis::Client::open(redis_url).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let key = rsc_protocol::names::shard_stream_key(prefix, shard);
    for i in 0..count {
        let payload = json!({"orderId": format!("o-{shard}-{i}"), "amount": i * 10, "lines": [{"sku": "A-1", "qty": 1}]});
        let _: String = redis::cmd("XADD")
            .arg(&key)
            .arg("*")
            .arg("payload")
            .arg(payload.to_string())
            .arg("source")
            .arg("console-test")
            .query_async(&mut con)
            .await
            .unwrap();
    }
}

/// Signs in with the keyboard only: the username field has focus, Tab moves on, Enter submits.
async fn sign_in(b: &Browser, url: &str, user: &str, password: &str) {
    b.goto(&format!("{url}/console")).await;
    b.wait_css("#login-view:not([hidden]) #login-username")
        .await;
    b.wait_for(
        "focus on the username field",
        "return document.activeElement && document.activeElement.id === 'login-username'",
        WAIT,
    )
    .await;
    b.keys(&format!("{user}\u{E004}{password}\u{E007}")).await;
    b.wait_css("#groups-table").await;
}

/// The text of the group's row on the overview.
fn row(group: &str, cell: &str) -> String {
    format!(
        "const r = document.querySelector('[data-group=\"{group}\"] {cell}'); return r ? r.innerText : null"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_creates_watches_scales_browses_audits_and_signs_out() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis, None);
    let url = rsc.url();
    let b = Browser::start().await;

    // Sign-in page, then the overview.
    b.goto(&format!("{url}/console")).await;
    b.wait_css("#login-view:not([hidden])").await;
    b.screenshot("01-sign-in").await;
    b.assert_accessible("01-sign-in").await;
    sign_in(&b, &url, "admin", ADMIN_PASSWORD).await;

    // Create the stream from the console: the dialog names the action and needs a reason.
    b.click("#create-stream").await;
    b.wait_css("dialog[open] #confirm-field-prefix").await;
    b.fill("#confirm-field-prefix", "orders").await;
    b.fill("#confirm-field-shards", "4").await;
    b.click("#confirm-ok").await;
    let refused = b.text("#confirm-error").await;
    assert!(refused.contains("reason is required"), "{refused}");
    b.fill("#confirm-reason", "a stream for the console test")
        .await;
    b.click("#confirm-ok").await;
    b.wait_for(
        "the new group on the overview",
        &row("orders/orders", ".members"),
        WAIT,
    )
    .await;

    // Members join; the overview follows without a reload (the marker set on the page survives).
    b.js("window.__sameDocument = true; return true").await;
    for shard in 0..2 {
        produce(&redis.url(), "orders", shard, 15).await;
    }
    let members = Members::start(&url, "orders", &["member-a", "member-b"]);
    b.wait_for(
        "two live members on the overview",
        &format!(
            "const t = (function() {{ {} }})(); return t === '2 / 2' && window.__sameDocument === true",
            row("orders/orders", ".members")
        ),
        WAIT,
    )
    .await;
    b.screenshot("02-overview").await;
    b.assert_accessible("02-overview").await;

    // The group page: converged (STABLE, every shard owned once), with the triage facts beside the data.
    b.click("[data-group=\"orders/orders\"] a").await;
    b.wait_for(
        "a converged group",
        "return document.querySelectorAll('#shard-grid .c-owned').length === 4 \
         && document.querySelectorAll('#members-table meter').length === 2 \
         && !!document.querySelector('#group-stats .b-stable')",
        WAIT,
    )
    .await;
    let triage = b.text("#rebalance-triage").await;
    assert!(triage.contains("2 of 2 members live"), "{triage}");
    b.screenshot("03-group").await;
    b.assert_accessible("03-group").await;

    // Scale in from the console, with a reason; watch the migration drain and finish.
    b.click("#scale").await;
    b.wait_css("dialog[open] #confirm-field-target").await;
    let title = b.text("#confirm-title").await;
    assert!(
        title.contains("orders"),
        "the dialog names its target: {title}"
    );
    b.fill("#confirm-field-target", "2").await;
    b.fill("#confirm-reason", "fewer shards for the console test")
        .await;
    b.click("#confirm-ok").await;
    b.wait_css("#active-migration, #migration-history .b-deprecated")
        .await;
    if b.exists("#active-migration").await {
        b.screenshot("04-migration").await;
    }
    b.wait_for(
        "the migration to finish",
        "return !!document.querySelector('#no-migration') \
         && !!document.querySelector('#migration-history .b-deprecated') \
         && document.querySelectorAll('#shard-grid tbody tr').length === 2",
        Duration::from_secs(90),
    )
    .await;
    b.screenshot("05-migration-finished").await;
    b.assert_accessible("05-migration-finished").await;

    // A pending entry links to its record: read two records of shard 0 for the group (they stay pending);
    // the pending count lists them (oldest first, with the consumer), and each opens the browser at itself.
    let client = redis::Client::open(redis.url()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let read: redis::Value = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("orders")
        .arg("console-test-reader")
        .arg("COUNT")
        .arg(2)
        .arg("STREAMS")
        .arg(rsc_protocol::names::shard_stream_key("orders", 0))
        .arg(">")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(!matches!(read, redis::Value::Nil), "records were read");
    b.wait_css("[data-key=\"pending:0\"]").await;
    b.click("[data-key=\"pending:0\"]").await;
    b.wait_for(
        "the pending list: two entries of console-test-reader",
        "const t = document.querySelector('#pending-table'); \
         return !!t && t.querySelectorAll('tbody tr').length === 2 \
         && t.innerText.includes('console-test-reader')",
        WAIT,
    )
    .await;
    b.screenshot("05b-pending-entries").await;
    b.assert_accessible("05b-pending-entries").await;
    b.js("document.querySelectorAll('#pending-table a')[1].click(); return true")
        .await;
    b.wait_for(
        "the browser at the second pending entry (the second oldest record)",
        "const r = document.querySelectorAll('.record'); \
         return r.length === 2 && r[0].innerText.includes('o-0-1') && r[1].innerText.includes('o-0-0')",
        WAIT,
    )
    .await;
    b.js("history.back(); return true").await;
    b.wait_css("#pending-table a").await;
    b.js("document.querySelectorAll('#pending-table a')[0].click(); return true")
        .await;
    b.wait_for(
        "the browser at the first pending entry (the oldest record)",
        "const r = document.querySelectorAll('.record'); \
         return r.length === 1 && r[0].innerText.includes('o-0-0')",
        WAIT,
    )
    .await;
    b.js("history.go(-2); return true").await;
    b.wait_css("[data-key=\"msg:0\"]").await;

    // Messages of shard 0: newest first, JSON payloads pretty-printed, paged.
    b.click("[data-key=\"msg:0\"]").await;
    b.wait_css(".record pre.payload.json").await;
    b.select("#page-size", "10").await;
    b.wait_for(
        "a page of 10",
        "return document.querySelectorAll('.record').length === 10",
        WAIT,
    )
    .await;
    let first = b.text(".record pre.payload").await;
    assert!(
        first.contains("\"orderId\": \"o-0-14\"") && first.contains('\n'),
        "newest first, pretty-printed: {first}"
    );
    b.click("#older").await;
    b.wait_for(
        "the next page",
        "const p = document.querySelector('.record pre.payload'); return p && !p.innerText.includes('o-0-14')",
        WAIT,
    )
    .await;
    b.click("#newer").await;
    b.wait_for(
        "the newest page again",
        "const p = document.querySelector('.record pre.payload'); return p && p.innerText.includes('o-0-14')",
        WAIT,
    )
    .await;
    // Find: a payload substring within the scan bounds (the summary says how far it looked), then a jump
    // to that record's id.
    b.fill("#search-text", "o-0-3\"").await;
    b.click("#find-button").await;
    b.wait_for(
        "the one record whose payload has o-0-3",
        "const r = document.querySelectorAll('.record'); const s = document.querySelector('#scan-summary'); \
         return r.length === 1 && r[0].innerText.includes('o-0-3') && s && s.innerText.includes('Scanned 15 record')",
        WAIT,
    )
    .await;
    let found = b
        .js("return document.querySelector('.record').getAttribute('data-id')")
        .await;
    let found = found.as_str().unwrap().to_owned();
    b.fill("#search-text", "").await;
    b.fill("#jump-to", &found).await;
    b.click("#find-button").await;
    b.wait_for(
        "the page from that id, newest first",
        &format!(
            "const r = document.querySelectorAll('.record'); \
             return r.length === 4 && r[0].getAttribute('data-id') === '{found}'"
        ),
        WAIT,
    )
    .await;
    b.screenshot("06-messages").await;
    b.assert_accessible("06-messages").await;

    // The scale in the audit log, found with a filter.
    b.click("#nav-audit").await;
    b.fill("#audit-action", "SCALE_GROUP").await;
    b.fill("#audit-streamPrefix", "orders").await;
    b.click("#audit-apply").await;
    b.wait_for(
        "the scale in the audit log",
        "const r = document.querySelector('#audit-table tr[data-action=\"SCALE_GROUP\"]'); \
         const head = document.querySelector('#audit-table thead'); \
         return r && r.innerText.includes('fewer shards for the console test') && r.innerText.includes('admin') \
           && r.innerText.includes('Mozilla/5.0') && !!head && head.innerText.includes('Requested by') \
           && head.innerText.includes('Error code') && head.innerText.includes('User agent')",
        WAIT,
    )
    .await;
    b.screenshot("07-audit").await;
    b.assert_accessible("07-audit").await;

    // Sign out: back to the sign-in form, and the token no longer works.
    let token = b
        .js("return sessionStorage.getItem('rsc.console.token')")
        .await;
    let token = token
        .as_str()
        .expect("a token in session storage")
        .to_owned();
    b.click("#logout").await;
    b.wait_css("#login-view:not([hidden])").await;
    assert_eq!(
        b.js("return sessionStorage.getItem('rsc.console.token')")
            .await,
        Value::Null
    );
    let after = reqwest::Client::new()
        .get(format!("{url}/coord/v1/monitoring/session"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status().as_u16(), 401, "logout revoked the token");

    members.stop().await;
    b.close().await;
}

fn hash_password(password: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .arg("hash-password")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{password}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_sees_no_admin_actions_and_a_revoked_or_expired_token_returns_to_sign_in() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rsc.toml");
    std::fs::write(
        &config,
        format!(
            "[[coordinator.api.users]]\nusername = \"reader\"\npassword-hash = \"{}\"\nroles = [\"READ\"]\n",
            hash_password(READER_PASSWORD)
        ),
    )
    .unwrap();
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis, Some(&config));
    let url = rsc.url();
    let (status, body) = admin_call(
        reqwest::Method::POST,
        &format!("{url}/coord/v1/streams/payments"),
        Some(json!({"initialShardCount": 2, "requestedBy": "test", "reason": "reader test"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");

    let b = Browser::start().await;
    sign_in(&b, &url, "reader", READER_PASSWORD).await;
    b.wait_for(
        "the group on the overview",
        &row("payments/payments", ".members"),
        WAIT,
    )
    .await;
    assert!(!b.exists("#create-stream").await && !b.exists("#create-group").await);
    b.click("[data-group=\"payments/payments\"] a").await;
    b.wait_css("#shard-grid").await;
    for admin in [
        "#scale",
        "#reset-offsets",
        "#delete-group",
        "#rollback",
        "#force-complete",
    ] {
        assert!(!b.exists(admin).await, "a READ user sees no {admin}");
    }
    b.screenshot("08-read-only").await;
    b.assert_accessible("08-read-only").await;

    // The coordinator refuses the action anyway.
    let token = b
        .js("return sessionStorage.getItem('rsc.console.token')")
        .await;
    let token = token.as_str().expect("a token").to_owned();
    let refused = reqwest::Client::new()
        .post(format!(
            "{url}/coord/v1/streams/payments/groups/payments/scale"
        ))
        .bearer_auth(&token)
        .json(&json!({"targetShardCount": 3, "requestedBy": "reader", "reason": "not allowed"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 403);

    // The token is revoked elsewhere: the page's next refresh returns to the sign-in form and says why.
    let revoked = reqwest::Client::new()
        .post(format!("{url}/coord/v1/auth/revoke"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status().as_u16(), 200);
    b.wait_for(
        "the sign-in form after the token was revoked",
        "const v = document.querySelector('#login-view'); \
         return v && !v.hidden && document.querySelector('#login-message').innerText.includes('session has ended') \
         && sessionStorage.getItem('rsc.console.token') === null",
        WAIT,
    )
    .await;
    b.screenshot("09-session-ended").await;

    // Signed in again, the token expires (its record in Redis now says so): back to the sign-in form too.
    b.fill("#login-password", READER_PASSWORD).await;
    b.click("#login-submit").await;
    b.wait_css("#shard-grid").await;
    let token = b
        .js("return sessionStorage.getItem('rsc.console.token')")
        .await;
    expire_token(&redis.url(), token.as_str().expect("a new token")).await;
    b.wait_for(
        "the sign-in form after the token expired",
        "const v = document.querySelector('#login-view'); \
         return v && !v.hidden && document.querySelector('#login-message').innerText.includes('session has ended')",
        WAIT,
    )
    .await;
    b.close().await;
}

/// Moves a token's expiry into the past, as if its time had run out.
async fn expire_token(redis_url: &str, token: &str) {
    use sha2::{Digest, Sha256};
    let digest: String = Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let key = rsc_protocol::names::token_key("redis-stream:coord", &digest);
    let client = redis::Client::open(redis_url).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let record: String = redis::cmd("GET")
        .arg(&key)
        .query_async(&mut con)
        .await
        .expect("the token's record");
    let mut record: Value = serde_json::from_str(&record).expect("a JSON token record");
    record["expiresMs"] = json!(1000);
    let () = redis::cmd("SET")
        .arg(&key)
        .arg(record.to_string())
        .arg("KEEPTTL")
        .query_async(&mut con)
        .await
        .unwrap();
}

/// The health panel follows what the coordinator says: DOWN (Redis DOWN) while Redis is down, never the last
/// green answer under an error banner; and when the coordinator itself stops answering, it says so plainly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_panel_says_down_without_redis_and_unreachable_without_a_coordinator() {
    let mut redis = RedisServer::start();
    let mut rsc = start_rsc(&redis, None);
    let url = rsc.url();
    let b = Browser::start().await;
    sign_in(&b, &url, "admin", ADMIN_PASSWORD).await;
    b.wait_for(
        "health UP",
        "const t = document.querySelector('#health-title'); return t && t.innerText.includes('UP')",
        WAIT,
    )
    .await;

    redis.stop();
    b.wait_for(
        "health DOWN with Redis DOWN",
        "const t = document.querySelector('#health-title'); const p = document.querySelector('#health'); \
         return t && t.innerText.includes('DOWN') && p.innerText.includes('Redis') && \
         !/Redis\\s*UP/.test(p.innerText)",
        Duration::from_secs(40),
    )
    .await;
    b.screenshot("health-redis-down").await;

    rsc.kill();
    b.wait_for(
        "the coordinator named unreachable",
        "const p = document.querySelector('#health-problem'); \
         return p && p.innerText.includes('does not answer') && \
         document.querySelector('#health-title').innerText.includes('UNREACHABLE')",
        Duration::from_secs(40),
    )
    .await;
    let banner = b.text("#status").await;
    assert!(banner.contains("COORDINATOR_UNREACHABLE"), "{banner}");
    b.screenshot("health-coordinator-unreachable").await;
    b.close().await;
}
