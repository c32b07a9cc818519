//! Login throttling against password guessing: failed logins (and failed Basic credentials) are counted per
//! username and per client address in Redis windows shared by all replicas. Once a budget is spent, every
//! attempt — right or wrong — gets 429 with `Retry-After` until the window ends. A successful login clears
//! the username's counter.

use super::config::LoginThrottleConfig;
use super::window::{self, Count};
use crate::error::ApiError;
use rsc_store::RedisConn;

pub struct LoginThrottle {
    conn: RedisConn,
    key_prefix: String,
    config: LoginThrottleConfig,
}

impl LoginThrottle {
    pub fn new(conn: RedisConn, key_prefix: &str, config: LoginThrottleConfig) -> Self {
        LoginThrottle {
            conn,
            key_prefix: key_prefix.to_owned(),
            config,
        }
    }

    fn user_key(&self, username: &str) -> String {
        format!(
            "{}:login-failures:{{user:{}}}",
            self.key_prefix,
            window::key_part(username)
        )
    }

    fn addr_key(&self, addr: &str) -> String {
        format!(
            "{}:login-failures:{{addr:{}}}",
            self.key_prefix,
            window::key_part(addr)
        )
    }

    fn over(&self, user: Count, addr: Count) -> Option<i64> {
        let u = user.count >= i64::from(self.config.max_failures_per_username);
        let a = addr.count >= i64::from(self.config.max_failures_per_address);
        match (u, a) {
            (true, true) => Some(user.retry_after_secs().max(addr.retry_after_secs())),
            (true, false) => Some(user.retry_after_secs()),
            (false, true) => Some(addr.retry_after_secs()),
            (false, false) => None,
        }
    }

    /// Seconds to wait when this username or address is blocked, else None.
    pub async fn blocked(&self, username: &str, addr: &str) -> Result<Option<i64>, ApiError> {
        let user = window::peek(&self.conn, &self.user_key(username)).await?;
        let addr = window::peek(&self.conn, &self.addr_key(addr)).await?;
        Ok(self.over(user, addr))
    }

    /// Counts a failure.
    pub async fn failed(&self, username: &str, addr: &str) -> Result<(), ApiError> {
        let window_ms = i64::try_from(self.config.window.0.as_millis()).unwrap_or(i64::MAX);
        window::hit(&self.conn, &self.user_key(username), window_ms).await?;
        window::hit(&self.conn, &self.addr_key(addr), window_ms).await?;
        Ok(())
    }

    pub async fn succeeded(&self, username: &str) -> Result<(), ApiError> {
        window::clear(&self.conn, &self.user_key(username)).await
    }
}
