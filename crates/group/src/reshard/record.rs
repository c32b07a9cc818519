//! The stream record's transitions, pure: each takes the record as read and returns the record to write
//! (compare-and-set by the flows), or what the record says should happen next. The record owns the shard
//! count and routing of every group of the stream (`stream.rs`); a scale goes through it as recorded steps:
//! recorded (PREPARING) → switched (ACTIVE, a new routing version) → switch points recorded (ordered streams)
//! → completed (DEPRECATED) or ended by an operator (ROLLED_BACK, FORCE_COMPLETED, ABORTED).

use super::sync::needs_switch_points;
use crate::model::{EpochOverflow, Migration, MigrationState, incremented};
use crate::quiesce::{ProducerQuiesce, QuiesceOutcome};
use crate::stream::StreamRecord;
use rsc_protocol::ordering::{BoundaryScale, Ordering};
use std::collections::BTreeMap;
use std::ops::Range;

/// What a scale to `target` shards means for the stream record as it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScalePlan {
    /// The active migration already goes there: resume it (a retried scale).
    Resume(Migration),
    /// Another migration is active: refused until it ends.
    InProgress(Migration),
    /// The stream already has `target` shards and nothing is active: nothing to do.
    Noop,
    /// Record a new migration (PREPARING).
    Record,
}

/// [`ScalePlan`] for a scale of `record` to `target` shards.
pub fn plan_scale(record: &StreamRecord, target: u32) -> ScalePlan {
    match &record.active_migration {
        Some(m) if m.to_shard_count == target => ScalePlan::Resume(m.clone()),
        Some(m) => ScalePlan::InProgress(m.clone()),
        None if record.shard_count == target => ScalePlan::Noop,
        None => ScalePlan::Record,
    }
}

/// The shard indexes whose keys must not exist before a scale to `target` is recorded: those beyond the
/// keys the coordinator provisioned ([`StreamRecord::provisioned_upto`]; a scale never adopts a key someone
/// else created). None when nothing needs checking (or the coordinator does not provision).
pub fn foreign_keys_to_check(
    record: &StreamRecord,
    target: u32,
    provisioning_enabled: bool,
) -> Option<Range<u32>> {
    let ours = record.provisioned_upto();
    (provisioning_enabled && target > ours).then_some(ours..target)
}

/// The answer of a scale that changes nothing: a finished no-op migration.
pub fn noop_migration(target: u32, requested_by: &str, reason: &str, now_ms: i64) -> Migration {
    Migration {
        completed_at_ms: Some(now_ms),
        ..Migration::new(
            "noop".into(),
            target,
            target,
            MigrationState::Deprecated,
            requested_by.to_owned(),
            reason.to_owned(),
            now_ms,
        )
    }
}

/// What a scale asks for, besides its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleRequest {
    /// The new migration's id (the shell makes it unique).
    pub resharding_id: String,
    /// The shard count to move to.
    pub target: u32,
    /// Who asks, for the record and the audit.
    pub requested_by: String,
    /// Why, for the record and the audit.
    pub reason: String,
    /// Producer quiesce: how long routing waits for producers to stop (None: it switches at once).
    pub quiesce_timeout_ms: Option<i64>,
}

/// The record with the scale recorded (PREPARING): its new keys are the coordinator's from now on (they
/// were checked before), and its producer quiesce starts now.
pub fn recorded(record: &StreamRecord, scale: &ScaleRequest, now_ms: i64) -> StreamRecord {
    let m = Migration::new(
        scale.resharding_id.clone(),
        record.shard_count,
        scale.target,
        MigrationState::Preparing,
        scale.requested_by.clone(),
        scale.reason.clone(),
        now_ms,
    );
    let mut next = record.clone();
    next.provisioned_shard_count = Some(next.provisioned_upto().max(scale.target));
    next.producer_quiesce = scale
        .quiesce_timeout_ms
        .map(|t| ProducerQuiesce::new(&m.resharding_id, t, now_ms));
    next.active_migration = Some(m);
    next
}

/// The producer quiesce the PREPARING `migration` still waits on before routing may switch (undecided).
pub fn quiesce_to_decide<'r>(
    record: &'r StreamRecord,
    migration: &Migration,
) -> Option<&'r ProducerQuiesce> {
    record
        .producer_quiesce
        .as_ref()
        .filter(|q| q.resharding_id == migration.resharding_id && q.outcome.is_none())
}

/// The record with routing switched (ACTIVE, the new shard count, the next routing version) and the
/// quiesce's outcome kept; None when there is no PREPARING migration to switch.
pub fn switched(
    record: &StreamRecord,
    outcome: Option<&QuiesceOutcome>,
    now_ms: i64,
) -> Result<Option<StreamRecord>, EpochOverflow> {
    let mut next = record.clone();
    if let (Some(o), Some(q)) = (outcome, next.producer_quiesce.as_mut()) {
        q.outcome = Some(o.clone());
    }
    let Some(m) = next.active_migration.as_mut() else {
        return Ok(None);
    };
    if m.state != MigrationState::Preparing {
        return Ok(None);
    }
    m.state = MigrationState::Active;
    m.activated_at_ms = Some(now_ms);
    m.updated_at_ms = now_ms;
    next.shard_count = m.to_shard_count;
    next.routing_version = incremented("routingVersion", next.routing_version)?;
    Ok(Some(next))
}

