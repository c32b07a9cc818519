//! No sequence of requests ever yields a negative or wrapped epoch or version.
//!
//! The pure state machine is driven with arbitrary, including huge, reported values (member epochs and
//! metadataVersions anywhere in `i64`, producer observations up to `i64::MAX`, recreate floors), from groups
//! whose stored epochs start anywhere up to `i64::MAX` (a tampered document), or right below `MAX_EPOCH`.
//! Every increment is checked: a transition that cannot bump an epoch is refused whole (a heartbeat is
//! answered RETRY and nothing is written; a tick, a migration step or a recreate returns `EpochOverflow`).
//! In a debug build an unchecked `+ 1` that wraps panics, and in any build the checks below catch a wrapped
//! value, so either way such a bug fails this test.

use proptest::prelude::*;
use rsc_group::durability::{self, Signal};
use rsc_group::heartbeat::{Outcome, decide};
use rsc_group::migration;
use rsc_group::model::{
    EpochOverflow, Group, MAX_EPOCH, MemberState, Migration, MigrationState, SignalKind,
};
use rsc_group::tick::tick;
use rsc_group::timing::Timing;
use rsc_protocol::wire::{
    HeartbeatRequest, HeartbeatStatus, RevokeState, RevokingShardReport, RuntimeConsumerCapacity,
    ShardId,
};
use std::collections::{BTreeMap, BTreeSet};

const T: Timing = Timing {
    heartbeat_interval_ms: 100,
    member_lease_ttl_ms: 500,
    rebalance_timeout_ms: 1_500,
    stale_member_retention_ms: 5_000,
    hold_margin_ms: 100,
    static_member_grace_ms: 0,
};

const MEMBERS: [&str; 4] = ["a", "b", "c", "d"];

/// A reported value: mostly near what the member was told, often extreme.
#[derive(Debug, Clone)]
enum Reported {
    /// What the member was last told (a well-behaved member).
    Told,
    Zero,
    Leave,
    Exactly(i64),
}

fn reported() -> impl Strategy<Value = Reported> {
    prop_oneof![
        4 => Just(Reported::Told),
        2 => Just(Reported::Zero),
        1 => Just(Reported::Leave),
        1 => Just(Reported::Exactly(i64::MAX)),
        1 => Just(Reported::Exactly(i64::MIN)),
        1 => (i64::MAX - 8..=i64::MAX).prop_map(Reported::Exactly),
        1 => (MAX_EPOCH - 4..=MAX_EPOCH + 4).prop_map(Reported::Exactly),
        2 => any::<i64>().prop_map(Reported::Exactly),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Beat {
        member: usize,
        epoch: Reported,
        version: Reported,
        report_owned: bool,
    },
    Tick {
        advance_ms: i64,
        lapse: u8,
    },
    Suspect {
        kind: u8,
        observed: i64,
    },
    Dismiss,
    Recreate {
        floor: i64,
    },
    Scale {
        to: u32,
    },
    Rollback,
    ReleaseDrained,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..MEMBERS.len(), reported(), reported(), any::<bool>()).prop_map(
            |(member, epoch, version, report_owned)| Op::Beat {
                member,
                epoch,
                version,
                report_owned
            }
        ),
        2 => (0i64..2_000, any::<u8>()).prop_map(|(advance_ms, lapse)| Op::Tick { advance_ms, lapse }),
        1 => (
            0u8..5,
            prop_oneof![any::<i64>(), i64::MAX - 4..=i64::MAX, MAX_EPOCH - 4..=MAX_EPOCH + 4]
        )
            .prop_map(|(kind, observed)| Op::Suspect { kind, observed }),
        1 => Just(Op::Dismiss),
        1 => prop_oneof![
            0i64..100,
            any::<i64>(),
            i64::MAX - 4..=i64::MAX,
            MAX_EPOCH - 4..=MAX_EPOCH + 4
        ]
            .prop_map(|floor| Op::Recreate { floor }),
        1 => (0u32..6).prop_map(|to| Op::Scale { to }),
        1 => Just(Op::Rollback),
        1 => Just(Op::ReleaseDrained),
    ]
}

