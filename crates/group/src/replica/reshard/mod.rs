//! Resharding on a replica, as sans-I/O flows: scaling a stream, an operator's rollback or force-complete,
//! and the reconciler's pass over a stream. Like the heartbeat flow, each returns the next store step
//! ([`Step`]) and takes its answer ([`Answer`]); the coordinator performs the steps through `rsc-store`
//! (`crates/coordinator/src/services/reshard/`), the simulation on its simulated store and shard streams, with pauses
//! and crashes between any two. The decisions between steps are the pure rules of [`crate::reshard`].
//!
//! Every step the flows write is a compare-and-set on a record (the stream record, a group), so a replica
//! that stops between two steps leaves a state any replica's next pass resumes: a PREPARING scale is
//! provisioned and switched again, boundaries are raised again (idempotent), switch points recorded once,
//! groups brought in line, drained shards released, gates opened, the migration completed.
//!
//! - [`scale::ScaleFlow`]: `POST …/scale` after its request is checked: record the migration (PREPARING),
//!   then [`switch::SwitchFlow`] — [`activate::Activate`] (provision the new shards for every group, wait for
//!   producer quiesce, switch routing, [`guard::Guard`]: raise every routing boundary and record an ordered
//!   switch's switch points) and bring every group in line;
//! - [`end::EndFlow`]: a rollback or force-complete: file it on the stream record (a rollback switches
//!   routing back and raises the boundaries again), then bring every group in line;
//! - [`pass::StreamPass`]: the reconciler's pass: resume a PREPARING scale, guard the switch, bring each
//!   group in line, feed it drain evidence ([`evidence`]) for removed shards and gated children's parents,
//!   and complete the stream's migration once every group is done ([`complete`]: retire removed shards);
//! - [`group_update::GroupUpdate`]: how a flow changes one group (read, apply, compare-and-set, again on a
//!   lost race): the shell drives it for [`Step::UpdateGroup`] (the coordinator under the group's lock).

pub mod activate;
pub mod complete;
pub mod end;
pub mod ensure;
pub mod evidence;
pub mod group_update;
pub mod guard;
pub mod pass;
pub mod scale;
pub mod switch;

use crate::migration::MigrationError;
use crate::model::{EpochOverflow, Migration, MigrationState};
use crate::quiesce::{ProducerSighting, QuiesceOutcome};
use crate::reshard::end::EndRefusal;
use crate::reshard::evidence::ConsumerGroupInfo;
use crate::reshard::sync::GroupChange;
use crate::stream::StreamRecord;
use crate::timing::Timing;
use rsc_protocol::ordering::BoundaryScale;
use rsc_protocol::stream_id::StreamId;
use std::collections::BTreeMap;
use std::ops::Range;

/// A stream record as a replica holds it: the record and the store revision it was read or written at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSnapshot {
    /// The stream record.
    pub record: StreamRecord,
    /// The store revision it was read or written at (the base of the next compare-and-set).
    pub revision: u64,
}

/// The coordinator's configuration the flows follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// The coordinator creates shard streams and their consumer groups (`coordinator.streams`).
    pub provisioning_enabled: bool,
    /// A completed scale-in deletes its drained shard streams.
    pub retire_removed_shards: bool,
    /// Drain evidence counts only this long after routing last changed.
    pub drain_grace_ms: i64,
    /// Producer quiesce: the producers seen within this window must have quiesced.
    pub producer_refresh_window_ms: i64,
    /// The group state machine's timing (a group change re-assigns shards).
    pub timing: Timing,
}

