//! A small in-process cache of verified credentials, so the heartbeat hot path costs neither an Argon2
//! verification nor a Redis lookup per request. Entries live `credential-cache-ttl` (default 5 s): that is
//! how late a token revoked on *another* replica (or a user removed there) can still be accepted here; a
//! revocation on this replica drops the entry at once. Bounded: when full, expired entries are dropped, and
//! if that is not enough the cache starts over. A miss is verified by one request at a time per key (see
//! `gate`): the others wait for its result instead of each running Argon2. Only identical credentials wait
//! for each other. Basic credentials are keyed by a salted SHA-256 of the pair
//! (the salt is random per process), never by the password itself.

use super::password::random_bytes;
use super::principal::Principal;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub type CacheKey = [u8; 32];

pub struct CredentialCache {
    ttl: Duration,
    capacity: usize,
    salt: [u8; 32],
    entries: Mutex<HashMap<CacheKey, (Arc<Principal>, Instant)>>,
    /// One gate per key being verified, so that when an entry expires under load one request re-verifies it
    /// and the others wait for its result instead of all running Argon2 at once (which queued them for
    /// seconds). Per key, not striped: a flood of wrong passwords must not hold up other credentials.
    gates: Mutex<HashMap<CacheKey, Arc<tokio::sync::Mutex<()>>>>,
}

/// Holds the verification of one key; the next request for the key proceeds when it drops.
pub struct Gate<'a> {
    cache: &'a CredentialCache,
    key: CacheKey,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Drop for Gate<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        self.cache.tidy(&self.key);
    }
}

/// Gates kept before unused ones are swept (they are normally removed as they are released).
const GATES_BEFORE_SWEEP: usize = 256;

impl CredentialCache {
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        CredentialCache {
            ttl,
            capacity,
            salt: random_bytes(),
            entries: Mutex::new(HashMap::new()),
            gates: Mutex::new(HashMap::new()),
        }
    }

    /// Waits until no other request is verifying `key`, and holds it until the returned gate drops.
    pub async fn gate(&self, key: &CacheKey) -> Gate<'_> {
        let mutex = {
            let mut gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
            if gates.len() >= GATES_BEFORE_SWEEP {
                // Left behind by requests that gave up while waiting.
                gates.retain(|_, m| Arc::strong_count(m) > 1);
            }
            gates.entry(*key).or_default().clone()
        };
        let guard = mutex.lock_owned().await;
        Gate {
            cache: self,
            key: *key,
            guard: Some(guard),
        }
    }

    fn tidy(&self, key: &CacheKey) {
        let mut gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
        if gates.get(key).is_some_and(|m| Arc::strong_count(m) == 1) {
            gates.remove(key);
        }
    }

    /// Gates currently held or awaited (tests).
    pub fn gates_in_use(&self) -> usize {
        self.gates.lock().map(|g| g.len()).unwrap_or(0)
    }

    pub fn basic_key(&self, username: &str, password: &str) -> CacheKey {
        let mut h = Sha256::new();
        h.update(self.salt);
        h.update(b"basic\0");
        h.update(username.as_bytes());
        h.update(b"\0");
        h.update(password.as_bytes());
        h.finalize().into()
    }

    pub fn bearer_key(&self, token_digest: &[u8; 32]) -> CacheKey {
        let mut h = Sha256::new();
        h.update(self.salt);
        h.update(b"bearer\0");
        h.update(token_digest);
        h.finalize().into()
    }

    pub fn get(&self, key: &CacheKey) -> Option<Arc<Principal>> {
        if self.ttl.is_zero() {
            return None;
        }
        let entries = self.entries.lock().ok()?;
        entries
            .get(key)
            .filter(|(_, at)| at.elapsed() < self.ttl)
            .map(|(p, _)| p.clone())
    }

    pub fn put(&self, key: CacheKey, principal: Arc<Principal>) {
        if self.ttl.is_zero() {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= self.capacity {
            let ttl = self.ttl;
            entries.retain(|_, (_, at)| at.elapsed() < ttl);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(key, (principal, Instant::now()));
    }

    pub fn remove(&self, key: &CacheKey) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(key);
        }
    }

    pub fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::principal::AuthMethod;
    use crate::security::roles::Roles;
    use crate::security::scope::Scopes;

    fn p(name: &str) -> Arc<Principal> {
        Arc::new(Principal {
            username: name.into(),
            roles: Roles::all(),
            scopes: Scopes::unrestricted(),
            method: AuthMethod::Basic,
            token: None,
        })
    }

    #[test]
    fn entries_expire_are_bounded_and_keys_depend_on_the_password() {
        let c = CredentialCache::new(Duration::from_secs(60), 2);
        let (a, b) = (c.basic_key("u", "pw1"), c.basic_key("u", "pw2"));
        assert_ne!(a, b);
        c.put(a, p("a"));
        assert_eq!(c.get(&a).unwrap().username, "a");
        assert!(c.get(&b).is_none());
        c.put(b, p("b"));
        c.put(c.basic_key("x", "y"), p("x"));
        assert!(c.len() <= 2, "bounded");
        let short = CredentialCache::new(Duration::from_millis(1), 10);
        short.put(a, p("a"));
        std::thread::sleep(Duration::from_millis(5));
        assert!(short.get(&a).is_none(), "expired");
        c.remove(&b);
        assert!(c.get(&b).is_none());
    }
}
