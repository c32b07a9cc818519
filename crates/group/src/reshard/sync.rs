//! Bringing a group in line with its stream record: the stream owns the shard count and routing, and every
//! group of it follows, here or on a later pass (a coordinator can stop between the stream's write and a
//! group's). Pure: [`sync_to_stream`] changes the aggregate in hand; the flows compare-and-set it.
//!
//! An ordered switch that has children reaches a group only once the stream recorded every old shard's
//! switch point ([`may_adopt`]): adopting closes the gates with them, so a surviving child is granted with
//! a read fence instead of being withheld. Producer routing does not wait for it.

use crate::migration::{MigrationError, adopt, force_complete, release_drained, take_in_rollback};
use crate::model::{Group, MigrationState, ShardSet};
use crate::ordering::{close_gates, open_gates};
use crate::stream::StreamRecord;
use crate::timing::Timing;
use rsc_protocol::ordering::{Ordering, is_child};

/// Whether the stream's active migration must record its old shards' switch points before groups adopt it:
/// an ordered stream whose scale has a child (a shard whose keys can come from another old shard).
pub fn needs_switch_points(record: &StreamRecord) -> bool {
    record.ordering == Ordering::Key
        && record.active_migration.as_ref().is_some_and(|m| {
            (0..m.to_shard_count).any(|j| is_child(m.from_shard_count, m.to_shard_count, j))
        })
}

/// Whether a group may adopt the stream's active migration now: always on an unordered stream or for a scale
/// without children; on an ordered one with children once every old shard's switch point is recorded.
pub fn may_adopt(record: &StreamRecord) -> bool {
    !needs_switch_points(record)
        || record
            .active_migration
            .as_ref()
            .is_some_and(|m| (0..m.from_shard_count).all(|s| m.switch_points.contains_key(&s)))
}

/// Brings `g` in line with `stream`: applies the rollbacks the stream recorded (also of a migration this
/// group completed before the stream did) and the force-completes it recorded for migrations still active here (first taking in a switched migration that was force-completed before this
/// group adopted it, so the group ends on the stream's shard count), adopts the active migration once it
/// may (closing an ordered switch's gates by the stream's counts, surviving children fenced at their switch
/// points), and takes the stream's routing version with the switch (or rollback) it has taken in, in the
/// same write — never ahead of what its gates and fences reflect. Returns whether anything changed.
pub fn sync_to_stream(
    g: &mut Group,
    stream: &StreamRecord,
    now_ms: i64,
    timing: &Timing,
) -> Result<bool, MigrationError> {
    let mut changed = false;
    for ended in &stream.history {
        if ended.state == MigrationState::ForceCompleted
            && ended.activated_at_ms.is_some()
            && g.migration(&ended.resharding_id).is_none()
            && g.shard_count == ended.from_shard_count
            && stream.shard_count == ended.to_shard_count
            && g.shard_count != stream.shard_count
        {
            changed |= adopt(g, ended, now_ms, timing)?;
        }
        let reason = ended.end_reason.clone().unwrap_or_default();
        if ended.state == MigrationState::RolledBack {
            // Also when this group's copy completed before the stream's did.
            changed |= take_in_rollback(g, &ended.resharding_id, &reason, now_ms, timing)?;
            continue;
        }
        let active_here = g
            .migration(&ended.resharding_id)
            .is_some_and(|m| !m.state.is_terminal());
        if !active_here {
            continue;
        }
        changed |= match ended.state {
            MigrationState::ForceCompleted | MigrationState::Aborted => {
                force_complete(g, &ended.resharding_id, &reason, now_ms, timing)?
            }
            _ => false,
        };
    }
    if let Some(m) = &stream.active_migration
        && m.state == MigrationState::Active
        && may_adopt(stream)
    {
        let adopted = adopt(g, m, now_ms, timing)?;
        if adopted && needs_switch_points(stream) {
            close_gates(
                g,
                m.from_shard_count,
                m.to_shard_count,
                &m.switch_points,
                now_ms,
                timing,
            );
        }
        changed |= adopted;
    }
    let caught_up = stream.active_migration.as_ref().is_none_or(|m| {
        m.state == MigrationState::Preparing || g.migration(&m.resharding_id).is_some()
    });
    if caught_up && stream.routing_version > g.routing_version {
        g.routing_version = stream.routing_version;
        changed = true;
    }
    Ok(changed)
}

/// A change a resharding flow makes to one group, by compare-and-set on the group as the store holds it
/// (`replica::reshard::GroupUpdate` reads, applies and writes it, again on a lost race).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupChange {
    /// [`sync_to_stream`] with this stream record.
    SyncToStream(Box<StreamRecord>),
    /// Removed shards Redis shows drained leave the assignment (`migration::release_drained`).
    ReleaseDrained(ShardSet),
    /// Parents Redis shows consumed up to their switch points open their children's gates
    /// (`ordering::open_gates`), if the gates are still those of the migration the evidence was read for.
    OpenGates {
        /// The migration whose gates (and switch points) the evidence was read for.
        resharding_id: String,
        /// The parents shown consumed.
        drained: ShardSet,
    },
}

impl GroupChange {
    /// Applies the change to `g` at `now_ms`; whether it changed anything (an unchanged group is not
    /// written). Nothing changes when an epoch would overflow.
    pub fn apply(
        &self,
        g: &mut Group,
        now_ms: i64,
        timing: &Timing,
    ) -> Result<bool, MigrationError> {
        match self {
            GroupChange::SyncToStream(stream) => sync_to_stream(g, stream, now_ms, timing),
            GroupChange::ReleaseDrained(drained) => {
                Ok(release_drained(g, drained, now_ms, timing)?)
            }
            GroupChange::OpenGates {
                resharding_id,
                drained,
            } => Ok(open_gates(g, resharding_id, drained, now_ms, timing)?),
        }
    }
}
