//! API robustness over a real redis-server: every route of the route table (so a new route is covered
//! automatically), called with valid admin credentials and hostile input — malformed, empty, oversized and
//! deeply nested bodies, wrong content types, wrong-typed fields, odd unicode, hostile path segments and
//! query strings, odd headers and other methods. The coordinator must never answer 5xx, must keep serving,
//! and every non-2xx answer must be a 4xx with the contract's JSON error body (`errorCode` and `message`).
//!
//! Requests are written by hand over TCP, so paths reach the server exactly as written (an HTTP client
//! would normalise `..` and percent-encoding) and headers can be duplicated or huge.

use crate::support;

use rsc_coordinator::http::api::routes;
use rsc_testkit::RedisServer;
use serde_json::{Map, Value, json};
use std::net::SocketAddr;
use std::time::Duration;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PREFIX: &str = "orders";
const BASIC_ADMIN: &str = "Basic YWRtaW46dGVzdC1hZG1pbi1wYXNzd29yZA=="; // admin:test-admin-password

/// One raw HTTP/1.1 request.
struct Raw {
    method: String,
    target: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

impl Raw {
    fn new(method: &str, target: &str) -> Self {
        Raw {
            method: method.into(),
            target: target.into(),
            headers: vec![("authorization".into(), BASIC_ADMIN.into())],
            body: Vec::new(),
        }
    }

    fn json(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.headers
            .push(("content-type".into(), b"application/json".to_vec()));
        self.body = body.into();
        self
    }

    fn header(mut self, name: &str, value: impl Into<Vec<u8>>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    fn describe(&self) -> String {
        let short = |text: &str, max: usize| {
            if text.len() <= max {
                return text.to_owned();
            }
            let cut: String = text.chars().take(max).collect();
            format!("{cut}… ({} bytes)", text.len())
        };
        let body = short(&String::from_utf8_lossy(&self.body), 160);
        let target = short(&self.target, 200);
        let headers: Vec<String> = self
            .headers
            .iter()
            .filter(|(n, _)| n != "authorization" || self.headers.len() > 2)
            .map(|(n, v)| format!("{n}: {} bytes", v.len()))
            .collect();
        format!("{} {target} {headers:?} body {body:?}", self.method)
    }
}

struct Answer {
    status: u16,
    body: Vec<u8>,
}

/// Sends `req` on a fresh connection and reads the whole answer. The body is written concurrently with
/// reading, so an early answer (413 before a large body is read) is still seen.
async fn send(addr: SocketAddr, req: &Raw) -> Answer {
    let mut head = format!(
        "{} {} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n",
        req.method, req.target
    )
    .into_bytes();
    for (name, value) in &req.headers {
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(format!("content-length: {}\r\n\r\n", req.body.len()).as_bytes());
    let stream = tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(addr))
        .await
        .expect("connect in time")
        .expect("the coordinator accepts connections");
    let (mut rd, mut wr) = stream.into_split();
    let body = req.body.clone();
    let writer = tokio::spawn(async move {
        // The server may answer and close before reading everything; that is not an error here.
        if wr.write_all(&head).await.is_ok() {
            let _ = wr.write_all(&body).await;
        }
        wr
    });
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                // A reset after the answer arrived (the server closed with unread body bytes).
                Err(_) if !out.is_empty() => break,
                Err(e) => panic!("no answer to {}: {e}", req.describe()),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer in 30 s to {}", req.describe());
    let _ = writer.await;
    parse(&out).unwrap_or_else(|| {
        panic!(
            "unparseable answer to {}: {:?}",
            req.describe(),
            String::from_utf8_lossy(&out[..out.len().min(300)])
        )
    })
}

/// Parses a `connection: close` HTTP/1.1 response (content-length or chunked body).
fn parse(raw: &[u8]) -> Option<Answer> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
    let mut rest = raw[end + 4..].to_vec();
    let chunked = head
        .lines()
        .any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.contains("chunked"));
    if chunked {
        let mut body = Vec::new();
        loop {
            let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).ok()?.trim(), 16)
                    .ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(rest.get(line_end + 2..line_end + 2 + size)?);
            rest = rest.get(line_end + 4 + size..)?.to_vec();
        }
        rest = body;
    }
    Some(Answer { status, body: rest })
}

