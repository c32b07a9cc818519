//! Static membership (`groupInstanceId`) in the state machine: a static member that stops keeps its target
//! reserved for the grace; a member joining with the same instance id within it gets exactly those shards,
//! and no other member's target changes; past the grace the shards are rebalanced; a second live member
//! claiming the instance id is refused; a temporary leave (epoch -2) reserves too. Also: aggregates written
//! before static membership still load.

use rsc_group::heartbeat::{Outcome, decide};
use rsc_group::invariants;
use rsc_group::model::{Group, MemberState, ReservationReason, ShardSet};
use rsc_group::tick::tick;
use rsc_group::timing::Timing;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatStatus, RuntimeConsumerCapacity, ShardId};
use std::collections::{BTreeMap, BTreeSet};

const T: Timing = Timing {
    heartbeat_interval_ms: 1_000,
    member_lease_ttl_ms: 5_000,
    rebalance_timeout_ms: 20_000,
    stale_member_retention_ms: 600_000,
    hold_margin_ms: 500,
    static_member_grace_ms: 10_000,
};

fn request(
    member: &str,
    instance: Option<&str>,
    epoch: i64,
    metadata_version: i64,
    owned: &ShardSet,
) -> HeartbeatRequest {
    HeartbeatRequest {
        protocol_version: 1,
        request_id: format!("{member}-{epoch}-{owned:?}"),
        member_id: member.into(),
        member_name: None,
        client_name: None,
        client_version: None,
        group_instance_id: instance.map(str::to_owned),
        member_epoch: epoch,
        metadata_version,
        runtime_consumer_capacity: RuntimeConsumerCapacity {
            runtime_max_concurrency: 1,
            available_concurrency: 1,
        },
        owned_shards: owned.iter().map(|s| ShardId::new(*s)).collect(),
        revoking_shards: vec![],
        shard_progress: vec![],
    }
}

/// A member process as the test drives it: its id, instance id, epoch and owned shards.
struct Proc {
    id: String,
    instance: Option<String>,
    epoch: i64,
    metadata_version: i64,
    owned: ShardSet,
}

impl Proc {
    fn new(id: &str, instance: Option<&str>) -> Self {
        Proc {
            id: id.into(),
            instance: instance.map(str::to_owned),
            epoch: 0,
            metadata_version: 0,
            owned: ShardSet::new(),
        }
    }

    /// One heartbeat, applied (Python style: owned = what the last OK assigned).
    fn beat(&mut self, g: &mut Group, now: i64) -> HeartbeatStatus {
        let req = request(
            &self.id,
            self.instance.as_deref(),
            self.epoch,
            self.metadata_version,
            &self.owned,
        );
        let d = decide(Some(g), &self.id, &req, now, &T);
        if let Outcome::Write(t) = d.outcome {
            *g = t.group.expect("a write carries the group");
        }
        assert!(
            invariants::check(g).is_empty(),
            "{:?}",
            invariants::check(g)
        );
        if d.response.status == HeartbeatStatus::Ok {
            self.epoch = d.response.member_epoch;
            self.metadata_version = d.response.metadata_version;
            self.owned = d
                .response
                .assignment
                .assigned_shards
                .iter()
                .map(|s| s.shard_index)
                .collect();
        }
        d.response.status
    }
}

fn targets(g: &Group) -> BTreeMap<String, ShardSet> {
    g.target_assignments.clone()
}

fn apply_tick(g: &mut Group, now: i64, lapsed: &[&str]) -> rsc_group::tick::TickReport {
    let lapsed: BTreeSet<String> = lapsed.iter().map(|s| (*s).to_owned()).collect();
    let (t, report) = tick(g, now, &lapsed, &T)
        .expect("small epochs")
        .expect("something is due");
    *g = t.group.expect("a tick writes the group");
    assert!(
        invariants::check(g).is_empty(),
        "{:?}",
        invariants::check(g)
    );
    report
}

