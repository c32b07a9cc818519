//! Authentication: from the request's credentials to a [`Principal`]. Bearer tokens are looked up in Redis;
//! passwords (Basic pairs and logins) are verified with Argon2id. Both are cached briefly in-process (see
//! `cache.rs` for the revocation delay this implies). A password check not answered by the cache reserves
//! an attempt with the sign-in throttle (`throttle.rs`) before it queues for Argon2 (`verifier.rs`), and
//! gives it back when the password is right. Roles and scopes always come from the current user directory,
//! never from the token.

use super::Security;
use super::credentials::{self, Credentials};
use super::principal::{AuthMethod, Principal, TokenRef};
use super::rate_limit::too_many;
use super::throttle::Refused;
use super::tokens;
use super::users::User;
use crate::domain_error::CoordError;
use crate::http::error::ApiError;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use rsc_protocol::errors::ErrorCode;
use std::sync::Arc;

/// Why a request could not be authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthFailure {
    /// 401 with `WWW-Authenticate`.
    Unauthorized(String),
    /// 429: too many failed attempts for this username or address; wait this long.
    Throttled(Refused),
    /// Redis trouble: 503.
    Unavailable(CoordError),
}

impl AuthFailure {
    pub fn into_response(self) -> Response {
        match self {
            AuthFailure::Unauthorized(m) => {
                ApiError::new(ErrorCode::Unauthorized, m).into_response()
            }
            AuthFailure::Throttled(r) => {
                let secs = r.retry_after_secs();
                too_many(format!("{}; retry after {secs} s", r.describe()), secs)
            }
            AuthFailure::Unavailable(e) => ApiError::from(e).into_response(),
        }
    }
}

impl From<CoordError> for AuthFailure {
    fn from(e: CoordError) -> Self {
        AuthFailure::Unavailable(e)
    }
}

pub fn principal_of(user: &User, method: AuthMethod, token: Option<TokenRef>) -> Principal {
    Principal {
        username: user.username.clone(),
        roles: user.roles.clone(),
        scopes: user.scopes.clone(),
        method,
        token,
    }
}

impl Security {
    /// Authenticates from the Authorization header.
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        client: &str,
    ) -> Result<Arc<Principal>, AuthFailure> {
        match credentials::parse(headers) {
            Credentials::None => Err(AuthFailure::Unauthorized(
                "authentication required: send Authorization: Bearer <token> (from POST /coord/v1/auth/login) \
                 or Basic credentials"
                    .into(),
            )),
            Credentials::Malformed(why) => Err(AuthFailure::Unauthorized(format!(
                "the Authorization header is not usable: {why}"
            ))),
            Credentials::Bearer(token) => self.authenticate_bearer(&token).await,
            Credentials::Basic { username, password } => {
                self.authenticate_password(&username, &password, client, AuthMethod::Basic)
                    .await
            }
        }
    }

    pub async fn authenticate_bearer(&self, token: &str) -> Result<Arc<Principal>, AuthFailure> {
        if matches!(token, "null" | "undefined") {
            // `jq -r .accessToken` prints "null" for a failed login's error body: say so.
            return Err(AuthFailure::Unauthorized(format!(
                "the bearer token is {token:?}: this looks like a failed login's output ({token}), not a token; \
                 check the username and password and log in again with POST /coord/v1/auth/login (its answer \
                 says why it failed)"
            )));
        }
        if !tokens::well_formed(token) {
            return Err(AuthFailure::Unauthorized(
                "the bearer token is not an rsc token; log in with POST /coord/v1/auth/login"
                    .into(),
            ));
        }
        let digest = tokens::digest(token);
        let cache_key = self.cache.bearer_key(&digest);
        if let Some(p) = self.cache.get(&cache_key) {
            return Ok(p);
        }
        let digest_hex = tokens::hex(&digest);
        let now = super::now_ms();
        let Some(stored) = self.tokens.lookup(&digest_hex, now).await? else {
            return Err(AuthFailure::Unauthorized(
                "the bearer token is unknown, expired or revoked; log in again with POST /coord/v1/auth/login"
                    .into(),
            ));
        };
        let Some(user) = self.directory.get(&stored.user) else {
            return Err(AuthFailure::Unauthorized(format!(
                "the token's user {:?} no longer exists",
                stored.user
            )));
        };
        let p = Arc::new(principal_of(
            user,
            AuthMethod::Bearer,
            Some(TokenRef {
                digest,
                expires_ms: stored.expires_ms,
            }),
        ));
        self.cache.put(cache_key, p.clone());
        Ok(p)
    }

    /// Verifies a username and password (Basic, or the login body), honouring sign-in throttling. Order:
    /// the credential cache (verified credentials never queue), one verification per credentials at a time,
    /// the throttle's reservation, then Argon2 in the client address's turn.
    pub async fn authenticate_password(
        &self,
        username: &str,
        password: &str,
        client: &str,
        method: AuthMethod,
    ) -> Result<Arc<Principal>, AuthFailure> {
        let cache_key = self.cache.basic_key(username, password);
        if let Some(p) = self.cache.get(&cache_key) {
            return Ok(as_method(p, method));
        }
        // One verification per credentials at a time: those that waited find the fresh entry.
        let _gate = self.cache.gate(&cache_key).await;
        if let Some(p) = self.cache.get(&cache_key) {
            return Ok(as_method(p, method));
        }
        let attempt = super::throttle::LoginThrottle::attempt(username, client);
        if let Err(refused) = self.throttle.reserve(&attempt, super::now_ms()).await? {
            tracing::debug!(
                user = ?username,
                client = ?client,
                wait_ms = refused.wait_ms,
                reason = ?refused.reason,
                "sign-in attempt refused by the throttle"
            );
            return Err(AuthFailure::Throttled(refused));
        }
        let too_long = username.len() > 256 || password.len() > 1024;
        let user = if too_long {
            None
        } else {
            self.directory
                .verify(&self.verifier, client, username, password)
                .await
        };
        let Some(user) = user else {
            // The reservation stays: it was a failure.
            return Err(AuthFailure::Unauthorized(
                "invalid username or password".into(),
            ));
        };
        self.throttle.verified(&attempt).await?;
        let p = Arc::new(principal_of(user, AuthMethod::Basic, None));
        self.cache.put(cache_key, p.clone());
        Ok(as_method(p, method))
    }

    /// Revokes every token of `user` on all replicas, and drops them from this replica's cache at once.
    pub async fn revoke_all_tokens(&self, user: &str) -> Result<usize, CoordError> {
        let digests = self.tokens.revoke_all(user).await?;
        self.forget_tokens(&digests);
        Ok(digests.len())
    }

    /// Drops revoked tokens (hex digests) from this replica's credential cache.
    pub fn forget_tokens(&self, digests: &[String]) {
        for d in digests {
            if let Some(bytes) = tokens::unhex(d) {
                self.cache.remove(&self.cache.bearer_key(&bytes));
            }
        }
    }
}

/// The cached principal as seen through `method` (the cache holds password checks as Basic).
fn as_method(p: Arc<Principal>, method: AuthMethod) -> Arc<Principal> {
    if p.method == method {
        return p;
    }
    let mut other = (*p).clone();
    other.method = method;
    Arc::new(other)
}
