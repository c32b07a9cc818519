//! 409s of a group or stream that is busy: members still reading, a migration under way, a correction round
//! open.

use rsc_group::model::{MigrationState, ShardSet};
use rsc_group::reshard::end::EndRefusal;

/// Who may still be reading for the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActiveMembers {
    /// A delete without `force` while members are active.
    Delete {
        /// The active members.
        members: Vec<String>,
    },
    /// An offset reset while shards are held for a stopped incarnation (force does not override it).
    Held {
        /// The held shards.
        shards: ShardSet,
        /// The incarnation they are held for.
        member: String,
        /// When the hold ends (epoch ms).
        until_ms: i64,
    },
    /// An offset reset without `force` while members are live.
    Live {
        /// The live members.
        members: Vec<String>,
    },
    /// An offset reset with `force` while some live members still hold a lease.
    Leased {
        /// Each such member and when its lease ends (epoch ms).
        leases: Vec<(String, i64)>,
    },
    /// An offset reset while another reset of the group holds shards.
    ResetRunning {
        /// The shards the other reset holds.
        shards: ShardSet,
        /// When its hold ends at the latest (epoch ms).
        until_ms: i64,
    },
    /// An offset reset whose hold found a live member when it was written (the re-check on the aggregate).
    LiveAtHold {
        /// The live member.
        member: String,
    },
    /// An offset reset whose hold found another hold lasting when it was written (the re-check on the
    /// aggregate).
    HeldAtHold {
        /// The held shards.
        shards: ShardSet,
        /// Whom they are held for.
        member: String,
        /// When that hold ends (epoch ms).
        until_ms: i64,
    },
}

impl std::fmt::Display for ActiveMembers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ActiveMembers::Delete { members } => write!(
                f,
                "group has active members ({}); stop them first or pass \"force\": true",
                members.join(", ")
            ),
            ActiveMembers::Held {
                shards,
                member,
                until_ms,
            } => write!(
                f,
                "shards {shards:?} are held for a stopped incarnation of member {member:?} until {} (it may still \
                 be reading); retry after that — force does not override a hold",
                crate::runtime::clock::iso_ms(*until_ms)
            ),
            ActiveMembers::Live { members } => write!(
                f,
                "group has live members ({}); stop its consumers first (a reset while they read would have them \
                 read across the new position). If they are stopped but not expired yet, wait for their leases \
                 to lapse, or pass \"force\": true once they have",
                members.join(", ")
            ),
            ActiveMembers::Leased { leases } => write!(
                f,
                "group has members with a live lease ({}); force only waives members whose lease has lapsed — \
                 stop the consumers and retry once their leases have run out",
                leases
                    .iter()
                    .map(|(m, until)| format!(
                        "{m} until {}",
                        crate::runtime::clock::iso_ms(*until)
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ActiveMembers::ResetRunning { shards, until_ms } => write!(
                f,
                "another offset reset of this group is moving shards {shards:?} (its hold lasts until {} at the \
                 latest); retry once it is done",
                crate::runtime::clock::iso_ms(*until_ms)
            ),
            ActiveMembers::LiveAtHold { member } => write!(
                f,
                "member {member:?} is live; stop the group's consumers first, then reset"
            ),
            ActiveMembers::HeldAtHold {
                shards,
                member,
                until_ms,
            } => write!(
                f,
                "shards {shards:?} are held for {member:?} until {}; retry after that",
                crate::runtime::clock::iso_ms(*until_ms)
            ),
        }
    }
}

/// The migration in the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MigrationBusy {
    /// A scale while another migration of the stream is active.
    Scale {
        /// The active migration.
        id: String,
        /// Its shard counts.
        from: u32,
        /// …
        to: u32,
        /// Its state in the stream record.
        state: MigrationState,
        /// Its state in each group of the stream (empty: say the stream's).
        in_groups: Vec<(String, MigrationState)>,
    },
    /// A change of the stream's ordering while a migration is active.
    Ordering {
        /// The active migration.
        id: String,
    },
    /// An offset reset while the stream has an active migration.
    Reset {
        /// The stream prefix.
        stream: String,
        /// The active migration.
        id: String,
    },
}

impl std::fmt::Display for MigrationBusy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MigrationBusy::Scale {
                id,
                from,
                to,
                state,
                in_groups,
            } => write!(
                f,
                "migration {id} ({from} → {to} shards, {}) is still active; wait for it, roll it back, or \
                 force-complete it",
                states_in_groups(*state, in_groups)
            ),
            MigrationBusy::Ordering { id } => write!(
                f,
                "migration {id} is active; change the ordering once it has finished"
            ),
            MigrationBusy::Reset { stream, id } => write!(
                f,
                "stream {stream:?} has an active migration ({id}); a reset would move positions the migration's \
                 drain evidence relies on — wait for it to complete (or roll it back), then reset"
            ),
        }
    }
}

/// A migration's state as its groups see it: one state when they agree, else each group's.
fn states_in_groups(state: MigrationState, in_groups: &[(String, MigrationState)]) -> String {
    match in_groups.first() {
        None => state.as_str().to_owned(),
        Some((_, first)) if in_groups.iter().all(|(_, s)| s == first) => first.as_str().to_owned(),
        Some(_) => in_groups
            .iter()
            .map(|(g, s)| format!("{} in group {g}", s.as_str()))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// What a metadata-correction round refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorrectionOpen {
    /// A scale while a group of the stream is in a round.
    Scale {
        /// The group in the round.
        group: String,
    },
    /// A rollback or force-complete while the group is in a round (the core's refusal).
    End,
}

impl std::fmt::Display for CorrectionOpen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CorrectionOpen::Scale { group } => write!(
                f,
                "group {group} is in a metadata-correction round; scale after it closes"
            ),
            CorrectionOpen::End => EndRefusal::CorrectionOpen.fmt(f),
        }
    }
}
