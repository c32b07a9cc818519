//! An operator's end of a migration (rollback, force-complete), decided before anything is written: it
//! proceeds on the stream's active migration, answers a repeat with the migration it ended, or is refused
//! with the reason. Pure: the group as read, the stream record's active migration and the request.

use crate::migration::{MigrationError, already_ended, rollback_check};
use crate::model::{Group, Migration, MigrationState};

/// What an end request comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndPlan {
    /// End the stream's active migration: file it as `final_state` (ABORTED for one that never switched
    /// routing) on the stream record, then bring every group in line.
    Proceed {
        /// The stream's active migration, as the stream record holds it.
        active: Migration,
        /// The state to file it in.
        final_state: MigrationState,
    },
    /// A repeated end: answer with the migration as this group ended it, nothing written.
    Repeat(Migration),
    /// Nothing to write: the migration is the group's, still active there, but not the stream's (a group the
    /// stream's end has not reached yet); answer with it as it then stands.
    NotActive,
}

/// Why an end request is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndRefusal {
    /// The group refuses it (unknown migration, or a rollback its rules do not allow).
    #[error(transparent)]
    Migration(#[from] MigrationError),
    /// A rollback of a migration the group has that is no longer the stream's active one.
    #[error("migration {id} is not the stream's active migration ({})", .state.as_str())]
    NotTheStreamsActive {
        /// The migration.
        id: String,
        /// Its state in the group.
        state: MigrationState,
    },
    /// A force-complete of a migration that already ended otherwise.
    #[error(
        "migration {id} already ended ({}), so there is nothing to force-complete; scale again to change \
         the shard count",
        .state.as_str()
    )]
    AlreadyEnded {
        /// The migration.
        id: String,
        /// How it ended.
        state: MigrationState,
    },
    /// A rollback of a migration that has not switched routing.
    #[error("migration {0} has not switched routing yet; abort it with force-complete instead")]
    NotSwitched(String),
    /// A rollback while a metadata-correction round is open.
    #[error("a metadata-correction round is open; retry after it closes")]
    CorrectionOpen,
}

/// The refusal of ending migration `id` as `end` once the stream record shows that it ended as `state`
/// otherwise while the end was being filed (it completed, or another end was filed first): the answer the
/// request would have had after the fact.
pub fn ended_meanwhile(id: &str, end: MigrationState, state: MigrationState) -> EndRefusal {
    match end {
        MigrationState::RolledBack => EndRefusal::Migration(already_ended(id, state)),
        _ => EndRefusal::AlreadyEnded {
            id: id.to_owned(),
            state,
        },
    }
}

/// Whether ending migration `id` as `end` (ROLLED_BACK or FORCE_COMPLETED) proceeds, given `group` as read
/// and the stream record's active migration.
pub fn plan_end(
    group: &Group,
    stream_active: Option<&Migration>,
    id: &str,
    end: MigrationState,
) -> Result<EndPlan, EndRefusal> {
    let mine = group.migration(id);
    let active = stream_active.filter(|a| a.resharding_id == id);
    match (mine, active, end) {
        (Some(m), _, MigrationState::RolledBack) if m.state == MigrationState::RolledBack => {
            return Ok(EndPlan::Repeat(m.clone()));
        }
        (Some(m), None, MigrationState::RolledBack) => {
            rollback_check(group, id)?;
            return Err(EndRefusal::NotTheStreamsActive {
                id: id.to_owned(),
                state: m.state,
            });
        }
        // Force-complete is idempotent like rollback: repeating it answers the migration it ended.
        (Some(m), None, _)
            if matches!(
                m.state,
                MigrationState::ForceCompleted | MigrationState::Aborted
            ) =>
        {
            return Ok(EndPlan::Repeat(m.clone()));
        }
        (Some(m), None, _) if m.state.is_terminal() => {
            return Err(EndRefusal::AlreadyEnded {
                id: id.to_owned(),
                state: m.state,
            });
        }
        (None, None, _) => return Err(MigrationError::NotFound(id.to_owned()).into()),
        _ => {}
    }
    let Some(active) = active else {
        return Ok(EndPlan::NotActive);
    };
    if end == MigrationState::RolledBack {
        if active.state == MigrationState::Preparing {
            return Err(EndRefusal::NotSwitched(id.to_owned()));
        }
        if group.metadata_correction.is_some() {
            return Err(EndRefusal::CorrectionOpen);
        }
    }
    let final_state = if active.state == MigrationState::Preparing {
        MigrationState::Aborted
    } else {
        end
    };
    Ok(EndPlan::Proceed {
        active: active.clone(),
        final_state,
    })
}
