//! coord/v1 authentication responses: login and the caller's session.

use serde::Serialize;

/// `POST /coord/v1/auth/login` (LoginResponse).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LoginResponse {
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: String,
    pub expires_at: String,
    pub expires_in_seconds: i64,
    /// Role names, sorted.
    pub roles: Vec<String>,
}

/// `GET /coord/v1/monitoring/session`: the caller as the coordinator sees it. `authMethod`,
/// `streamPrefixes` and `expiresAt` are rsc's additions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionResponse {
    pub authenticated: bool,
    pub username: String,
    pub roles: Vec<String>,
    pub auth_method: String,
    /// The stream-prefix patterns the caller is limited to (empty: all).
    pub stream_prefixes: Vec<String>,
    pub expires_at: Option<String>,
}
