//! Each kind writes, from its facts, the message its operation used to write itself, word for word.

use super::{
    ActiveMembers, BadQuery, BadRequest, BadReset, Conflict, CoordError, Corrupt, MemberCap,
    MigrationBusy, ObservationNote, StreamExists, Suspected, Unavailable, Unrecorded,
};
use rsc_group::migration::MigrationError;
use rsc_group::model::{EpochOverflow, MigrationState};
use rsc_group::reshard::end::EndRefusal;
use rsc_protocol::errors::ErrorCode;

#[test]
fn a_kind_writes_its_message_from_its_facts() {
    let cases: Vec<(CoordError, ErrorCode, &str)> = vec![
        (
            Conflict::ShardMissing {
                key: "o:0".into(),
                group: "g".into(),
            }
            .into(),
            ErrorCode::StateVersionConflict,
            "shard stream \"o:0\" or its consumer group \"g\" is missing; a producer routing request provisions \
             it again — then retry",
        ),
        (
            ActiveMembers::Live {
                members: vec!["a".into(), "b".into()],
            }
            .into(),
            ErrorCode::GroupHasActiveMembers,
            "group has live members (a, b); stop its consumers first (a reset while they read would have them \
             read across the new position). If they are stopped but not expired yet, wait for their leases to \
             lapse, or pass \"force\": true once they have",
        ),
        (
            MigrationBusy::Scale {
                id: "r".into(),
                from: 2,
                to: 4,
                state: MigrationState::Active,
                in_groups: vec![
                    ("a".into(), MigrationState::Active),
                    ("b".into(), MigrationState::Draining),
                ],
            }
            .into(),
            ErrorCode::ActiveMigrationExists,
            "migration r (2 → 4 shards, ACTIVE in group a, DRAINING in group b) is still active; wait for it, \
             roll it back, or force-complete it",
        ),
        (
            MigrationBusy::Scale {
                id: "r".into(),
                from: 2,
                to: 4,
                state: MigrationState::Preparing,
                in_groups: Vec::new(),
            }
            .into(),
            ErrorCode::ActiveMigrationExists,
            "migration r (2 → 4 shards, PREPARING) is still active; wait for it, roll it back, or \
             force-complete it",
        ),
        (
            StreamExists::Live {
                stream: "o".into(),
                groups: vec!["o".into(), "audit".into()],
            }
            .into(),
            ErrorCode::StreamPrefixAlreadyExists,
            "stream \"o\" already exists (groups: o, audit)",
        ),
        (
            Unavailable::Unexplained.into(),
            ErrorCode::RedisUnavailable,
            "Redis is unavailable; retry",
        ),
        (
            CoordError::from(EndRefusal::AlreadyEnded {
                id: "r".into(),
                state: MigrationState::RolledBack,
            }),
            ErrorCode::MigrationAlreadyEnded,
            "migration r already ended (ROLLED_BACK), so there is nothing to force-complete; scale again to \
             change the shard count",
        ),
        (
            CoordError::from(MigrationError::NotFound("r".into())),
            ErrorCode::MigrationNotFound,
            "migration r does not exist for this group",
        ),
        (
            BadQuery::Limit {
                given: "0".into(),
                max: 1000,
                default: 50,
            }
            .into(),
            ErrorCode::InvalidRequest,
            "limit: \"0\" is not a number of records from 1 to 1000 (default 50)",
        ),
        (
            MemberCap::Group {
                stream: "s".into(),
                group: "g".into(),
                live: 3,
                cap: 3,
                member: "m".into(),
            }
            .into(),
            ErrorCode::TooManyMembers,
            "group s/g already has 3 members, its cap (coordinator.group.max-members 3); member \"m\" is not \
             admitted: stop some members, or raise the cap",
        ),
        (
            Corrupt::Unreplaceable(Box::new(Corrupt::StreamRevisionExhausted {
                key: "k".into(),
            }))
            .into(),
            ErrorCode::MetadataCorrupt,
            "stream record k has a store revision that cannot be incremented; restore it from backup; recreate \
             cannot replace an unreadable key: keep a copy (DUMP), delete the key, then call recreate again",
        ),
        (
            Suspected::ProducerAhead {
                observed: 9,
                stored: 4,
                note: ObservationNote::NotRecorded {
                    why: Unrecorded::KeptChanging,
                    block: None,
                },
            }
            .into(),
            ErrorCode::MetadataRollbackSuspected,
            "this producer saw metadataVersion 9 but Redis holds 4: the group's metadata rolled back. Routing is \
             refused rather than moved backwards; the observation was logged but not recorded as rollback \
             evidence: the group kept changing while the evidence was being written; report it again",
        ),
        (
            CoordError::group_exists("s", "g"),
            ErrorCode::GroupAlreadyExists,
            "consumer group \"g\" of stream \"s\" already exists",
        ),
    ];
    for (e, code, message) in cases {
        assert_eq!(e.code(), code, "{e:?}");
        assert_eq!(e.message(), message, "{e:?}");
    }
}

#[test]
fn a_long_list_of_keys_is_cut_after_ten() {
    let keys: Vec<String> = (0..12).map(|i| format!("o:{i}")).collect();
    let e = CoordError::from(StreamExists::Leftovers {
        stream: "o".into(),
        keys,
    });
    assert!(
        e.message().contains(
            "already exist (left by an earlier stream of this prefix, or written by someone else): \
                       o:0, o:1, o:2, o:3, o:4, o:5, o:6, o:7, o:8, o:9 and 2 more. Choose"
        ),
        "{e}"
    );
}

