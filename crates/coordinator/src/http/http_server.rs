//! The accept loop of the API and metrics listeners. axum's own `serve` has no timeouts, so a client that
//! trickles its request head or body, or opens connections and leaves them idle, could hold them for as
//! long as the open-files limit allowed. Here every connection is bounded (`coordinator.http.*`):
//!
//! - `header-read-timeout`: hyper's HTTP/1 head timer, started whenever the server waits for a request head
//!   (a new connection, or a kept-alive one after its previous response); and any connection (HTTP/2, or
//!   one still being told apart) that has not started a request this long after it opened is closed;
//! - `body-read-timeout`: the request body must arrive whole this long after its head, however it trickles
//!   (`deadline_body.rs`), else 408 `REQUEST_TIMEOUT` and the HTTP/1 connection closes;
//! - `idle-timeout`: a connection on which no byte moves either way is closed, and so is one with no request
//!   in flight for that long whatever bytes it sends (HTTP/2 PINGs, or headers that never complete);
//! - `max-connections` and `max-connections-per-address` (`slots.rs`): one more is answered 503
//!   `TOO_MANY_CONNECTIONS` and closed; the last tenth of the slots stays for addresses holding few.
//!
//! Shutdown stops accepting, lets each connection finish its in-flight request, and returns once all
//! have closed (the caller bounds that with `coordinator.shutdown-grace`).

mod deadline_body;
pub mod slots;

use crate::config::HttpConfig;
use axum::Router;
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderValue, StatusCode, header};
use deadline_body::DeadlineBody;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rsc_protocol::errors::{ErrorBody, ErrorCode};
use slots::{Limits, Refused, Slots};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

/// Serves `app` on `listener` until `stop` completes, then shuts down gracefully.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    config: HttpConfig,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let slots = Slots::new(Limits {
        max_total: config.max_connections,
        per_address: config.max_connections_per_address,
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout.0);
    builder.http2().timer(TokioTimer::new());
    let graceful = GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: say so, back off a little, keep serving.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let slot = match slots.acquire(peer.ip()) {
            Ok(slot) => slot,
            Err(refused) => {
                tokio::spawn(refuse_busy(stream, slots.limits(), refused));
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let activity = Activity::new();
        let io = TokioIo::new(IdleIo {
            inner: stream,
            activity: activity.clone(),
        });
        let body_timeout = config.body_read_timeout.0;
        let (started, ended) = (activity.clone(), activity.clone());
        // Around the router rather than through `Router::layer`, which would box every route once more.
        let service = hyper_util::service::TowerToHyperService::new(
            app.clone()
                .map_request(move |req: Request<Incoming>| {
                    started.request_started();
                    let deadline = tokio::time::Instant::now() + body_timeout;
                    let (mut parts, body) = req.into_parts();
                    parts.extensions.insert(ConnectInfo(peer));
                    Request::from_parts(parts, DeadlineBody::new(body, deadline))
                })
                .map_response(move |mut resp| {
                    ended.request_ended();
                    // A body cut off by its deadline leaves the rest of it unread: the connection ends.
                    if resp.status() == StatusCode::REQUEST_TIMEOUT {
                        resp.headers_mut()
                            .insert(header::CONNECTION, HeaderValue::from_static("close"));
                    }
                    resp
                }),
        );
        let connection = builder
            .serve_connection_with_upgrades(io, service)
            .into_owned();
        let watched = graceful.watch(connection);
        let idle = config.idle_timeout.0;
        let first_request = config.header_read_timeout.0;
        tokio::spawn(async move {
            tokio::select! {
                result = watched => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, %peer, "connection ended with an error");
                    }
                }
                () = activity.idle_for(idle, first_request) => {
                    tracing::debug!(%peer, "closing an idle connection");
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Answers a connection over a cap with a JSON 503 and closes it, without reading its request.
async fn refuse_busy(mut stream: TcpStream, limits: Limits, refused: Refused) {
    let message = match refused {
        Refused::Full => format!(
            "this listener already serves {} connections (coordinator.http.max-connections); retry shortly",
            limits.max_total
        ),
        Refused::AddressFull => format!(
            "your address already holds {} connections to this listener \
             (coordinator.http.max-connections-per-address); reuse them or close some",
            limits.per_address
        ),
        Refused::ReserveOnly => format!(
            "this listener is nearly full (coordinator.http.max-connections {}) and keeps its last slots for \
             addresses holding fewer than {} connections; yours holds more: reuse them or close some",
            limits.max_total,
            slots::RESERVE_SHARE
        ),
    };
    let body = serde_json::to_string(&ErrorBody::new(ErrorCode::TooManyConnections, message))
        .unwrap_or_default();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// What moves on a connection, for the idle rules: when a byte last moved (milliseconds since the
/// connection's start), when a request last started or was answered, and how many are in flight.
#[derive(Clone)]
struct Activity {
    start: Instant,
    last_byte_ms: Arc<AtomicU64>,
    last_request_ms: Arc<AtomicU64>,
    in_flight: Arc<AtomicU32>,
    requests: Arc<AtomicU64>,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            last_byte_ms: Arc::new(AtomicU64::new(0)),
            last_request_ms: Arc::new(AtomicU64::new(0)),
            in_flight: Arc::new(AtomicU32::new(0)),
            requests: Arc::new(AtomicU64::new(0)),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn touch(&self) {
        self.last_byte_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    fn request_started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.last_request_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    fn request_ended(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.last_request_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// Completes once nothing has moved for `idle`, or no request has been in flight for `idle` (whatever
    /// bytes moved: PINGs, headers that never complete), or no request started within `first_request` of
    /// the connection opening.
    async fn idle_for(&self, idle: Duration, first_request: Duration) {
        loop {
            let now = self.start.elapsed();
            let bytes_deadline =
                Duration::from_millis(self.last_byte_ms.load(Ordering::Relaxed)) + idle;
            let requests_deadline = if self.in_flight.load(Ordering::Relaxed) > 0 {
                now + idle
            } else if self.requests.load(Ordering::Relaxed) == 0 {
                first_request.min(idle)
            } else {
                Duration::from_millis(self.last_request_ms.load(Ordering::Relaxed)) + idle
            };
            let deadline = bytes_deadline.min(requests_deadline);
            if now >= deadline {
                return;
            }
            tokio::time::sleep_until((self.start + deadline).into()).await;
        }
    }
}

/// A socket that records when bytes move, for the idle timeout.
struct IdleIo {
    inner: TcpStream,
    activity: Activity,
}

impl AsyncRead for IdleIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl AsyncWrite for IdleIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
