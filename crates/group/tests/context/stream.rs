//! Resharding in the context: the stream record's steps (`rsc_group::reshard::record`) on the context's
//! record, and the changes the resharding flows make to the group (`GroupChange`), each written as a flow
//! writes it.

use super::Context;
use rsc_group::model::{Migration, MigrationState, ShardSet};
use rsc_group::reshard::record::{
    ScaleRequest, completed, ended, recorded, switched, with_switch_points,
};
use rsc_group::reshard::sync::GroupChange;
use rsc_protocol::ordering::Ordering;
use std::collections::BTreeMap;

impl Context {
    /// The operator scales the stream to `to` shards and routing switches (recorded, then ACTIVE).
    /// Returns the migration's id.
    pub fn scale(&mut self, to: u32) -> String {
        let id = format!("reshard-{}", self.stream.history.len() + 1);
        let request = ScaleRequest {
            resharding_id: id.clone(),
            target: to,
            requested_by: "test".into(),
            reason: "test".into(),
            quiesce_timeout_ms: None,
        };
        let prepared = recorded(&self.stream, &request, self.now);
        self.stream = switched(&prepared, None, self.now)
            .expect("small versions")
            .expect("a PREPARING migration switches");
        id
    }

    /// The stream's ordering option.
    pub fn ordered(&mut self) -> &mut Self {
        self.stream.ordering = Ordering::Key;
        self
    }

    /// The stream's active migration.
    pub fn stream_migration(&self) -> Migration {
        self.stream
            .active_migration
            .clone()
            .expect("a migration is active")
    }

    /// Every old shard's switch point recorded on the active migration (`<100 + shard>-0`).
    pub fn record_switch_points(&mut self) -> BTreeMap<u32, String> {
        self.record_switch_points_from(100)
    }

    /// Every old shard's switch point recorded on the active migration, at `<base + shard>-0`.
    pub fn record_switch_points_from(&mut self, base: u32) -> BTreeMap<u32, String> {
        let m = self.stream_migration();
        let points: BTreeMap<u32, String> = (0..m.from_shard_count)
            .map(|s| (s, format!("{}-0", base + s)))
            .collect();
        self.stream =
            with_switch_points(&self.stream, &m.resharding_id, &points).expect("recorded once");
        points
    }

    /// The operator ends the active migration in `state` (ROLLED_BACK, FORCE_COMPLETED).
    pub fn end(&mut self, state: MigrationState) {
        let m = self.stream_migration();
        self.stream = ended(&self.stream, &m, state, "test", self.now).expect("small versions");
    }

    /// The stream's migration completes (every group done).
    pub fn complete_stream(&mut self) -> bool {
        let Some(id) = self
            .stream
            .active_migration
            .as_ref()
            .map(|m| m.resharding_id.clone())
        else {
            return false;
        };
        match completed(&self.stream, &id, self.now) {
            Some(next) => {
                self.stream = next;
                true
            }
            None => false,
        }
    }

    /// A resharding flow's change to the group, written when it changes anything. Whether it did.
    pub fn change(&mut self, change: GroupChange) -> bool {
        let mut g = self.group.clone();
        let changed = change
            .apply(&mut g, self.now, &self.timing)
            .expect("the change is allowed");
        if changed {
            self.write(g);
        }
        changed
    }

    /// The group brought in line with the stream record.
    pub fn sync(&mut self) -> bool {
        self.change(GroupChange::SyncToStream(Box::new(self.stream.clone())))
    }

    /// Redis shows these removed shards drained.
    pub fn drained(&mut self, shards: &[u32]) -> bool {
        self.change(GroupChange::ReleaseDrained(
            shards.iter().copied().collect::<ShardSet>(),
        ))
    }

    /// Redis shows these parents consumed up to their switch points (of the group's active migration).
    pub fn parents_consumed(&mut self, shards: &[u32]) -> bool {
        let id = self.group.active_migration_id.clone().unwrap_or_default();
        self.parents_consumed_for(&id, shards)
    }

    /// Redis shows these parents consumed up to the switch points of migration `id` (evidence read while
    /// the group's gates were `id`'s).
    pub fn parents_consumed_for(&mut self, id: &str, shards: &[u32]) -> bool {
        self.change(GroupChange::OpenGates {
            resharding_id: id.to_owned(),
            drained: shards.iter().copied().collect::<ShardSet>(),
        })
    }

    /// The group's copy of migration `id`, and its state.
    pub fn group_migration_state(&self, id: &str) -> Option<MigrationState> {
        self.group.migration(id).map(|m| m.state)
    }
}
