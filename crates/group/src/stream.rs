//! The stream record: the shard count belongs to the stream, not to a group.
//!
//! Producer routing for every group of a stream is derived from this one record, so two groups of a stream
//! can never route differently. A scale is recorded here first (PREPARING), the new shard streams are
//! provisioned for every group, then the record switches (ACTIVE, new `shard_count`) in one write, and each
//! group adopts the migration (`migration::adopt`). The record is stored like a group aggregate: one Redis
//! hash `<kp>:{<p>}:stream`, compare-and-set by revision.
//!
//! The record also remembers which shard stream keys the coordinator provisioned
//! ([`StreamRecord::provisioned_upto`]): a scale-out must not adopt a key someone else created (a later
//! scale-in would retire it, data and all), exactly as a create refuses existing keys.

use crate::model::{AggregateError, MAX_HISTORY, Migration, MigrationState, SCHEMA_VERSION};
use crate::quiesce::ProducerQuiesce;
use rsc_protocol::ordering::Ordering;
use serde::{Deserialize, Serialize};

/// The coordinator's record of one stream: its shard count and routing version, its migration under way and
/// the ones before, what it provisioned, and its ordering option.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamRecord {
    /// The stream.
    pub stream_prefix: String,
    /// The document's schema ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Mirrors the store's revision of the hash this record was written with.
    pub store_revision: u64,
    /// The routing shard count of every group of the stream.
    pub shard_count: u32,
    /// Bumped on every routing change (a switch, a rollback); starts at the record's creation time in ms.
    pub routing_version: i64,
    /// The scale under way, with the stream's view of it (switch points of an ordered switch included).
    #[serde(default)]
    pub active_migration: Option<Migration>,
    /// Migrations that ended, oldest first (at most [`MAX_HISTORY`]).
    #[serde(default)]
    pub history: Vec<Migration>,
    /// Shard keys `<p>:0..n` were provisioned by the coordinator for this record (and not all retired since).
    /// None in records written before this field: see [`StreamRecord::provisioned_upto`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioned_shard_count: Option<u32>,
    /// The producer quiesce of the latest scale that asked for one (`quiesce.rs`): waiting while that
    /// scale is PREPARING, then its outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer_quiesce: Option<ProducerQuiesce>,
    /// `KEY`: a scale keeps per-key order (child shards wait for their parents, `ordering.rs`); `NONE`
    /// (absent in records written before the option): at-least-once only.
    #[serde(default, skip_serializing_if = "Ordering::is_none")]
    pub ordering: Ordering,
    /// When the record was created.
    pub created_at_ms: i64,
    /// When the record was last written.
    pub updated_at_ms: i64,
}

impl StreamRecord {
    /// A new record: `shard_count` shards, all provisioned, no migration, not ordered; its routing version
    /// starts at `now_ms`.
    pub fn new(stream_prefix: &str, shard_count: u32, now_ms: i64) -> Self {
        StreamRecord {
            stream_prefix: stream_prefix.to_owned(),
            schema_version: SCHEMA_VERSION,
            store_revision: 1,
            shard_count,
            // Starts at the creation time, so a stream created again under the same prefix routes with
            // versions above any of its earlier lifecycle's: routing boundaries left in Redis by that
            // lifecycle never refuse the new one's producers, and a producer of the old one cannot raise them.
            routing_version: now_ms.max(1),
            active_migration: None,
            history: Vec::new(),
            provisioned_shard_count: Some(shard_count),
            producer_quiesce: None,
            ordering: Ordering::None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        }
    }

    /// Shard keys below this index are the coordinator's own: the current shard count, anything provisioned
    /// for a migration and not retired since, or (records written before this was kept) every shard count
    /// a recorded migration switched routing to or from.
    pub fn provisioned_upto(&self) -> u32 {
        let mut upto = self.shard_count;
        match self.provisioned_shard_count {
            Some(n) => upto = upto.max(n),
            None => {
                for m in self.active_migration.iter().chain(&self.history) {
                    if m.activated_at_ms.is_some() {
                        upto = upto.max(m.from_shard_count).max(m.to_shard_count);
                    }
                }
            }
        }
        if let Some(m) = &self.active_migration {
            // Recorded (PREPARING) only after its new keys were checked; provisioned from then on.
            upto = upto.max(m.from_shard_count).max(m.to_shard_count);
        }
        upto
    }

    /// Ends the active migration with `state` and files it in the history.
    pub fn finish(&mut self, state: MigrationState, reason: Option<String>, now_ms: i64) {
        if let Some(mut m) = self.active_migration.take() {
            m.state = state;
            m.end_reason = reason.or(m.end_reason);
            m.completed_at_ms = Some(now_ms);
            m.updated_at_ms = now_ms;
            // Switch points matter only while the migration runs (groups adopt it with them).
            m.switch_points.clear();
            self.history.push(m);
            if self.history.len() > MAX_HISTORY {
                let excess = self.history.len() - MAX_HISTORY;
                self.history.drain(..excess);
            }
        }
        self.updated_at_ms = now_ms;
    }

    /// Parses a record as stored.
    pub fn from_json(json: &str) -> Result<StreamRecord, AggregateError> {
        serde_json::from_str(json).map_err(|e| AggregateError::Malformed(e.to_string()))
    }

    /// The record as stored.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::StreamRecord;
    use crate::model::{Migration, MigrationState};

    fn migration(from: u32, to: u32, state: MigrationState, activated: bool) -> Migration {
        Migration {
            resharding_id: format!("r-{from}-{to}"),
            from_shard_count: from,
            to_shard_count: to,
            state,
            requested_by: "t".into(),
            reason: "t".into(),
            created_at_ms: 0,
            updated_at_ms: 0,
            activated_at_ms: activated.then_some(1),
            draining_at_ms: None,
            completed_at_ms: None,
            end_reason: None,
            switch_points: Default::default(),
        }
    }

    #[test]
    fn an_ended_migration_keeps_no_switch_points() {
        let mut r = StreamRecord::new("p", 8, 0);
        let mut m = migration(8, 3, MigrationState::Active, true);
        m.switch_points = (0..8).map(|s| (s, format!("{s}-0"))).collect();
        r.active_migration = Some(m);
        r.finish(MigrationState::Deprecated, None, 5);
        assert!(r.active_migration.is_none());
        assert!(r.history[0].switch_points.is_empty());
    }

    #[test]
    fn the_coordinators_own_shard_keys_are_what_it_provisioned() {
        let mut r = StreamRecord::new("p", 2, 0);
        assert_eq!(r.provisioned_upto(), 2);
        r.active_migration = Some(migration(2, 5, MigrationState::Preparing, false));
        assert_eq!(
            r.provisioned_upto(),
            5,
            "recorded only after its keys were checked"
        );
        r.finish(MigrationState::Aborted, None, 1);
        r.provisioned_shard_count = Some(3);
        assert_eq!(
            r.provisioned_upto(),
            3,
            "the kept mark wins over the history"
        );

        // Records written before the mark: every shard count a migration switched routing to or from.
        let mut legacy: StreamRecord =
            serde_json::from_str(&r.to_json().replace(",\"provisionedShardCount\":3", "")).unwrap();
        assert_eq!(legacy.provisioned_shard_count, None);
        assert_eq!(
            legacy.provisioned_upto(),
            2,
            "an aborted migration never provisioned for sure"
        );
        legacy
            .history
            .push(migration(2, 6, MigrationState::Deprecated, true));
        assert_eq!(legacy.provisioned_upto(), 6);
    }
}
