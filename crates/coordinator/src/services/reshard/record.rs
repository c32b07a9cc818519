//! The stream record as the coordinator keeps it (load, create, reset, forget, compare-and-set through
//! `rsc-store`), the stream's live groups, and bringing a group in line with its stream's migration.

use super::CachedStream;
use super::perform::Performer;
use crate::domain_error::{Conflict, CoordError, Corrupt};
use crate::http::error::store_error_text;
use crate::runtime::cache::{Cached, GroupName};
use crate::runtime::coordinator::{MAX_CAS_ATTEMPTS, Resharding};
use rsc_group::replica::reshard::ensure::EnsureStream;
use rsc_group::reshard::sync::GroupChange;
use rsc_group::stream::StreamRecord;
use rsc_store::{CasOutcome, CreateOutcome, IndexState};

impl Resharding<'_> {
    pub async fn load_stream(&self, prefix: &str) -> Result<Option<CachedStream>, CoordError> {
        let Some(stored) = self.store().stream_record_load(prefix).await.map_err(|e| {
            self.note_store_error(&e);
            CoordError::from(e)
        })?
        else {
            return Ok(None);
        };
        let record = StreamRecord::from_json(&stored.aggregate).map_err(|e| {
            Corrupt::StreamRecordUnreadable {
                key: self.shown_stream_record_key(prefix),
                cause: e.to_string(),
            }
        })?;
        Ok(Some(CachedStream {
            record,
            revision: stored.revision,
        }))
    }

    /// Creates the stream record `record` unless one exists (then None).
    pub(super) async fn create_stream(
        &self,
        prefix: &str,
        record: StreamRecord,
    ) -> Result<Option<CachedStream>, CoordError> {
        self.publish_routing_ceilings(prefix, &record).await?;
        let created = self
            .store()
            .stream_record_create(
                prefix,
                &record.to_json(),
                &crate::runtime::clock::iso_ms(record.created_at_ms),
            )
            .await
            .map_err(CoordError::from)?;
        Ok(match created {
            CreateOutcome::Created { revision, .. } => {
                self.announce_change(prefix, "").await;
                Some(CachedStream { record, revision })
            }
            _ => None,
        })
    }

    /// The stream record, created from the stream's groups' shard count if it does not exist yet.
    pub async fn ensure_stream(
        &self,
        prefix: &str,
        shard_count: u32,
    ) -> Result<CachedStream, CoordError> {
        let mut p = Performer::on(prefix);
        let (mut flow, first) = EnsureStream::start(prefix, shard_count);
        self.drive(&mut p, &mut flow, first)
            .await
            .map_err(|e| p.error(e))
    }

    /// Starts the stream record afresh for the first group of a stream (a record left by an earlier
    /// lifecycle of the same prefix must not carry its shard count over).
    pub async fn reset_stream(
        &self,
        prefix: &str,
        shard_count: u32,
    ) -> Result<CachedStream, CoordError> {
        for _ in 0..MAX_CAS_ATTEMPTS {
            let Some(old) = self.load_stream(prefix).await? else {
                return self.ensure_stream(prefix, shard_count).await;
            };
            if old.record.shard_count == shard_count && old.record.active_migration.is_none() {
                return Ok(old);
            }
            let fresh = StreamRecord::new(prefix, shard_count, self.clock().now_ms());
            if let Some(s) = self.write_stream(prefix, old.revision, fresh).await? {
                return Ok(s);
            }
        }
        Err(Conflict::StreamKeptChanging.into())
    }

    /// Deletes the stream record, and the producer sightings of producer quiesce, once the stream has no
    /// group left.
    pub async fn forget_stream_if_unused(&self, prefix: &str) {
        if !self.stream_groups(prefix).await.is_ok_and(|g| g.is_empty()) {
            return;
        }
        if let Ok(Some(s)) = self.load_stream(prefix).await {
            let _ = self.store().stream_record_delete(prefix, s.revision).await;
        }
        if let Err(e) = self.store().producers_clear(prefix).await {
            tracing::warn!(stream = prefix, error = %store_error_text(&e), "producer sightings not deleted");
        }
    }

    /// Compare-and-sets a stream record read at revision `base`. Ok(None) = lost the race, decide again.
    pub(super) async fn write_stream(
        &self,
        prefix: &str,
        base: u64,
        mut next: StreamRecord,
    ) -> Result<Option<CachedStream>, CoordError> {
        next.store_revision =
            base.checked_add(1)
                .ok_or_else(|| Corrupt::StreamRevisionExhausted {
                    key: self.shown_stream_record_key(prefix),
                })?;
        next.updated_at_ms = self.clock().now_ms();
        // A write that publishes a new routing version raises the shards' ceilings to it first.
        let publishes = match self.load_stream(prefix).await? {
            Some(current) => current.record.routing_version != next.routing_version,
            None => true,
        };
        if publishes {
            self.publish_routing_ceilings(prefix, &next).await?;
        }
        match self
            .store()
            .stream_record_cas(
                prefix,
                base,
                &next.to_json(),
                &crate::runtime::clock::iso_ms(next.updated_at_ms),
            )
            .await
            .map_err(CoordError::from)?
        {
            CasOutcome::Written { revision, now_ms } => {
                self.clock().observe(now_ms);
                self.announce_change(prefix, "").await;
                Ok(Some(CachedStream {
                    record: next,
                    revision,
                }))
            }
            _ => Ok(None),
        }
    }

    /// Live groups of a stream, by name.
    pub async fn stream_groups(&self, prefix: &str) -> Result<Vec<GroupName>, CoordError> {
        Ok(self
            .index_entries()
            .await?
            .into_iter()
            .filter(|e| e.stream_prefix == prefix && e.state == IndexState::Live)
            .map(|e| GroupName::new(&e.stream_prefix, &e.consumer_group))
            .collect())
    }

    /// Brings a group in line with its stream record (`rsc_group::reshard::sync::sync_to_stream`: adopt the
    /// active migration, on an ordered stream once its switch points are recorded, or apply the rollback /
    /// force-complete the stream recorded, and take the stream's routing version with it). Used by create,
    /// routing and, through the flows, scale, end and the reconciler.
    pub async fn sync_group_to_stream(
        &self,
        name: &GroupName,
        stream: &StreamRecord,
    ) -> Result<Cached, CoordError> {
        self.update_group(name, GroupChange::SyncToStream(Box::new(stream.clone())))
            .await
    }
}
