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

use crate::domain_error::{CoordError, Unavailable};
use base64::Engine;
use rsc_store::Store;
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
    store: Store,
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

/// A store error as the security layer reports it: a failed Redis command as Redis's own error (the store is
/// unavailable), anything else as every other store call maps it.
pub fn store_error(e: rsc_store::StoreError) -> CoordError {
    match e {
        rsc_store::StoreError::Redis(_) => Unavailable::Store {
            cause: e.cause_text(),
        }
        .into(),
        other => CoordError::from(other),
    }
}

impl TokenStore {
    pub fn new(store: Store) -> Self {
        TokenStore { store }
    }

    /// The user's name as its token index is named by (key-safe: `window::key_part`).
    fn user_part(user: &str) -> String {
        super::window::key_part(user)
    }

    /// Deletes the tokens of `digests`, whose index entries are gone (each token key is its own slot: one
    /// `Store::token_delete` each).
    async fn delete_tokens(&self, digests: &[String]) -> Result<(), CoordError> {
        for d in digests {
            self.store.token_delete(d).await.map_err(store_error)?;
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
    ) -> Result<(String, Vec<String>), CoordError> {
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
        let json = rsc_store::to_json("token record", &value).map_err(store_error)?;
        self.store
            .token_put(&digest_hex, &json, expires_ms)
            .await
            .map_err(store_error)?;
        let evicted = self
            .store
            .token_index_add(
                &Self::user_part(user),
                now_ms,
                expires_ms,
                &digest_hex,
                max_per_user,
            )
            .await
            .map_err(store_error)?;
        self.delete_tokens(&evicted).await?;
        Ok((token, evicted))
    }

    /// Looks a token up by its digest. Missing, expired, unlisted (revoked) or unreadable → None.
    pub async fn lookup(
        &self,
        digest_hex: &str,
        now_ms: i64,
    ) -> Result<Option<StoredToken>, CoordError> {
        let raw = self
            .store
            .token_get(digest_hex)
            .await
            .map_err(store_error)?;
        let Some(stored) = raw
            .and_then(|r| serde_json::from_str::<StoredToken>(&r).ok())
            .filter(|t| t.expires_ms > now_ms)
        else {
            return Ok(None);
        };
        let listed = self
            .store
            .token_index_contains(&Self::user_part(&stored.user), digest_hex)
            .await
            .map_err(store_error)?;
        Ok(listed.then_some(stored))
    }

    /// Revokes one token; returns whether it was live.
    pub async fn revoke(&self, digest_hex: &str) -> Result<bool, CoordError> {
        let raw = self
            .store
            .token_get(digest_hex)
            .await
            .map_err(store_error)?;
        let listed = match raw.and_then(|r| serde_json::from_str::<StoredToken>(&r).ok()) {
            Some(t) => self
                .store
                .token_index_remove(&Self::user_part(&t.user), digest_hex)
                .await
                .map_err(store_error)?,
            None => false,
        };
        let deleted = self
            .store
            .token_delete(digest_hex)
            .await
            .map_err(store_error)?;
        Ok(listed && deleted)
    }

    /// Revokes every token of `user`; returns their digests.
    pub async fn revoke_all(&self, user: &str) -> Result<Vec<String>, CoordError> {
        let digests = self
            .store
            .token_index_take_all(&Self::user_part(user))
            .await
            .map_err(store_error)?;
        self.delete_tokens(&digests).await?;
        Ok(digests)
    }

    /// The digests of `user`'s listed tokens, oldest first (tests and diagnostics).
    pub async fn listed(&self, user: &str) -> Result<Vec<String>, CoordError> {
        self.store
            .token_index_list(&Self::user_part(user))
            .await
            .map_err(store_error)
    }
}

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
