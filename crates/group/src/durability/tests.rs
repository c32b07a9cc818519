//! Tests of the durability rules: recording, dismissal, new lifecycles, and how heartbeat evidence is
//! classified.

use super::{
    DISMISSAL_QUIET_MS, DismissError, Signal, Signals, dismiss, lifecycle_start, member_signal,
    mutation_block, new_lifecycle, producer_sighting_has_stake, producer_stake_cutoff_ms, record,
};
use crate::model::Member;
use crate::model::{EpochOverflow, Group, MAX_EVIDENCE, SignalKind};
use rsc_protocol::wire::HeartbeatRequest;
use serde_json::json;

fn group() -> Group {
    Group::new("orders", "orders", 4, 1_000, "life-1")
}

fn signal(kind: SignalKind, observed: i64) -> Signal {
    Signal {
        kind,
        observed,
        stored: 3,
        source: "m1".into(),
        principal: Some("app".into()),
    }
}

#[test]
fn a_signal_is_recorded_once_and_again_only_when_it_brings_something_new() {
    let g = group();
    let g1 = record(&g, &signal(SignalKind::MemberMetadataVersion, 7), 2_000).unwrap();
    let s = g1.rollback_suspicion.as_ref().unwrap();
    assert_eq!(s.highest_observed_metadata_version, 7);
    assert_eq!(s.stored_metadata_version, g.metadata_version);
    assert!(record(&g1, &signal(SignalKind::MemberMetadataVersion, 7), 3_000).is_none());
    assert!(record(&g1, &signal(SignalKind::MemberMetadataVersion, 6), 3_000).is_none());
    let g2 = record(&g1, &signal(SignalKind::MemberMetadataVersion, 9), 3_000).unwrap();
    assert_eq!(
        g2.rollback_suspicion
            .as_ref()
            .unwrap()
            .highest_observed_metadata_version,
        9
    );
    let g3 = record(&g2, &signal(SignalKind::StoreRevision, 2), 4_000).unwrap();
    let s = g3.rollback_suspicion.as_ref().unwrap();
    assert_eq!(s.kinds.len(), 2);
    assert_eq!(s.detected_at_ms, 2_000);
}

#[test]
fn mutations_are_blocked_only_while_suspected() {
    let g = group();
    assert!(mutation_block(&g).is_none());
    let g = record(&g, &signal(SignalKind::ProducerMetadataVersion, 12), 2_000).unwrap();
    let why = mutation_block(&g).unwrap();
    assert!(why.contains("PRODUCER_METADATA_VERSION"), "{why}");
    assert!(why.contains("/recreate"), "{why}");
}

#[test]
fn a_new_lifecycle_starts_above_everything_observed_and_carries_nothing_over() {
    let g = record(
        &group(),
        &signal(SignalKind::MemberMetadataVersion, 40),
        2_000,
    )
    .unwrap();
    let g = record(&g, &signal(SignalKind::MemberEpoch, 55), 2_000).unwrap();
    let n = new_lifecycle(Some(&g), 0, "orders", "orders", 8, 5_000, "life-2").unwrap();
    assert_eq!(n.metadata_version, 56);
    assert_eq!(n.group_epoch, 56);
    assert_eq!(n.assignment_epoch, 56);
    assert_eq!(n.shard_count, 8);
    assert!(n.members.is_empty() && n.rollback_suspicion.is_none());
    assert_eq!(n.lifecycle_id, "life-2");
    assert_eq!(lifecycle_start(None, 99), Ok(100));
    let top = record(
        &group(),
        &signal(SignalKind::ProducerMetadataVersion, i64::MAX),
        2_000,
    )
    .unwrap();
    assert_eq!(
        lifecycle_start(Some(&top), 0),
        Err(EpochOverflow {
            field: "metadataVersion",
            value: i64::MAX
        }),
        "an overflow is an error, never a wrap"
    );
}

#[test]
fn evidence_names_who_raised_it_and_is_bounded() {
    let mut g = group();
    for v in 5..(5 + 3 * MAX_EVIDENCE as i64) {
        g = record(&g, &signal(SignalKind::ProducerMetadataVersion, v), v).unwrap();
    }
    let s = g.rollback_suspicion.as_ref().unwrap();
    assert_eq!(s.evidence.len(), MAX_EVIDENCE);
    assert_eq!(s.evidence[0].observed, 5, "the first piece is kept");
    assert_eq!(s.evidence[0].principal.as_deref(), Some("app"));
    assert_eq!(
        s.evidence.last().unwrap().observed,
        4 + 3 * MAX_EVIDENCE as i64
    );
}

