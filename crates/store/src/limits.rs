//! Rate-limit windows and the sign-in throttle: the coordinator's counters in Redis, shared by every
//! replica.
//!
//! A *window* is a fixed-window counter under one key: [`Store::window_hit`] counts one hit and starts
//! the window's expiry on the first (one script, `lua/window_hit.lua`). The coordinator uses them for
//! admin-mutation rate limits and the rollback-suspicion budget. The *sign-in throttle* keeps three
//! counters per attempt (username and address, address, username) under one hash tag:
//! [`Store::throttle_reserve`] checks the budgets and counts the attempt as a failure atomically, before
//! the password is checked, and [`Store::throttle_release`] gives a verified attempt's reservation back.
//! The caller names a window ([`LimitWindow`]) or an attempt ([`LoginAttempt`]) by key-safe parts of its ids; the
//! store names the keys (`Keyspace`).

use std::sync::LazyLock;

use redis::Script;

use crate::error::StoreError;
use crate::keys::{LimitWindow, LoginAttempt};
use crate::store::Store;

static WINDOW_HIT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/window_hit.lua")));
static WINDOW_PEEK: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/window_peek.lua")));
static THROTTLE_RESERVE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/throttle_reserve.lua")));
static THROTTLE_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/throttle_release.lua")));

/// A window counter's value and the milliseconds until its window ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowCount {
    pub count: i64,
    /// Milliseconds until the window resets (Redis `PTTL`: negative if the key has no expiry or does
    /// not exist, for [`Store::window_peek`]).
    pub reset_ms: i64,
}

impl WindowCount {
    /// Whole seconds until the window resets, at least 1 (for `Retry-After`).
    pub fn retry_after_secs(&self) -> i64 {
        ((self.reset_ms + 999) / 1000).max(1)
    }
}

/// The sign-in throttle's budgets, in the script's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleBudgets {
    pub failures_before_delay: u32,
    pub max_failures_per_address: u32,
    pub max_failures_per_username: u32,
    pub initial_delay_ms: i64,
    pub max_delay_ms: i64,
    pub window_ms: i64,
}

/// Which budget refused an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThrottleReason {
    /// This address failed too often for this username.
    Pair,
    /// This address failed too often, whatever the usernames.
    Address,
    /// The username's ceiling over all addresses is reached, and this address has failed for it.
    Username,
}

/// The answer to [`Store::throttle_reserve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThrottleVerdict {
    /// The attempt is counted as a failure until [`Store::throttle_release`] gives it back.
    Reserved,
    /// Nothing was counted; the attempt must wait `wait_ms`.
    Refused {
        wait_ms: i64,
        reason: ThrottleReason,
    },
}

impl Store {
    /// Counts one hit in window `window` (`window_ms` long, starting at the first hit).
    pub async fn window_hit(
        &self,
        window: LimitWindow<'_>,
        window_ms: i64,
    ) -> Result<WindowCount, StoreError> {
        let key = &self.keyspace().limit_window(window);
        let (count, reset_ms): (i64, i64) = WINDOW_HIT
            .key(key)
            .arg(window_ms)
            .invoke_async(&mut self.connection())
            .await?;
        Ok(WindowCount { count, reset_ms })
    }

    /// Reads a window counter without counting.
    pub async fn window_peek(&self, window: LimitWindow<'_>) -> Result<WindowCount, StoreError> {
        let key = &self.keyspace().limit_window(window);
        let (count, reset_ms): (i64, i64) = WINDOW_PEEK
            .key(key)
            .invoke_async(&mut self.connection())
            .await?;
        Ok(WindowCount { count, reset_ms })
    }

    /// Forgets a window counter.
    pub async fn window_clear(&self, window: LimitWindow<'_>) -> Result<(), StoreError> {
        let key = &self.keyspace().limit_window(window);
        let _: i64 = redis::cmd("DEL")
            .arg(key)
            .query_async(&mut self.connection())
            .await?;
        Ok(())
    }

    /// Checks the budgets and counts this attempt as a failure at `now_ms` (epoch ms), atomically; or
    /// says which budget refuses it and for how long.
    pub async fn throttle_reserve(
        &self,
        attempt: &LoginAttempt,
        now_ms: i64,
        budgets: &ThrottleBudgets,
    ) -> Result<ThrottleVerdict, StoreError> {
        let keys = &self.keyspace().login_throttle_of(attempt);
        let reply: Vec<i64> = THROTTLE_RESERVE
            .key(&keys.pair)
            .key(&keys.address)
            .key(&keys.username)
            .arg(now_ms)
            .arg(budgets.failures_before_delay)
            .arg(budgets.max_failures_per_address)
            .arg(budgets.max_failures_per_username)
            .arg(budgets.initial_delay_ms)
            .arg(budgets.max_delay_ms)
            .arg(budgets.window_ms)
            .invoke_async(&mut self.connection())
            .await?;
        Ok(match reply.as_slice() {
            [wait, why, ..] => ThrottleVerdict::Refused {
                wait_ms: *wait,
                reason: match why {
                    1 => ThrottleReason::Pair,
                    2 => ThrottleReason::Address,
                    _ => ThrottleReason::Username,
                },
            },
            _ => ThrottleVerdict::Reserved,
        })
    }

    /// A reserved attempt verified: the pair's failures are cleared and the address's and username's
    /// counts get the reservation back.
    pub async fn throttle_release(&self, attempt: &LoginAttempt) -> Result<(), StoreError> {
        let keys = &self.keyspace().login_throttle_of(attempt);
        let _: i64 = THROTTLE_RELEASE
            .key(&keys.pair)
            .key(&keys.address)
            .key(&keys.username)
            .invoke_async(&mut self.connection())
            .await?;
        Ok(())
    }
}
