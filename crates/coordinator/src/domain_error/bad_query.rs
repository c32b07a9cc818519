//! 400s of the query parameters of the message browser (`…/messages`), the pending list (`…/pending`), a
//! stream's history (`…/history`) and the Grafana routes.

/// A query parameter that is not acceptable; each names the parameter and the value given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadQuery {
    /// `direction` is neither FORWARD nor BACKWARD.
    Direction {
        /// The value given.
        given: String,
    },
    /// `limit` is not a number of records within the bounds.
    Limit {
        /// The value given.
        given: String,
        /// The largest limit.
        max: u32,
        /// The limit when none is given.
        default: u32,
    },
    /// A parameter the pending list does not take.
    PendingParameter {
        /// The parameter given.
        key: String,
    },
    /// The pending list's `count` is not a number of entries within the bounds.
    PendingCount {
        /// The value given.
        given: String,
        /// The largest count.
        max: u32,
        /// The count when none is given.
        default: u32,
    },
    /// A stream history's `minutes` is not a number of minutes the replica keeps.
    HistoryMinutes {
        /// The value given.
        given: String,
        /// The most minutes kept.
        max: u32,
    },
    /// `cursor` is not a record id (the message browser, the pending list).
    Cursor {
        /// The value given.
        given: String,
    },
    /// A cursor together with `fromId` / `fromTime`.
    CursorWithStart,
    /// `shardIndex` names a shard the group does not have (the message browser, the pending list).
    ShardOutOfRange {
        /// The shard asked for.
        shard: u32,
        /// The group's shard count.
        shard_count: u32,
    },
    /// `fromId` is not a record id.
    FromId {
        /// The value given.
        given: String,
    },
    /// `fromTime` is not an RFC 3339 time.
    FromTime {
        /// The value given.
        given: String,
    },
    /// `fromTime` is before 1970.
    FromTimeBefore1970 {
        /// The value given.
        given: String,
    },
    /// Both `fromId` and `fromTime`.
    TwoStarts,
    /// A number parameter out of its bounds.
    Number {
        /// The parameter.
        key: String,
        /// The value given.
        given: String,
        /// The smallest value.
        lo: u64,
        /// The largest value.
        hi: u64,
        /// The value when none is given.
        default: u64,
    },
    /// `field` is not `<name>=<value>`.
    Field {
        /// The value given.
        given: String,
    },
    /// `search` is empty.
    EmptySearch,
    /// A merged cursor that does not parse.
    MergedCursor {
        /// The value given.
        given: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A required Grafana parameter is missing.
    Required {
        /// The parameter.
        key: String,
    },
    /// A Grafana `shardIndex` that is neither an index nor an "all" selector.
    ShardSelector {
        /// The value given.
        given: String,
    },
    /// A Grafana `shardIndex` the group does not have.
    GrafanaShardOutOfRange {
        /// The shard asked for.
        shard: u32,
        /// The group's shard count.
        shard_count: u32,
    },
    /// A Grafana cursor starting `__rsc_` that is not one of the known ones.
    UnknownCursor {
        /// The value given.
        given: String,
    },
    /// `__rsc_tail__` without a page count.
    TailCursor {
        /// The value given.
        given: String,
    },
    /// `__rsc_tail__:<n>` reaching back too far.
    TailTooFar {
        /// The value given.
        given: String,
        /// The most records a tail reaches back.
        max_records: u64,
        /// The page size.
        limit: u32,
        /// The largest page count for this page size.
        most: u64,
    },
    /// A Grafana `all:` cursor that does not parse.
    AllCursor {
        /// The value given.
        given: String,
    },
}

