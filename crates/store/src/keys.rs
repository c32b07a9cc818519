//! The ids a store operation takes beside a group's name and a stream prefix (an audit stream, a rate-limit
//! window, a sign-in attempt), and the sets of key names the keyspace names from ids: a group's three keys, a
//! stream's producer sightings, the sign-in throttle's counters (each named by [`crate::Keyspace`]).
//!
//! The store relies on a group's three names sharing one hash tag (`{<p>:<g>}`), so that one Lua script may
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

/// The keys of one stream's producer sightings, and of the stream record they are written beside
/// ([`crate::Keyspace::producers`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerKeys {
    pub record: String,
    pub seen: String,
    pub first_seen: String,
    pub quiesced: String,
}

/// The three counters of one sign-in attempt ([`crate::Keyspace::login_throttle`]). All must share one hash
/// tag (one cluster slot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThrottleKeys {
    /// HASH (`n`, `next`, `delay`): failures of this username from this address.
    pub pair: String,
    /// HASH (`n`, `next`, `delay`): failures from this address, whatever the usernames.
    pub address: String,
    /// STRING counter: failures of this username over all addresses within the window.
    pub username: String,
}

/// Which of the three audit streams (each named by the store under its key prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditStream {
    /// Admin mutations and sign-ins that revoked tokens.
    Mutations,
    /// Refused requests and failed sign-ins.
    Rejected,
    /// Successful sign-ins.
    Signins,
}

/// One rate-limit window, by the key-safe part of what it counts (each made key-safe by the caller: plain
/// short text as is, anything else hashed). The store names its key ([`crate::Keyspace::limit_window`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitWindow<'a> {
    /// A principal's sign-ins in the current minute.
    Login(&'a str),
    /// A principal's admin mutations.
    Principal(&'a str),
    /// The admin mutations of one target (`<streamPrefix>:<group or *>`).
    Target(&'a str),
    /// The rollback suspicions raised by one principal.
    Suspicion(&'a str),
}

/// One sign-in attempt, by the key-safe parts of its ids: the store names its three throttle counters
/// ([`crate::Keyspace::login_throttle`], one hash tag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginAttempt {
    /// The username and the client address together.
    pub pair: String,
    /// The client address.
    pub address: String,
    /// The username.
    pub username: String,
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
