//! The store's Lua scripts, built once per [`crate::Store`].
//!
//! Every multi-step change to a group runs as one script so that it is atomic and costs one round
//! trip, in standalone Redis and in a cluster alike (all keys of a group share a hash slot and are
//! passed in `KEYS[]`). `redis::Script` sends EVALSHA and falls back to SCRIPT LOAD + EVALSHA on
//! NOSCRIPT (per node in a cluster), so a restarted Redis with an empty script cache still works.
//! The SHA1 of each script is computed here once, not on every call.

use redis::Script;

/// Server clock and revision guard shared by all scripts (also the stream record scripts of
/// `streams.rs`).
pub(crate) const PRELUDE: &str = include_str!("lua/prelude.lua");
const CREATE: &str = include_str!("lua/create.lua");
const CAS: &str = include_str!("lua/cas.lua");
const HEARTBEAT: &str = include_str!("lua/heartbeat.lua");
const DELETE: &str = include_str!("lua/delete.lua");

/// The compiled (hashed) scripts.
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) create: Script,
    pub(crate) cas: Script,
    pub(crate) heartbeat: Script,
    pub(crate) delete: Script,
}

impl Scripts {
    pub(crate) fn new() -> Scripts {
        let with_prelude = |body: &str| Script::new(&format!("{PRELUDE}{body}"));
        Scripts {
            create: with_prelude(CREATE),
            cas: with_prelude(CAS),
            heartbeat: with_prelude(HEARTBEAT),
            delete: with_prelude(DELETE),
        }
    }

    /// Every script, e.g. to preload them into the server's script cache.
    pub(crate) fn all(&self) -> [&Script; 4] {
        [&self.create, &self.cas, &self.heartbeat, &self.delete]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_distinct_and_carry_the_prelude() {
        let scripts = Scripts::new();
        let hashes: std::collections::BTreeSet<&str> =
            scripts.all().iter().map(|s| s.get_hash()).collect();
        assert_eq!(hashes.len(), 4);
        for body in [CREATE, CAS, HEARTBEAT, DELETE] {
            assert!(
                !body.contains("redis.call('TIME')"),
                "the clock is read once, in the prelude"
            );
        }
        assert!(PRELUDE.contains("redis.call('TIME')"));
    }
}
