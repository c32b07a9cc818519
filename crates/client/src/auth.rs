//! Credentials and how they are sent: nothing, HTTP Basic on every call, or a bearer token from
//! `POST /coord/v1/auth/login` that is renewed before it expires (coord/v1 contract).
//!
//! The token state is pure bookkeeping (`TokenState`); the HTTP exchange lives in
//! [`crate::coordinator`]. Passwords and tokens are never logged or shown by `Debug`.

use std::fmt;
use std::time::{Duration, Instant};

/// A username and password. `Debug` hides the password.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user to sign in as.
    pub username: String,
    /// The user's password (hidden by `Debug`).
    pub password: String,
}

impl Credentials {
    /// Credentials for `username` with `password`.
    ///
    /// ```
    /// let c = rsc_client::Credentials::new("admin", "s3cret");
    /// assert_eq!(c.username, "admin");
    /// assert!(!format!("{c:?}").contains("s3cret"));
    /// ```
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Self {
        Credentials {
            username: username.into(),
            password: password.into(),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// How the SDK authenticates to the coordinator. `Debug` hides passwords and tokens.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum Auth {
    /// Send no `Authorization` header (the coordinator's member API needs none by default).
    #[default]
    None,
    /// Send `Authorization: Basic …` on every call (what the Spring starter does).
    Basic(Credentials),
    /// Log in once, send `Authorization: Bearer <token>`, and log in again before the token expires.
    /// Falls back to HTTP Basic if the coordinator has no login endpoint (HTTP 404).
    Login(Credentials),
    /// Send `Authorization: Bearer <token>` with a token obtained elsewhere (e.g. `rsc login`); it is never
    /// renewed, and a 401 is returned as [`crate::ClientError::Unauthorized`].
    Bearer(String),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::None => f.write_str("None"),
            Auth::Basic(c) => f.debug_tuple("Basic").field(c).finish(),
            Auth::Login(c) => f.debug_tuple("Login").field(c).finish(),
            Auth::Bearer(_) => f.write_str("Bearer(<redacted>)"),
        }
    }
}

/// A bearer token and when to renew it.
#[derive(Clone)]
pub(crate) struct Token {
    pub value: String,
    pub renew_at: Instant,
}

/// Token bookkeeping for [`Auth::Login`].
#[derive(Default)]
pub(crate) struct TokenState {
    pub token: Option<Token>,
    /// The coordinator has no login endpoint: use Basic.
    pub basic_fallback: bool,
}

impl TokenState {
    /// The token to send now, if one is held and not due for renewal.
    pub fn current(&self, now: Instant) -> Option<&str> {
        self.token
            .as_ref()
            .filter(|t| now < t.renew_at)
            .map(|t| t.value.as_str())
    }

    /// Stores a token that is valid for `ttl` from `obtained_at`. It is renewed once three quarters of its
    /// lifetime have passed, and at least 30 s (or half the lifetime, if shorter) before it expires.
    pub fn store(&mut self, value: String, obtained_at: Instant, ttl: Duration) {
        let three_quarters = ttl.mul_f64(0.75);
        let early = ttl.saturating_sub(Duration::from_secs(30).min(ttl / 2));
        self.token = Some(Token {
            value,
            renew_at: obtained_at + three_quarters.min(early),
        });
    }

    /// Forgets the token (e.g. after a 401): the next call logs in again.
    pub fn invalidate(&mut self) {
        self.token = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_renewed_before_expiry() {
        let mut s = TokenState::default();
        let t0 = Instant::now();
        s.store("tok".into(), t0, Duration::from_secs(7 * 24 * 3600));
        assert_eq!(s.current(t0), Some("tok"));
        let renew = s.token.as_ref().unwrap().renew_at;
        assert!(renew < t0 + Duration::from_secs(7 * 24 * 3600 - 30));
        assert_eq!(s.current(renew), None, "due for renewal at renew_at");
        s.store("short".into(), t0, Duration::from_secs(10));
        assert!(s.token.as_ref().unwrap().renew_at <= t0 + Duration::from_secs(5));
        s.invalidate();
        assert_eq!(s.current(t0), None);
    }

    #[test]
    fn debug_never_shows_the_password() {
        let a = Auth::Login(Credentials::new("admin", "hunter2"));
        assert!(!format!("{a:?}").contains("hunter2"));
        let t = Auth::Bearer("rsc_secret".into());
        assert_eq!(format!("{t:?}"), "Bearer(<redacted>)");
    }
}
