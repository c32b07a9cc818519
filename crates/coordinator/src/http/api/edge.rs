//! The edge: the one middleware every request of the API passes through, outermost. It times and counts the
//! request by route template (401/403/429 answers and unknown paths included), resolves it to a route of the
//! table (a JSON 404 or 405 when the table has none), attaches that route's spec, and hands the request to
//! the security guard, which runs the handler only if the request may pass.
//!
//! These were three middleware layers; each `from_fn` layer and each `Router::layer` call costs a boxed
//! service and a boxed future per request, so the three steps share one (issue #21's hot-path profile).

use super::RouteSpecs;
use super::metrics::UNMATCHED;
use crate::runtime::coordinator::Coordinator;
use crate::security::Security;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Instant;

/// What the edge needs for every request.
#[derive(Clone)]
pub struct Edge {
    pub coordinator: Arc<Coordinator>,
    pub security: Arc<Security>,
    pub specs: Arc<RouteSpecs>,
}

/// The middleware (see the module comment).
pub async fn edge(State(edge): State<Edge>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let response = match route.as_ref() {
        None => super::not_found(req).await.into_response(),
        Some(path) => match edge.specs.resolve(path.as_str(), req.method()) {
            None => super::method_not_allowed(req).await.into_response(),
            Some(spec) => {
                req.extensions_mut().insert(spec);
                crate::security::guard::guard(&edge.security, req, next).await
            }
        },
    };
    edge.coordinator.metrics().observe_request(
        method.as_str(),
        route.as_ref().map_or(UNMATCHED, MatchedPath::as_str),
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}