#[test]
fn a_dismissal_changes_no_version_is_recorded_and_covers_what_it_judged() {
    let g = record(
        &group(),
        &signal(SignalKind::ProducerMetadataVersion, 9),
        2_000,
    )
    .unwrap();
    let updated = g.rollback_suspicion.as_ref().unwrap().updated_at_ms;
    assert_eq!(
        dismiss(
            &g,
            Some(updated - 1),
            "ops",
            "alice",
            "a test producer",
            3_000
        ),
        Err(DismissError::Changed {
            current_updated_at_ms: updated
        })
    );
    let d = dismiss(&g, Some(updated), "ops", "alice", "a test producer", 3_000).unwrap();
    assert!(d.rollback_suspicion.is_none() && mutation_block(&d).is_none());
    assert_eq!(
        (d.group_epoch, d.metadata_version, d.assignment_epoch),
        (g.group_epoch, g.metadata_version, g.assignment_epoch),
        "no version is bumped"
    );
    let dismissal = d.rollback_dismissal.as_ref().unwrap();
    assert_eq!(
        (
            dismissal.principal.as_str(),
            dismissal.requested_by.as_str()
        ),
        ("ops", "alice")
    );
    assert_eq!(
        dismiss(&d, None, "ops", "alice", "again", 4_000),
        Err(DismissError::NotSuspected)
    );
    // The same (or lower) evidence does not raise it again; for the quiet period nothing from the principal
    // whose evidence was dismissed does; another principal's does, and so does that principal's afterwards.
    assert!(record(&d, &signal(SignalKind::ProducerMetadataVersion, 9), 5_000).is_none());
    assert!(record(&d, &signal(SignalKind::MemberMetadataVersion, 8), 5_000).is_none());
    assert!(record(&d, &signal(SignalKind::ProducerMetadataVersion, 10), 5_000).is_none());
    let other = Signal {
        principal: Some("another-app".into()),
        ..signal(SignalKind::ProducerMetadataVersion, 10)
    };
    assert!(record(&d, &other, 5_000).is_some());
    let later = 3_000 + DISMISSAL_QUIET_MS;
    assert!(record(&d, &signal(SignalKind::ProducerMetadataVersion, 9), later).is_none());
    assert!(record(&d, &signal(SignalKind::MemberMetadataVersion, 8), later).is_some());
    assert!(record(&d, &signal(SignalKind::ProducerMetadataVersion, 10), later).is_some());
    let back = Group::from_json(&d.to_json()).unwrap();
    assert_eq!(back, d);
}

#[test]
fn the_suspicion_survives_a_json_round_trip_and_old_documents_read_without_it() {
    let g = record(&group(), &signal(SignalKind::StoreRevision, 12), 2_000).unwrap();
    let back = Group::from_json(&g.to_json()).unwrap();
    assert_eq!(back, g);
    let plain = group().to_json();
    assert!(!plain.contains("rollbackSuspicion"));
    assert!(
        Group::from_json(&plain)
            .unwrap()
            .rollback_suspicion
            .is_none()
    );
}

fn req(epoch: i64, version: i64) -> HeartbeatRequest {
    serde_json::from_value(json!({
        "protocolVersion": 1, "requestId": "r", "memberId": "m1", "memberEpoch": epoch,
        "metadataVersion": version,
        "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1}
    }))
    .unwrap()
}

#[test]
fn heartbeat_evidence_is_classified_by_what_was_ahead() {
    let mut g = Group::new("p", "g", 2, 0, "l");
    let mut m = Member::new("m1", "m1", 0);
    m.member_epoch = 4;
    g.members.insert("m1".into(), m);
    let none = Signals::default();
    assert!(member_signal(&g, "m1", &req(9, 9), &none).is_none());
    let reg = Signals {
        metadata_regression: true,
        ..Signals::default()
    };
    let s = member_signal(&g, "m1", &req(4, 9), &reg).unwrap();
    assert_eq!(
        (s.kind, s.observed, s.stored),
        (SignalKind::MemberMetadataVersion, 9, 1)
    );
    let s = member_signal(&g, "m1", &req(7, 1), &reg).unwrap();
    assert_eq!(
        (s.kind, s.observed, s.stored),
        (SignalKind::MemberEpoch, 7, 4)
    );
    let back = Signals {
        rebalance_regression: true,
        ..Signals::default()
    };
    assert!(
        member_signal(&g, "m1", &req(4, 1), &back).is_none(),
        "a shard reported revoking again is counted, not recorded"
    );
}

#[test]
fn a_producer_has_a_stake_only_when_first_seen_before_the_groups_routing_last_changed() {
    use crate::model::{Migration, MigrationState};
    let mut g = group();
    // Never scaled: the group's creation (1_000), and never later than the observation.
    assert_eq!(producer_stake_cutoff_ms(&g, 5_000), 1_000);
    assert_eq!(producer_stake_cutoff_ms(&g, 500), 500);
    for (created, at) in [(3_000, 3_500), (2_000, 2_500)] {
        let m = Migration::new(
            format!("r-{created}"),
            4,
            5,
            MigrationState::Deprecated,
            "ops".into(),
            "t".into(),
            created,
        );
        g.migrations.push(Migration {
            updated_at_ms: at,
            ..m
        });
    }
    // The latest scale on record, whatever the order of the history.
    let cutoff = producer_stake_cutoff_ms(&g, 9_000);
    assert_eq!(cutoff, 3_000);
    assert!(producer_sighting_has_stake(Some(2_999), 8_000, cutoff));
    assert!(!producer_sighting_has_stake(Some(3_000), 8_000, cutoff));
    assert!(!producer_sighting_has_stake(Some(8_500), 8_600, cutoff));
    // Stored without a first-seen time: counted from its last sighting.
    assert!(producer_sighting_has_stake(None, 2_000, cutoff));
    assert!(!producer_sighting_has_stake(None, 8_000, cutoff));
}
