//! What the store's operations take and return.
//!
//! A refused write is not an error: stale revisions, lapsed or live leases and "too early" are
//! normal answers the caller acts on (reload and retry, fence, wait), so they are variants of the
//! outcome enums, each carrying the Redis server time at which the decision was made. Errors
//! ([`crate::StoreError`]) are reserved for Redis trouble and untrustworthy data.

/// A group's metadata as stored, after validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredGroup {
    /// The aggregate JSON, exactly as written (opaque to the store).
    pub aggregate: String,
    /// The store revision, starting at 1 and incremented by every successful CAS.
    pub revision: u64,
    /// The `updatedAt` text the last writer passed in.
    pub updated_at: String,
    /// The `layoutVersion` the hash was written under ("1", "2", "3" whole; "4" split): a writer of the split
    /// layout may send only what changed since this load when it is "4" (`split_layout.rs`).
    pub layout: String,
}

/// Result of [`crate::Store::create`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutcome {
    /// The group now exists at `revision` 1; initial leases end at `now_ms + lease_ttl_ms`.
    Created { revision: u64, now_ms: i64 },
    /// Metadata for this group already existed; nothing was written.
    AlreadyExists,
}

/// One compare-and-set write of a group's aggregate with lease conditions and lease changes.
/// Checks run in field order (revision, `not_before_ms`, `must_be_lapsed`, `must_be_live`);
/// the first failing one decides the outcome and nothing is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CasWrite {
    /// The revision the caller read; the write happens only if it is still current.
    pub expected_revision: u64,
    /// The new aggregate JSON (the caller has already embedded `storeRevision = expected + 1`); ignored when
    /// `split` is given.
    pub aggregate_json: String,
    /// The new aggregate in the split layout ("4", `split_layout.rs`) instead: its header and the entries that
    /// changed since `expected_revision` (every entry when `full`). A write of changes only is refused as a
    /// conflict unless the stored hash is of that layout already.
    pub split: Option<crate::split_layout::SplitAggregate>,
    /// The new `updatedAt` text.
    pub updated_at: String,
    /// TTL for the leases in `renew`, in milliseconds (must be positive).
    pub lease_ttl_ms: i64,
    /// Refuse with `TooEarly` while Redis time is before this (0 = no condition).
    pub not_before_ms: i64,
    /// Refuse with `LeaseActive` if any of these members' leases is still live.
    pub must_be_lapsed: Vec<String>,
    /// Refuse with `LeaseLapsed` if any of these members' leases is lapsed or absent.
    pub must_be_live: Vec<String>,
    /// Set these members' lease deadlines to Redis time + `lease_ttl_ms`.
    pub renew: Vec<String>,
    /// Store these (member, progress document) pairs in the progress hash (after `renew`, before removals),
    /// as a steady heartbeat does: a heartbeat that changes the aggregate reports progress too.
    pub progress: Vec<(String, String)>,
    /// Drop these members' leases and progress (applied after `renew`, so removal wins).
    pub remove: Vec<String>,
    /// Drop only these members' leases (after `renew`): their last progress, with the time of their last
    /// heartbeat, stays readable while the aggregate still lists them (expired, fenced, left).
    pub drop_lease: Vec<String>,
}

/// Result of [`crate::Store::cas`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CasOutcome {
    /// Written; the group is now at `revision` (= expected + 1).
    Written { revision: u64, now_ms: i64 },
    /// The stored revision is not the expected one (`None`: the group does not exist).
    Conflict { current: Option<u64>, now_ms: i64 },
    /// Redis time is before `not_before_ms`.
    TooEarly { now_ms: i64 },
    /// `member` was required to be lapsed but its lease is live.
    LeaseActive { member: String, now_ms: i64 },
    /// `member` was required to be live but its lease is lapsed or absent.
    LeaseLapsed { member: String, now_ms: i64 },
}

/// Another member's lease deadline (Redis time, ms), as a heartbeat saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerLease {
    pub member: String,
    pub deadline_ms: i64,
}

/// What a steady renewal also looks at, in the same round trip ([`crate::Store::heartbeat_watching`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Watch<'a> {
    /// Name the other member whose lease ends first when it ends within this many ms (0: none).
    pub window_ms: i64,
    /// Report this member's lease deadline (the member whose release the caller waits for).
    pub awaited: Option<&'a str>,
}

/// Result of [`crate::Store::heartbeat`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeartbeatOutcome {
    /// The lease now ends at `now_ms + lease_ttl_ms`; progress was stored if given. `others_lapsed`: some
    /// other member's lease has run out, so an expiry is due.
    Renewed {
        now_ms: i64,
        others_lapsed: bool,
        /// The other member whose lease ends first, when it ends within the watch window
        /// ([`crate::Store::heartbeat_watching`]; lapsed ones included).
        next_lapse: Option<PeerLease>,
        /// The deadline of the lease of the member [`Watch::awaited`] named (None: none was named, or it has
        /// no lease).
        awaited_deadline_ms: Option<i64>,
    },
    /// The stored revision is not the expected one (`None`: the group does not exist); the
    /// caller reloads the aggregate. Nothing was written.
    Conflict { current: Option<u64>, now_ms: i64 },
    /// The member's lease is lapsed or absent; nothing was written.
    LeaseLapsed { now_ms: i64 },
}

/// Result of [`crate::Store::delete`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// Metadata, leases and progress are gone.
    Deleted,
    /// The stored revision is not the expected one (`None`: the group does not exist).
    Conflict { current: Option<u64> },
}
