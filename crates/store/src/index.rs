//! The group index: one hash (`rsc_protocol::names::group_index_key`) mapping each group's metadata
//! key to a small JSON entry `{"streamPrefix", "consumerGroup", "state"}`, so that every replica can
//! list the groups without scanning the keyspace.
//!
//! The index lives in a slot of its own and is written with plain commands, never inside a group's
//! script: it is rebuildable, and a group's metadata stays the source of truth. An entry's state is
//! [`IndexState::Creating`] while the group's streams are being provisioned and [`IndexState::Live`]
//! once its metadata was written.

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::group_name::GroupName;
use crate::store::Store;

/// Where a group stands in the index. Stored as `"CREATING"` / `"LIVE"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IndexState {
    /// Written before the group's streams are provisioned (a retried create resumes it).
    Creating,
    /// The group's metadata was written.
    Live,
    /// A state this build does not know (written by a newer one): listed, but neither creating nor
    /// live. Never written.
    #[serde(other)]
    Unknown,
}

/// One entry of the group index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexEntry {
    pub stream_prefix: String,
    pub consumer_group: String,
    pub state: IndexState,
}

impl Store {
    /// Records group `group` in the index under its metadata key.
    pub async fn group_index_put(
        &self,
        group: &GroupName,
        entry: &IndexEntry,
    ) -> Result<(), StoreError> {
        let value = crate::to_json("group index entry", entry)?;
        let (index, field) = self.index_field(group);
        self.index_put(&index, &field, &value).await
    }

    /// One group's entry (None when the index has none, or an entry this build cannot read).
    pub async fn group_index_get(
        &self,
        group: &GroupName,
    ) -> Result<Option<IndexEntry>, StoreError> {
        let (index, field) = self.index_field(group);
        Ok(self
            .index_get(&index, &field)
            .await?
            .and_then(|v| serde_json::from_str::<IndexEntry>(&v).ok()))
    }

    /// Removes a group from the index (no error if it was not there).
    pub async fn group_index_remove(&self, group: &GroupName) -> Result<(), StoreError> {
        let (index, field) = self.index_field(group);
        self.index_remove(&index, &field).await
    }

    /// Every readable entry, sorted by stream prefix then consumer group. An entry that is not
    /// valid JSON of this shape is skipped (the index is rebuildable; the metadata is the truth).
    pub async fn group_index_list(&self) -> Result<Vec<IndexEntry>, StoreError> {
        let mut entries: Vec<IndexEntry> = self
            .index_list(&self.keyspace().group_index())
            .await?
            .into_iter()
            .filter_map(|(_, v)| serde_json::from_str::<IndexEntry>(&v).ok())
            .collect();
        entries.sort_by(|a, b| {
            (a.stream_prefix.as_str(), a.consumer_group.as_str())
                .cmp(&(b.stream_prefix.as_str(), b.consumer_group.as_str()))
        });
        Ok(entries)
    }

    /// The index's key and group `group`'s field in it (its metadata key).
    fn index_field(&self, group: &GroupName) -> (String, String) {
        let ks = self.keyspace();
        (ks.group_index(), ks.group_metadata(group))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_keep_their_json_shape() {
        let e = IndexEntry {
            stream_prefix: "orders".into(),
            consumer_group: "billing".into(),
            state: IndexState::Live,
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"streamPrefix":"orders","consumerGroup":"billing","state":"LIVE"}"#
        );
        let creating: IndexEntry =
            serde_json::from_str(r#"{"streamPrefix":"a","consumerGroup":"b","state":"CREATING"}"#)
                .unwrap();
        assert_eq!(creating.state, IndexState::Creating);
        let newer: IndexEntry =
            serde_json::from_str(r#"{"streamPrefix":"a","consumerGroup":"b","state":"RETIRING"}"#)
                .unwrap();
        assert_eq!(newer.state, IndexState::Unknown);
    }
}