/// Three static members over 12 shards, converged: every one owns its target.
fn three_static(now: i64) -> (Group, Vec<Proc>) {
    let mut g = Group::new("s", "g", 12, now, "lc");
    let mut procs = vec![
        Proc::new("a-1", Some("pod-a")),
        Proc::new("b-1", Some("pod-b")),
        Proc::new("c-1", Some("pod-c")),
    ];
    for _ in 0..4 {
        for p in &mut procs {
            assert_eq!(p.beat(&mut g, now), HeartbeatStatus::Ok);
        }
    }
    for p in &procs {
        assert_eq!(p.owned, g.target_of(&p.id), "{} converged", p.id);
        assert_eq!(p.owned.len(), 4);
    }
    (g, procs)
}

#[test]
fn a_restart_within_the_grace_takes_the_same_shards_and_moves_nothing_else() {
    let now = 1_000_000;
    let (mut g, mut procs) = three_static(now);
    let before = targets(&g);
    let c_target = g.target_of("c-1");

    // c-1 crashes: its lease lapses and it is expired; its target is reserved, a's and b's stay.
    let report = apply_tick(&mut g, now + 6_000, &["c-1"]);
    assert_eq!(report.reserved, vec!["pod-c".to_owned()]);
    assert_eq!(g.members["c-1"].state, MemberState::Expired);
    let r = &g.static_reservations[0];
    assert_eq!(
        (r.group_instance_id.as_str(), r.member_id.as_str()),
        ("pod-c", "c-1")
    );
    assert_eq!(
        (r.shards.clone(), r.until_ms, r.reason),
        (
            c_target.clone(),
            now + 6_000 + T.static_member_grace_ms,
            ReservationReason::LeaseLapsed
        )
    );
    assert_eq!(g.target_of("a-1"), before["a-1"]);
    assert_eq!(g.target_of("b-1"), before["b-1"]);
    for p in &mut procs[..2] {
        assert_eq!(p.beat(&mut g, now + 6_000), HeartbeatStatus::Ok);
        assert_eq!(p.owned, before[&p.id]);
    }

    // A new process with another member id and the same instance id joins within the grace.
    let mut c2 = Proc::new("c-2", Some("pod-c"));
    assert_eq!(c2.beat(&mut g, now + 9_000), HeartbeatStatus::Ok);
    assert_eq!(c2.owned, c_target, "the reserved shards, granted at once");
    assert!(g.static_reservations.is_empty());
    assert_eq!(g.target_of("a-1"), before["a-1"]);
    assert_eq!(g.target_of("b-1"), before["b-1"]);
    assert_eq!(g.members["c-2"].group_instance_id.as_deref(), Some("pod-c"));
}

#[test]
fn past_the_grace_the_reserved_shards_are_rebalanced() {
    let now = 1_000_000;
    let (mut g, mut procs) = three_static(now);
    apply_tick(&mut g, now + 6_000, &["c-1"]);
    let until = g.static_reservations[0].until_ms;
    assert!(
        tick(&g, until - 1, &BTreeSet::new(), &T)
            .unwrap()
            .is_none_or(|(t, _)| !t.group.unwrap().static_reservations.is_empty()),
        "not before the grace is over"
    );
    let report = apply_tick(&mut g, until, &[]);
    assert_eq!(report.reservations_lapsed, vec!["pod-c".to_owned()]);
    assert!(g.static_reservations.is_empty());
    assert_eq!(g.target_of("a-1").len(), 6);
    assert_eq!(g.target_of("b-1").len(), 6);
    for p in &mut procs[..2] {
        p.beat(&mut g, until);
        p.beat(&mut g, until);
        assert_eq!(p.owned.len(), 6);
    }
    // The instance comes back late: it joins as any new member would.
    let mut c2 = Proc::new("c-2", Some("pod-c"));
    assert_eq!(c2.beat(&mut g, until + 1), HeartbeatStatus::Ok);
    assert_eq!(g.target_of("c-2").len(), 4);
}

#[test]
fn a_second_live_member_with_the_same_instance_id_is_refused_and_nothing_is_stored() {
    let now = 1_000_000;
    let (mut g, _procs) = three_static(now);
    let before = g.clone();
    let mut dup = Proc::new("c-2", Some("pod-c"));
    let req = request("c-2", Some("pod-c"), 0, 0, &ShardSet::new());
    let d = decide(Some(&g), "c-2", &req, now, &T);
    assert_eq!(d.response.status, HeartbeatStatus::FencedInstanceId);
    assert_eq!(
        d.outcome,
        Outcome::Rejected {
            needs_fresh_state: true
        }
    );
    assert_eq!(dup.beat(&mut g, now), HeartbeatStatus::FencedInstanceId);
    assert_eq!(g, before);
    // Once the holder lapsed, the same process is let in and takes the reserved shards.
    let c_target = g.target_of("c-1");
    apply_tick(&mut g, now + 6_000, &["c-1"]);
    assert_eq!(dup.beat(&mut g, now + 6_000), HeartbeatStatus::Ok);
    assert_eq!(dup.owned, c_target);
}

