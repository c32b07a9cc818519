//! 400s of an offset reset's request: its reason, its target (`to`, `value`, `shift`) and its shards.

use rsc_protocol::wire::offsets::ResetTo;

/// What is wrong with an offset reset's target or shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadReset {
    /// `reason` is missing or blank.
    ReasonRequired,
    /// `to` is missing.
    ToRequired,
    /// A `shift` with another target than SHIFT.
    ShiftNotTaken {
        /// The target kind.
        to: ResetTo,
    },
    /// A `value` with EARLIEST or LATEST.
    ValueNotTaken {
        /// The target kind.
        to: ResetTo,
    },
    /// No `value` with DATETIME or ID.
    ValueRequired {
        /// The target kind.
        to: ResetTo,
    },
    /// A DATETIME value that is not an RFC 3339 time.
    Time {
        /// The value given.
        given: String,
    },
    /// A DATETIME value before 1970.
    TimeBefore1970 {
        /// The value given.
        given: String,
    },
    /// A DATETIME value after Redis time.
    TimeInFuture {
        /// The value given.
        given: String,
        /// Redis time (epoch ms).
        now_ms: i64,
    },
    /// An ID value that is not a stream id.
    Id {
        /// The value given.
        given: String,
    },
    /// An ID value whose time part is after Redis time.
    IdInFuture {
        /// The value given.
        given: String,
        /// Redis time (epoch ms).
        now_ms: i64,
    },
    /// A `value` with SHIFT.
    ShiftValue,
    /// No `shift` with SHIFT.
    ShiftRequired,
    /// A shift of 0.
    ShiftZero,
    /// A shift beyond the largest either way.
    ShiftTooFar {
        /// The shift given.
        shift: i64,
        /// The largest shift, either way.
        max: i64,
    },
    /// `shards` is an empty list.
    NoShards,
    /// `shards` names a shard the group does not have.
    NotAShard {
        /// The shard given.
        shard: i64,
        /// The group's shard count.
        shard_count: u32,
    },
    /// `shards` names a shard twice.
    ShardTwice {
        /// The shard.
        shard: u32,
    },
}

impl std::fmt::Display for BadReset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadReset::ReasonRequired => f.write_str(
                "reason: required — why the position moves (recorded in the audit log), e.g. \"replay after a \
                 bad deploy\"",
            ),
            BadReset::ToRequired => f.write_str(
                "to: required — EARLIEST, LATEST, DATETIME (with value: an RFC 3339 time), ID (with value: a \
                 stream id) or SHIFT (with shift: a signed number of records)",
            ),
            BadReset::ShiftNotTaken { to } => write!(
                f,
                "shift: only with \"to\": \"SHIFT\"; {} takes none — leave it out",
                to.as_str()
            ),
            BadReset::ValueNotTaken { to } => {
                write!(f, "value: {} takes no value; leave it out", to.as_str())
            }
            BadReset::ValueRequired { to } => write!(
                f,
                "value: required with {} — {}",
                to.as_str(),
                if *to == ResetTo::Datetime {
                    "an RFC 3339 time such as 2026-12-03T10:00:00Z"
                } else {
                    "a stream id such as 1764756000000-0"
                }
            ),
            BadReset::Time { given } => write!(
                f,
                "value: {given:?} is not an RFC 3339 time (e.g. 2026-12-03T10:00:00Z, or with an offset: \
                 2026-12-03T11:00:00+01:00)"
            ),
            BadReset::TimeBefore1970 { given } => {
                write!(f, "value: {given:?} is before 1970; stream ids start there")
            }
            BadReset::TimeInFuture { given, now_ms } => write!(
                f,
                "value: {given:?} is in the future (Redis time is {}); a reset moves to records that exist",
                crate::runtime::clock::iso_ms(*now_ms)
            ),
            BadReset::Id { given } => write!(
                f,
                "value: {given:?} is not a stream id (<ms>-<seq>, e.g. 1764756000000-0, or <ms>)"
            ),
            BadReset::IdInFuture { given, now_ms } => write!(
                f,
                "value: {given:?} lies in the future (its time part is after Redis time {}); no record has that \
                 id yet",
                crate::runtime::clock::iso_ms(*now_ms)
            ),
            BadReset::ShiftValue => f.write_str(
                "value: SHIFT takes no value; send the number of records as shift (e.g. \"shift\": -100)",
            ),
            BadReset::ShiftRequired => f.write_str(
                "shift: required with SHIFT — a signed number of records: -100 reads the last 100 delivered \
                 records of each shard again, 50 skips the next 50",
            ),
            BadReset::ShiftZero => f.write_str(
                "shift: 0 moves nothing; give a negative number to read records again or a positive one to skip",
            ),
            BadReset::ShiftTooFar { shift, max } => write!(
                f,
                "shift: {shift} is beyond ±{max} records; for a longer move reset to a DATETIME or an ID"
            ),
            BadReset::NoShards => f.write_str(
                "shards: an empty list resets nothing; leave it out to reset every shard",
            ),
            BadReset::NotAShard { shard, shard_count } => write!(
                f,
                "shards: {shard} is not a shard of this group (its shards are 0..{})",
                shard_count.saturating_sub(1)
            ),
            BadReset::ShardTwice { shard } => write!(f, "shards: {shard} is listed twice"),
        }
    }
}
