//! Cross-site request forgery in a real headless Chromium against a real `rsc serve` (issue #32, finding 1).
//!
//! The attack: the operator's browser once opened an API URL with Basic credentials (here in the URL, as a
//! browser's password prompt would supply them after a `WWW-Authenticate: Basic` challenge), and then visits
//! a page on another site that auto-submits `<form method=POST enctype="text/plain">` whose body is shaped
//! like JSON. Before the fix the browser cached the credentials and the form created a stream as admin.
//! Now: no challenge is sent to a request that did not use Basic (so nothing is cached), a cross-site
//! mutation is refused by `Sec-Fetch-Site`/`Origin`, and a body that is not `application/json` gets 415.

use crate::browser;

use browser::{Browser, WAIT};
use rsc_testkit::{RedisServer, RscBuilder, RscProcess};
use serde_json::Value;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const ADMIN_PASSWORD: &str = "csrf-admin-password";

fn start_rsc(redis: &RedisServer) -> RscProcess {
    RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD)
        .start()
}

/// Serves `page` (HTML) to every request on a free loopback port; returns the port.
async fn serve_page(page: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let page = page.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    port
}

/// A page that auto-submits a text/plain form whose body reads as JSON: `{"…","reason":"=x"}` + CRLF.
fn forged_form(action: &str, json_head: &str) -> String {
    format!(
        r#"<!doctype html><html><body>
<form method="POST" action="{action}" enctype="text/plain">
<input type="hidden" name='{json_head}' value='x"}}'>
</form>
<script>document.forms[0].submit();</script>
</body></html>"#
    )
}

async fn stream_exists(rsc: &RscProcess, prefix: &str) -> bool {
    let r = reqwest::Client::new()
        .get(format!(
            "{}/coord/v1/streams/{prefix}/groups/{prefix}",
            rsc.url()
        ))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .send()
        .await
        .unwrap();
    match r.status().as_u16() {
        200 => true,
        404 => false,
        s => panic!("unexpected status {s} reading {prefix}"),
    }
}

/// Opens a page of another site that auto-submits the forged form to `action`; returns the coordinator's
/// answer as the browser shows it, after checking that it is a refusal.
async fn forge(browser: &Browser, action: &str, json_head: &str) -> String {
    let port = serve_page(forged_form(action, json_head)).await;
    browser.goto(&format!("http://localhost:{port}/")).await;
    let answer = browser
        .wait_for(
            "the forged form's answer from the coordinator",
            &format!(
                "return location.href.startsWith({}) && document.body && document.body.innerText",
                serde_json::to_string(action).unwrap()
            ),
            WAIT,
        )
        .await;
    let text = answer.as_str().unwrap_or_default().to_owned();
    let body: Value = serde_json::from_str(text.trim()).unwrap_or(Value::Null);
    assert!(
        body["errorCode"] == "FORBIDDEN" || body["errorCode"] == "UNSUPPORTED_MEDIA_TYPE",
        "the forged request is refused: {text}"
    );
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_site_text_plain_form_is_refused_even_after_the_browser_saw_basic_credentials() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis);
    let base = rsc.url();

    // An API URL without credentials gets no Basic challenge (so no browser prompts and caches them); a
    // request that used Basic still does.
    let http = reqwest::Client::new();
    let anonymous = http
        .get(format!("{base}/coord/v1/monitoring/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    assert!(
        anonymous.headers().get("www-authenticate").is_none(),
        "no challenge to a request without Basic: {:?}",
        anonymous.headers()
    );
    let wrong = http
        .get(format!("{base}/coord/v1/monitoring/health"))
        .basic_auth("admin", Some("not-the-password"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(wrong.headers().get("www-authenticate").is_some());

    let browser = Browser::start().await;
    // The operator opens an API URL with Basic credentials.
    let with_credentials = base.replace("http://", &format!("http://admin:{ADMIN_PASSWORD}@"));
    browser
        .goto(&format!("{with_credentials}/coord/v1/monitoring/health"))
        .await;
    browser
        .wait_for(
            "the health answer (or its refusal) in the page",
            "return document.body && document.body.innerText.includes('status')",
            WAIT,
        )
        .await;

    // A page on another site (localhost is another site than 127.0.0.1) forges a stream creation, and a
    // scale of an existing stream to zero shards.
    let created = http
        .post(format!("{base}/coord/v1/streams/csrf-scaled"))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .json(&serde_json::json!({"initialShardCount": 2, "requestedBy": "test", "reason": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let answer = forge(
        &browser,
        &format!("{base}/coord/v1/streams/csrf-victim"),
        r#"{"initialShardCount":2,"requestedBy":"attacker","reason":""#,
    )
    .await;
    assert!(
        !stream_exists(&rsc, "csrf-victim").await,
        "the forged form created a stream: {answer}"
    );
    let answer = forge(
        &browser,
        &format!("{base}/coord/v1/streams/csrf-scaled/scale"),
        r#"{"targetShardCount":1,"requestedBy":"attacker","reason":""#,
    )
    .await;
    let group: Value = http
        .get(format!(
            "{base}/coord/v1/streams/csrf-scaled/groups/csrf-scaled"
        ))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(group["shardCount"], 2, "the forged scale moved: {answer}");
    assert!(
        group["activeMigration"].is_null(),
        "the forged scale started a migration: {group}"
    );
    browser.screenshot("csrf-refused").await;
    browser.close().await;

    // The same body without a browser's cross-site markers, from a caller holding valid credentials, is still
    // refused for its media type; as JSON it works (curl, the SDK, the CLI and Terraform all send JSON).
    let plain = http
        .post(format!("{base}/coord/v1/streams/csrf-victim"))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .header("content-type", "text/plain")
        .body(r#"{"initialShardCount":2,"requestedBy":"test","reason":"x"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 415);
    let body: Value = plain.json().await.unwrap();
    assert_eq!(body["errorCode"], "UNSUPPORTED_MEDIA_TYPE");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("application/json"),
        "{body}"
    );
    assert!(!stream_exists(&rsc, "csrf-victim").await);
    let json = http
        .post(format!("{base}/coord/v1/streams/csrf-victim"))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .json(&serde_json::json!({"initialShardCount": 2, "requestedBy": "test", "reason": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(json.status(), 201);
    assert!(stream_exists(&rsc, "csrf-victim").await);
}
