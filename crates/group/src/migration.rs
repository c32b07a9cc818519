//! Resharding as a group sees it: adopting a new shard count, draining removed shards, completion,
//! rollback and the operator's force-complete.
//!
//! Scale-out widens the assignable range; the new shards reach members through the normal sticky,
//! revoke-before-assign path, so only the shards that must move, move. Scale-in keeps the removed shards
//! assigned as *draining* shards (routing no longer sends to them) until Redis shows their backlog consumed
//! and acknowledged by every consumer group (`release_drained`, driven by the reconciler's `XINFO GROUPS`
//! evidence); only then do they leave the assignment, through the same revoke-before-assign path. Rolling
//! back a scale-out turns the added shards into draining shards, so records already written there are
//! consumed before they leave. Every step bumps the epochs so revocations are fenced by epoch as usual.

use crate::model::{
    EpochOverflow, Group, GroupState, Migration, MigrationState, ShardSet, incremented,
};
use crate::rebalance::{Bump, bumped, recompute_target};
use crate::timing::Timing;

/// Why a migration operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrationError {
    /// The group keeps no migration of this id.
    #[error("migration {0} does not exist for this group")]
    NotFound(String),
    /// The operation is not allowed in the migration's state (the message says why).
    #[error("{0}")]
    NotAllowed(String),
    /// An epoch or version would overflow; nothing changed.
    #[error(transparent)]
    EpochOverflow(#[from] EpochOverflow),
}

/// Adopts a migration whose routing switch the stream has committed. Idempotent: returns false when the
/// group already adopted it (or it ended). Nothing changes when the epochs would overflow.
pub fn adopt(
    g: &mut Group,
    stream_migration: &Migration,
    now_ms: i64,
    timing: &Timing,
) -> Result<bool, EpochOverflow> {
    if g.migration(&stream_migration.resharding_id).is_some() {
        return Ok(false);
    }
    let bump = bumped(g)?;
    // Gates of an earlier ordered migration end with it.
    g.ordering_gates.clear();
    g.ordering_switch_points.clear();
    // A previous migration still active in this group is superseded by the stream's newer one.
    if let Some(previous) = g.active_migration_id.take()
        && let Some(p) = g.migration_mut(&previous)
    {
        p.state = MigrationState::ForceCompleted;
        p.end_reason = Some(format!("superseded by {}", stream_migration.resharding_id));
        p.completed_at_ms = Some(now_ms);
        p.updated_at_ms = now_ms;
    }
    let from = g.shard_count;
    let to = stream_migration.to_shard_count;
    g.draining_shards.extend(to..from);
    g.draining_shards.retain(|s| *s >= to);
    g.shard_count = to;
    let mut m = stream_migration.clone();
    m.from_shard_count = from;
    m.switch_points.clear();
    m.state = MigrationState::Active;
    m.activated_at_ms = Some(now_ms);
    m.updated_at_ms = now_ms;
    g.active_migration_id = Some(m.resharding_id.clone());
    g.record_migration(m);
    bump.apply(g);
    recompute_target(g, now_ms, timing);
    g.updated_at_ms = now_ms;
    Ok(true)
}

/// Lets draining shards for which Redis shows no backlog leave the assignment (they are then revoked from
/// their holders like any other shard). Returns false when none of `drained` was draining.
pub fn release_drained(
    g: &mut Group,
    drained: &ShardSet,
    now_ms: i64,
    timing: &Timing,
) -> Result<bool, EpochOverflow> {
    if !g.draining_shards.iter().any(|s| drained.contains(s)) {
        return Ok(false);
    }
    let bump = bumped(g)?;
    g.draining_shards.retain(|s| !drained.contains(s));
    bump.apply(g);
    recompute_target(g, now_ms, timing);
    g.updated_at_ms = now_ms;
    Ok(true)
}

/// Removed shards still held by a live member or a hold (their release has not been recorded yet).
pub fn removed_shards_still_held(g: &Group) -> ShardSet {
    g.held_shards()
        .into_iter()
        .filter(|s| *s >= g.shard_count)
        .collect()
}

