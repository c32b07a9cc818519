//! Online resharding: scale a stream's shard count, drain removed shards, roll back, force-complete.
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
//!
//! With `producerQuiesce`, step 3 waits until the producers seen in the last refresh window have quiesced,
//! or the quiesce times out (`quiesce.rs`).
//!
//! Split by concern: `record.rs` the stream record and group updates, `ops.rs` the scale / rollback /
//! force-complete operations, `drain.rs` drain evidence and migration completion, `views.rs` the
//! responses (the contract's in `rsc_protocol::wire::resharding`, the migration detail here), `ordering.rs`
//! ordered streams (the option, the scales they accept, the evidence that opens a child shard's gate),
//! `boundary.rs` routing boundaries and plain appends after a switch.

mod boundary;
mod drain;
mod ops;
mod ordering;
mod quiesce;
mod record;
mod views;

pub use quiesce::{QuiesceView, SWITCH_AUDIT_ACTION, validate_producer_id};

pub use boundary::SwitchedShard;
pub use ordering::{OrderingGate, ParentProgress};
use views::migration_state_in_groups;
pub use views::{MigrationDetail, RemovedShard};

use crate::cache::{Cached, GroupName};
use crate::coordinator::Resharding;
use crate::coordinator::{Commit, MAX_CAS_ATTEMPTS};
use crate::domain_error::CoordError;
use crate::error::store_error_text;
use crate::provision::{existing_shards, provision};
use crate::views::migration_response;
use rsc_group::heartbeat::Transition;
use rsc_group::migration::{self, MigrationError};
use rsc_group::model::{Group, ShardSet};
use rsc_group::model::{Migration, MigrationState};
use rsc_group::stream::StreamRecord;
use rsc_protocol::names::{self, shard_stream_key};
use rsc_protocol::validate;
use rsc_protocol::wire::resharding::{MigrationResponse, ScaleResponse};
use rsc_protocol::wire::{MigrationActionRequest, ScaleRequest};
use rsc_store::IndexState;
use rsc_store::{CasOutcome, CreateOutcome, RetireOutcome, parse_stream_id};

/// A stream record and the revision it was read at.
#[derive(Debug, Clone)]
pub struct CachedStream {
    pub record: StreamRecord,
    pub revision: u64,
}

impl From<MigrationError> for CoordError {
    fn from(e: MigrationError) -> Self {
        match e {
            MigrationError::NotFound(id) => CoordError::MigrationNotFound(format!(
                "migration {id} does not exist for this group"
            )),
            MigrationError::NotAllowed(why) => CoordError::RollbackNotAllowed(why),
            MigrationError::EpochOverflow(e) => e.into(),
        }
    }
}
