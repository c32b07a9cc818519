//! Bringing a private copy of a group's revision up to the next revision, by the members the write changed.
//!
//! A batch of heartbeats decides on its own copy of the aggregate (`batch.rs`). Copying a group of 10,000
//! members for every batch, and freeing the copy the batch replaced, cost as much as deciding the batch. The
//! copy the previous batch decided on is equal to the revision before the one it wrote, and that write
//! changed the header and the entries of the members it noted (`Transition::changed_members`) only; so
//! [`Group::catch_up`] makes it equal to the written revision by copying those, and the next batch decides
//! on it without copying the group.

use super::Group;
use std::collections::BTreeSet;

impl Group {
    /// Makes `self` equal to `next`, given that `self` equals the revision `next` was written on and that the
    /// write changed the header and the `members`/`targetAssignments` entries of `changed` only. Costs what
    /// changed, not the group.
    pub fn catch_up(&mut self, next: &Group, changed: &BTreeSet<String>) {
        for id in changed {
            match next.members.get(id) {
                Some(m) => match self.members.get_mut(id) {
                    Some(mine) => mine.clone_from(m),
                    None => {
                        self.members.insert(id.clone(), m.clone());
                    }
                },
                None => {
                    self.members.remove(id);
                }
            }
            match next.target_assignments.get(id) {
                Some(t) => match self.target_assignments.get_mut(id) {
                    Some(mine) => mine.clone_from(t),
                    None => {
                        self.target_assignments.insert(id.clone(), t.clone());
                    }
                },
                None => {
                    self.target_assignments.remove(id);
                }
            }
        }
        // Every field but the two maps, named one by one: a field added to `Group` must be added here (the
        // pattern below has no `..`, so the compiler insists).
        let Group {
            stream_prefix,
            consumer_group,
            lifecycle_id,
            schema_version,
            store_revision,
            group_epoch,
            metadata_version,
            assignment_epoch,
            state,
            shard_count,
            members: _,
            target_assignments: _,
            holds,
            static_reservations,
            metadata_correction,
            draining_shards,
            ordering_gates,
            ordering_switch_points,
            routing_version,
            migrations,
            active_migration_id,
            rollback_suspicion,
            rollback_dismissal,
            reconciling_since_ms,
            created_at_ms,
            updated_at_ms,
        } = next;
        self.stream_prefix.clone_from(stream_prefix);
        self.consumer_group.clone_from(consumer_group);
        self.lifecycle_id.clone_from(lifecycle_id);
        self.schema_version = *schema_version;
        self.store_revision = *store_revision;
        self.group_epoch = *group_epoch;
        self.metadata_version = *metadata_version;
        self.assignment_epoch = *assignment_epoch;
        self.state = *state;
        self.shard_count = *shard_count;
        self.holds.clone_from(holds);
        self.static_reservations.clone_from(static_reservations);
        self.metadata_correction.clone_from(metadata_correction);
        self.draining_shards.clone_from(draining_shards);
        self.ordering_gates.clone_from(ordering_gates);
        self.ordering_switch_points
            .clone_from(ordering_switch_points);
        self.routing_version = *routing_version;
        self.migrations.clone_from(migrations);
        self.active_migration_id.clone_from(active_migration_id);
        self.rollback_suspicion.clone_from(rollback_suspicion);
        self.rollback_dismissal.clone_from(rollback_dismissal);
        self.reconciling_since_ms = *reconciling_since_ms;
        self.created_at_ms = *created_at_ms;
        self.updated_at_ms = *updated_at_ms;
    }
}