/// The contract for every answer: no 5xx; a non-2xx is a 4xx with `{errorCode, message}`.
fn check(req: &Raw, a: &Answer, failures: &mut Vec<String>) {
    if (200..300).contains(&a.status) {
        return;
    }
    let body: Option<Value> = serde_json::from_slice(&a.body).ok();
    let has_error_body = body.as_ref().is_some_and(|b| {
        b["errorCode"].as_str().is_some_and(|c| !c.is_empty()) && b["message"].is_string()
    });
    if !(400..500).contains(&a.status) || !has_error_body {
        failures.push(format!(
            "{} -> {} {:?}",
            req.describe(),
            a.status,
            String::from_utf8_lossy(&a.body[..a.body.len().min(200)])
        ));
    }
}

/// Values that are the wrong type, out of range, or odd text for any field.
fn hostile_values() -> Vec<String> {
    vec![
        r#""not a number""#.into(),
        "-1".into(),
        "-9223372036854775809".into(),
        "18446744073709551616".into(),
        "1e400".into(),
        "1.5".into(),
        "null".into(),
        "true".into(),
        "[]".into(),
        r#"[{"shardIndex":-1}]"#.into(),
        "{}".into(),
        r#""\u0000""#.into(),
        r#""\ud800""#.into(),
        r#""\u202eevil\u202c""#.into(),
        r#""🦀🦀""#.into(),
        r#"" padded ""#.into(),
        format!(r#""{}""#, "x".repeat(10_000)),
    ]
}

/// A valid-looking body for each operation that takes one (every other route gets `{}`).
fn template(operation: &str) -> Value {
    match operation {
        "sendConsumerHeartbeat" => json!({
            "protocolVersion": 1, "requestId": "r1", "memberId": "m1", "memberName": "m1",
            "memberEpoch": 0, "metadataVersion": 0,
            "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1},
            "ownedShards": [], "revokingShards": [{"shard": 0, "state": "REVOKED", "inFlight": 0}],
            "shardProgress": [{"shard": {"shardIndex": 0}, "pendingCount": 0, "lastAckedId": "0-0"}]
        }),
        "createStreamGroup" | "createCoordinatorGroup" => {
            json!({"initialShardCount": 2, "requestedBy": "t", "reason": "t"})
        }
        "scaleStreamShards" | "startGroupResharding" => {
            json!({"targetShardCount": 3, "requestedBy": "t", "reason": "t", "deprecatedAfter": "2030-01-01T00:00:00Z"})
        }
        "deleteCoordinatorGroup" => json!({"requestedBy": "t", "reason": "t", "force": false}),
        "recreateGroupLifecycle" => {
            json!({"requestedBy": "t", "reason": "t", "shardCount": 2, "minimumMetadataVersion": 1})
        }
        "resetGroupOffsets" => json!({
            "to": "DATETIME", "value": "2020-01-01T00:00:00Z", "shards": [0], "dryRun": true,
            "force": false, "requestedBy": "t", "reason": "t"
        }),
        "loginCoordinatorApi" => json!({"username": "nobody", "password": "wrong-password"}),
        "revokeAccessToken" => json!({"token": format!("rsc_{}", "Z".repeat(43))}),
        "rollbackReshardingMigration" | "forceCompleteReshardingMigration" => {
            json!({"requestedBy": "t", "reason": "t"})
        }
        _ => json!({}),
    }
}

/// Every path of `spec` with one parameter replaced by a hostile segment (the others valid).
fn hostile_paths(path: &str) -> Vec<String> {
    let valid = |p: &str| {
        p.replace("{stream_prefix}", PREFIX)
            .replace("{consumer_group}", PREFIX)
            .replace("{member_id}", "m1")
            .replace("{resharding_id}", "r1")
            .replace("{shard_index}", "0")
    };
    let segments = [
        "%2F",
        "a%2Fb",
        "..",
        "%2E%2E",
        ".",
        "%00",
        "%FF",
        "%E2%80%AE",
        "%F0%9F%A6%80",
        "%ED%A0%80",
        "caf%C3%A9",
        "%7Ba%7D",
        "a:b",
        "%20a",
        "a%09b",
        "%",
        "%zz",
        "",
    ];
    let long = "x".repeat(8_000);
    let mut out = Vec::new();
    for param in [
        "{stream_prefix}",
        "{consumer_group}",
        "{member_id}",
        "{resharding_id}",
        "{shard_index}",
    ] {
        if !path.contains(param) {
            continue;
        }
        for seg in segments.iter().copied().chain([long.as_str()]) {
            out.push(valid(&path.replace(param, seg)));
        }
    }
    out.push(format!("{}/", valid(path)));
    out.push(valid(path).replacen('/', "//", 2));
    out
}

fn hostile_queries() -> Vec<String> {
    vec![
        "?observedMetadataVersion=-1".into(),
        "?observedMetadataVersion=abc".into(),
        "?observedMetadataVersion=99999999999999999999999".into(),
        "?observedMetadataVersion=1&observedMetadataVersion=2".into(),
        "?limit=0".into(),
        "?limit=-5".into(),
        "?limit=1e9".into(),
        "?limit=18446744073709551616".into(),
        "?since=garbage&until=1".into(),
        "?since=9999999999999999999".into(),
        "?streamPrefix=%00&principal=%FF".into(),
        "?%zz=1".into(),
        "?a=%".into(),
        "?&&&==&".into(),
        "?unknownParameter=1".into(),
        format!("?x={}", "y".repeat(10_000)),
        "?action=%E2%80%AE&outcome=%F0%9F%A6%80".into(),
    ]
}

/// Requests with hostile bodies and content types for one route.
fn hostile_bodies(method: &str, path: &str, operation: &str) -> Vec<Raw> {
    let mut out = Vec::new();
    for body in [
        "{".to_owned(),
        "{\"a\":".into(),
        "nul".into(),
        "[1,2".into(),
        "{} trailing".into(),
        "\u{feff}{}".into(),
        "   ".into(),
        "null".into(),
        "[]".into(),
        "\"text\"".into(),
        "[".repeat(100_000),
        format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000)),
    ] {
        out.push(Raw::new(method, path).json(body));
    }
    out.push(Raw::new(method, path).json(vec![0xff, 0xfe, 0x00, b'{']));
    // No body at all, with and without a content type.
    out.push(Raw::new(method, path));
    out.push(Raw::new(method, path).json(""));
    let valid = template(operation).to_string();
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=utf-16",
        "",
    ] {
        out.push(
            Raw::new(method, path)
                .header("content-type", ct)
                .json(valid.clone()),
        );
    }
    // Far above the 1 MiB limit.
    let big = format!(r#"{{"reason":"{}"}}"#, "a".repeat(5 * 1024 * 1024));
    out.push(Raw::new(method, path).json(big));
    // Every field of the operation's body, one at a time, set to every hostile value; then all at once.
    let Value::Object(fields) = template(operation) else {
        unreachable!("templates are objects")
    };
    let values = hostile_values();
    for key in fields.keys() {
        for v in &values {
            let mut body: Map<String, Value> = fields.clone();
            body.remove(key);
            let mut text = Value::Object(body).to_string();
            text.pop();
            let sep = if text.len() > 1 { "," } else { "" };
            out.push(Raw::new(method, path).json(format!("{text}{sep}\"{key}\":{v}}}")));
        }
    }
    for v in &values {
        let all: Vec<String> = fields.keys().map(|k| format!("\"{k}\":{v}")).collect();
        out.push(Raw::new(method, path).json(format!("{{{}}}", all.join(","))));
    }
    out
}

