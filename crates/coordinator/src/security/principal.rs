//! The authenticated caller of a request: who, with which roles and stream scopes, and how they proved it.
//! The guard attaches it to the request as an extension; the audit record and the session endpoint read it.

use super::roles::Roles;
use super::scope::Scopes;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    Basic,
    Bearer,
}

impl AuthMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::Basic => "BASIC",
            AuthMethod::Bearer => "BEARER",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub username: String,
    pub roles: Roles,
    pub scopes: Scopes,
    pub method: AuthMethod,
    /// For bearer tokens: the token's digest (its Redis key) and when its session ends (epoch ms).
    pub token: Option<TokenRef>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRef {
    /// SHA-256 of the token (its Redis key is derived from it).
    pub digest: [u8; 32],
    pub expires_ms: i64,
}