/// Where a group's stored epochs start: ordinary, right below the cap, or anywhere up to `i64::MAX`
/// (a tampered document).
fn start() -> impl Strategy<Value = i64> {
    prop_oneof![
        2 => 1i64..10,
        2 => MAX_EPOCH - 6..=MAX_EPOCH,
        1 => i64::MAX - 6..=i64::MAX,
        1 => 1i64..i64::MAX,
    ]
}

fn request(member: &str, epoch: i64, version: i64, owned: &[u32]) -> HeartbeatRequest {
    HeartbeatRequest {
        protocol_version: 1,
        request_id: format!("{member}-{epoch}-{version}"),
        member_id: member.into(),
        member_name: None,
        client_name: None,
        client_version: None,
        group_instance_id: None,
        member_epoch: epoch,
        metadata_version: version,
        runtime_consumer_capacity: RuntimeConsumerCapacity {
            runtime_max_concurrency: 1,
            available_concurrency: 1,
        },
        owned_shards: owned.iter().map(|s| ShardId::new(*s)).collect(),
        revoking_shards: owned
            .iter()
            .map(|s| RevokingShardReport {
                shard: ShardId::new(*s),
                state: RevokeState::Revoked,
                in_flight: 0,
                acked_at: None,
            })
            .take(1)
            .collect(),
        shard_progress: vec![],
    }
}

/// Every epoch and version the group holds is in range (positive, and at most the cap or the tampered value
/// it started from); within one lifecycle none went backwards.
fn check(g: &Group, before: &Group, ceiling: i64) -> Result<(), TestCaseError> {
    for (what, v) in [
        ("groupEpoch", g.group_epoch),
        ("metadataVersion", g.metadata_version),
        ("assignmentEpoch", g.assignment_epoch),
    ] {
        prop_assert!(v >= 1, "{what} {v} is not positive");
        prop_assert!(v <= ceiling, "{what} {v} is above {ceiling}");
    }
    prop_assert!(g.assignment_epoch <= g.group_epoch);
    for m in g.members.values() {
        prop_assert!(m.member_epoch <= ceiling);
        prop_assert!(
            m.member_epoch >= -1 && m.incarnation_epoch >= 0,
            "member {} has epoch {} (incarnation {})",
            m.member_id,
            m.member_epoch,
            m.incarnation_epoch
        );
        if m.state != MemberState::Leaving {
            prop_assert!(m.member_epoch >= 0);
        }
    }
    if g.lifecycle_id == before.lifecycle_id {
        prop_assert!(
            g.group_epoch >= before.group_epoch && g.metadata_version >= before.metadata_version,
            "went backwards: {}/{} after {}/{}",
            g.group_epoch,
            g.metadata_version,
            before.group_epoch,
            before.metadata_version
        );
    }
    let violations = rsc_group::invariants::check(g);
    prop_assert!(violations.is_empty(), "{violations:?}");
    Ok(())
}

/// The highest value a recreate must start above.
fn top(g: &Group) -> i64 {
    let mut top = g
        .group_epoch
        .max(g.metadata_version)
        .max(g.assignment_epoch);
    for m in g.members.values() {
        top = top.max(m.member_epoch);
    }
    if let Some(s) = &g.rollback_suspicion {
        top = top
            .max(s.highest_observed_metadata_version)
            .max(s.highest_observed_epoch);
    }
    top
}

