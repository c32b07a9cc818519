//! Backup and restore of the records that define groups and streams: group metadata hashes, stream
//! records and the group index (`rsc backup` / `rsc restore`).
//!
//! Reading uses the same validated loads as the coordinator (a damaged hash is an error, never copied into a
//! backup). Writing back is one script per key (`lua/restore_record.lua`) that first checks the key is still
//! in the state the restore looked at (absent, or at the revision it compared against the backup), so a
//! coordinator writing in between makes the restore stop instead of being overwritten. A group's restore
//! also clears its leases, progress and out-of-line aggregate and leases its live members afresh in the same
//! script (the keys share the group's hash tag). Index entries are written as they were with plain HSET: the index is
//! rebuildable and never part of a script. A backup reads with the
//! coordinator's own loads ([`Store::load`], [`Store::stream_record_load`]); every key is named by the store from
//! the ids it is given.

use std::sync::LazyLock;

use redis::Script;

use crate::error::StoreError;
use crate::group_name::GroupName;
use crate::metadata::{LAYOUT_VERSION, SCHEMA_VERSION};
use crate::scripts::PRELUDE;
use crate::store::Store;

static RESTORE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{PRELUDE}{}",
        include_str!("lua/restore_record.lua")
    ))
});

/// One metadata-shaped hash to write back: its revision, document and `updatedAt` as backed up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoredHash<'a> {
    /// The revision the key must be at now (`None`: the key must not exist); checked in the script.
    pub expect_current: Option<u64>,
    pub revision: u64,
    pub aggregate: &'a str,
    pub updated_at: &'a str,
}

/// The answer to a restore write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreOutcome {
    /// Written (for a group: with its leases cleared and its live members leased), at this Redis time.
    Restored { now_ms: i64 },
    /// The key is no longer in the state the restore checked (`current` is its revision now, `None` if it
    /// has none). Nothing was written.
    Changed { current: Option<String> },
}

impl Store {
    /// Every raw entry of the group index as (field: a group's metadata key, value JSON), sorted by field:
    /// the backup keeps them byte for byte, entries this build would not parse included.
    pub async fn backup_index_entries(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.index_list(&self.keyspace().group_index()).await
    }

    /// Writes an index entry back as it was backed up (`field` and `value_json` as
    /// [`Store::backup_index_entries`] read them).
    pub async fn restore_index_entry(
        &self,
        field: &str,
        value_json: &str,
    ) -> Result<(), StoreError> {
        self.index_put(&self.keyspace().group_index(), field, value_json)
            .await
    }

    /// Writes a stream record back (one key), if it is still as `record.expect_current` says.
    pub async fn restore_stream_record(
        &self,
        stream_prefix: &str,
        record: &RestoredHash<'_>,
    ) -> Result<RestoreOutcome, StoreError> {
        let key = &self.keyspace().stream_record(stream_prefix);
        let mut call = RESTORE.prepare_invoke();
        call.key(key);
        hash_args(&mut call, record, 0);
        self.restore_reply(&call, key).await
    }

    /// Writes a group's metadata back, if it is still as `record.expect_current` says, and in the same
    /// script clears its leases and progress and gives each of `live_members` a lease of `lease_ttl_ms` from
    /// Redis time.
    pub async fn restore_group(
        &self,
        group: &GroupName,
        record: &RestoredHash<'_>,
        lease_ttl_ms: i64,
        live_members: &[String],
    ) -> Result<RestoreOutcome, StoreError> {
        if lease_ttl_ms <= 0 {
            return Err(StoreError::InvalidArgument {
                detail: format!("lease_ttl_ms must be positive, got {lease_ttl_ms}"),
            });
        }
        let keys = &self.keyspace().group_of(group);
        let mut call = RESTORE.prepare_invoke();
        crate::store::group_keys_with_aggregate(&mut call, keys);
        hash_args(&mut call, record, lease_ttl_ms);
        call.arg(live_members);
        self.restore_reply(&call, &keys.metadata).await
    }

    async fn restore_reply(
        &self,
        call: &redis::ScriptInvocation<'_>,
        key: &str,
    ) -> Result<RestoreOutcome, StoreError> {
        let reply = self.run_on(call, key).await?;
        match reply.status.as_str() {
            "RESTORED" => Ok(RestoreOutcome::Restored {
                now_ms: reply.now_ms,
            }),
            "CHANGED" => {
                let current = reply.text(0)?;
                Ok(RestoreOutcome::Changed {
                    current: (!current.is_empty()).then_some(current),
                })
            }
            _ => Err(reply.unknown_status()),
        }
    }
}

fn hash_args(call: &mut redis::ScriptInvocation<'_>, record: &RestoredHash<'_>, lease_ttl_ms: i64) {
    call.arg(
        record
            .expect_current
            .map(|r| r.to_string())
            .unwrap_or_default(),
    )
    .arg(record.revision)
    .arg(record.aggregate)
    .arg(record.updated_at)
    .arg(SCHEMA_VERSION)
    .arg(LAYOUT_VERSION)
    .arg(lease_ttl_ms);
}
