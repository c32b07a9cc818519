//! The HTTP API: the router built from the route table, body limits (each route's `access::BodyLimit`, in its
//! spec for the guard and as axum's limit for the extractors), JSON fallbacks for unknown paths and
//! methods, and the edge middleware (`edge`) that resolves each request to its route's spec, counts it and
//! passes it through the security guard.

pub mod auth;
pub mod edge;
pub mod error;
pub mod extract;
pub mod grafana;
pub mod handlers;
pub mod metrics;
pub mod observability;
pub mod openapi;
pub mod quiesce;
pub mod routes;
pub mod shutdown;

use crate::http::error::ApiError;
use crate::runtime::coordinator::Coordinator;
use crate::security::access::BodyLimit;
pub use crate::security::access::MatchedRoute;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use rsc_protocol::errors::ErrorCode;
use std::collections::HashMap;
use std::sync::Arc;

/// Builds the router over every route of the table. Every route passes the security guard (authentication,
/// roles, scopes, rate limits, audit), which reads the route's spec the edge attached.
pub fn router(coordinator: Arc<Coordinator>, security: Arc<crate::security::Security>) -> Router {
    let table = routes::table();
    let heartbeat_limit = coordinator.config().http.heartbeat_max_body_bytes;
    let limit_of = |s: &routes::RouteSpec| BodyLimit::for_route(s.operation_id, heartbeat_limit);
    let mut router: Router<Arc<Coordinator>> = Router::new();
    for spec in &table {
        let limit = limit_of(spec);
        // The router-wide limit below is the default one; a route with another gets its own, inside it
        // (the innermost limit is the one the body extractors apply).
        let handler = if limit == BodyLimit::default() {
            (spec.handler)()
        } else {
            (spec.handler)().layer(DefaultBodyLimit::max(limit.max_bytes))
        };
        // The one shutdown check, on the routes that change state (`shutdown.rs`).
        let handler = if shutdown::refused_while_terminating(spec.access) {
            handler.layer(axum::middleware::from_fn_with_state(
                coordinator.clone(),
                shutdown::refuse_while_terminating,
            ))
        } else {
            handler
        };
        router = router.route(spec.path, handler);
    }
    let mut by_path: HashMap<_, Vec<_>> = HashMap::new();
    for s in &table {
        by_path.entry(s.path).or_default().push((
            s.method.clone(),
            MatchedRoute {
                operation_id: s.operation_id,
                access: s.access,
                audit_action: s.audit_action,
                path: s.path,
                body_limit: limit_of(s),
            },
        ));
    }
    let edge = edge::Edge {
        coordinator: coordinator.clone(),
        security: security.clone(),
        specs: Arc::new(RouteSpecs(by_path)),
    };
    // One `Router::layer` call: each call wraps every route in another boxed service. Outermost first: the
    // edge (metrics, route resolution, the guard), then the body limit and the security handle for handlers.
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(
            tower::ServiceBuilder::new()
                .layer(axum::middleware::from_fn_with_state(edge, edge::edge))
                .layer(DefaultBodyLimit::max(BodyLimit::default().max_bytes))
                .layer(axum::Extension(security)),
        )
        .with_state(coordinator)
}

/// The route table's specs by path template, then method.
pub struct RouteSpecs(HashMap<&'static str, Vec<(axum::http::Method, MatchedRoute)>>);

impl RouteSpecs {
    /// The spec of the route a request resolved to: its path template and method. HEAD is resolved as the GET
    /// it maps to (axum serves HEAD with the GET handler), so it needs exactly the GET route's access. None
    /// when the path has no route for the method (the guard refuses any request without a spec).
    pub fn resolve(&self, path: &str, method: &axum::http::Method) -> Option<MatchedRoute> {
        let method = route_method(method);
        self.0
            .get(path)
            .and_then(|methods| methods.iter().find(|(m, _)| *m == method))
            .map(|(_, spec)| *spec)
    }
}

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
