//! Online resharding in the coordinator: the performer of the replica core's resharding flows
//! (`rsc_group::replica::reshard`), the operations that start them, and the views of a migration.
//!
//! The shard count belongs to the stream record (`<kp>:{<p>}:stream`), so routing for every group of a
//! stream is always identical. A scale runs as recorded steps, each resumable from Redis:
//! 1. the stream record gets the migration in PREPARING (compare-and-set) — unless a scale-out's new shard
//!    keys already exist and were not provisioned by the coordinator: like create, a scale never adopts a key
//!    someone else created (409 `STREAM_PREFIX_ALREADY_EXISTS`, nothing recorded or provisioned);
//! 2. every new shard stream and its Redis consumer group is provisioned for every group of the stream
//!    (a failure answers 503 `REDIS_STREAM_PROVISIONING_FAILED`, nothing is switched, a retry resumes);
//! 3. the stream record switches to the new shard count (ACTIVE) in one write — routing changes here;
//! 4. each group adopts the migration (`rsc_group::migration::adopt`), here or, after a crash, in the
//!    reconciler or on the next routing request;
//! 5. the reconciler collects drain evidence for removed shards (`XINFO GROUPS`: pending 0 and a known lag of
//!    0 for every Redis consumer group on the key), lets them leave the assignment, and completes the
//!    migration; when every group is done the stream's migration ends and removed shard streams are retired
//!    (and the record stops counting the keys that are gone as its own).
//!
//! Right after step 3 every shard's routing boundary is raised to the new routing version, so SDK producers
//! still holding the old routing are refused and retry on the right shard (guarded publish, `boundary.rs`).
//! With `producerQuiesce`, step 3 waits until the producers seen in the last refresh window have quiesced,
//! or the quiesce times out (`quiesce.rs`).
//!
//! What happens in which order, what each answer means, when to retry and when to give up is the replica
//! core's (`rsc_group::replica::reshard`: `ScaleFlow`, `EndFlow`, `StreamPass`, with the pure rules of
//! `rsc_group::reshard`), so the deterministic simulation runs the same steps with crashes and pauses
//! between any two. Here each step is performed through `rsc-store` (`perform.rs`).
//!
//! Split by concern: `perform.rs` the steps and the driver, `record.rs` the stream record and group updates,
//! `ops.rs` the scale / rollback / force-complete operations, `drain.rs` the reconciler's stream pass and the
//! drain evidence reads, `views.rs` the responses (the contract's in `rsc_protocol::wire::resharding`, the
//! migration detail here), `ordering.rs` ordered streams (the option, the gates view), `boundary.rs`
//! routing boundaries and plain appends after a switch, `quiesce.rs` producer quiesce, `hold.rs` why a
//! migration has not ended in a group and the ways out (`heldBy`).

mod boundary;
mod drain;
mod hold;
mod ops;
mod ordering;
mod perform;
mod quiesce;
mod record;
mod views;

pub use quiesce::{QuiesceView, SWITCH_AUDIT_ACTION, validate_producer_id};

pub use boundary::SwitchedShard;
pub use hold::{MigrationHold, UnreadShard, WayOut};
pub use ordering::{OrderingGate, ParentProgress};
pub use views::{MigrationDetail, RemovedShard};

use crate::domain_error::{
    BadReshard, Conflict, CoordError, Internal, MigrationBusy, Provisioning, StreamExists,
    Unavailable,
};
use crate::runtime::shown_keys;
use rsc_group::replica::reshard::ReshardError;
use rsc_store::Shard;

/// A stream record and the revision it was read at.
pub use rsc_group::replica::reshard::StreamSnapshot as CachedStream;

/// The coordinator's error for a resharding flow that gave up on stream `prefix`: the store's own error when
/// a step failed there (`failure`, kept by the performer), else the flow's reason in the domain's words.
/// (`InProgress` is said by the scale, which knows its groups.)
fn coord_error(prefix: &str, e: ReshardError, failure: Option<CoordError>) -> CoordError {
    match e {
        ReshardError::Store => failure.unwrap_or_else(|| Unavailable::Unexplained.into()),
        ReshardError::StreamKeptChanging => Conflict::StreamKeptChanging.into(),
        ReshardError::GroupKeptChanging => Conflict::GroupKeptChanging.into(),
        ReshardError::StreamVanished => BadReshard::StreamVanished.into(),
        ReshardError::Provisioning(cause) => Provisioning::Scale { cause }.into(),
        ReshardError::ForeignShardKeys(found) => StreamExists::ForeignShardKeys {
            stream: prefix.to_owned(),
            keys: found
                .iter()
                .map(|s| shown_keys::shard_stream(&Shard::new(prefix, *s)))
                .collect(),
            max_target: found.first().copied().unwrap_or_default(),
        }
        .into(),
        ReshardError::InProgress(m) => MigrationBusy::Scale {
            id: m.resharding_id.clone(),
            from: m.from_shard_count,
            to: m.to_shard_count,
            state: m.state,
            in_groups: Vec::new(),
        }
        .into(),
        ReshardError::Change(e) => e.into(),
        ReshardError::EpochOverflow(e) => e.into(),
        ReshardError::Refused(e) => e.into(),
        ReshardError::OutOfStep => Internal::Reshard(e).into(),
    }
}
