//! Connection handling against slow or greedy clients, over real sockets: trickled request heads and
//! bodies, idle connections and the connection cap (`coordinator.http.*`). Each test waits on the
//! condition it names with a bound far above the configured timeout; none measures time.

use crate::support;

use rsc_coordinator::config::{Config, Dur};
use rsc_testkit::RedisServer;
use serde_json::Value;
use std::time::Duration;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Far above every timeout these tests configure: reaching it means the server never acted.
const BOUND: Duration = Duration::from_secs(20);

fn config(
    redis_url: &str,
    adjust: impl FnOnce(&mut rsc_coordinator::config::HttpConfig),
) -> Config {
    let mut c = test_config(redis_url);
    c.coordinator.http.header_read_timeout = Dur(Duration::from_secs(60));
    c.coordinator.http.body_read_timeout = Dur(Duration::from_secs(60));
    c.coordinator.http.idle_timeout = Dur(Duration::from_secs(60));
    adjust(&mut c.coordinator.http);
    c
}

/// Reads until the server closes the connection (or resets it); returns what it sent. Panics at `BOUND`.
async fn read_until_closed(stream: &mut TcpStream) -> String {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(BOUND, stream.read(&mut buf)).await {
            Err(_) => panic!("the server kept the connection open past {BOUND:?}"),
            Ok(Ok(0)) | Ok(Err(_)) => return String::from_utf8_lossy(&all).into_owned(),
            Ok(Ok(n)) => all.extend_from_slice(&buf[..n]),
        }
    }
}

/// Sends `lines` one at a time until the server closes the connection; returns how many were sent first.
async fn trickle(stream: TcpStream, lines: usize, every: Duration) -> usize {
    let (mut read, mut write) = stream.into_split();
    let closed = tokio::spawn(async move {
        let mut buf = [0u8; 1024];
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    });
    for sent in 0..lines {
        if closed.is_finished() {
            return sent;
        }
        if write.write_all(b"x").await.is_err() {
            return sent;
        }
        tokio::time::sleep(every).await;
    }
    lines
}

#[tokio::test]
async fn a_trickled_request_head_is_cut_off() {
    let redis = RedisServer::start();
    let (running, _api) = coordinator(config(&redis.url(), |h| {
        h.header_read_timeout = Dur(Duration::from_millis(500));
    }))
    .await;
    let mut stream = TcpStream::connect(running.addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-slow: ")
        .await
        .unwrap();
    // 200 bytes of one header value, one every 100 ms (20 s): the head never completes.
    let sent = trickle(stream, 200, Duration::from_millis(100)).await;
    assert!(sent < 200, "the server waited for the whole trickled head");
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_trickled_request_body_is_answered_408() {
    let redis = RedisServer::start();
    let (running, _api) = coordinator(config(&redis.url(), |h| {
        h.body_read_timeout = Dur(Duration::from_millis(500));
    }))
    .await;
    // A public route that reads its body (login), and an audited admin route (the guard buffers its body).
    let admin = format!(
        "authorization: Basic {}\r\n",
        base64_basic("admin", ADMIN_PASSWORD)
    );
    for (path, auth) in [
        ("/coord/v1/auth/login", String::new()),
        ("/coord/v1/streams/slow", admin),
    ] {
        let mut stream = TcpStream::connect(running.addr).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n{auth}content-length: 1000\r\n\r\n{{\"a"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let reply = read_until_closed(&mut stream).await;
        assert!(reply.starts_with("HTTP/1.1 408"), "{path}: {reply}");
        let body: Value =
            serde_json::from_str(reply.split("\r\n\r\n").nth(1).unwrap_or("")).unwrap();
        assert_eq!(body["errorCode"], "REQUEST_TIMEOUT", "{path}: {reply}");
    }
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn idle_connections_are_closed() {
    let redis = RedisServer::start();
    // The head timer is long here, so only the idle timeout can close these connections.
    let (running, _api) = coordinator(config(&redis.url(), |h| {
        h.idle_timeout = Dur(Duration::from_millis(500));
    }))
    .await;
    // A connection that never sends anything.
    let mut silent = TcpStream::connect(running.addr).await.unwrap();
    assert_eq!(read_until_closed(&mut silent).await, "");
    // A kept-alive connection after one complete request.
    let mut kept = TcpStream::connect(running.addr).await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let reply = read_until_closed(&mut kept).await;
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("\"UP\""), "{reply}");
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn connections_over_the_cap_are_refused_with_a_json_503_until_one_closes() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis.url(), |h| {
        h.max_connections = 3;
    }))
    .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(running.addr).await.unwrap());
    }
    // The three are accepted in order; the fourth finds no room.
    let over = wait_for("a connection over the cap is refused", BOUND, || {
        let addr = running.addr;
        async move {
            let mut s = TcpStream::connect(addr).await.ok()?;
            let reply = read_until_closed(&mut s).await;
            (!reply.is_empty()).then_some(reply)
        }
    })
    .await;
    assert!(over.starts_with("HTTP/1.1 503"), "{over}");
    assert!(over.contains("TOO_MANY_CONNECTIONS"), "{over}");
    assert!(over.contains("max-connections"), "{over}");
    // One closes: a new client is served again.
    held.pop();
    let healthy = wait_for("a request is served once a slot is free", BOUND, || {
        let api = api.clone();
        async move {
            let r = api
                .http
                .get(format!("{}/healthz", api.base))
                .send()
                .await
                .ok()?;
            (r.status() == 200).then_some(())
        }
    })
    .await;
    assert_eq!(healthy, ());
    drop(held);
    running.shutdown().await.unwrap();
}

