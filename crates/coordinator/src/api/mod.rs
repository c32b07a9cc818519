//! The HTTP API: the router built from the route table, body limits, JSON fallbacks for unknown paths and
//! methods, and a layer that attaches the matched route's spec to each request for cross-cutting concerns.

pub mod auth;
pub mod error;
pub mod extract;
pub mod grafana;
pub mod handlers;
pub mod metrics;
pub mod observability;
pub mod openapi;
pub mod quiesce;
pub mod routes;

pub use crate::access::MatchedRoute;
use crate::coordinator::Coordinator;
use crate::error::ApiError;
use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rsc_protocol::errors::ErrorCode;
use std::collections::HashMap;
use std::sync::Arc;

/// Builds the router over every route of the table. Every route passes the security guard (authentication,
/// roles, scopes, rate limits, audit), which reads the route's spec attached by the layer outside it.
pub fn router(coordinator: Arc<Coordinator>, security: Arc<crate::security::Security>) -> Router {
    let table = routes::table();
    let mut router: Router<Arc<Coordinator>> = Router::new();
    for spec in &table {
        router = router.route(spec.path, (spec.handler)());
    }
    let mut by_path: RouteSpecs = HashMap::new();
    for s in &table {
        by_path.entry(s.path).or_default().push((
            s.method.clone(),
            MatchedRoute {
                operation_id: s.operation_id,
                access: s.access,
                audit_action: s.audit_action,
                path: s.path,
            },
        ));
    }
    let specs = Arc::new(by_path);
    router
        .layer(axum::middleware::from_fn_with_state(
            security.clone(),
            crate::security::guard::guard,
        ))
        .layer(axum::Extension(security))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let specs = specs.clone();
                async move { attach_route(specs, req, next).await }
            },
        ))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(crate::access::MAX_BODY_BYTES))
        // Outermost: counts and times every request (including 401/403/429 and unknown paths) by route template.
        .layer(axum::middleware::from_fn_with_state(
            coordinator.clone(),
            metrics::track,
        ))
        .with_state(coordinator)
}

/// Resolves the request to a route of the table, or refuses it before any handler runs: a path the table
/// does not have is a JSON 404, a method the path does not have is a JSON 405. HEAD is resolved as the GET
/// it maps to (axum serves HEAD with the GET handler), so it needs exactly the GET route's access. Only a
/// request that resolved to a route reaches the guard, which refuses any request without one.
async fn attach_route(specs: Arc<RouteSpecs>, mut req: Request, next: Next) -> Response {
    let method = route_method(req.method());
    let spec = match req.extensions().get::<MatchedPath>() {
        None => return not_found(req).await.into_response(),
        Some(path) => specs
            .get(path.as_str())
            .and_then(|methods| methods.iter().find(|(m, _)| *m == method))
            .map(|(_, spec)| *spec),
    };
    let Some(spec) = spec else {
        return method_not_allowed(req).await.into_response();
    };
    req.extensions_mut().insert(spec);
    next.run(req).await
}

/// The route table's specs by path template, then method.
type RouteSpecs = HashMap<&'static str, Vec<(axum::http::Method, MatchedRoute)>>;

/// The route-table method a request method resolves to: HEAD is GET without a body.
pub fn route_method(method: &axum::http::Method) -> axum::http::Method {
    if method == axum::http::Method::HEAD {
        axum::http::Method::GET
    } else {
        method.clone()
    }
}

async fn not_found(req: Request) -> ApiError {
    ApiError::new(
        ErrorCode::NotFound,
        format!("no route for {} {}", req.method(), req.uri().path()),
    )
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!("{} is not allowed on {}", req.method(), req.uri().path()),
    )
}