/// What the shell must do next. Groups are named by their consumer group (the flow's stream is the
/// shell's); every step is answered with the [`Answer`] of the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The live groups of the stream. → [`Answer::Groups`]
    ListGroups,
    /// The stream record. → [`Answer::Stream`]
    LoadStream,
    /// Create the stream record if it does not exist. → [`Answer::Created`]
    CreateStream(Box<StreamRecord>),
    /// Compare-and-set the stream record on revision `base`. → [`Answer::Written`]
    WriteStream {
        /// The revision the record must still be at.
        base: u64,
        /// The record to write.
        next: Box<StreamRecord>,
    },
    /// The group, fresh from the store. → [`Answer::Group`]
    LoadGroup(String),
    /// Change the group by driving a [`group_update::GroupUpdate`] with `change`. → [`Answer::Updated`]
    UpdateGroup {
        /// The consumer group to change.
        group: String,
        /// What to apply to it.
        change: GroupChange,
    },
    /// Create (idempotently) the shard streams `shards`, each group's Redis consumer group on them and
    /// their routing keys. → [`Answer::Provisioned`]
    Provision {
        /// The consumer groups to create on every shard stream.
        groups: Vec<String>,
        /// The shard indexes to provision.
        shards: Range<u32>,
    },
    /// Which of the shard keys `shards` exist. → [`Answer::Existing`]
    ExistingShards(Range<u32>),
    /// The Redis consumer groups on a shard stream (`XINFO GROUPS`). → [`Answer::ShardGroups`]
    ShardGroups(u32),
    /// A shard stream's last-generated id (`XINFO STREAM`). → [`Answer::LastId`]
    LastGeneratedId(u32),
    /// How many entries `group` has pending on `shard` up to `point` (counting at most one). →
    /// [`Answer::Pending`]
    PendingUpTo {
        /// The shard index.
        shard: u32,
        /// The Redis consumer group.
        group: String,
        /// The stream id up to which (inclusive) pending entries count.
        point: String,
    },
    /// Raise the routing boundary of every shard of `scale` ([`crate::reshard::record::raised_shards`]) to
    /// its version, annotated with it. → [`Answer::Raised`]
    RaiseBoundaries(BoundaryScale),
    /// Delete the shard streams `shards` where every consumer group read everything. → [`Answer::Done`]
    RetireShards(Range<u32>),
    /// The stream's producers as producer quiesce sees them. → [`Answer::Sightings`]
    ReadSightings,
    /// Publish the plain appends after the switch of the old shards `0..old_shards` (a gauge). →
    /// [`Answer::Done`]
    WatchAppends {
        /// How many old shards (`0..old_shards`) to watch.
        old_shards: u32,
    },
    /// Something to log, count or audit. → [`Answer::Done`]
    Report(Event),
}

/// The answer to a [`Step`].
#[derive(Debug, Clone)]
pub enum Answer<S> {
    /// The live groups of the stream, by consumer group.
    Groups(Result<Vec<String>, StoreFailed>),
    /// None: there is no stream record.
    Stream(Result<Option<StreamSnapshot>, StoreFailed>),
    /// The record created; None when one existed already.
    Created(Result<Option<StreamSnapshot>, StoreFailed>),
    /// The record as written; None when the revision had moved (a lost race).
    Written(Result<Option<StreamSnapshot>, StoreFailed>),
    /// The group as the shell holds it.
    Group(Result<S, StoreFailed>),
    /// The group as written (or as found, when the change had nothing to do).
    Updated(Result<S, UpdateFailed>),
    /// Err: why provisioning failed, for people.
    Provisioned(Result<(), String>),
    /// The shard indexes asked about whose stream keys exist.
    Existing(Result<Vec<u32>, StoreFailed>),
    /// None: the shard stream does not exist.
    ShardGroups(Result<Option<Vec<ConsumerGroupInfo>>, StoreFailed>),
    /// None: unknown (no stream, or the store could not say).
    LastId(Option<StreamId>),
    /// None: unknown (no such group, or the store could not say).
    Pending(Option<i64>),
    /// The switch point of each shard whose boundary now stands at the scale's version (a shard whose raise
    /// failed, or whose boundary a later switch raised further, is left out).
    Raised(BTreeMap<u32, String>),
    /// The stream's producers, each with what it last reported.
    Sightings(Result<Vec<ProducerSighting>, StoreFailed>),
    /// The step was performed (or, for a report, taken note of).
    Done,
}

/// A step failed at the store; the shell knows why (and reports that error if the flow gives up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreFailed;

