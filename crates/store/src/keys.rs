//! The Redis key names of one group, as the store receives them.
//!
//! Key naming (prefix, hash tag, suffixes) belongs to the protocol crate; the store only needs the
//! three names and relies on them sharing one hash tag (`{<p>:<g>}`), so that one Lua script may
//! touch all of them in cluster mode too.

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
