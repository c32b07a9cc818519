//! Caller text never drives the operator's terminal or splits a log line (issue #32, finding 5), with the
//! real `rsc` binary against a real `rsc serve` and redis-server: a WRITE caller's `reason`/`requestedBy`
//! with a screen-clearing escape, a carriage return and a forged row are shown escaped by `rsc audit`; a
//! member's `clientName` with an OSC title sequence is refused (400) at the API; and the JSON log escapes
//! U+2028/U+2029/NEL.

use rsc_testkit::{RedisServer, RscBuilder};
use serde_json::{Value, json};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const ADMIN_PASSWORD: &str = "terminal-test-admin-password";

fn rsc(url: &str, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args(args)
        .env("RSC_COORDINATOR", url)
        .env("RSC_CONFIG_DIR", dir.path())
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", ADMIN_PASSWORD)
        .env_remove("RSC_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("rsc runs")
}

/// Bytes a terminal would obey: ESC, CR, BEL, C1 controls, and the bidi overrides.
fn obeyed(text: &str) -> Option<char> {
    text.chars().find(|c| {
        (c.is_control() && *c != '\n')
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caller_text_is_shown_escaped_and_control_characters_in_client_names_are_refused() {
    let redis = RedisServer::start();
    let rsc_serve = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD)
        .env("RSC_LOG_FORMAT", "json")
        .env("RSC_LOG", "info")
        .start();
    let url = rsc_serve.url();
    let http = reqwest::Client::new();
    let hostile_reason = "routine\r\n2026-01-01T00:00:00Z  DELETE_GROUP  SUCCESS  200  admin\u{1b}[2J\u{202e}\u{2028}x\u{85}";
    let r = http
        .post(format!("{url}/coord/v1/streams/term"))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .json(&json!({"initialShardCount": 2, "requestedBy": "ops\u{1b}]0;pwned\u{7}", "reason": hostile_reason}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());

    // A member whose clientName carries an OSC title sequence is refused at the API.
    let heartbeat = |client_name: &str| {
        json!({
            "protocolVersion": 1, "requestId": "r1", "memberId": "m-1", "memberEpoch": 0,
            "metadataVersion": 0, "clientName": client_name, "clientVersion": "1.0",
            "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1}
        })
    };
    let path = format!("{url}/coord/v1/streams/term/groups/term/members/m-1/heartbeat");
    for bad in ["app\u{1b}]0;owned\u{7}", "app\u{202e}", "app\u{85}"] {
        let r = http
            .post(&path)
            .basic_auth("admin", Some(ADMIN_PASSWORD))
            .json(&heartbeat(bad))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{bad:?}");
        let body: Value = r.json().await.unwrap();
        assert!(
            body["message"].as_str().unwrap().contains("clientName"),
            "{body}"
        );
    }
    let r = http
        .post(&path)
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .json(&heartbeat("rsc-client"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    // `rsc audit` and `rsc describe` print the hostile text escaped, on its own row.
    let audit = rsc(&url, &["audit", "--stream", "term"]);
    let out = String::from_utf8_lossy(&audit.stdout).into_owned();
    assert!(
        audit.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    assert_eq!(
        obeyed(&out),
        None,
        "a control character reached the terminal: {out:?}"
    );
    assert!(
        out.contains("\\u001b[2J") && out.contains("\\u000d"),
        "{out}"
    );
    assert!(
        !out.lines().any(|l| l.starts_with("2026-01-01T00:00:00Z")),
        "a forged row: {out}"
    );
    let describe = rsc(&url, &["describe", "term", "term"]);
    let out = String::from_utf8_lossy(&describe.stdout).into_owned();
    assert!(
        describe.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&describe.stderr)
    );
    assert_eq!(obeyed(&out), None, "{out:?}");

    // The JSON log holds the reason's separators escaped (each line still one JSON object).
    let log = rsc_serve.log_text();
    assert_eq!(
        log.chars()
            .find(|c| matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}')),
        None,
        "a raw separator in the log"
    );
    assert!(
        log.contains("\\u2028"),
        "the reason reached the log escaped: {log}"
    );
    for line in log.lines().filter(|l| l.starts_with('{')) {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
}
