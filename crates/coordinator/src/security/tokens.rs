//! Opaque bearer tokens stored in Redis. A token is `rsc_` + 32 random bytes (base64url); Redis keeps only
//! its SHA-256 under `<key-prefix>:auth:token:{<hex>}` (its own hash tag in a cluster) as a small JSON value
//! with the user and the session's end, expiring with it (`SET … PXAT`). So tokens are unforgeable, valid
//! on every replica, revocable by deleting the key, and never derived from configuration.

use crate::error::ApiError;
use base64::Engine;
use rsc_protocol::errors::ErrorCode;
use rsc_store::RedisConn;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

const PREFIX: &str = "rsc_";
/// Base64url length of 32 bytes without padding.
const BODY_LEN: usize = 43;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredToken {
    pub user: String,
    /// End of the session (epoch ms). A token exchanged for a new one keeps this end.
    pub expires_ms: i64,
    pub issued_ms: i64,
}

#[derive(Clone)]
pub struct TokenStore {
    conn: RedisConn,
    key_prefix: String,
}

/// SHA-256 of a token.
pub fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Whether a string has the shape of an rsc token (checked before any Redis lookup).
pub fn well_formed(token: &str) -> bool {
    token.strip_prefix(PREFIX).is_some_and(|b| {
        b.len() == BODY_LEN
            && b.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
    })
}

pub fn redis_error(e: redis::RedisError) -> ApiError {
    ApiError::new(
        ErrorCode::RedisUnavailable,
        format!("Redis is unavailable: {e}; retry later"),
    )
}

impl TokenStore {
    pub fn new(conn: RedisConn, key_prefix: &str) -> Self {
        TokenStore {
            conn,
            key_prefix: key_prefix.to_owned(),
        }
    }

    pub fn key(&self, digest_hex: &str) -> String {
        format!("{}:auth:token:{{{digest_hex}}}", self.key_prefix)
    }

    /// Creates a token for `user` valid until `expires_ms`; returns the token text (shown once).
    pub async fn issue(
        &self,
        user: &str,
        now_ms: i64,
        expires_ms: i64,
    ) -> Result<String, ApiError> {
        let bytes: [u8; 32] = super::password::random_bytes();
        let token = format!(
            "{PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        );
        let value = StoredToken {
            user: user.to_owned(),
            expires_ms,
            issued_ms: now_ms,
        };
        let json = serde_json::to_string(&value).unwrap_or_default();
        let () = redis::cmd("SET")
            .arg(self.key(&hex(&digest(&token))))
            .arg(json)
            .arg("PXAT")
            .arg(expires_ms)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(redis_error)?;
        Ok(token)
    }

    /// Looks a token up by its digest. Missing, expired or unreadable → None.
    pub async fn lookup(
        &self,
        digest_hex: &str,
        now_ms: i64,
    ) -> Result<Option<StoredToken>, ApiError> {
        let raw: Option<String> = redis::cmd("GET")
            .arg(self.key(digest_hex))
            .query_async(&mut self.conn.clone())
            .await
            .map_err(redis_error)?;
        Ok(raw
            .and_then(|r| serde_json::from_str::<StoredToken>(&r).ok())
            .filter(|t| t.expires_ms > now_ms))
    }

    /// Deletes a token; returns whether it existed.
    pub async fn revoke(&self, digest_hex: &str) -> Result<bool, ApiError> {
        let n: i64 = redis::cmd("DEL")
            .arg(self.key(digest_hex))
            .query_async(&mut self.conn.clone())
            .await
            .map_err(redis_error)?;
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_shape_is_checked_before_lookup() {
        let body = "A".repeat(BODY_LEN);
        assert!(well_formed(&format!("rsc_{body}")));
        assert!(!well_formed(&body));
        assert!(!well_formed(&format!("rsc_{body}x")));
        assert!(!well_formed(&format!("rsc_{}", "=".repeat(BODY_LEN))));
        assert_eq!(hex(&[0, 255, 16]), "00ff10");
    }
}