fn run(start: i64, ops: Vec<Op>) -> Result<(), TestCaseError> {
    // The group as stored, possibly tampered with: epochs anywhere up to i64::MAX.
    let mut g = Group::new("p", "g", 3, 1_000, "life-0");
    g.group_epoch = start;
    g.metadata_version = start;
    g.assignment_epoch = start;
    let ceiling = start.max(MAX_EPOCH);
    let mut now = 1_000i64;
    let mut lifecycles = 0;
    // What each member was last told: (memberEpoch, metadataVersion, assigned shards).
    let mut told: BTreeMap<&str, (i64, i64, Vec<u32>)> = BTreeMap::new();
    for op in ops {
        now += 1;
        let before = g.clone();
        match op {
            Op::Beat {
                member,
                epoch,
                version,
                report_owned,
            } => {
                let id = MEMBERS[member];
                let (e, v, owned) = told.get(id).cloned().unwrap_or((0, 0, vec![]));
                let pick = |r: &Reported, told: i64| match r {
                    Reported::Told => told,
                    Reported::Zero => 0,
                    Reported::Leave => -1,
                    Reported::Exactly(x) => *x,
                };
                let owned = if report_owned { owned } else { vec![] };
                let req = request(id, pick(&epoch, e), pick(&version, v), &owned);
                let d = decide(Some(&g), id, &req, now, &T);
                let r = &d.response;
                if d.signals.epochs_exhausted {
                    prop_assert_eq!(r.status, HeartbeatStatus::Retry);
                    prop_assert!(
                        !matches!(d.outcome, Outcome::Write(_)),
                        "nothing is written"
                    );
                }
                if let Outcome::Write(t) = d.outcome {
                    g = t.group.expect("a write carries the group");
                }
                if matches!(
                    r.status,
                    HeartbeatStatus::Ok
                        | HeartbeatStatus::SyncMetadata
                        | HeartbeatStatus::RevokePending
                        | HeartbeatStatus::FencedMemberEpoch
                ) {
                    for (what, v) in [
                        ("groupEpoch", r.group_epoch),
                        ("assignmentEpoch", r.assignment_epoch),
                        ("metadataVersion", r.metadata_version),
                    ] {
                        prop_assert!(v >= 1, "answered {what} {v}");
                    }
                    prop_assert!(
                        r.member_epoch >= -1,
                        "answered memberEpoch {}",
                        r.member_epoch
                    );
                    let shards = r
                        .assignment
                        .assigned_shards
                        .iter()
                        .map(|s| s.shard_index)
                        .collect();
                    told.insert(id, (r.member_epoch, r.metadata_version, shards));
                }
            }
            Op::Tick { advance_ms, lapse } => {
                now += advance_ms;
                let lapsed: BTreeSet<String> = MEMBERS
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| lapse & (1 << i) != 0)
                    .map(|(_, m)| (*m).to_owned())
                    .collect();
                match tick(&g, now, &lapsed, &T) {
                    Ok(Some((t, _))) => g = t.group.expect("a tick writes a group"),
                    Ok(None) => {}
                    Err(EpochOverflow { value, .. }) => prop_assert!(value >= MAX_EPOCH),
                }
            }
            Op::Suspect { kind, observed } => {
                let kind = [
                    SignalKind::MemberMetadataVersion,
                    SignalKind::MemberEpoch,
                    SignalKind::ProducerMetadataVersion,
                    SignalKind::StoreRevision,
                    SignalKind::RebalanceBackward,
                ][kind as usize];
                let signal = Signal {
                    kind,
                    observed,
                    stored: g.metadata_version,
                    source: "prop".into(),
                    principal: Some("app".into()),
                };
                if let Some(next) = durability::record(&g, &signal, now) {
                    g = next;
                }
            }
            Op::Dismiss => {
                if let Ok(next) = durability::dismiss(&g, None, "ops", "ops", "prop", now) {
                    prop_assert_eq!(
                        (
                            next.group_epoch,
                            next.metadata_version,
                            next.assignment_epoch
                        ),
                        (g.group_epoch, g.metadata_version, g.assignment_epoch)
                    );
                    g = next;
                }
            }
            Op::Recreate { floor } => {
                let above = top(&g).max(floor.max(0));
                lifecycles += 1;
                let id = format!("life-{lifecycles}");
                match durability::new_lifecycle(Some(&g), floor, "p", "g", 3, now, &id) {
                    Ok(next) => {
                        prop_assert!(
                            next.metadata_version > above && next.group_epoch > above,
                            "recreated at {} below {above}",
                            next.metadata_version
                        );
                        g = next;
                        told.clear();
                    }
                    Err(e) => prop_assert!(e.value >= MAX_EPOCH, "only the top cannot grow"),
                }
            }
            Op::Scale { to } => {
                let m = Migration {
                    resharding_id: format!("r-{now}"),
                    from_shard_count: g.shard_count,
                    to_shard_count: to,
                    state: MigrationState::Active,
                    requested_by: "prop".into(),
                    reason: "prop".into(),
                    created_at_ms: now,
                    updated_at_ms: now,
                    activated_at_ms: None,
                    draining_at_ms: None,
                    completed_at_ms: None,
                    end_reason: None,
                    switch_points: Default::default(),
                };
                let mut next = g.clone();
                match migration::adopt(&mut next, &m, now, &T) {
                    Ok(_) => g = next,
                    Err(e) => {
                        prop_assert!(e.value >= MAX_EPOCH);
                        prop_assert_eq!(&next, &g, "a refused step changes nothing");
                    }
                }
            }
            Op::Rollback => {
                if let Some(id) = g.active_migration_id.clone() {
                    let mut next = g.clone();
                    match migration::rollback(&mut next, &id, "prop", now, &T) {
                        Ok(_) => g = next,
                        Err(migration::MigrationError::EpochOverflow(e)) => {
                            prop_assert!(e.value >= MAX_EPOCH);
                            prop_assert_eq!(&next, &g, "a refused step changes nothing");
                        }
                        Err(_) => {}
                    }
                }
            }
            Op::ReleaseDrained => {
                let drained = g.draining_shards.clone();
                let mut next = g.clone();
                match migration::release_drained(&mut next, &drained, now, &T) {
                    Ok(_) => g = next,
                    Err(e) => {
                        prop_assert!(e.value >= MAX_EPOCH);
                        prop_assert_eq!(&next, &g, "a refused step changes nothing");
                    }
                }
            }
        }
        check(&g, &before, ceiling)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn no_sequence_of_requests_yields_a_negative_or_wrapped_epoch(
        start in start(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        run(start, ops)?;
    }
}

/// The reported shape of the overflow: a member reporting `i64::MAX` (a rollback signal; the API now refuses
/// it, the state machine must not rely on that) followed by a recreate is a typed error, not a group at
/// `i64::MIN`.
#[test]
fn a_recreate_above_i64_max_is_an_error_not_a_wrap() {
    let g = Group::new("p", "g", 2, 0, "l");
    let signal = Signal {
        kind: SignalKind::MemberMetadataVersion,
        observed: i64::MAX,
        stored: 1,
        source: "m".into(),
        principal: None,
    };
    let g = durability::record(&g, &signal, 1).expect("recorded");
    let e = durability::new_lifecycle(Some(&g), 0, "p", "g", 2, 2, "l2").unwrap_err();
    assert_eq!(e.value, i64::MAX);
    assert!(e.to_string().contains("exhausted"), "{e}");
    // Right below the cap a recreate still works, and its epochs then cannot grow: typed, not wrapped.
    let signal = Signal {
        observed: MAX_EPOCH - 1,
        ..signal
    };
    let g = durability::record(&Group::new("p", "g", 2, 0, "l"), &signal, 1).unwrap();
    let n = durability::new_lifecycle(Some(&g), 0, "p", "g", 2, 2, "l2").unwrap();
    assert_eq!(n.metadata_version, MAX_EPOCH);
    assert_eq!(
        rsc_group::rebalance::bump_epochs(&mut n.clone()),
        Err(EpochOverflow {
            field: "groupEpoch",
            value: MAX_EPOCH
        })
    );
}
