//! Looking groups up: the group index (which groups exist, and in which lifecycle state) and loading a
//! group that a request names, with the 404 or fail-closed answer when it is missing. Every service uses
//! these, so they belong to the runtime.

use crate::domain_error::CoordError;
use crate::runtime::cache::{Cached, GroupName};
use crate::runtime::coordinator::Coordinator;
use rsc_store::{IndexEntry, IndexState};

impl Coordinator {
    /// All groups the index lists, with their index state, sorted by stream prefix then group.
    pub async fn index_entries(&self) -> Result<Vec<IndexEntry>, CoordError> {
        self.store().group_index_list().await.map_err(|e| {
            self.note_store_error(&e);
            CoordError::from(e)
        })
    }

    /// The index entries that creating `name` needs: those of its stream. A stream with no record has no
    /// live group (its record is written when its first group goes live, and removed once its last group
    /// is deleted), so then only `name`'s own entry is read (one `HGET`: a create that resumes finds its
    /// `CREATING` entry); otherwise the whole index. Creating thousands of streams one after another would
    /// read the whole index each time (O(groups²)); a further group of an existing stream still does.
    /// Like the whole-index read, it is a look before the create, not a lock: two concurrent creates of a
    /// stream's first groups both find it empty either way.
    pub(crate) async fn index_entries_for_create(
        &self,
        name: &GroupName,
    ) -> Result<Vec<IndexEntry>, CoordError> {
        if self
            .resharding()
            .load_stream(&name.stream_prefix)
            .await?
            .is_some()
        {
            return self.index_entries().await;
        }
        let own = self.store().group_index_get(name).await.map_err(|e| {
            self.note_store_error(&e);
            CoordError::from(e)
        })?;
        Ok(own.into_iter().collect())
    }

    pub(crate) async fn put_index(
        &self,
        name: &GroupName,
        state: IndexState,
    ) -> Result<(), CoordError> {
        let entry = IndexEntry {
            stream_prefix: name.stream_prefix.clone(),
            consumer_group: name.consumer_group.clone(),
            state,
        };
        self.store()
            .group_index_put(name, &entry)
            .await
            .map_err(|e| {
                self.note_store_error(&e);
                CoordError::from(e)
            })
    }

    /// Loads a group for an admin or monitoring request, fresh from Redis; unknown → 404. `name` is valid:
    /// the API's path extractor (`api/extract.rs`) validated it, or it came from the group index.
    pub async fn require_group(&self, name: &GroupName) -> Result<Cached, CoordError> {
        match self.load(name).await? {
            Some(c) => Ok(c),
            None => Err(self.missing_group_error(name).await),
        }
    }

    /// [`Coordinator::require_group`] for read-modify-write paths that commit by compare-and-set anyway (the
    /// reconciler's stream pass, scale adoption): the cached aggregate when one HGET shows its revision still
    /// current, else a fresh load. A group of thousands of members is megabytes of JSON to read and parse;
    /// the stream pass visits every group every tick.
    pub async fn require_current_group(&self, name: &GroupName) -> Result<Cached, CoordError> {
        match self.current_or_load(name).await? {
            Some(c) => Ok(c),
            None => Err(self.missing_group_error(name).await),
        }
    }

    /// 404 for a group that never existed (saying whether its stream does, and how to create what is
    /// missing); fail closed (409) for one the index says should exist.
    async fn missing_group_error(&self, name: &GroupName) -> CoordError {
        let entries = self.index_entries().await.unwrap_or_default();
        let listed_live = entries.iter().any(|e| {
            e.stream_prefix == name.stream_prefix
                && e.consumer_group == name.consumer_group
                && e.state == IndexState::Live
        });
        if listed_live {
            CoordError::MetadataMissing {
                key: self.shown_group_key(name),
            }
        } else {
            CoordError::group_not_found(
                &name.stream_prefix,
                &name.consumer_group,
                &live_groups_of(&entries, &name.stream_prefix),
            )
        }
    }

    /// [`CoordError::group_not_found`] with the stream's live groups read from the index.
    pub(crate) async fn group_not_found(&self, name: &GroupName) -> CoordError {
        let entries = self.index_entries().await.unwrap_or_default();
        CoordError::group_not_found(
            &name.stream_prefix,
            &name.consumer_group,
            &live_groups_of(&entries, &name.stream_prefix),
        )
    }
}

/// The live consumer groups of a stream, as the index lists them.
fn live_groups_of(entries: &[IndexEntry], prefix: &str) -> Vec<String> {
    entries
        .iter()
        .filter(|e| e.stream_prefix == prefix && e.state == IndexState::Live)
        .map(|e| e.consumer_group.clone())
        .collect()
}