#[test]
fn a_temporary_leave_reserves_the_target_and_the_shards_move_only_once_released() {
    let now = 1_000_000;
    let (mut g, mut procs) = three_static(now);
    let before = targets(&g);
    let c_target = g.target_of("c-1");

    // c-1 leaves temporarily but still reads (reports) its shards: they are revoked, not yet released.
    let leave = request("c-1", Some("pod-c"), -2, g.metadata_version, &c_target);
    let d = decide(Some(&g), "c-1", &leave, now + 1_000, &T);
    assert_eq!(d.response.status, HeartbeatStatus::Ok);
    let Outcome::Write(t) = d.outcome else {
        panic!("a leave is written")
    };
    g = t.group.unwrap();
    assert_eq!(g.members["c-1"].state, MemberState::Leaving);
    assert_eq!(g.static_reservations.len(), 1);
    assert_eq!(
        g.static_reservations[0].reason,
        ReservationReason::TemporaryLeave
    );
    assert_eq!(g.target_of("a-1"), before["a-1"]);
    assert_eq!(g.target_of("b-1"), before["b-1"]);

    // The new process joins: the shards are its target, granted only after c-1 releases them.
    let mut c2 = Proc::new("c-2", Some("pod-c"));
    assert_eq!(c2.beat(&mut g, now + 1_500), HeartbeatStatus::Ok);
    assert_eq!(g.target_of("c-2"), c_target);
    assert!(c2.owned.is_empty(), "c-1 still holds them");
    let release = request(
        "c-1",
        Some("pod-c"),
        -2,
        g.metadata_version,
        &ShardSet::new(),
    );
    let d = decide(Some(&g), "c-1", &release, now + 2_000, &T);
    let Outcome::Write(t) = d.outcome else {
        panic!("a release is written")
    };
    g = t.group.unwrap();
    assert_eq!(c2.beat(&mut g, now + 2_000), HeartbeatStatus::Ok);
    assert_eq!(c2.owned, c_target);
    for p in &mut procs[..2] {
        assert_eq!(p.beat(&mut g, now + 2_000), HeartbeatStatus::Ok);
        assert_eq!(p.owned, before[&p.id]);
    }
}

#[test]
fn epoch_minus_two_without_an_instance_id_is_invalid_and_a_plain_leave_reserves_nothing() {
    let now = 1_000_000;
    let (g, _) = three_static(now);
    let d = decide(
        Some(&g),
        "c-1",
        &request("c-1", None, -2, g.metadata_version, &ShardSet::new()),
        now,
        &T,
    );
    assert_eq!(d.response.status, HeartbeatStatus::InvalidRequest);
    let d = decide(
        Some(&g),
        "c-1",
        &request(
            "c-1",
            Some("pod-c"),
            -1,
            g.metadata_version,
            &ShardSet::new(),
        ),
        now,
        &T,
    );
    let Outcome::Write(t) = d.outcome else {
        panic!("a leave is written")
    };
    let g = t.group.unwrap();
    assert!(g.static_reservations.is_empty(), "-1 leaves for good");
    assert_eq!(g.target_of("a-1").len(), 6);
}

#[test]
fn dynamic_members_are_not_reserved_for() {
    let now = 1_000_000;
    let mut g = Group::new("s", "g", 4, now, "lc");
    let mut a = Proc::new("a", None);
    let mut b = Proc::new("b", None);
    for _ in 0..3 {
        a.beat(&mut g, now);
        b.beat(&mut g, now);
    }
    apply_tick(&mut g, now + 6_000, &["b"]);
    assert!(g.static_reservations.is_empty());
    assert_eq!(g.target_of("a").len(), 4);
}

