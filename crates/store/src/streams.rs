//! Stream records: one hash per stream prefix, holding the coordinator's record of the stream (shard
//! count, the active migration, how far it provisioned) as opaque JSON with a revision.
//!
//! The hash is laid out as a group's metadata (`aggregate`, `revision`, `schemaVersion`,
//! `layoutVersion`, `updatedAt`, validated the same way on load) but has no leases and no progress:
//! create, compare-and-set by revision and delete are one script each on that one key
//! (`lua/record_*.lua`, with the shared prelude). Each takes the stream's
//! prefix and names the key itself (`Keyspace::stream_record`).

use std::sync::LazyLock;

use redis::Script;

use crate::error::StoreError;
use crate::outcome::{CasOutcome, CreateOutcome, DeleteOutcome, StoredGroup};
use crate::scripts::PRELUDE;
use crate::store::Store;

fn with_prelude(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}{body}"))
}

static CREATE: LazyLock<Script> =
    LazyLock::new(|| with_prelude(include_str!("lua/record_create.lua")));
static CAS: LazyLock<Script> = LazyLock::new(|| with_prelude(include_str!("lua/record_cas.lua")));
static DELETE: LazyLock<Script> =
    LazyLock::new(|| with_prelude(include_str!("lua/record_delete.lua")));

impl Store {
    /// Reads and validates a stream record. `Ok(None)` if there is none; an error (never a guess) if
    /// it cannot be trusted or was written by a newer schema/layout.
    pub async fn stream_record_load(
        &self,
        stream_prefix: &str,
    ) -> Result<Option<StoredGroup>, StoreError> {
        let key = &self.keyspace().stream_record(stream_prefix);
        self.load_hash(key).await
    }

    /// Creates the record at revision 1 unless it exists.
    pub async fn stream_record_create(
        &self,
        stream_prefix: &str,
        record_json: &str,
        updated_at: &str,
    ) -> Result<CreateOutcome, StoreError> {
        let key = &self.keyspace().stream_record(stream_prefix);
        let mut call = CREATE.prepare_invoke();
        call.key(key).arg(record_json).arg(updated_at);
        let reply = self.run_on(&call, key).await?;
        match reply.status.as_str() {
            "CREATED" => Ok(CreateOutcome::Created {
                revision: 1,
                now_ms: reply.now_ms,
            }),
            "EXISTS" => Ok(CreateOutcome::AlreadyExists),
            _ => Err(reply.unknown_status()),
        }
    }

    /// Compare-and-set: writes `record_json` as revision `expected_revision + 1` if the record is
    /// still at `expected_revision`. Answers [`CasOutcome::Written`] or [`CasOutcome::Conflict`].
    pub async fn stream_record_cas(
        &self,
        stream_prefix: &str,
        expected_revision: u64,
        record_json: &str,
        updated_at: &str,
    ) -> Result<CasOutcome, StoreError> {
        let key = &self.keyspace().stream_record(stream_prefix);
        let mut call = CAS.prepare_invoke();
        call.key(key)
            .arg(expected_revision)
            .arg(record_json)
            .arg(updated_at);
        let reply = self.run_on(&call, key).await?;
        reply
            .written_or_conflict()?
            .ok_or_else(|| reply.unknown_status())
    }

    /// Deletes the record if it is at `expected_revision`.
    pub async fn stream_record_delete(
        &self,
        stream_prefix: &str,
        expected_revision: u64,
    ) -> Result<DeleteOutcome, StoreError> {
        let key = &self.keyspace().stream_record(stream_prefix);
        let mut call = DELETE.prepare_invoke();
        call.key(key).arg(expected_revision);
        let reply = self.run_on(&call, key).await?;
        match reply.status.as_str() {
            "DELETED" => Ok(DeleteOutcome::Deleted),
            "CONFLICT" => Ok(DeleteOutcome::Conflict {
                current: reply.conflict_revision()?,
            }),
            _ => Err(reply.unknown_status()),
        }
    }
}