/// Requests with odd headers (the body is the route's valid template where it takes one).
fn hostile_headers(method: &str, path: &str, body: &str) -> Vec<Raw> {
    let with_body = |r: Raw| if method == "GET" { r } else { r.json(body) };
    let mut out = vec![
        with_body(Raw::new(method, path).header("x-huge", "h".repeat(60_000))),
        with_body(Raw::new(method, path).header("authorization", "Basic !!!not-base64!!!")),
        with_body(Raw::new(method, path).header("authorization", BASIC_ADMIN)),
        with_body(Raw::new(method, path).header("x-request-id", "r".repeat(10_000))),
        with_body(Raw::new(method, path).header("x-request-id", "")),
        with_body(Raw::new(method, path).header("x-request-id", b"\xff\xfe bad id\t".to_vec())),
        with_body(
            Raw::new(method, path)
                .header("x-request-id", "a")
                .header("x-request-id", "b"),
        ),
        with_body(Raw::new(method, path).header("x-forwarded-for", "not-an-ip, ::1, 999.1.1.1")),
        with_body(Raw::new(method, path).header("accept", "application/xml")),
        with_body(Raw::new(method, path).header("content-encoding", "gzip")),
    ];
    // Authorization alone, but odd: huge, non-ASCII, a bearer token that is not one.
    let mut odd_auth = |value: Vec<u8>| {
        let mut r = with_body(Raw::new(method, path));
        r.headers[0].1 = value;
        out.push(r);
    };
    odd_auth(format!("Basic {}", "A".repeat(50_000)).into_bytes());
    odd_auth(b"Basic \xff\xfe".to_vec());
    odd_auth(b"Bearer rsc_\xe2\x80\xae".to_vec());
    odd_auth(b"Bearer ".to_vec());
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_hostile_input_with_a_json_4xx_and_never_5xx() {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    // Rate limits would turn most of the walk into 429s before the handlers see the input.
    config.coordinator.api.rate_limit.enabled = false;
    // So do the login route's deliberate failures (the throttle counts them per username and address).
    let lt = &mut config.coordinator.api.login_throttle;
    lt.failures_before_delay = 1_000_000;
    lt.max_failures_per_address = 1_000_000;
    lt.max_failures_per_username = u32::MAX;
    let (running, api) = coordinator(config).await;
    let addr = running.addr;

    let table = routes::table();
    let mut failures = Vec::new();
    let mut sent = 0usize;
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for spec in &table {
        // Each route starts against an existing stream and group, so valid parts reach the handlers.
        let created = api.create_stream(PREFIX, 2).await;
        assert!(matches!(created.status, 201 | 409), "{}", created.body);

        let method = spec.method.as_str();
        let path = spec
            .path
            .replace("{stream_prefix}", PREFIX)
            .replace("{consumer_group}", PREFIX)
            .replace("{member_id}", "m1")
            .replace("{resharding_id}", "r1")
            .replace("{shard_index}", "0");
        let body = template(spec.operation_id).to_string();
        let mut requests = hostile_bodies(method, &path, spec.operation_id);
        for p in hostile_paths(spec.path) {
            requests.push(if method == "GET" {
                Raw::new(method, &p)
            } else {
                Raw::new(method, &p).json(body.clone())
            });
        }
        for q in hostile_queries() {
            let target = format!("{path}{q}");
            requests.push(if method == "GET" {
                Raw::new(method, &target)
            } else {
                Raw::new(method, &target).json(body.clone())
            });
        }
        requests.extend(hostile_headers(method, &path, &body));
        for other in ["PUT", "PATCH", "OPTIONS", "TRACE", "FOO"] {
            requests.push(Raw::new(other, &path).json(body.clone()));
        }
        for req in &requests {
            let answer = send(addr, req).await;
            check(req, &answer, &mut failures);
            *statuses.entry(answer.status).or_default() += 1;
            sent += 1;
        }
        // A route that reads a body refuses one with something after the JSON value.
        if template(spec.operation_id) != json!({}) {
            let req = Raw::new(method, &path).json(format!("{body} trailing"));
            let answer = send(addr, &req).await;
            if answer.status != 400 {
                failures.push(format!("{} -> {}, not 400", req.describe(), answer.status));
            }
        }
    }
    // Unknown paths and odd request targets outside the table.
    for target in [
        "/",
        "/coord",
        "/coord/v1/streams",
        "/coord/v1/streams/",
        "/coord/v1/../../etc/passwd",
        "/coord/v1/streams/a/groups/b/members/c/heartbeat/extra",
        "/%FF%FE",
        "*",
    ] {
        let req = Raw::new("GET", target);
        let answer = send(addr, &req).await;
        check(&req, &answer, &mut failures);
        sent += 1;
    }

    // Still serving, and still healthy.
    let health = api.send("GET", "/coord/v1/monitoring/health", None).await;
    assert_eq!(health.status, 200, "{}", health.body);
    let live = api.send("GET", "/healthz", None).await;
    assert_eq!(live.status, 200, "{}", live.body);
    assert!(
        failures.is_empty(),
        "{} of {sent} answers broke the contract:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!(
        "{sent} hostile requests over {} routes: {statuses:?}",
        table.len()
    );
    // Limits were off: a 429 would mean the walk stopped reaching the handlers.
    assert!(!statuses.contains_key(&429), "{statuses:?}");
    assert!(statuses.keys().any(|s| (200..300).contains(s)) && statuses.contains_key(&400));
    running
        .shutdown()
        .await
        .expect("the server task ends cleanly after the walk");
}
