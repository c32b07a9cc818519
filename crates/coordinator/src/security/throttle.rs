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
use crate::error::ApiError;
use rsc_store::RedisConn;
use std::sync::LazyLock;

/// KEYS: pair, address, username. ARGV: now ms, failures-before-delay, max-failures-per-address,
/// max-failures-per-username, initial delay ms, max delay ms, window ms.
/// Returns {0} when the attempt is reserved, or {wait ms, reason} (1 pair, 2 address, 3 username ceiling).
static RESERVE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"local now = tonumber(ARGV[1])
local pair_free, addr_free, ceiling = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local initial, max, window = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local pn = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
local pnext = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
local an = tonumber(redis.call('HGET', KEYS[2], 'n') or '0')
local anext = tonumber(redis.call('HGET', KEYS[2], 'next') or '0')
local un = tonumber(redis.call('GET', KEYS[3]) or '0')
if an > 0 then
  local wait, why = 0, 0
  if pnext > now then wait, why = pnext - now, 1 end
  if anext > now and anext - now > wait then wait, why = anext - now, 2 end
  if un >= ceiling and pn > 0 then
    local t = redis.call('PTTL', KEYS[3])
    if t > wait then wait, why = t, 3 end
  end
  if why > 0 then return {wait, why} end
end
local function delay(n, free)
  if n < free then return 0 end
  return math.floor(math.min(initial * math.pow(2, math.min(n - free, 40)), max))
end
pn, an = pn + 1, an + 1
local pd, ad = delay(pn, pair_free), delay(an, addr_free)
if pd > 0 then pnext = now + pd end
if ad > 0 then anext = now + ad end
redis.call('HSET', KEYS[1], 'n', pn, 'next', pnext, 'delay', pd)
redis.call('PEXPIRE', KEYS[1], window)
redis.call('HSET', KEYS[2], 'n', an, 'next', anext, 'delay', ad)
redis.call('PEXPIRE', KEYS[2], window)
if redis.call('INCR', KEYS[3]) == 1 or redis.call('PTTL', KEYS[3]) < 0 then
  redis.call('PEXPIRE', KEYS[3], window)
end
return {0}",
    )
});

/// KEYS: pair, address, username. A verified attempt: the pair starts afresh, the address and the username
/// get their reservation back.
static RELEASE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  if redis.call('HINCRBY', KEYS[2], 'n', -1) <= 0 then redis.call('DEL', KEYS[2]) end
end
local u = tonumber(redis.call('GET', KEYS[3]) or '0')
if u > 1 then redis.call('DECR', KEYS[3]) elseif u == 1 then redis.call('DEL', KEYS[3]) end
return 0",
    )
});

/// Why an attempt was refused, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub wait_ms: i64,
    pub reason: Reason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// This address failed too often for this username.
    Pair,
    /// This address failed too often, whatever the usernames.
    Address,
    /// The username's ceiling over all addresses is reached, and this address has failed for it.
    Username,
}

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
    conn: RedisConn,
    key_prefix: String,
    config: LoginThrottleConfig,
}

/// The three counters of one attempt.
pub struct Keys([String; 3]);

impl LoginThrottle {
    pub fn new(conn: RedisConn, key_prefix: &str, config: LoginThrottleConfig) -> Self {
        LoginThrottle {
            conn,
            key_prefix: key_prefix.to_owned(),
            config,
        }
    }

    /// The keys of an attempt at `username` from `addr` (one hash tag: one cluster slot).
    pub fn keys(&self, username: &str, addr: &str) -> Keys {
        let kp = &self.key_prefix;
        // The pair is hashed together so that no username/address split is ambiguous.
        let pair = window::key_part(&format!("{username}\n{addr}"));
        Keys([
            format!("{kp}:login-throttle:{{login-throttle}}:pair:{pair}"),
            format!(
                "{kp}:login-throttle:{{login-throttle}}:addr:{}",
                window::key_part(addr)
            ),
            format!(
                "{kp}:login-throttle:{{login-throttle}}:user:{}",
                window::key_part(username)
            ),
        ])
    }

    fn ms(d: std::time::Duration) -> i64 {
        i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
    }

    /// Checks the budgets and counts this attempt as a failure (given back by [`Self::verified`]); or says
    /// why it must wait.
    pub async fn reserve(&self, keys: &Keys, now_ms: i64) -> Result<Result<(), Refused>, ApiError> {
        let c = &self.config;
        let [pair, addr, user] = &keys.0;
        let r: Vec<i64> = RESERVE
            .key(pair)
            .key(addr)
            .key(user)
            .arg(now_ms)
            .arg(c.failures_before_delay)
            .arg(c.max_failures_per_address)
            .arg(c.max_failures_per_username)
            .arg(Self::ms(c.initial_delay.0))
            .arg(Self::ms(c.max_delay.0))
            .arg(Self::ms(c.window.0))
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(super::tokens::redis_error)?;
        Ok(match r.as_slice() {
            [wait, why, ..] => Err(Refused {
                wait_ms: *wait,
                reason: match why {
                    1 => Reason::Pair,
                    2 => Reason::Address,
                    _ => Reason::Username,
                },
            }),
            _ => Ok(()),
        })
    }

    /// The reserved attempt's credentials verified: the pair's failures are cleared and the address's and
    /// username's counts get the reservation back.
    pub async fn verified(&self, keys: &Keys) -> Result<(), ApiError> {
        let [pair, addr, user] = &keys.0;
        let _: i64 = RELEASE
            .key(pair)
            .key(addr)
            .key(user)
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(super::tokens::redis_error)?;
        Ok(())
    }
}