/// The annotation of a switch from `from` to `to` shards at `record`'s routing version: what every shard's
/// routing boundary is raised to.
pub fn boundary_scale(record: &StreamRecord, from: u32, to: u32) -> BoundaryScale {
    BoundaryScale {
        version: record.routing_version,
        from,
        to,
        ordered: record.ordering == Ordering::Key,
    }
}

/// The shards a switch `scale` raises the boundaries of: every shard, old and new.
pub fn raised_shards(scale: &BoundaryScale) -> Range<u32> {
    0..scale.from.max(scale.to)
}

/// After the active migration's boundaries were raised (`raised`: the switch point of each shard whose
/// boundary stands at the switch's version): the old shards' switch points to record on the migration, when
/// the stream is ordered, the scale has children, none are recorded yet and every old shard's is known.
pub fn switch_points_to_record(
    record: &StreamRecord,
    raised: &BTreeMap<u32, String>,
) -> Option<BTreeMap<u32, String>> {
    let m = record.active_migration.as_ref()?;
    if !needs_switch_points(record)
        || !m.switch_points.is_empty()
        || (0..m.from_shard_count).any(|s| !raised.contains_key(&s))
    {
        return None;
    }
    Some(
        raised
            .iter()
            .filter(|(s, _)| **s < m.from_shard_count)
            .map(|(s, p)| (*s, p.clone()))
            .collect(),
    )
}

/// The record with `points` recorded on the active migration `id`; None when that migration is no longer
/// active or has its switch points already.
pub fn with_switch_points(
    record: &StreamRecord,
    id: &str,
    points: &BTreeMap<u32, String>,
) -> Option<StreamRecord> {
    let mut next = record.clone();
    match next.active_migration.as_mut() {
        Some(m) if m.resharding_id == id && m.switch_points.is_empty() => {
            m.switch_points = points.clone();
            Some(next)
        }
        _ => None,
    }
}

/// The record with the operator's end of the active migration `active` filed in `final_state`; a rollback
/// (`final_state` ROLLED_BACK) also switches routing back to its `from` count at the next routing version.
pub fn ended(
    record: &StreamRecord,
    active: &Migration,
    final_state: MigrationState,
    reason: &str,
    now_ms: i64,
) -> Result<StreamRecord, EpochOverflow> {
    let mut next = record.clone();
    if final_state == MigrationState::RolledBack {
        next.shard_count = active.from_shard_count;
        next.routing_version = incremented("routingVersion", next.routing_version)?;
    }
    next.finish(final_state, Some(reason.to_owned()), now_ms);
    Ok(next)
}

/// The record with the active migration `id` completed (DEPRECATED); None when it is no longer active.
pub fn completed(record: &StreamRecord, id: &str, now_ms: i64) -> Option<StreamRecord> {
    if record
        .active_migration
        .as_ref()
        .is_none_or(|m| m.resharding_id != id)
    {
        return None;
    }
    let mut next = record.clone();
    next.finish(MigrationState::Deprecated, None, now_ms);
    Some(next)
}

/// After removed shards were retired: the shard keys whose existence decides how many keys the record
/// still counts as its own (None: nothing beyond what it routes to or migrates between).
pub fn retired_keys_to_check(record: &StreamRecord) -> Option<Range<u32>> {
    let mut floor = record.shard_count;
    if let Some(m) = &record.active_migration {
        floor = floor.max(m.from_shard_count).max(m.to_shard_count);
    }
    let upto = record.provisioned_upto();
    (upto > floor).then_some(floor..upto)
}

/// The record counting as its own only the keys of `checked` still there (`left`): keys still there (kept
/// after late writes, a rolled-back scale-out's shards) stay the coordinator's, a key created there later by
/// someone else is refused by the next scale-out rather than adopted. None when nothing changes.
pub fn forget_retired(
    record: &StreamRecord,
    checked: &Range<u32>,
    left: &[u32],
) -> Option<StreamRecord> {
    let keep = left.last().map_or(checked.start, |s| s + 1);
    if record.provisioned_shard_count == Some(keep) {
        return None;
    }
    let mut next = record.clone();
    next.provisioned_shard_count = Some(keep);
    Some(next)
}

/// The migration whose old shards' plain appends after the switch are watched (the gauge): the active one
/// once it switched, or the latest that switched and ended less than `window_ms` ago (stale plain clients
/// may still append to an old shard).
pub fn watched_migration(record: &StreamRecord, now_ms: i64, window_ms: i64) -> Option<&Migration> {
    match (&record.active_migration, record.history.last()) {
        (Some(m), _) => Some(m),
        (None, Some(m))
            if m.activated_at_ms.is_some()
                && m.completed_at_ms
                    .is_some_and(|t| now_ms.saturating_sub(t) < window_ms) =>
        {
            Some(m)
        }
        (None, _) => None,
    }
}
