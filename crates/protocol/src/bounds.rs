//! The ranges of the values clients send, as data: each request-body field and query or path parameter whose
//! value the coordinator checks has its [`Bound`] here. The validators take their limits from these constants
//! and the coordinator's OpenAPI document publishes the same bounds (`minimum`/`maximum`,
//! `minLength`/`maxLength`, `pattern`, `enum`, `maxItems`), so a client generated from the document refuses
//! what the server refuses, and the two cannot drift apart (the coordinator's `openapi_ranges` test sends the
//! values just outside each published bound, and the bounds themselves, to a real coordinator).

use crate::validate::{
    MAX_EPOCH, MAX_ID_LEN, MAX_PROGRESS_FIELD_LEN, MAX_SHARD_COUNT, MAX_TEXT_LEN,
};

/// A bound on one value, in the terms of JSON Schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// An integer within `min..=max`.
    Integer {
        /// The smallest value accepted (`None`: no lower bound).
        min: Option<i64>,
        /// The largest value accepted (`None`: no upper bound).
        max: Option<i64>,
    },
    /// A string of `min_length..=max_length` UTF-8 bytes that matches `pattern`, if one is given. (The
    /// document's `minLength`/`maxLength` count characters: the same for ASCII, and a bound the server checks
    /// in bytes.)
    Text {
        /// The fewest bytes accepted.
        min_length: usize,
        /// The most bytes accepted.
        max_length: usize,
        /// An ECMA-262 regular expression (as JSON Schema's `pattern`) the value must match.
        pattern: Option<&'static str>,
    },
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// A list of at most `max_items` entries.
    List {
        /// The most entries accepted.
        max_items: usize,
    },
}

impl Bound {
    /// An integer from `min` to `max` (inclusive).
    pub const fn between(min: i64, max: i64) -> Bound {
        Bound::Integer {
            min: Some(min),
            max: Some(max),
        }
    }

    /// An integer of at least `min`.
    pub const fn at_least(min: i64) -> Bound {
        Bound::Integer {
            min: Some(min),
            max: None,
        }
    }

    /// An integer of at most `max`.
    pub const fn at_most(max: i64) -> Bound {
        Bound::Integer {
            min: None,
            max: Some(max),
        }
    }

    /// Text of `min_length..=max_length` bytes matching `pattern`.
    pub const fn text(
        min_length: usize,
        max_length: usize,
        pattern: Option<&'static str>,
    ) -> Bound {
        Bound::Text {
            min_length,
            max_length,
            pattern,
        }
    }

    /// The lower end of an integer bound (`i64::MIN` for any other bound).
    pub const fn min(&self) -> i64 {
        match self {
            Bound::Integer { min: Some(m), .. } => *m,
            _ => i64::MIN,
        }
    }

    /// The upper end of an integer bound (`i64::MAX` for any other bound).
    pub const fn max(&self) -> i64 {
        match self {
            Bound::Integer { max: Some(m), .. } => *m,
            _ => i64::MAX,
        }
    }
}

/// A name that becomes part of Redis keys (`streamPrefix`, `memberId`): not blank, no leading or trailing
/// whitespace, no control character, no `{` or `}`, and not `.` or `..` ([`crate::validate`]'s name rules).
pub const NAME_PATTERN: &str = r"^(?:[^\s{}.\x00-\x1F\x7F-\x9F]|[^\s{}.\x00-\x1F\x7F-\x9F][^\s{}\x00-\x1F\x7F-\x9F]|\.[^\s{}.\x00-\x1F\x7F-\x9F]|[^\s{}\x00-\x1F\x7F-\x9F][^{}\x00-\x1F\x7F-\x9F]+[^\s{}\x00-\x1F\x7F-\x9F])$";

/// A consumer group: a name ([`NAME_PATTERN`]) without `:`.
pub const GROUP_PATTERN: &str = r"^(?:[^\s{}:.\x00-\x1F\x7F-\x9F]|[^\s{}:.\x00-\x1F\x7F-\x9F][^\s{}:\x00-\x1F\x7F-\x9F]|\.[^\s{}:.\x00-\x1F\x7F-\x9F]|[^\s{}:\x00-\x1F\x7F-\x9F][^{}:\x00-\x1F\x7F-\x9F]+[^\s{}:\x00-\x1F\x7F-\x9F])$";

/// Text that must not be blank: at least one character other than whitespace.
pub const NOT_BLANK_PATTERN: &str = r"\S";

/// `streamPrefix`, in a path or a body.
pub const STREAM_PREFIX: Bound = Bound::text(1, MAX_ID_LEN, Some(NAME_PATTERN));
/// `consumerGroup`, in a path or a body.
pub const CONSUMER_GROUP: Bound = Bound::text(1, MAX_ID_LEN, Some(GROUP_PATTERN));
/// `memberId` of a heartbeat's path.
pub const MEMBER_ID: Bound = Bound::text(1, MAX_ID_LEN, Some(NAME_PATTERN));
/// `groupInstanceId`: ASCII letters, digits, `.`, `_` and `-`.
pub const GROUP_INSTANCE_ID: Bound = Bound::text(1, MAX_ID_LEN, Some(r"^[A-Za-z0-9._-]+$"));

