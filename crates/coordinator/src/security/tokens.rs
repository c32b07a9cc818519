//! Opaque bearer tokens stored in Redis. A token is `rsc_` + 32 random bytes (base64url); Redis keeps only
//! its SHA-256 under `<key-prefix>:auth:token:{<hex>}` (its own hash tag in a cluster) as a small JSON value
//! with the user and the session's end, expiring with it (`SET … PXAT`). So tokens are unforgeable, valid
//! on every replica and never derived from configuration.
//!
//! Each user's live tokens are also listed in `<key-prefix>:auth:user-tokens:{user:<name>}`, a sorted set of
//! digests scored by their end, and **a token is valid only while it is listed there**. The index is the
//! authority: capping (`max-tokens-per-user`, oldest first), revoking one token and revoking all of a user's
//! are each one script on that one key (one cluster slot), after which the token keys are deleted too (best
//! effort: a token key left behind is already invalid). Issuing writes the token key first and lists it
//! second, so a crash in between leaves an unlisted — invalid — token.

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
    /// End of the session (epoch ms).
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

    /// The user's token index (its own hash tag).
    pub fn index_key(&self, user: &str) -> String {
        format!(
            "{}:auth:user-tokens:{{user:{}}}",
            self.key_prefix,
            super::window::key_part(user)
        )
    }

    /// Deletes token keys whose index entries are gone (each key is its own slot: one command each).
    async fn delete_keys(&self, digests: &[String]) -> Result<(), ApiError> {
        for d in digests {
            let _: i64 = redis::cmd("DEL")
                .arg(self.key(d))
                .query_async(&mut self.conn.clone())
                .await
                .map_err(redis_error)?;
        }
        Ok(())
    }

    /// Creates a token for `user` valid until `expires_ms`; returns the token text (shown once) and the
    /// digests of the user's oldest tokens that it displaced beyond `max_per_user` (already revoked).
    pub async fn issue(
        &self,
        user: &str,
        now_ms: i64,
        expires_ms: i64,
        max_per_user: u32,
    ) -> Result<(String, Vec<String>), ApiError> {
        let bytes: [u8; 32] = super::password::random_bytes();
        let token = format!(
            "{PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        );
        let digest_hex = hex(&digest(&token));
        let value = StoredToken {
            user: user.to_owned(),
            expires_ms,
            issued_ms: now_ms,
        };
        let json = serde_json::to_string(&value).unwrap_or_default();
        let () = redis::cmd("SET")
            .arg(self.key(&digest_hex))
            .arg(json)
            .arg("PXAT")
            .arg(expires_ms)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(redis_error)?;
        let evicted: Vec<String> = ADD
            .key(self.index_key(user))
            .arg(now_ms)
            .arg(expires_ms)
            .arg(&digest_hex)
            .arg(max_per_user)
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(redis_error)?;
        self.delete_keys(&evicted).await?;
        Ok((token, evicted))
    }

    /// Looks a token up by its digest. Missing, expired, unlisted (revoked) or unreadable → None.
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
        let Some(stored) = raw
            .and_then(|r| serde_json::from_str::<StoredToken>(&r).ok())
            .filter(|t| t.expires_ms > now_ms)
        else {
            return Ok(None);
        };
        let listed: Option<f64> = redis::cmd("ZSCORE")
            .arg(self.index_key(&stored.user))
            .arg(digest_hex)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(redis_error)?;
        Ok(listed.map(|_| stored))
    }

    /// Revokes one token; returns whether it was live.
    pub async fn revoke(&self, digest_hex: &str) -> Result<bool, ApiError> {
        let raw: Option<String> = redis::cmd("GET")
            .arg(self.key(digest_hex))
            .query_async(&mut self.conn.clone())
            .await
            .map_err(redis_error)?;
        let listed = match raw.and_then(|r| serde_json::from_str::<StoredToken>(&r).ok()) {
            Some(t) => {
                let n: i64 = redis::cmd("ZREM")
                    .arg(self.index_key(&t.user))
                    .arg(digest_hex)
                    .query_async(&mut self.conn.clone())
                    .await
                    .map_err(redis_error)?;
                n > 0
            }
            None => false,
        };
        let n: i64 = redis::cmd("DEL")
            .arg(self.key(digest_hex))
            .query_async(&mut self.conn.clone())
            .await
            .map_err(redis_error)?;
        Ok(listed && n > 0)
    }

    /// Revokes every token of `user`; returns their digests.
    pub async fn revoke_all(&self, user: &str) -> Result<Vec<String>, ApiError> {
        let digests: Vec<String> = TAKE_ALL
            .key(self.index_key(user))
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(redis_error)?;
        self.delete_keys(&digests).await?;
        Ok(digests)
    }

    /// The digests of `user`'s listed tokens, oldest first (tests and diagnostics).
    pub async fn listed(&self, user: &str) -> Result<Vec<String>, ApiError> {
        redis::cmd("ZRANGE")
            .arg(self.index_key(user))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(redis_error)
    }
}

/// KEYS: the user's index. ARGV: now ms, the new token's end, its digest, the cap. Drops ended entries,
/// lists the new token, and removes (and returns) the oldest beyond the cap. The index expires with its
/// last token.
static ADD: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        r"redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
local evicted = {}
if over > 0 then
  evicted = redis.call('ZRANGE', KEYS[1], 0, over - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, over - 1)
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then redis.call('PEXPIREAT', KEYS[1], last[2]) end
return evicted",
    )
});

/// KEYS: the user's index. Empties it and returns what it listed.
static TAKE_ALL: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        r"local all = redis.call('ZRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return all",
    )
});

/// The digest bytes of a hex digest (as [`hex`] writes them).
pub fn unhex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
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
        let d = digest("rsc_x");
        assert_eq!(unhex(&hex(&d)), Some(d));
        assert_eq!(unhex("zz"), None);
    }
}
