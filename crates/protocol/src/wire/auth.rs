//! coord/v1 authentication responses: login and the caller's session.

use serde::Serialize;

/// `POST /coord/v1/auth/login` (LoginResponse).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LoginResponse {
    /// The bearer token: send it as `Authorization: Bearer <accessToken>`.
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: String,
    /// When the token expires (ISO-8601 UTC).
    pub expires_at: String,
    /// The token's lifetime from now, in seconds.
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
    /// Always true (an unauthenticated caller gets 401).
    pub authenticated: bool,
    /// The principal's name.
    pub username: String,
    /// The principal's role names, sorted.
    pub roles: Vec<String>,
    /// How the caller authenticated: `BASIC` or `BEARER`.
    pub auth_method: String,
    /// The stream-prefix patterns the caller is limited to (empty: all).
    pub stream_prefixes: Vec<String>,
    /// When the bearer token expires (ISO-8601 UTC); null for HTTP Basic.
    pub expires_at: Option<String>,
}
