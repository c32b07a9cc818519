//! A small in-process cache of verified credentials, so the heartbeat hot path costs neither an Argon2
//! verification nor a Redis lookup per request. Entries live `credential-cache-ttl` (default 5 s): that is
//! how late a token revoked on *another* replica (or a user removed there) can still be accepted here; a
//! revocation on this replica drops the entry at once. Bounded: when full, expired entries are dropped, and
//! if that is not enough the cache starts over. A miss is verified by one request at a time per key (see
//! `gate`). Basic credentials are keyed by a salted SHA-256 of the pair
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
    /// Striped gates so that when an entry expires under load, one request re-verifies it and the others
    /// wait for its result instead of all running Argon2 at once (which queued them for seconds).
    gates: [tokio::sync::Mutex<()>; GATES],
}

const GATES: usize = 16;

impl CredentialCache {
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        CredentialCache {
            ttl,
            capacity,
            salt: random_bytes(),
            entries: Mutex::new(HashMap::new()),
            gates: std::array::from_fn(|_| tokio::sync::Mutex::new(())),
        }
    }

    /// The gate that serialises verifications of `key` (and of the few keys sharing its stripe).
    pub fn gate(&self, key: &CacheKey) -> &tokio::sync::Mutex<()> {
        &self.gates[key[0] as usize % GATES]
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
