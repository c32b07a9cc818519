//! What the security endpoints' handlers (`api/auth.rs`) ask of the security layer beyond authentication:
//! count a sign-in against its rate limit, issue a token after it, revoke one, read the audit records. `Security` keeps its parts private;
//! these methods (and those of `authn.rs`) are its interface outside this module.

use super::Security;
use super::audit::{AuditFilter, AuditRecord};
use super::principal::Principal;
use super::tokens;
use crate::domain_error::CoordError;

impl Security {
    /// Issues an access token for `principal`, valid from `now_ms` for `coordinator.api.token-ttl`:
    /// the token, when it expires, and how many of the user's oldest live tokens it revoked to stay within
    /// `max-tokens-per-user` (forgotten by this replica at once; the login's audit record counts them).
    pub async fn issue_token(
        &self,
        principal: &Principal,
        now_ms: i64,
    ) -> Result<(String, i64, usize), CoordError> {
        let ttl_ms = i64::try_from(self.config.token_ttl.0.as_millis()).unwrap_or(i64::MAX);
        let expires_ms = now_ms.saturating_add(ttl_ms);
        let (token, displaced) = self
            .tokens
            .issue(
                &principal.username,
                now_ms,
                expires_ms,
                self.config.max_tokens_per_user,
            )
            .await?;
        self.forget_tokens(&displaced);
        if !displaced.is_empty() {
            tracing::info!(
                user = ?principal.username,
                revoked = displaced.len(),
                max_tokens_per_user = self.config.max_tokens_per_user,
                "revoked the user's oldest access tokens: at most max-tokens-per-user stay live"
            );
        }
        Ok((token, expires_ms, displaced.len()))
    }

    /// Counts a verified sign-in of `principal` against `coordinator.api.rate-limit.logins-per-minute`.
    pub async fn check_login_rate(
        &self,
        principal: &Principal,
    ) -> Result<Result<(), super::rate_limit::Limited>, CoordError> {
        self.limits.check_login(&principal.username).await
    }

    /// What a failed sign-in's audit record keeps of the username it named: the name of a configured user
    /// as it is, anything else (a password typed into the username field, say) only as its first two
    /// characters, so the audit trail never holds a secret.
    pub fn attempted_username(&self, username: &str) -> String {
        if self.directory.get(username).is_some() {
            return username.to_owned();
        }
        let head: String = username.chars().take(2).collect();
        format!("{head}… (not a user)")
    }

    /// Revokes the token with this digest on all replicas (whether it was live), and drops it from this
    /// replica's cache at once.
    pub async fn revoke_token(&self, digest: &[u8; 32]) -> Result<bool, CoordError> {
        let revoked = self.tokens.revoke(&tokens::hex(digest)).await?;
        self.cache.remove(&self.cache.bearer_key(digest));
        Ok(revoked)
    }

    /// Newest-first audit records matching `filter`, of those the caller may see (`visible`).
    pub async fn audit_records(
        &self,
        filter: &AuditFilter,
        visible: impl Fn(&AuditRecord) -> bool,
    ) -> Result<Vec<AuditRecord>, CoordError> {
        self.audit.read(filter, visible).await
    }
}
