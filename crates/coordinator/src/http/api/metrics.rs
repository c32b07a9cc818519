//! HTTP glue for metrics (`crate::observability::metrics` holds the metrics themselves; the edge middleware counts and times
//! every request by route *template*): the `GET /metrics` handler, and the optional unauthenticated
//! metrics-only router for a separate listener.

use crate::runtime::coordinator::Coordinator;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use std::sync::Arc;

/// Route label for requests that matched no route (so unknown paths cannot grow the label set).
pub const UNMATCHED: &str = "unmatched";

/// `GET /metrics`: the OpenMetrics exposition. While Redis is down and the caller's credentials cannot be
/// checked, only the liveness gauges (`up`, `health{status}`, `redis_up`): a scrape still sees DOWN.
pub async fn metrics(
    State(c): State<Arc<Coordinator>>,
    unchecked: Option<Extension<crate::security::guard::CredentialsUnchecked>>,
) -> Response {
    let body = if unchecked.is_some() {
        let health = c.monitoring().health_without_credentials().await;
        crate::observability::metrics::render_liveness(
            &c.config().id,
            &crate::observability::metrics::snapshot::HealthObservation {
                redis_up: health.redis != "DOWN",
                status: match health.status.as_str() {
                    "UP" => "UP",
                    "DEGRADED" => "DEGRADED",
                    _ => "DOWN",
                },
                reconciler_age_seconds: None,
            },
        )
    } else {
        c.metrics().render(c.stats())
    };
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::observability::metrics::CONTENT_TYPE),
    );
    resp
}

/// A router serving only `GET /metrics`, without authentication (for `coordinator.metrics.listen`).
pub fn metrics_only_router(c: Arc<Coordinator>) -> Router {
    Router::new().route("/metrics", get(metrics)).with_state(c)
}

/// Binds `coordinator.metrics.listen` (when set) and serves the metrics-only router until `stop` turns true.
/// Returns the bound address, or None when the listener is off.
pub async fn spawn_listener(
    c: Arc<Coordinator>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<Option<std::net::SocketAddr>, (String, std::io::Error)> {
    let listen = c.config().metrics.listen.clone();
    if listen.is_empty() {
        return Ok(None);
    }
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .map_err(|e| (listen.clone(), e))?;
    let addr = listener.local_addr().map_err(|e| (listen.clone(), e))?;
    let app = metrics_only_router(c.clone());
    tokio::spawn(async move {
        let shutdown = async move {
            while !*stop.borrow() {
                if stop.changed().await.is_err() {
                    break;
                }
            }
        };
        let http = c.config().http.clone();
        if let Err(e) = crate::http::http_server::serve(listener, app, http, shutdown).await {
            tracing::warn!(error = %e, "metrics listener stopped");
        }
    });
    tracing::info!(%addr, "metrics listener (GET /metrics, no authentication)");
    Ok(Some(addr))
}