/// The offset reset's, the pending list's and describe's failures, which their operations wrote themselves
/// until they got their facts: each message is the one those operations wrote, word for word.
#[test]
fn the_reset_pending_and_describe_failures_write_their_old_messages() {
    const T: i64 = 1_764_756_000_000; // 2025-12-03T10:00:00.000Z
    let cases: Vec<(CoordError, ErrorCode, &str)> = vec![
        (
            BadReset::ReasonRequired.into(),
            ErrorCode::InvalidRequest,
            "reason: required — why the position moves (recorded in the audit log), e.g. \"replay after a bad \
             deploy\"",
        ),
        (
            BadReset::ShiftTooFar {
                shift: -10_001,
                max: 10_000,
            }
            .into(),
            ErrorCode::InvalidRequest,
            "shift: -10001 is beyond ±10000 records; for a longer move reset to a DATETIME or an ID",
        ),
        (
            Corrupt::ResetExpiryOverflow {
                stream: "o".into(),
                group: "g".into(),
                overflow: EpochOverflow {
                    field: "groupEpoch",
                    value: 7,
                },
            }
            .into(),
            ErrorCode::MetadataCorrupt,
            "expiring the lapsed members of o/g would overflow an epoch (EpochOverflow { field: \"groupEpoch\", \
             value: 7 }); recreate the group",
        ),
        (
            ActiveMembers::LiveAtHold { member: "m".into() }.into(),
            ErrorCode::GroupHasActiveMembers,
            "member \"m\" is live; stop the group's consumers first, then reset",
        ),
        (
            ActiveMembers::HeldAtHold {
                shards: [0, 2].into(),
                member: "m".into(),
                until_ms: T,
            }
            .into(),
            ErrorCode::GroupHasActiveMembers,
            "shards {0, 2} are held for \"m\" until 2025-12-03T10:00:00.000Z; retry after that",
        ),
        (
            ActiveMembers::ResetRunning {
                shards: [1].into(),
                until_ms: T,
            }
            .into(),
            ErrorCode::GroupHasActiveMembers,
            "another offset reset of this group is moving shards {1} (its hold lasts until \
             2025-12-03T10:00:00.000Z at the latest); retry once it is done",
        ),
        (
            ActiveMembers::Held {
                shards: [1].into(),
                member: "m".into(),
                until_ms: T,
            }
            .into(),
            ErrorCode::GroupHasActiveMembers,
            "shards {1} are held for a stopped incarnation of member \"m\" until 2025-12-03T10:00:00.000Z (it \
             may still be reading); retry after that — force does not override a hold",
        ),
        (
            ActiveMembers::Leased {
                leases: vec![("a".into(), T), ("b".into(), T + 1_000)],
            }
            .into(),
            ErrorCode::GroupHasActiveMembers,
            "group has members with a live lease (a until 2025-12-03T10:00:00.000Z, b until \
             2025-12-03T10:00:01.000Z); force only waives members whose lease has lapsed — stop the consumers \
             and retry once their leases have run out",
        ),
        (
            MigrationBusy::Reset {
                stream: "o".into(),
                id: "r".into(),
            }
            .into(),
            ErrorCode::ActiveMigrationExists,
            "stream \"o\" has an active migration (r); a reset would move positions the migration's drain \
             evidence relies on — wait for it to complete (or roll it back), then reset",
        ),
        (
            Conflict::ResetHoldKeptChanging.into(),
            ErrorCode::StateVersionConflict,
            "the group kept changing while the reset tried to hold its shards; retry",
        ),
        (
            Conflict::ResetHoldEnded {
                stream: "o".into(),
                group: "g".into(),
            }
            .into(),
            ErrorCode::StateVersionConflict,
            "the reset's hold on the shards of o/g was gone before every shard was moved (it ended, or the \
             group was deleted or recreated, or Redis lost it), so a member may have been granted them",
        ),
        (
            Conflict::ResetExtendKeptChanging.into(),
            ErrorCode::StateVersionConflict,
            "the group kept changing while the reset extended its hold; check the positions and retry",
        ),
        (
            Conflict::ResetLiftKeptChanging.into(),
            ErrorCode::StateVersionConflict,
            "the group kept changing while the reset lifted its hold",
        ),
        (
            BadQuery::PendingParameter {
                key: "limit".into(),
            }
            .into(),
            ErrorCode::InvalidRequest,
            "limit: not a parameter of the pending list (consumer, count, cursor)",
        ),
        (
            BadQuery::PendingCount {
                given: "0".into(),
                max: 1000,
                default: 100,
            }
            .into(),
            ErrorCode::InvalidRequest,
            "count: \"0\" is not a number of entries from 1 to 1000 (default 100)",
        ),
        (
            BadQuery::HistoryMinutes {
                given: "16".into(),
                max: 15,
            }
            .into(),
            ErrorCode::InvalidRequest,
            "minutes: \"16\" is not an integer from 1 to 15 (the minutes of history to return; the coordinator \
             keeps 15)",
        ),
        (
            BadRequest::TooManyShardsToDescribe {
                stream: "o".into(),
                shards: 16_385,
                max: 16_384,
            }
            .into(),
            ErrorCode::InvalidRequest,
            "stream \"o\" has 16385 shards; describe lists at most 16384",
        ),
    ];
    for (e, code, message) in cases {
        assert_eq!(e.code(), code, "{e:?}");
        assert_eq!(e.message(), message, "{e:?}");
    }
}
