//! The accept loop of the API and metrics listeners. axum's own `serve` has no timeouts, so a client that
//! trickles its request head or body, or opens connections and leaves them idle, could hold them for as
//! long as the open-files limit allowed. Here every connection is bounded (`coordinator.http.*`):
//!
//! - `header-read-timeout`: hyper's HTTP/1 head timer, started whenever the server waits for a request head
//!   (a new connection, or a kept-alive one after its previous response);
//! - `body-read-timeout`: the request body must arrive whole in time, else 408 `REQUEST_TIMEOUT`;
//! - `idle-timeout`: a connection on which no byte moves either way is closed (HTTP/2 too);
//! - `max-connections`: one more connection is answered 503 `TOO_MANY_CONNECTIONS` and closed.
//!
//! Shutdown stops accepting, lets each connection finish its in-flight request, and returns once all
//! have closed (the caller bounds that with `coordinator.shutdown-grace`).

use crate::config::HttpConfig;
use axum::Router;
use axum::extract::{ConnectInfo, Request};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rsc_protocol::errors::{ErrorBody, ErrorCode};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// Serves `app` on `listener` until `stop` completes, then shuts down gracefully.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    config: HttpConfig,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(config.max_connections as usize));
    // Around the router rather than through `Router::layer`, which would box every route once more.
    let app = tower::ServiceBuilder::new()
        .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
            config.body_read_timeout.0,
        ))
        .service(app);
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
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tokio::spawn(refuse_busy(stream, config.max_connections));
            continue;
        };
        let _ = stream.set_nodelay(true);
        let activity = Activity::new();
        let io = TokioIo::new(IdleIo {
            inner: stream,
            activity: activity.clone(),
        });
        let service = hyper_util::service::TowerToHyperService::new(app.clone().map_request(
            move |mut req: Request<_>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                req
            },
        ));
        let connection = builder
            .serve_connection_with_upgrades(io, service)
            .into_owned();
        let watched = graceful.watch(connection);
        let idle = config.idle_timeout.0;
        tokio::spawn(async move {
            tokio::select! {
                result = watched => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, %peer, "connection ended with an error");
                    }
                }
                () = activity.idle_for(idle) => {
                    tracing::debug!(%peer, "closing an idle connection");
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Answers a connection over the cap with a JSON 503 and closes it, without reading its request.
async fn refuse_busy(mut stream: TcpStream, max: u32) {
    let body = serde_json::to_string(&ErrorBody::new(
        ErrorCode::TooManyConnections,
        format!(
            "this listener already serves {max} connections (coordinator.http.max-connections); retry shortly"
        ),
    ))
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

/// When a byte last moved on a connection (milliseconds since the connection's start).
#[derive(Clone)]
struct Activity {
    start: Instant,
    last_ms: Arc<AtomicU64>,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            last_ms: Arc::new(AtomicU64::new(0)),
        }
    }

    fn touch(&self) {
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(now, Ordering::Relaxed);
    }

    /// Completes once nothing has moved for `idle`.
    async fn idle_for(&self, idle: Duration) {
        loop {
            let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let deadline = self.start + last + idle;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline.into()).await;
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
