//! Connection handling against slow or greedy clients, over real sockets: trickled request heads and
//! bodies, idle connections and the connection cap (`coordinator.http.*`). Each test waits on the
//! condition it names with a bound far above the configured timeout; none measures time.

mod support;

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