/// Why a group change was not written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateFailed {
    /// The store failed (or the group is gone); the shell knows why.
    Store,
    /// Lost the compare-and-set [`crate::replica::MAX_CAS_ATTEMPTS`] times.
    KeptChanging,
    /// The change itself was refused (an epoch would overflow, an end that is not allowed).
    Change(MigrationError),
}

/// Why a resharding flow gave up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReshardError {
    /// The store failed; the shell knows why.
    #[error("the store failed")]
    Store,
    /// The stream record's compare-and-set lost every attempt to other writers; nothing of this step was
    /// written, the caller may retry.
    #[error("stream record kept changing; retry")]
    StreamKeptChanging,
    /// The stream record disappeared while the flow ran (the stream was deleted).
    #[error("stream vanished")]
    StreamVanished,
    /// A group's compare-and-set lost every attempt to other writers; the caller may retry.
    #[error("the group kept changing; retry")]
    GroupKeptChanging,
    /// Provisioning the new shards failed (why, for people); nothing was switched.
    #[error("{0}")]
    Provisioning(String),
    /// A scale-out's new shard keys exist and were not provisioned by the coordinator.
    #[error("shard keys {0:?} exist and were not created by the coordinator")]
    ForeignShardKeys(Vec<u32>),
    /// Another migration is active.
    #[error("migration {} is still active", .0.resharding_id)]
    InProgress(Box<Migration>),
    /// A group refused the migration change.
    #[error(transparent)]
    Change(#[from] MigrationError),
    /// An epoch or version would overflow.
    #[error(transparent)]
    EpochOverflow(#[from] EpochOverflow),
    /// An operator's end of the migration was refused.
    #[error(transparent)]
    Refused(#[from] EndRefusal),
    /// A step was answered with the answer to another step (a bug in the shell).
    #[error("a resharding step was answered out of step")]
    OutOfStep,
}

impl From<UpdateFailed> for ReshardError {
    fn from(e: UpdateFailed) -> Self {
        match e {
            UpdateFailed::Store => ReshardError::Store,
            UpdateFailed::KeptChanging => ReshardError::GroupKeptChanging,
            UpdateFailed::Change(e) => ReshardError::Change(e),
        }
    }
}

/// Things worth logging, counting or auditing, each reported once when it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A quiesced scale waits for these producers (sorted).
    QuiesceWaiting {
        /// The waiting migration.
        resharding_id: String,
        /// The ids of the producers that have not quiesced yet.
        pending: Vec<String>,
    },
    /// A quiesced scale switched routing (audit it, count it by outcome).
    QuiesceSwitched {
        /// The migration as switched.
        migration: Box<Migration>,
        /// Whether every producer quiesced or the timeout ran out, and when.
        outcome: QuiesceOutcome,
    },
    /// An ordered switch's switch points were recorded on the stream's migration.
    SwitchPointsRecorded {
        /// The migration.
        resharding_id: String,
        /// How many shards' switch points were recorded.
        shards: usize,
    },
    /// Recording them failed at the store (the reconciler retries).
    SwitchPointsNotRecorded {
        /// The migration.
        resharding_id: String,
    },
    /// The reconciler could not resume a PREPARING migration.
    ResumeFailed(ReshardError),
    /// The stream's migration completed (every group done; removed shards retired).
    MigrationComplete {
        /// The migration.
        resharding_id: String,
    },
    /// An operator's rollback or force-complete was filed on the stream record.
    EndedByOperator {
        /// The migration.
        resharding_id: String,
        /// How it ended: `ROLLED_BACK`, `FORCE_COMPLETED`, or `ABORTED` (ended before routing switched).
        state: MigrationState,
    },
}

/// What a flow says after an answer: the next step, or its result.
#[derive(Debug)]
pub enum Progress<O> {
    /// Perform this step and answer it.
    Step(Step),
    /// The flow is finished, with this result.
    Done(O),
}

/// A resharding flow: takes the answer to the step it returned last (and the replica's estimate of the
/// store's time), returns the next step or its result.
pub trait Flow<S> {
    /// What the flow ends with.
    type Output;
    /// Takes the answer to the last step, returns the next step or the result.
    fn answer(&mut self, answer: Answer<S>, now_ms: i64) -> Progress<Self::Output>;
}
