//! A fixed-window counter in Redis, shared by every replica: the building block of admin-mutation rate
//! limits and login throttling. One script per key: INCR, and start the window's expiry on the first hit.

use crate::error::ApiError;
use rsc_store::RedisConn;
use std::sync::LazyLock;

static HIT: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"local c = redis.call('INCR', KEYS[1])
local t = redis.call('PTTL', KEYS[1])
if t < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  t = tonumber(ARGV[1])
end
return {c, t}",
    )
});

static PEEK: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"local c = tonumber(redis.call('GET', KEYS[1]) or '0')
return {c, redis.call('PTTL', KEYS[1])}",
    )
});

/// A counter's value and the milliseconds until its window ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    pub count: i64,
    pub reset_ms: i64,
}

impl Count {
    /// Whole seconds until the window resets, at least 1 (for `Retry-After`).
    pub fn retry_after_secs(&self) -> i64 {
        ((self.reset_ms + 999) / 1000).max(1)
    }
}

/// Counts one hit in the window of `key` (`window_ms` long, starting at the first hit).
pub async fn hit(conn: &RedisConn, key: &str, window_ms: i64) -> Result<Count, ApiError> {
    let (count, reset_ms): (i64, i64) = HIT
        .key(key)
        .arg(window_ms)
        .invoke_async(&mut conn.clone())
        .await
        .map_err(super::tokens::redis_error)?;
    Ok(Count { count, reset_ms })
}

/// Reads a counter without counting.
pub async fn peek(conn: &RedisConn, key: &str) -> Result<Count, ApiError> {
    let (count, reset_ms): (i64, i64) = PEEK
        .key(key)
        .invoke_async(&mut conn.clone())
        .await
        .map_err(super::tokens::redis_error)?;
    Ok(Count { count, reset_ms })
}

pub async fn clear(conn: &RedisConn, key: &str) -> Result<(), ApiError> {
    let _: i64 = redis::cmd("DEL")
        .arg(key)
        .query_async(&mut conn.clone())
        .await
        .map_err(super::tokens::redis_error)?;
    Ok(())
}

/// A Redis-key-safe form of untrusted text (usernames from login bodies, addresses): kept when short and
/// plain, otherwise its SHA-256.
pub fn key_part(text: &str) -> String {
    let plain = text.len() <= 64
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@' | ':'));
    if plain && !text.is_empty() {
        text.to_owned()
    } else {
        format!(
            "sha256-{}",
            super::tokens::hex(&super::tokens::digest(text))
        )
    }
}
