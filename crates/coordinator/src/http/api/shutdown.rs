//! The one shutdown check. Once this replica has begun terminating, every route that changes state — the
//! admin mutations (`Access::Write`) and the member routes (`Access::Member`: heartbeats, quiesce reports) —
//! answers 503 `COORDINATOR_TERMINATING` before its handler runs; reads, health, the probes, sign-in and
//! token revocation keep answering. It runs inside the guard, so a refused admin mutation is authenticated
//! and audited as before; the operations behind these routes do not check again.

use crate::http::error::ApiError;
use crate::runtime::coordinator::Coordinator;
use crate::security::access::Access;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// Whether a route of this access is refused while the replica shuts down.
pub fn refused_while_terminating(access: Access) -> bool {
    matches!(access, Access::Write | Access::Member)
}

/// The route layer of the routes [`refused_while_terminating`] names.
pub async fn refuse_while_terminating(
    State(c): State<Arc<Coordinator>>,
    req: Request,
    next: Next,
) -> Response {
    match c.ensure_running() {
        Err(e) => ApiError::from(e).into_response(),
        Ok(()) => next.run(req).await,
    }
}

#[cfg(test)]
mod tests {
    use super::refused_while_terminating;
    use crate::security::access::Access;
    use axum::http::Method;

    /// Every route that changes state is refused while terminating, and only those: reads answer, and so do
    /// sign-in and token revocation (they change no group).
    #[test]
    fn every_mutating_route_and_no_read_is_refused_while_terminating() {
        for spec in crate::http::api::routes::table() {
            let refused = refused_while_terminating(spec.access);
            if spec.method == Method::GET {
                assert!(!refused, "{} is a read", spec.operation_id);
            } else if matches!(spec.access, Access::Public | Access::Authenticated) {
                assert!(!refused, "{}", spec.operation_id);
            } else {
                assert!(refused, "{} changes state", spec.operation_id);
            }
        }
    }
}
