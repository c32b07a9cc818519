//! 409 `STATE_VERSION_CONFLICT`: what kept changing, or changed since it was reviewed.

use rsc_group::replica::reshard::ReshardError;

/// What changed under the operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    /// The stream record lost every compare-and-set attempt.
    StreamKeptChanging,
    /// A group lost every compare-and-set attempt of a resharding step.
    GroupKeptChanging,
    /// The group lost every attempt while it was being deleted.
    DeleteKeptChanging,
    /// The group lost every attempt while its suspicion was being dismissed.
    DismissKeptChanging,
    /// The group lost every attempt while it was being recreated.
    RecreateKeptChanging,
    /// The rollback suspicion received evidence after the one the operator reviewed.
    SuspicionChanged {
        /// The suspicion's `updatedAt` now (epoch ms).
        updated_at_ms: i64,
    },
    /// An offset reset found a shard stream or its Redis consumer group missing.
    ShardMissing {
        /// The shard stream's key.
        key: String,
        /// The consumer group.
        group: String,
    },
    /// A quiesce report from a producer that has not fetched routing recently.
    ProducerUnseen {
        /// The producer id.
        producer: String,
        /// The stream prefix.
        stream: String,
    },
    /// An offset reset lost every attempt to write its hold.
    ResetHoldKeptChanging,
    /// An offset reset's own hold ended (or was removed, or replaced by another reset's) before every shard
    /// was moved.
    ResetHoldEnded {
        /// The stream prefix.
        stream: String,
        /// The consumer group.
        group: String,
    },
    /// An offset reset lost every attempt to extend its hold.
    ResetExtendKeptChanging,
    /// An offset reset lost every attempt to lift its hold.
    ResetLiftKeptChanging,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Conflict::StreamKeptChanging => ReshardError::StreamKeptChanging.fmt(f),
            Conflict::GroupKeptChanging => ReshardError::GroupKeptChanging.fmt(f),
            Conflict::DeleteKeptChanging => {
                f.write_str("the group kept changing while it was being deleted; retry")
            }
            Conflict::DismissKeptChanging => f.write_str(
                "the group kept changing while the suspicion was being dismissed; retry",
            ),
            Conflict::RecreateKeptChanging => {
                f.write_str("the group kept changing while it was being recreated; retry")
            }
            Conflict::SuspicionChanged { updated_at_ms } => write!(
                f,
                "the suspicion received evidence after the one reviewed (its updatedAt is now {}): review the \
                 group's metadataDurability again before dismissing it",
                crate::runtime::clock::iso_ms(*updated_at_ms)
            ),
            Conflict::ShardMissing { key, group } => write!(
                f,
                "shard stream {key:?} or its consumer group {group:?} is missing; a producer routing request \
                 provisions it again — then retry"
            ),
            Conflict::ProducerUnseen { producer, stream } => write!(
                f,
                "producer {producer:?} has not fetched routing of stream {stream:?} (with a MEMBER principal) \
                 recently; a producer reports quiesced after fetching routing with its producerId"
            ),
            Conflict::ResetHoldKeptChanging => f.write_str(
                "the group kept changing while the reset tried to hold its shards; retry",
            ),
            Conflict::ResetHoldEnded { stream, group } => write!(
                f,
                "the reset's hold on the shards of {stream}/{group} was gone before every shard was moved (it \
                 ended, or the group was deleted or recreated, or Redis lost it), so a member may have been \
                 granted them"
            ),
            Conflict::ResetExtendKeptChanging => f.write_str(
                "the group kept changing while the reset extended its hold; check the positions and retry",
            ),
            Conflict::ResetLiftKeptChanging => {
                f.write_str("the group kept changing while the reset lifted its hold")
            }
        }
    }
}