/// The longest producer id, in bytes.
pub const MAX_PRODUCER_ID_LEN: usize = 200;
/// `producerId`: visible ASCII characters, no spaces.
pub const PRODUCER_ID: Bound = Bound::text(1, MAX_PRODUCER_ID_LEN, Some(r"^[!-~]+$"));

/// Free text an operation requires (`requestedBy`; `reason` where the operation requires one).
pub const REQUIRED_TEXT: Bound = Bound::text(1, MAX_TEXT_LEN, Some(NOT_BLANK_PATTERN));
/// Free text an operation takes but does not require.
pub const OPTIONAL_TEXT: Bound = Bound::text(0, MAX_TEXT_LEN, None);
/// A heartbeat's `requestId`: not blank, at most [`MAX_ID_LEN`] bytes.
pub const REQUEST_ID: Bound = Bound::text(1, MAX_ID_LEN, Some(NOT_BLANK_PATTERN));
/// A member's display texts (`memberName`, `clientName`, `clientVersion`).
pub const DISPLAY_TEXT: Bound = Bound::text(0, MAX_ID_LEN, None);
/// The texts of a heartbeat's `shardProgress` entries.
pub const PROGRESS_TEXT: Bound = Bound::text(0, MAX_PROGRESS_FIELD_LEN, None);

/// `initialShardCount` of a stream create, `shardCount` of a recreate.
pub const INITIAL_SHARD_COUNT: Bound = Bound::between(1, MAX_SHARD_COUNT as i64);
/// `targetShardCount` of a scale: 0 drains and removes every shard.
pub const TARGET_SHARD_COUNT: Bound = Bound::between(0, MAX_SHARD_COUNT as i64);
/// A heartbeat's shard lists (`ownedShards`, `revokingShards`, `shardProgress`).
pub const SHARD_LIST: Bound = Bound::List {
    max_items: MAX_SHARD_COUNT as usize,
};
/// A shard index in a path: below the largest shard count (and, checked by the operation, below the group's
/// shard count).
pub const SHARD_INDEX: Bound = Bound::between(0, MAX_SHARD_COUNT as i64 - 1);

/// The longest producer quiesce a scale may ask for, in milliseconds (10 minutes).
pub const MAX_QUIESCE_TIMEOUT_MS: i64 = 600_000;
/// `producerQuiesce.timeoutMs` of a scale.
pub const QUIESCE_TIMEOUT_MS: Bound = Bound::between(1, MAX_QUIESCE_TIMEOUT_MS);

/// A heartbeat's `protocolVersion` (a version this coordinator does not speak is answered with the
/// `UNSUPPORTED_PROTOCOL` status, not refused).
pub const PROTOCOL_VERSION: Bound = Bound::at_least(1);
/// A reported metadata or routing version (`metadataVersion`, `observedMetadataVersion`,
/// `observedRoutingVersion`, `minimumMetadataVersion`): 0 to 2^53 − 1.
pub const OBSERVED_VERSION: Bound = Bound::between(0, MAX_EPOCH);
/// A heartbeat's `memberEpoch` (values below −2 are answered with the `INVALID_REQUEST` heartbeat status).
pub const MEMBER_EPOCH: Bound = Bound::at_most(MAX_EPOCH);
/// A member's `runtimeMaxConcurrency`.
pub const CONCURRENCY: Bound = Bound::at_least(1);
/// A count a member reports (`availableConcurrency`, `inFlight`, `pendingCount`).
pub const COUNT: Bound = Bound::at_least(0);

/// Records per page of the message browser when `limit` is not given.
pub const DEFAULT_PAGE_LIMIT: u32 = 25;
/// The largest `limit` of a page of records.
pub const MAX_PAGE_LIMIT: u32 = 1000;
/// `limit` of a page of records.
pub const PAGE_LIMIT: Bound = Bound::between(1, MAX_PAGE_LIMIT as i64);
/// A page's `direction`.
pub const DIRECTION: Bound = Bound::OneOf(&["FORWARD", "BACKWARD"]);
/// The largest `scanLimit` of a search.
pub const MAX_SCAN_LIMIT: u32 = 100_000;
/// `scanLimit` of a search.
pub const SCAN_LIMIT: Bound = Bound::between(1, MAX_SCAN_LIMIT as i64);
/// The range of `scanMaxBytes` of a search, in bytes.
pub const SCAN_MAX_BYTES_RANGE: (u64, u64) = (1024, 64 * 1024 * 1024);
/// `scanMaxBytes` of a search.
pub const SCAN_MAX_BYTES: Bound =
    Bound::between(SCAN_MAX_BYTES_RANGE.0 as i64, SCAN_MAX_BYTES_RANGE.1 as i64);
/// The largest `limit` of a page of audit records.
pub const MAX_AUDIT_LIMIT: usize = 1000;
/// `limit` of a page of audit records.
pub const AUDIT_LIMIT: Bound = Bound::between(1, MAX_AUDIT_LIMIT as i64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_bounds_report_their_ends() {
        assert_eq!(PAGE_LIMIT.min(), 1);
        assert_eq!(PAGE_LIMIT.max(), 1000);
        assert_eq!(PROTOCOL_VERSION.max(), i64::MAX);
        assert_eq!(MEMBER_EPOCH.min(), i64::MIN);
        assert_eq!(TARGET_SHARD_COUNT.max(), 16_384);
    }
}