/// An aggregate as the version before static membership wrote it (no `groupInstanceId`, no
/// `staticReservations`): it loads, with no reservations and dynamic members, and its members keep working.
#[test]
fn an_aggregate_written_before_static_membership_still_loads() {
    let old = r#"{"streamPrefix":"s","consumerGroup":"g","lifecycleId":"lc","schemaVersion":1,
        "storeRevision":7,"groupEpoch":3,"metadataVersion":3,"assignmentEpoch":3,"state":"STABLE",
        "shardCount":2,"members":{"a":{"memberId":"a","memberName":"a","state":"ACTIVE","memberEpoch":3,
        "incarnationEpoch":2,"joinConfirmed":true,"joinMetadataVersion":2,"protocolVersion":1,
        "clientName":"rsc-client","clientVersion":"0.1.0","assigned":[0,1],"revoking":{},
        "reportedOwned":[0,1],"reportedRevoking":{},"rebalanceDeadlineMs":null,"joinedAtMs":1000,
        "stateChangedAtMs":1000,"owner":"app"}},"targetAssignments":{"a":[0,1]},"holds":[],
        "metadataCorrection":null,"drainingShards":[],"migrations":[],"activeMigrationId":null,
        "createdAtMs":1000,"updatedAtMs":1000}"#;
    let mut g = Group::from_json(old).expect("an old aggregate loads");
    assert!(g.static_reservations.is_empty());
    assert_eq!(g.members["a"].group_instance_id, None);
    // Written again, it carries none of the new fields while they are empty.
    let json = g.to_json();
    assert!(!json.contains("staticReservations") && !json.contains("groupInstanceId"));
    // And a member of it heartbeats on.
    let mut a = Proc {
        id: "a".into(),
        instance: None,
        epoch: 3,
        metadata_version: 3,
        owned: [0, 1].into_iter().collect(),
    };
    assert_eq!(a.beat(&mut g, 2_000), HeartbeatStatus::Ok);
    assert_eq!(a.owned.len(), 2);
    // The new fields round-trip.
    let now = 1_000_000;
    let (mut g, _) = three_static(now);
    apply_tick(&mut g, now + 6_000, &["c-1"]);
    let back = Group::from_json(&g.to_json()).unwrap();
    assert_eq!(back, g);
}

/// In a batch on a kept rebalance index (as the coordinator decides a large group's batches), a join asks the
/// index who holds its instance id: a holder that left earlier in the same batch no longer counts, a live one
/// still fences the join. (The draft also checks every such answer against the walk of every member.)
#[test]
fn a_batch_on_a_kept_index_finds_the_instance_holder_as_the_walk_does() {
    use rsc_group::batch::MemberCaps;
    use rsc_group::rebalance::RebalanceIndex;
    use rsc_group::replica::commit::{Queued, decide_queue_indexed};
    use std::borrow::Cow;

    let now = 1_000_000;
    let (g, procs) = three_static(now);
    let index = RebalanceIndex::of(&g).expect("a dense group");
    let a = &procs[0];
    let queued = |member: &str, req: HeartbeatRequest| Queued {
        member_id: member.to_owned(),
        req,
        principal: None,
        acts_for_any_member: false,
        reply_to: member.to_owned(),
    };
    let queue = vec![
        queued(
            "a-1",
            request("a-1", Some("pod-a"), -1, a.metadata_version, &a.owned),
        ),
        queued("a-2", request("a-2", Some("pod-a"), 0, 0, &ShardSet::new())),
        queued("x-1", request("x-1", Some("pod-b"), 0, 0, &ShardSet::new())),
    ];
    let decided = decide_queue_indexed(
        Cow::Borrowed(&g),
        Some(index),
        queue,
        now + 100,
        &T,
        MemberCaps::default(),
        None,
    );
    assert_eq!(
        decided.declined,
        vec!["x-1".to_owned()],
        "pod-b's live holder fences x-1"
    );
    let next = decided
        .transition
        .and_then(|t| t.group)
        .expect("the leave and the join are written");
    assert_eq!(next.members["a-1"].state, MemberState::Leaving);
    assert_eq!(
        next.active_instance("pod-a").map(|m| m.member_id.as_str()),
        Some("a-2"),
        "a-2 took pod-a over in the batch a-1 left in"
    );
    assert_eq!(
        decided.index,
        RebalanceIndex::of(&next),
        "the index kept is the written aggregate's"
    );
}
