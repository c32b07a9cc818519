//! 400s of resharding requests: scale, ordering, producer quiesce.

use rsc_group::replica::reshard::ReshardError;

/// What is wrong with a scale, ordering or quiesce request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadReshard {
    /// A scale without `targetShardCount`.
    TargetRequired,
    /// An ordering request without `ordering`.
    OrderingRequired,
    /// `producerQuiesce` without `timeoutMs`.
    QuiesceTimeoutRequired,
    /// A `producerQuiesce.timeoutMs` of zero or less.
    QuiesceTimeoutNotPositive {
        /// The value given.
        given: i64,
    },
    /// A `producerQuiesce.timeoutMs` above the limit.
    QuiesceTimeoutTooLong {
        /// The value given.
        given: i64,
    },
    /// A producer id that is not 1–`max` visible ASCII characters.
    ProducerId {
        /// The field it came in.
        field: String,
        /// The value given.
        given: String,
        /// The longest producer id.
        max: usize,
    },
    /// A quiesce report without `reshardingId`.
    ReshardingIdRequired,
    /// A quiesce report without `observedRoutingVersion`.
    ObservedRoutingVersionRequired,
    /// The stream's record vanished while a resharding flow ran.
    StreamVanished,
}

impl std::fmt::Display for BadReshard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadReshard::TargetRequired => {
                f.write_str("targetShardCount: is required (0 drains and removes every shard)")
            }
            BadReshard::OrderingRequired => f.write_str("ordering: is required (\"KEY\" or \"NONE\")"),
            BadReshard::QuiesceTimeoutRequired => f.write_str(
                "producerQuiesce.timeoutMs: is required (how long to wait for producers before switching \
                 routing anyway, in milliseconds, at most 600000)",
            ),
            BadReshard::QuiesceTimeoutNotPositive { given } => write!(
                f,
                "producerQuiesce.timeoutMs: {given} must be positive (milliseconds, at most 600000)"
            ),
            BadReshard::QuiesceTimeoutTooLong { given } => write!(
                f,
                "producerQuiesce.timeoutMs: {given} is more than 600000 (10 minutes); producers cannot be paused \
                 that long"
            ),
            BadReshard::ProducerId { field, given, max } => write!(
                f,
                "{field}: {given:?} must be 1–{max} visible ASCII characters (no spaces)"
            ),
            BadReshard::ReshardingIdRequired => f.write_str(
                "reshardingId: is required (the routing answer's quiesce.reshardingId)",
            ),
            BadReshard::ObservedRoutingVersionRequired => f.write_str(
                "observedRoutingVersion: is required (the routingVersion of the routing this producer holds)",
            ),
            BadReshard::StreamVanished => ReshardError::StreamVanished.fmt(f),
        }
    }
}
