//! Route access levels and what the security guard needs to know about the matched route, shared by the
//! router (`api`) and the guard (`security`) so that neither imports the other for it: `api` declares each
//! route's [`Access`] and attaches a [`MatchedRoute`] to the request, `security` enforces it.

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
    /// Any authenticated caller, whatever its roles (token revocation).
    Authenticated,
}

/// The matched route's metadata, available to layers and handlers as a request extension.
#[derive(Debug, Clone)]
pub struct MatchedRoute {
    pub operation_id: &'static str,
    pub access: Access,
    pub audit_action: Option<&'static str>,
    pub path: &'static str,
}

/// Largest accepted request body (the router's limit, and the guard's when it buffers an audited body).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
