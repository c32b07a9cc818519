//! Admin-mutation rate limits, per principal and per consumer group (per stream for stream-level actions),
//! and successful sign-ins per principal, in fixed one-minute windows counted in Redis so every replica
//! enforces the same budget. Heartbeats and reads never pass through here. A rejection is 429 `RATE_LIMIT_EXCEEDED` with `Retry-After`.

use super::config::RateLimitConfig;
use super::window;
use crate::domain_error::CoordError;
use crate::http::error::ApiError;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use rsc_protocol::errors::ErrorCode;
use rsc_store::Store;

const WINDOW_MS: i64 = 60_000;

pub struct RateLimiter {
    store: Store,
    config: RateLimitConfig,
}

/// A rejected request: which budget ran out and when it refills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limited {
    pub what: String,
    pub retry_after_secs: i64,
}

impl Limited {
    pub fn into_response(self) -> Response {
        too_many(
            format!(
                "Coordinator API rate limit exceeded: {}; retry after {} s",
                self.what, self.retry_after_secs
            ),
            self.retry_after_secs,
        )
    }
}

/// A 429 `RATE_LIMIT_EXCEEDED` response with `Retry-After`.
pub fn too_many(message: String, retry_after_secs: i64) -> Response {
    let mut resp = ApiError::new(ErrorCode::RateLimitExceeded, message).into_response();
    if let Ok(v) = HeaderValue::from_str(&retry_after_secs.to_string()) {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

impl RateLimiter {
    pub fn new(store: Store, config: RateLimitConfig) -> Self {
        RateLimiter { store, config }
    }

    /// Counts one successful sign-in of `principal` (its password already verified, so only the holder of
    /// the password spends this budget).
    pub async fn check_login(&self, principal: &str) -> Result<Result<(), Limited>, CoordError> {
        if !self.config.enabled {
            return Ok(Ok(()));
        }
        let part = window::key_part(principal);
        let c = window::hit(&self.store, window::Window::Login(&part), WINDOW_MS).await?;
        if c.count > i64::from(self.config.logins_per_minute) {
            return Ok(Err(Limited {
                what: format!(
                    "principal {principal:?} may sign in {} times per minute; reuse the token a sign-in \
                     returned instead of signing in again",
                    self.config.logins_per_minute
                ),
                retry_after_secs: c.retry_after_secs(),
            }));
        }
        Ok(Ok(()))
    }

    /// Counts one admin mutation by `principal` on `(prefix, group)`; `group` None = stream-level.
    pub async fn check(
        &self,
        principal: &str,
        prefix: Option<&str>,
        group: Option<&str>,
    ) -> Result<Result<(), Limited>, CoordError> {
        if !self.config.enabled {
            return Ok(Ok(()));
        }
        let part = window::key_part(principal);
        let c = window::hit(&self.store, window::Window::Principal(&part), WINDOW_MS).await?;
        if c.count > i64::from(self.config.admin_mutations_per_minute) {
            return Ok(Err(Limited {
                what: format!(
                    "principal {principal:?} may make {} admin mutations per minute",
                    self.config.admin_mutations_per_minute
                ),
                retry_after_secs: c.retry_after_secs(),
            }));
        }
        if let Some(prefix) = prefix {
            let target = format!("{prefix}:{}", group.unwrap_or("*"));
            let part = window::key_part(&target);
            let c = window::hit(&self.store, window::Window::Target(&part), WINDOW_MS).await?;
            if c.count > i64::from(self.config.group_mutations_per_minute) {
                return Ok(Err(Limited {
                    what: format!(
                        "{target} accepts {} admin mutations per minute",
                        self.config.group_mutations_per_minute
                    ),
                    retry_after_secs: c.retry_after_secs(),
                }));
            }
        }
        Ok(Ok(()))
    }
}
