//! Route access levels and what the security guard needs to know about the matched route and its body,
//! shared by the router (`api`) and the guard (`security`) so that neither imports the other for it: `api`
//! declares each route's [`Access`] and attaches a [`MatchedRoute`] to the request, `security` enforces it;
//! both read bodies within [`MAX_BODY_BYTES`] and answer a body-read timeout with [`body_timeout`].

use crate::error::ApiError;
use rsc_protocol::errors::ErrorCode;

/// What a caller needs to use a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No credentials (login, probes).
    Public,
    /// Monitoring and other reads.
    Read,
    /// Admin mutations.
    Write,
    /// Member heartbeats.
    Member,
    /// Reads of record payloads (the message browser, Grafana's message rows): DATA_READ or ADMIN.
    DataRead,
    /// Any authenticated caller, whatever its roles (token revocation).
    Authenticated,
}

/// The matched route's metadata, available to layers and handlers as a request extension.
#[derive(Debug, Clone, Copy)]
pub struct MatchedRoute {
    pub operation_id: &'static str,
    pub access: Access,
    pub audit_action: Option<&'static str>,
    pub path: &'static str,
}

/// Largest accepted request body (the router's limit, and the guard's when it buffers an audited body).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Reading a request body failed because it had not arrived whole by its deadline
/// (`coordinator.http.body-read-timeout`, counted from the request head; the listener enforces it).
#[derive(Debug, Clone, Copy)]
pub struct BodyDeadlineExceeded;

impl std::fmt::Display for BodyDeadlineExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive within coordinator.http.body-read-timeout")
    }
}

impl std::error::Error for BodyDeadlineExceeded {}

/// Whether a body error is the body-read timeout (so the answer is 408, not 400 or 413).
pub fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.is::<BodyDeadlineExceeded>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// The answer to a body that did not arrive within `coordinator.http.body-read-timeout`.
pub fn body_timeout() -> ApiError {
    ApiError::new(
        ErrorCode::RequestTimeout,
        "the request body did not arrive within coordinator.http.body-read-timeout; send it whole and promptly",
    )
}