fn base64_basic(user: &str, password: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
}

/// Writes `first`, then `each` every `every` until the server closes the connection or `BOUND` passes;
/// returns everything the server sent.
async fn drip_until_closed(
    stream: TcpStream,
    first: Vec<u8>,
    each: Vec<u8>,
    every: Duration,
) -> Vec<u8> {
    let (mut read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        if write.write_all(&first).await.is_err() {
            return;
        }
        loop {
            tokio::time::sleep(every).await;
            if write.write_all(&each).await.is_err() {
                return;
            }
        }
    });
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = tokio::time::timeout(BOUND, async {
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    writer.abort();
    assert!(
        closed.is_ok(),
        "the server kept a dripping connection open past {BOUND:?}; it sent {:?}",
        String::from_utf8_lossy(&all)
    );
    all
}

#[tokio::test]
async fn a_body_trickled_inside_every_period_is_still_cut_at_the_whole_body_deadline() {
    let redis = RedisServer::start();
    let (running, _api) = coordinator(config(&redis.url(), |h| {
        h.body_read_timeout = Dur(Duration::from_secs(1));
    }))
    .await;
    // One byte every 200 ms: each well inside the timeout, the whole (1,000 bytes) far beyond it.
    let stream = TcpStream::connect(running.addr).await.unwrap();
    let head = b"POST /coord/v1/auth/login HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{".to_vec();
    let reply = drip_until_closed(stream, head, b" ".to_vec(), Duration::from_millis(200)).await;
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(reply.contains("REQUEST_TIMEOUT"), "{reply}");
    assert!(reply.contains("connection: close"), "{reply}");
    running.shutdown().await.unwrap();
}

/// A few HTTP/2 frames written by hand (h2c with prior knowledge), enough to trickle a body, drip headers
/// and send PINGs; no HPACK beyond literal fields.
mod h2 {
    pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    pub const DATA: u8 = 0;
    pub const HEADERS: u8 = 1;
    pub const SETTINGS: u8 = 4;
    pub const PING: u8 = 6;
    pub const CONTINUATION: u8 = 9;
    pub const END_STREAM: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;

    pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// A header block: `:method`, `:scheme http`, `:path`, `:authority x`, then literal fields.
    pub fn block(method_post: bool, path: &str, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut b = vec![if method_post { 0x83 } else { 0x82 }, 0x86];
        b.push(0x04);
        b.push(path.len() as u8);
        b.extend_from_slice(path.as_bytes());
        b.extend_from_slice(&[0x01, 1, b'x']);
        for (name, value) in fields {
            b.push(0x00);
            b.push(name.len() as u8);
            b.extend_from_slice(name.as_bytes());
            b.push(value.len() as u8);
            b.extend_from_slice(value.as_bytes());
        }
        b
    }

    /// The connection's opening: the preface and an empty SETTINGS frame.
    pub fn open() -> Vec<u8> {
        let mut out = PREFACE.to_vec();
        out.extend(frame(SETTINGS, 0, 0, &[]));
        out
    }
}

#[tokio::test]
async fn http2_bodies_headers_and_pings_do_not_hold_a_connection() {
    let redis = RedisServer::start();
    let (running, _api) = coordinator(config(&redis.url(), |h| {
        h.body_read_timeout = Dur(Duration::from_secs(1));
        h.header_read_timeout = Dur(Duration::from_secs(1));
        h.idle_timeout = Dur(Duration::from_secs(2));
    }))
    .await;

    // A login body trickled one byte per DATA frame: 408 REQUEST_TIMEOUT, not a stream held for ever.
    let mut first = h2::open();
    first.extend(h2::frame(
        h2::HEADERS,
        h2::END_HEADERS,
        1,
        &h2::block(
            true,
            "/coord/v1/auth/login",
            &[
                ("content-type", "application/json"),
                ("content-length", "1000"),
            ],
        ),
    ));
    let stream = TcpStream::connect(running.addr).await.unwrap();
    let each = h2::frame(h2::DATA, 0, 1, b" ");
    let answer = drip_until_closed(stream, first, each, Duration::from_millis(200)).await;
    assert!(
        String::from_utf8_lossy(&answer).contains("REQUEST_TIMEOUT"),
        "{:?}",
        String::from_utf8_lossy(&answer)
    );

    // A request head that never completes: CONTINUATION frames of one byte each.
    let mut first = h2::open();
    let block = h2::block(true, "/coord/v1/auth/login", &[]);
    first.extend(h2::frame(h2::HEADERS, 0, 1, &block[..2]));
    let stream = TcpStream::connect(running.addr).await.unwrap();
    let each = h2::frame(h2::CONTINUATION, 0, 1, &[0x86]);
    drip_until_closed(stream, first, each, Duration::from_millis(200)).await;

    // One complete request, then PINGs only: the connection counts as idle and is closed.
    let mut first = h2::open();
    first.extend(h2::frame(
        h2::HEADERS,
        h2::END_HEADERS | h2::END_STREAM,
        1,
        &h2::block(false, "/healthz", &[]),
    ));
    let stream = TcpStream::connect(running.addr).await.unwrap();
    let each = h2::frame(h2::PING, 0, 0, &[7; 8]);
    let answer = drip_until_closed(stream, first, each, Duration::from_millis(200)).await;
    assert!(
        String::from_utf8_lossy(&answer).contains("UP"),
        "the request was answered before the PINGs: {:?}",
        String::from_utf8_lossy(&answer)
    );
    running.shutdown().await.unwrap();
}

/// Opens `count` connections from `from` (another loopback address) that send half a request head and
/// stay; returns them with how many the server answered at once (refused).
async fn flood(
    to: std::net::SocketAddr,
    from: &str,
    count: usize,
) -> (Vec<TcpStream>, Vec<String>) {
    let mut held = Vec::new();
    for _ in 0..count {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        let mut s = socket.connect(to).await.unwrap();
        let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n").await;
        held.push(s);
    }
    // The refused ones were answered 503 and closed; the others stay silent.
    let mut refusals = Vec::new();
    let mut kept = Vec::new();
    let mut reads = tokio::task::JoinSet::new();
    for s in held {
        reads.spawn(async move {
            let mut s = s;
            let mut buf = vec![0u8; 4096];
            match tokio::time::timeout(Duration::from_secs(3), s.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => (None, Some(String::from_utf8_lossy(&buf[..n]).into_owned())),
                Ok(_) => (None, Some(String::new())),
                Err(_) => (Some(s), None),
            }
        });
    }
    while let Some(r) = reads.join_next().await {
        match r.unwrap() {
            (Some(s), _) => kept.push(s),
            (None, Some(answer)) => refusals.push(answer),
            (None, None) => {}
        }
    }
    (kept, refusals)
}

#[tokio::test]
async fn one_address_filling_its_slots_leaves_other_addresses_served() {
    // The per-address cap (256 of 300), then the reserve alone (a cap as large as the listener's).
    for (per_address, expect_kept) in [(256u32, 256usize), (300, 270)] {
        let redis = RedisServer::start();
        let (running, api) = coordinator(config(&redis.url(), |h| {
            h.max_connections = 300;
            h.max_connections_per_address = per_address;
        }))
        .await;
        assert_eq!(api.create_stream("busy", 2).await.status, 201);
        let (kept, refusals) = flood(running.addr, "127.0.0.2", 320).await;
        // The API client's own kept-alive connection (from 127.0.0.1) may hold one slot of the reserve.
        assert!(
            (expect_kept - 1..=expect_kept).contains(&kept.len()),
            "{} kept: {refusals:?}",
            kept.len()
        );
        assert_eq!(refusals.len(), 320 - kept.len());
        let why = if per_address == 256 {
            "max-connections-per-address"
        } else {
            "addresses holding fewer"
        };
        for r in &refusals {
            assert!(r.starts_with("HTTP/1.1 503"), "{r}");
            assert!(r.contains("TOO_MANY_CONNECTIONS") && r.contains(why), "{r}");
        }
        // New connections from 127.0.0.1 (a fresh client: no pooled connection) are served.
        let fresh = Api::new(&api.base);
        let health = fresh
            .with_auth(Auth::None)
            .send("GET", "/healthz", None)
            .await;
        assert_eq!(health.status, 200, "{}", health.body);
        let member = Member::new("m-1");
        let answer = Api::new(&api.base).heartbeat("busy", "busy", &member).await;
        assert_eq!(answer["status"], "OK", "{answer}");
        drop(kept);
        running.shutdown().await.unwrap();
    }
}
