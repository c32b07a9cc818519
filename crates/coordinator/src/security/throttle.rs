//! Sign-in throttling against password guessing, shared by all replicas through Redis. Every password check
//! that is not answered from the credential cache (a login, or Basic credentials) first *reserves* an attempt
//! — one Lua script that checks the budgets and counts the attempt as a failure, atomically, before Argon2
//! runs — and a check that then succeeds gives its reservation back. Budgets:
//!
//! - per (username, client address): `failures-before-delay` free failures, then each further attempt must
//!   wait `initial-delay`, doubling with every failure up to `max-delay`. Forgotten `window` after the last
//!   failure, and cleared when that address signs in as that user.
//! - per client address (all usernames): `max-failures-per-address`, then the same growing delays — an
//!   address trying many usernames is slowed.
//! - per username over all addresses: a ceiling (`max-failures-per-username` per `window`) far above what
//!   one address can reach; beyond it, addresses that have failed for that username are refused until the
//!   window ends.
//!
//! An address with no failure (counted or in progress) is never refused: guessing from elsewhere cannot
//! lock a user out, nor stop live members that use Basic credentials. A refused attempt gets 429 with
//! `Retry-After`, runs no Argon2 and counts nothing.
//!
//! Keys (hashes with `n` attempts counted, `next` epoch ms before which the next one waits, `delay` the
//! last delay in ms; the username's is a plain counter): `<key-prefix>:login-throttle:{login-throttle}:`
//! `pair:<sha256 of username and address>`, `…:addr:<address>`, `…:user:<username>`. All share the hash tag `{login-throttle}`, so the script touches one Redis Cluster slot. Its load is
//! bounded by the Argon2 checks each replica can run, plus one call per refused attempt.

use super::config::LoginThrottleConfig;
use super::window;
use crate::domain_error::CoordError;
use rsc_store::{LoginAttempt, Store, ThrottleBudgets, ThrottleVerdict};

/// Why an attempt was refused, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub wait_ms: i64,
    pub reason: Reason,
}

pub use rsc_store::ThrottleReason as Reason;

impl Refused {
    /// Whole seconds for `Retry-After`, at least 1.
    pub fn retry_after_secs(&self) -> i64 {
        ((self.wait_ms + 999) / 1000).max(1)
    }

    pub fn describe(&self) -> &'static str {
        match self.reason {
            Reason::Pair => {
                "too many failed sign-in attempts for this username from this client address"
            }
            Reason::Address => "too many failed sign-in attempts from this client address",
            Reason::Username => {
                "too many failed sign-in attempts for this username, and this client address is one of them"
            }
        }
    }
}

pub struct LoginThrottle {
    store: Store,
    config: LoginThrottleConfig,
}

/// One attempt, by the key-safe parts of its username and address (the store names its three counters).
pub struct Attempt(LoginAttempt);

impl LoginThrottle {
    pub fn new(store: Store, config: LoginThrottleConfig) -> Self {
        LoginThrottle { store, config }
    }

    /// An attempt at `username` from `addr` (its counters share one hash tag: one cluster slot).
    pub fn attempt(username: &str, addr: &str) -> Attempt {
        // The pair is hashed together so that no username/address split is ambiguous.
        Attempt(LoginAttempt {
            pair: window::key_part(&format!("{username}\n{addr}")),
            address: window::key_part(addr),
            username: window::key_part(username),
        })
    }

    fn ms(d: std::time::Duration) -> i64 {
        i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
    }

    /// Checks the budgets and counts this attempt as a failure (given back by [`Self::verified`]); or says
    /// why it must wait.
    pub async fn reserve(
        &self,
        attempt: &Attempt,
        now_ms: i64,
    ) -> Result<Result<(), Refused>, CoordError> {
        let c = &self.config;
        let budgets = ThrottleBudgets {
            failures_before_delay: c.failures_before_delay,
            max_failures_per_address: c.max_failures_per_address,
            max_failures_per_username: c.max_failures_per_username,
            initial_delay_ms: Self::ms(c.initial_delay.0),
            max_delay_ms: Self::ms(c.max_delay.0),
            window_ms: Self::ms(c.window.0),
        };
        let verdict = self
            .store
            .throttle_reserve(&attempt.0, now_ms, &budgets)
            .await
            .map_err(super::tokens::store_error)?;
        Ok(match verdict {
            ThrottleVerdict::Refused { wait_ms, reason } => Err(Refused { wait_ms, reason }),
            ThrottleVerdict::Reserved => Ok(()),
        })
    }

    /// The reserved attempt's credentials verified: the pair's failures are cleared and the address's and
    /// username's counts get the reservation back.
    pub async fn verified(&self, attempt: &Attempt) -> Result<(), CoordError> {
        self.store
            .throttle_release(&attempt.0)
            .await
            .map_err(super::tokens::store_error)
    }
}
