//! The Redis key names of one group, as the store receives them.
//!
//! Key naming (prefix, hash tag, suffixes) belongs to the protocol crate; the store only needs the
//! three names and relies on them sharing one hash tag (`{<p>:<g>}`), so that one Lua script may
//! touch all of them in cluster mode too. The keys of a large aggregate stored out of line are the
//! store's own layout, derived from the metadata key ([`aggregate_key`], [`aggregate_staging_key`]).

/// The three keys that hold one group's state. All must hash to the same cluster slot.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupKeys {
    /// HASH: `aggregate`, `revision`, `schemaVersion`, `layoutVersion`, `updatedAt`.
    pub metadata: String,
    /// ZSET: member id → lease deadline in Redis-server milliseconds.
    pub leases: String,
    /// HASH: member id → progress JSON.
    pub progress: String,
}

/// The string key that holds a large aggregate out of line (`layoutVersion` "3") for the metadata-shaped hash
/// `hash_key`: `<hash_key>:aggregate`. It shares the hash's hash tag, so one script or transaction may touch
/// both in cluster mode too. Storage layout, not protocol: derived here from the key the store is given.
pub fn aggregate_key(hash_key: &str) -> String {
    format!("{hash_key}:aggregate")
}

/// Where a compare-and-set stages a large aggregate before its script checks the write
/// (`<hash_key>:aggregate-staging`): written and renamed (or deleted) inside one MULTI/EXEC, so no reader
/// ever sees it; it expires by itself if a transaction's script fails to run.
pub fn aggregate_staging_key(hash_key: &str) -> String {
    format!("{hash_key}:aggregate-staging")
}