/// Moves the active migration along: ACTIVE → DRAINING once members converged (or none are left) and no
/// ordering gate is closed; DRAINING → DEPRECATED once no removed shard is draining or held. Returns whether
/// anything changed; nothing changes when an epoch would overflow.
///
/// A closed gate keeps the migration ACTIVE even when the group looks converged — every child granted
/// fenced (a scale-in), or no member left to grant to: the stream's migration must not complete, nor a next
/// scale supersede the gates, while a parent still holds records from before the switch (found by the
/// simulation: a group that was EMPTY completed its migration with gates closed, and the next scale's
/// adoption lifted a survivor's fence before its parent was consumed).
pub fn advance(g: &mut Group, now_ms: i64) -> Result<bool, EpochOverflow> {
    let Some(id) = g.active_migration_id.clone() else {
        return Ok(false);
    };
    let converged = g.state != GroupState::Reconciling && g.ordering_gates.is_empty();
    let drained = g.draining_shards.is_empty() && removed_shards_still_held(g).is_empty();
    let bump = bumped(g);
    let next_version = incremented("metadataVersion", g.metadata_version);
    let Some(m) = g.migration_mut(&id) else {
        g.active_migration_id = None;
        return Ok(true);
    };
    match m.state {
        MigrationState::Active if converged => {
            let bump = bump?;
            m.state = MigrationState::Draining;
            m.draining_at_ms = Some(now_ms);
            m.updated_at_ms = now_ms;
            bump.apply(g);
            Ok(true)
        }
        MigrationState::Draining if drained => {
            let next_version = next_version?;
            m.state = MigrationState::Deprecated;
            m.completed_at_ms = Some(now_ms);
            m.updated_at_ms = now_ms;
            g.active_migration_id = None;
            g.metadata_version = next_version;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Whether rolling back `id` is allowed now, and if not, why.
pub fn rollback_check(g: &Group, id: &str) -> Result<(), MigrationError> {
    let m = g
        .migration(id)
        .ok_or_else(|| MigrationError::NotFound(id.to_owned()))?;
    match m.state {
        MigrationState::Active | MigrationState::Draining | MigrationState::RolledBack => Ok(()),
        MigrationState::Preparing => Err(MigrationError::NotAllowed(format!(
            "migration {id} has not switched routing yet; abort it with force-complete instead"
        ))),
        s => Err(already_ended(id, s)),
    }
}

/// The refusal of a rollback of `id`, which already ended as `state`.
pub fn already_ended(id: &str, state: MigrationState) -> MigrationError {
    MigrationError::NotAllowed(format!(
        "migration {id} already ended ({}); scale again to change the shard count",
        state.as_str()
    ))
}

/// Rolls the active migration back to its `from` shard count. A scale-out's added shards become draining
/// shards (their records are consumed before they leave); a scale-in's removed shards are regular again.
pub fn rollback(
    g: &mut Group,
    id: &str,
    reason: &str,
    now_ms: i64,
    timing: &Timing,
) -> Result<bool, MigrationError> {
    rollback_check(g, id)?;
    let Some(m) = g.migration(id).cloned() else {
        return Err(MigrationError::NotFound(id.to_owned()));
    };
    if m.state == MigrationState::RolledBack {
        return Ok(false);
    }
    roll_back(g, m, reason, now_ms, timing)
}

/// Takes in the stream's rollback of migration `id`: as [`rollback`], and also when this group's own copy
/// completed already (DEPRECATED) while the stream's was still active — its drained shards were released,
/// but routing goes back to the `from` count, so the group must too (else producers route to shards it never
/// assigns; found by the simulation). A migration this group never had, or ended otherwise, is left alone.
pub fn take_in_rollback(
    g: &mut Group,
    id: &str,
    reason: &str,
    now_ms: i64,
    timing: &Timing,
) -> Result<bool, MigrationError> {
    match g.migration(id).cloned() {
        Some(m) if m.state == MigrationState::Deprecated => roll_back(g, m, reason, now_ms, timing),
        Some(m) if !m.state.is_terminal() => rollback(g, id, reason, now_ms, timing),
        _ => Ok(false),
    }
}

/// Rolls `m` back to its `from` shard count (checked by the caller).
fn roll_back(
    g: &mut Group,
    m: Migration,
    reason: &str,
    now_ms: i64,
    timing: &Timing,
) -> Result<bool, MigrationError> {
    let bump = bumped(g)?;
    let from = m.from_shard_count;
    let current = g.shard_count;
    g.draining_shards.extend(from..current);
    g.draining_shards.retain(|s| *s >= from);
    g.shard_count = from;
    end_by_operator(
        g,
        m,
        MigrationState::RolledBack,
        reason,
        bump,
        now_ms,
        timing,
    );
    Ok(true)
}

/// Files `m` as ended by an operator in `state`, clears the active pointer, bumps the epochs (computed
/// before anything changed) and re-assigns.
fn end_by_operator(
    g: &mut Group,
    mut m: Migration,
    state: MigrationState,
    reason: &str,
    bump: Bump,
    now_ms: i64,
    timing: &Timing,
) {
    m.state = state;
    m.end_reason = Some(reason.to_owned());
    m.completed_at_ms = Some(now_ms);
    m.updated_at_ms = now_ms;
    g.record_migration(m);
    g.active_migration_id = None;
    g.ordering_gates.clear();
    g.ordering_switch_points.clear();
    bump.apply(g);
    recompute_target(g, now_ms, timing);
    g.updated_at_ms = now_ms;
}

/// Ends the active migration by operator decision: removed shards leave the assignment without drain
/// evidence (their holders still release them through revoke-before-assign).
pub fn force_complete(
    g: &mut Group,
    id: &str,
    reason: &str,
    now_ms: i64,
    timing: &Timing,
) -> Result<bool, MigrationError> {
    let m = g
        .migration(id)
        .cloned()
        .ok_or_else(|| MigrationError::NotFound(id.to_owned()))?;
    if m.state == MigrationState::ForceCompleted {
        return Ok(false);
    }
    if m.state.is_terminal() {
        return Err(MigrationError::NotAllowed(format!(
            "migration {id} already ended ({}); nothing to force",
            m.state.as_str()
        )));
    }
    let bump = bumped(g)?;
    g.draining_shards.clear();
    end_by_operator(
        g,
        m,
        MigrationState::ForceCompleted,
        reason,
        bump,
        now_ms,
        timing,
    );
    Ok(true)
}
