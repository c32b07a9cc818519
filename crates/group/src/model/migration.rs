//! The stored record of a resharding migration (one per scale): in a group's aggregate (`Group::migrations`)
//! and on the stream record (`StreamRecord::active_migration`, `history`). The rules that move it along are
//! in `migration.rs` (a group's view) and `stream.rs` (the stream's).

use super::Group;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How many finished migrations a group keeps in its history.
pub const MAX_HISTORY: usize = 20;

/// Lifecycle of a migration (coord/v1 contract, plus the operator-forced end states).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MigrationState {
    /// Recorded; shard streams being provisioned; routing not switched yet.
    Preparing,
    /// Routing switched; members converging on the new assignment.
    Active,
    /// Members converged; removed shards draining.
    Draining,
    /// Complete.
    Deprecated,
    /// Rolled back by an operator: routing is back at `from_shard_count`.
    RolledBack,
    /// Ended by an operator while draining (removed shards left the assignment without drain evidence).
    ForceCompleted,
    /// Ended by an operator before routing switched.
    Aborted,
}

impl MigrationState {
    /// Whether the migration has ended (completed, rolled back, force-completed or aborted).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            MigrationState::Deprecated
                | MigrationState::RolledBack
                | MigrationState::ForceCompleted
                | MigrationState::Aborted
        )
    }

    /// The wire spelling, e.g. `ROLLED_BACK`.
    pub fn as_str(self) -> &'static str {
        match self {
            MigrationState::Preparing => "PREPARING",
            MigrationState::Active => "ACTIVE",
            MigrationState::Draining => "DRAINING",
            MigrationState::Deprecated => "DEPRECATED",
            MigrationState::RolledBack => "ROLLED_BACK",
            MigrationState::ForceCompleted => "FORCE_COMPLETED",
            MigrationState::Aborted => "ABORTED",
        }
    }
}

/// One migration, with timestamps per phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Migration {
    /// The migration's id (`reshard-<uuid>`).
    pub resharding_id: String,
    /// The shard count before the scale.
    pub from_shard_count: u32,
    /// The shard count the scale moves to.
    pub to_shard_count: u32,
    /// Where the migration is in its lifecycle.
    pub state: MigrationState,
    /// Who requested the scale.
    pub requested_by: String,
    /// Why, as the request said.
    pub reason: String,
    /// When the scale was requested.
    pub created_at_ms: i64,
    /// When the migration last changed.
    pub updated_at_ms: i64,
    /// When routing switched (it became ACTIVE).
    #[serde(default)]
    pub activated_at_ms: Option<i64>,
    /// When it became DRAINING.
    #[serde(default)]
    pub draining_at_ms: Option<i64>,
    /// When it ended, however it ended.
    #[serde(default)]
    pub completed_at_ms: Option<i64>,
    /// Why an operator ended it (force-complete, abort, rollback).
    #[serde(default)]
    pub end_reason: Option<String>,
    /// Ordered streams, on the stream record's active migration: each old shard's switch point (its last
    /// stream id when its routing boundary was raised to this switch's routing version), recorded right after
    /// the switch. Groups adopt an ordered switch only once these are known, and keep what they need of them
    /// in `Group::ordering_switch_points` (a group's own copy of the migration carries none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub switch_points: BTreeMap<u32, String>,
}

impl Migration {
    /// A migration created at `now_ms` in `state`, no phase reached yet and no end reason.
    pub fn new(
        resharding_id: String,
        from_shard_count: u32,
        to_shard_count: u32,
        state: MigrationState,
        requested_by: String,
        reason: String,
        now_ms: i64,
    ) -> Self {
        Migration {
            resharding_id,
            from_shard_count,
            to_shard_count,
            state,
            requested_by,
            reason,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            activated_at_ms: None,
            draining_at_ms: None,
            completed_at_ms: None,
            end_reason: None,
            switch_points: BTreeMap::new(),
        }
    }

    /// Whether the scale removes shards.
    pub fn is_scale_in(&self) -> bool {
        self.to_shard_count < self.from_shard_count
    }
}

impl Group {
    /// The migration `id` of this group's history, if it is kept.
    pub fn migration(&self, id: &str) -> Option<&Migration> {
        self.migrations.iter().find(|m| m.resharding_id == id)
    }

    /// The migration in progress, if any.
    pub fn active_migration(&self) -> Option<&Migration> {
        self.active_migration_id
            .as_deref()
            .and_then(|id| self.migration(id))
    }

    /// The migration `id`, to change it (the rules are in `migration.rs`).
    pub(crate) fn migration_mut(&mut self, id: &str) -> Option<&mut Migration> {
        self.migrations.iter_mut().find(|m| m.resharding_id == id)
    }

    /// Files `m` in the history (replacing the migration of the same id), keeping at most [`MAX_HISTORY`]
    /// finished ones.
    pub(crate) fn record_migration(&mut self, m: Migration) {
        match self.migration_mut(&m.resharding_id) {
            Some(existing) => *existing = m,
            None => self.migrations.push(m),
        }
        let finished = self
            .migrations
            .iter()
            .filter(|m| m.state.is_terminal())
            .count();
        if finished > MAX_HISTORY {
            let mut drop = finished - MAX_HISTORY;
            self.migrations.retain(|m| {
                if drop > 0 && m.state.is_terminal() {
                    drop -= 1;
                    false
                } else {
                    true
                }
            });
        }
    }
}
