//! Each kind writes, from its facts, the message its operation used to write itself, word for word.

use super::{
    ActiveMembers, BadQuery, Conflict, CoordError, Corrupt, MemberCap, MigrationBusy, StreamExists,
    Unavailable,
};
use rsc_group::migration::MigrationError;
use rsc_group::model::MigrationState;
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