impl std::fmt::Display for BadQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadQuery::Direction { given } => write!(
                f,
                "direction: {given:?} is not FORWARD (oldest first) or BACKWARD (newest first, the default)"
            ),
            BadQuery::Limit {
                given,
                max,
                default,
            } => write!(
                f,
                "limit: {given:?} is not a number of records from 1 to {max} (default {default})"
            ),
            BadQuery::PendingParameter { key } => write!(
                f,
                "{key}: not a parameter of the pending list (consumer, count, cursor)"
            ),
            BadQuery::PendingCount {
                given,
                max,
                default,
            } => write!(
                f,
                "count: {given:?} is not a number of entries from 1 to {max} (default {default})"
            ),
            BadQuery::HistoryMinutes { given, max } => write!(
                f,
                "minutes: {given:?} is not an integer from 1 to {max} (the minutes of history to return; the \
                 coordinator keeps {max})"
            ),
            BadQuery::Cursor { given } => write!(
                f,
                "cursor: {given:?} is not a stream record id <ms>-<seq>; pass the nextCursor of the previous page"
            ),
            BadQuery::CursorWithStart => f.write_str(
                "cursor: a cursor continues a walk; fromId/fromTime start one — give one of them",
            ),
            BadQuery::ShardOutOfRange { shard, shard_count } => write!(
                f,
                "shardIndex: {shard} is out of range; the group has shards 0..{} (shardCount {shard_count})",
                shard_count.saturating_sub(1)
            ),
            BadQuery::FromId { given } => write!(
                f,
                "fromId: {given:?} is not a stream record id <ms>-<seq> (or <ms>), e.g. 1764756000000-0"
            ),
            BadQuery::FromTime { given } => write!(
                f,
                "fromTime: {given:?} is not an RFC 3339 time (e.g. 2026-12-03T10:00:00Z or \
                 2026-12-03T11:00:00+01:00)"
            ),
            BadQuery::FromTimeBefore1970 { given } => write!(
                f,
                "fromTime: {given:?} is before 1970; stream ids start there"
            ),
            BadQuery::TwoStarts => f.write_str("fromId and fromTime: give one start, not both"),
            BadQuery::Number {
                key,
                given,
                lo,
                hi,
                default,
            } => write!(
                f,
                "{key}: {given:?} is not a number from {lo} to {hi} (default {default})"
            ),
            BadQuery::Field { given } => write!(
                f,
                "field: {given:?} is not <name>=<value> (e.g. field=orderId=42)"
            ),
            BadQuery::EmptySearch => {
                f.write_str("search: empty; give the text the payload must contain")
            }
            BadQuery::MergedCursor { given, why } => write!(
                f,
                "cursor: {given:?} is not <shard>=<record id>,… ({why}); pass the nextCursor of the previous page"
            ),
            BadQuery::Required { key } => write!(
                f,
                "{key}: the query parameter is required (e.g. ?streamPrefix=orders&consumerGroup=orders)"
            ),
            BadQuery::ShardSelector { given } => write!(
                f,
                "shardIndex: {given:?} is not a shard index or one of all, .*, __all, $__all"
            ),
            BadQuery::GrafanaShardOutOfRange { shard, shard_count } => write!(
                f,
                "shardIndex: {shard} is out of range; the group has shards 0..{}",
                shard_count.saturating_sub(1)
            ),
            BadQuery::UnknownCursor { given } => write!(
                f,
                "cursor: {given:?} is not a known cursor; use __rsc_last__, __rsc_tail__:<n>, a record id or the \
                 pageNextCursor of the previous page"
            ),
            BadQuery::TailCursor { given } => write!(
                f,
                "cursor: {given:?} is not __rsc_tail__:<n> with n a number of pages before the last one \
                 (__rsc_tail__:0 is the last page)"
            ),
            BadQuery::TailTooFar {
                given,
                max_records,
                limit,
                most,
            } => write!(
                f,
                "cursor: {given:?} reaches back more than {max_records} records; with limit={limit} ask for at \
                 most __rsc_tail__:{most}, or walk on with pageNextCursor"
            ),
            BadQuery::AllCursor { given } => write!(
                f,
                "cursor: {given:?} is not all:<shard>=<record id>,…; pass the pageNextCursor of the previous page"
            ),
        }
    }
}
