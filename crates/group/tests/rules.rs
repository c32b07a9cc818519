//! One named example per rule of ARCHITECTURE.md's invariants table, per heartbeat status, and per rule of
//! resharding as a group sees it, written against the test context (`context/`: a mock clock, every write
//! replayed from its JSON, "member X heartbeats with …, expect …"). The simulation checks the same rules over
//! random interleavings; these show each one on its smallest case, and fail naming it.

use crate::context;

use context::answer::Persisted;
use context::{Context, START, TIMING, set};
use rsc_group::durability::member_signal;
use rsc_group::model::{AggregateError, Group, MAX_EPOCH, MemberState, MigrationState};
use rsc_group::reshard::sync::may_adopt;
use rsc_protocol::wire::HeartbeatStatus::{
    FencedInstanceId, FencedMemberEpoch, InvalidRequest, Ok, Retry, RevokePending, SyncMetadata,
    UnknownMemberId, UnsupportedProtocol,
};

/// `a` owns all four shards, then `b` joins: `a` must give two up.
pub(crate) fn two_members_one_revoking() -> Context {
    let mut ctx = Context::new().shards(4).build();
    ctx.member("a")
        .joins()
        .send()
        .expect(Ok)
        .assigned(&[0, 1, 2, 3]);
    ctx.member("a").send().expect(Ok);
    ctx
}

// ---- Invariant 1: one reader per shard ----------------------------------------------------------------

#[test]
fn rule_1_one_reader_per_shard_a_shard_moves_only_once_its_holder_released_it() {
    let mut ctx = two_members_one_revoking();
    let b = ctx.member("b").joins().send();
    b.expect(Ok).assigned(&[]);
    let targeted = b.response.assignment.pending_shards.len();
    assert_eq!(
        targeted, 2,
        "b is meant to get two shards, once a gives them up"
    );
    // a still holds them (revoking): b is granted nothing yet.
    ctx.member("b").send().expect(Ok).assigned(&[]);
    // a's next heartbeat still owns all four (it had not seen the revocation): its answer takes two away.
    let a = ctx.member("a").send();
    a.expect(Ok);
    assert_eq!(a.response.assignment.assigned_shards.len(), 2);
    ctx.member("b").send().expect(Ok).assigned(&[]);
    // The one after owns only what that answer left it: the two are released, and b gets them.
    ctx.member("a").send().expect(Ok);
    let b = ctx.member("b").send();
    b.expect(Ok);
    assert_eq!(b.response.assignment.assigned_shards.len(), 2);
}

#[test]
fn rule_1_a_restarted_incarnations_shards_are_held_until_its_last_lease_has_run_out() {
    let mut ctx = Context::new().shards(2).build();
    ctx.member("a").joins().send().expect(Ok).assigned(&[0, 1]);
    ctx.member("a").send().expect(Ok);
    // The process restarts under the same id: a new incarnation, the old one's shards on hold.
    ctx.member("a")
        .joins()
        .send()
        .expect(Ok)
        .assigned(&[])
        .pending(&[0, 1]);
    let hold = &ctx.group.holds[0];
    assert_eq!(hold.shards, set(&[0, 1]));
    assert_eq!(
        hold.until_ms,
        START + TIMING.member_lease_ttl_ms + TIMING.hold_margin_ms
    );
    // The new incarnation's first heartbeat at its epoch confirms the join, and the hold is counted again
    // from it: the join may have been written long after it was decided, and the old incarnation renewed in
    // between (`rejoin_same_id.rs`).
    ctx.advance(TIMING.heartbeat_interval_ms);
    ctx.member("a").send().expect(Ok).assigned(&[]);
    let confirmed = START + TIMING.heartbeat_interval_ms;
    assert_eq!(
        ctx.group.holds[0].until_ms,
        confirmed + TIMING.member_lease_ttl_ms + TIMING.hold_margin_ms
    );
    for _ in 0..5 {
        ctx.advance(TIMING.member_lease_ttl_ms / 5);
        ctx.member("a").send().expect(Ok).assigned(&[]);
    }
    ctx.advance(TIMING.hold_margin_ms);
    ctx.tick().expect("the hold ran out");
    ctx.member("a").send().expect(Ok).assigned(&[0, 1]);
}

// ---- Invariant 2: respond only with what is written --------------------------------------------------

#[test]
fn rule_2_every_answer_states_what_the_store_holds() {
    let mut ctx = two_members_one_revoking();
    ctx.member("b")
        .joins()
        .send()
        .expect(Ok)
        .states_what_is_stored();
    ctx.member("a").send().expect(Ok).states_what_is_stored();
    ctx.member("b").send().expect(Ok).states_what_is_stored();
    ctx.converge();
    // A steady answer renews only; it is still what the store holds.
    let steady = ctx.member("a").send();
    steady
        .expect(Ok)
        .persisted(Persisted::Renewal)
        .stored_nothing()
        .states_what_is_stored();
}

// ---- Invariant 3: revoke before assign -------------------------------------------------------------

#[test]
fn rule_3_a_report_made_before_the_revocation_does_not_release_the_shard() {
    let mut ctx = two_members_one_revoking();
    let old_epoch = ctx.views["a"].epoch;
    ctx.member("b").joins().send();
    let revoking: Vec<u32> = ctx.group.members["a"].revoking.keys().copied().collect();
    assert_eq!(revoking.len(), 2);
    // A delayed report from before the revocation, owning only the shards a keeps, releases nothing.
    let kept: Vec<u32> = ctx.group.members["a"].assigned.iter().copied().collect();
    ctx.member("a")
        .epoch(old_epoch)
        .owning(&kept)
        .send()
        .expect(Ok);
    assert_eq!(ctx.group.members["a"].revoking.len(), 2, "still revoking");
    ctx.member("b").send().assigned(&[]);
    // The same report at the revocation's epoch releases them.
    ctx.member("a").send().expect(Ok);
    assert!(ctx.group.members["a"].revoking.is_empty());
}

#[test]
fn rule_3_a_shard_reported_draining_stays_held_until_reported_released() {
    let mut ctx = two_members_one_revoking();
    ctx.member("b").joins().send();
    ctx.member("a").send();
    let given_up: Vec<u32> = ctx.group.members["a"].revoking.keys().copied().collect();
    let kept: Vec<u32> = ctx.group.members["a"].assigned.iter().copied().collect();
    // Its last records of them are still being handled: reported DRAINING, not released.
    ctx.member("a")
        .owning(&kept)
        .draining(&given_up)
        .send()
        .expect(Ok);
    assert_eq!(ctx.group.members["a"].revoking.len(), 2);
    ctx.member("b").send().expect(Ok).assigned(&[]);
    ctx.member("a").owning(&kept).send().expect(Ok);
    assert!(ctx.group.members["a"].revoking.is_empty());
    ctx.member("b").send().expect(Ok).assigned(&given_up);
}

// ---- Invariant 4: client leases -------------------------------------------------------------------

#[test]
fn rule_4_only_a_lease_lapsed_by_redis_time_expires_a_member_and_frees_its_shards() {
    let mut ctx = Context::new().shards(2).build();
    ctx.member("a").joins().send().expect(Ok);
    ctx.advance(TIMING.member_lease_ttl_ms - 1);
    assert!(ctx.tick().is_none(), "nothing is due while the lease runs");
    ctx.advance(1);
    let report = ctx.tick().expect("the lease lapsed");
    assert_eq!(report.expired, vec!["a".to_owned()]);
    let a = &ctx.group.members["a"];
    assert_eq!(a.state, MemberState::Expired);
    assert!(a.assigned.is_empty());
    // A member renewed meanwhile is not expired: the tick's condition fails on the store.
    let mut ctx = Context::new().shards(2).build();
    ctx.member("a").joins().send();
    ctx.member("a").send();
    ctx.advance(TIMING.member_lease_ttl_ms);
    let lapsed = ctx.lapsed();
    ctx.advance(-1);
    ctx.member("a")
        .send()
        .expect(Ok)
        .persisted(Persisted::Renewal);
    ctx.advance(1);
    let (t, _) = rsc_group::tick::tick(&ctx.group, ctx.now, &lapsed, &TIMING)
        .expect("small epochs")
        .expect("a tick on the stale lapsed set");
    assert!(!ctx.commit(&t), "must_be_lapsed refuses the write");
    assert_eq!(ctx.group.members["a"].state, MemberState::Active);
}

// ---- Invariant 5: idempotent retries --------------------------------------------------------------

#[test]
fn rule_5_a_retry_of_the_current_incarnation_is_answered_with_the_current_state() {
    let mut ctx = two_members_one_revoking();
    let first = ctx.views["a"].epoch;
    ctx.member("b").joins().send();
    ctx.member("a").send();
    let now_epoch = ctx.views["a"].epoch;
    assert!(now_epoch > first);
    // The answer to a request at `first` was lost; the retry still carries it.
    ctx.member("a")
        .epoch(first)
        .send()
        .expect(Ok)
        .epoch(now_epoch)
        .states_what_is_stored();
}

#[test]
fn rule_5_a_repeated_join_before_the_first_echo_is_a_retry_not_a_new_incarnation() {
    let mut ctx = Context::new().shards(2).build();
    let first = ctx.member("a").joins().send();
    first.expect(Ok);
    let epoch = first.response.member_epoch;
    ctx.member("a").joins().send().expect(Ok).epoch(epoch);
    assert!(
        ctx.group.holds.is_empty(),
        "no new incarnation, nothing held"
    );
}

// ---- Invariant 6: metadata never moves backwards silently -------------------------------------------

#[test]
fn rule_6_a_member_ahead_of_the_stored_metadata_opens_a_correction_round() {
    let mut ctx = Context::new().shards(2).build();
    ctx.member("a").joins().send();
    let stored = ctx.group.metadata_version;
    let ahead = ctx.member("a").metadata_version(stored + 5).send();
    ahead.expect(SyncMetadata);
    assert!(
        ahead.signals.metadata_regression,
        "counted as rollback evidence"
    );
    let signal = member_signal(&ctx.group, "a", &ahead.request, &ahead.signals)
        .expect("recorded as a suspicion by the coordinator");
    assert_eq!((signal.observed, signal.stored), (stored + 5, stored));
    let c = ctx
        .group
        .metadata_correction
        .as_ref()
        .expect("a round is open");
    assert_eq!(c.observed_metadata_version, stored + 5);
    assert_eq!(
        ctx.group.metadata_version, stored,
        "no version is bumped to repair"
    );
}

#[test]
fn rule_6_an_epoch_that_cannot_be_incremented_is_refused_not_wrapped() {
    let mut g = Group::new("orders", "billing", 2, START, "life-1");
    g.group_epoch = MAX_EPOCH;
    let mut ctx = Context::new().group(g).build();
    let a = ctx.member("a").joins().send();
    a.expect(Retry).stored_nothing();
    assert!(a.signals.epochs_exhausted);
    assert_eq!(ctx.group.group_epoch, MAX_EPOCH);
}

// ---- Invariant 7: fail closed ---------------------------------------------------------------------

#[test]
fn rule_7_an_unreadable_or_unknown_schema_aggregate_is_refused() {
    let ctx = Context::new().build();
    let json = ctx.stored_json().to_owned();
    assert!(Group::from_json(&json).is_ok());
    assert!(matches!(
        Group::from_json(&json.replace("\"schemaVersion\":1", "\"schemaVersion\":2")),
        Err(AggregateError::UnknownSchema(_))
    ));
    assert!(matches!(
        Group::from_json(&json[..json.len() / 2]),
        Err(AggregateError::Malformed(_))
    ));
}

// ---- Invariant 8: bad input is refused, nothing stored ---------------------------------------------

#[test]
fn rule_8_a_request_naming_another_member_than_its_path_is_refused_with_nothing_stored() {
    let mut ctx = Context::new().build();
    ctx.member("a")
        .joins()
        .body_member("b")
        .send()
        .expect(InvalidRequest)
        .stored_nothing();
    assert!(ctx.group.members.is_empty());
}

// ---- Each heartbeat status -------------------------------------------------------------------------

#[test]
fn status_ok_a_join_is_answered_with_its_assignment_and_epoch() {
    let mut ctx = Context::new().shards(3).build();
    let a = ctx.member("a").joins().send();
    a.expect(Ok)
        .assigned(&[0, 1, 2])
        .pending(&[])
        .states_what_is_stored();
    assert!(a.response.member_epoch > 0);
    assert!(ctx.lease_live("a"), "a join renews the lease");
}

#[test]
fn status_ok_a_graceful_leave_is_answered_with_nothing_assigned_and_the_shards_move_on() {
    let mut ctx = two_members_one_revoking();
    ctx.member("b").joins().send();
    ctx.converge();
    ctx.member("a")
        .leaves()
        .send()
        .expect(Ok)
        .assigned(&[])
        .epoch(-1);
    assert_eq!(ctx.group.members["a"].state, MemberState::Leaving);
    ctx.converge();
    ctx.member("b").send().expect(Ok).assigned(&[0, 1, 2, 3]);
}

#[test]
fn status_retry_when_the_transition_would_overflow_an_epoch() {
    let mut g = Group::new("orders", "billing", 2, START, "life-1");
    g.metadata_version = MAX_EPOCH;
    let mut ctx = Context::new().group(g).build();
    ctx.member("a")
        .joins()
        .send()
        .expect(Retry)
        .stored_nothing();
}

#[test]
fn status_sync_metadata_to_a_member_that_saw_a_newer_version() {
    let mut ctx = Context::new().shards(2).build();
    ctx.member("a").joins().send();
    let v = ctx.group.metadata_version;
    ctx.member("a")
        .metadata_version(v + 1)
        .send()
        .expect(SyncMetadata)
        .assigned(&[0, 1]);
}

#[test]
fn a_correction_round_closes_when_its_last_live_member_expires() {
    let mut ctx = Context::new().shards(2).build();
    ctx.member("a").joins().send();
    let v = ctx.group.metadata_version;
    ctx.member("a")
        .metadata_version(v + 1)
        .send()
        .expect(SyncMetadata);
    assert!(ctx.group.metadata_correction.is_some(), "a round is open");
    // a never comes back: its lease lapses, the reconciler expires it, and nobody is left to synchronise.
    ctx.advance(60_000);
    let report = ctx.tick().expect("the expiry is due");
    assert_eq!(report.expired, ["a"]);
    assert!(report.correction_closed, "{report:?}");
    assert!(
        ctx.group.metadata_correction.is_none(),
        "closed: admin changes of the group are no longer refused"
    );
}

#[test]
fn status_revoke_pending_until_every_member_acknowledged_the_correction() {
    let mut ctx = two_members_one_revoking();
    ctx.member("b").joins().send();
    ctx.converge();
    let v = ctx.group.metadata_version;
    ctx.member("a")
        .metadata_version(v + 1)
        .send()
        .expect(SyncMetadata);
    // a now reports the stored version; b has not acknowledged yet.
    ctx.member("a").send().expect(RevokePending);
    ctx.member("b").send().expect(Ok);
    assert!(
        ctx.group.metadata_correction.is_none(),
        "closed once everyone acknowledged"
    );
    ctx.member("a").send().expect(Ok);
}

#[test]
fn status_unknown_member_id_for_a_member_the_group_does_not_have() {
    let mut ctx = Context::new().build();
    ctx.member("ghost")
        .epoch(3)
        .send()
        .expect(UnknownMemberId)
        .stored_nothing();
}

#[test]
fn status_fenced_member_epoch_for_an_epoch_of_an_earlier_incarnation() {
    let mut ctx = Context::new().shards(2).build();
    let first = ctx.member("a").joins().send().response.member_epoch;
    ctx.member("a").send();
    ctx.member("a").joins().send().expect(Ok);
    ctx.member("a")
        .epoch(first)
        .send()
        .expect(FencedMemberEpoch)
        .stored_nothing();
}

#[test]
fn status_unsupported_protocol_for_a_version_this_build_does_not_speak() {
    let mut ctx = Context::new().build();
    ctx.member("a")
        .joins()
        .protocol_version(99)
        .send()
        .expect(UnsupportedProtocol)
        .stored_nothing();
}

#[test]
fn status_invalid_request_for_a_temporary_leave_without_an_instance_id() {
    let mut ctx = Context::new().shards(2).build();
    ctx.member("a").joins().send();
    ctx.member("a")
        .leaves_temporarily()
        .send()
        .expect(InvalidRequest)
        .stored_nothing();
}

#[test]
fn status_fenced_instance_id_for_a_join_claiming_an_instance_another_member_holds() {
    let mut ctx = Context::new().shards(2).build();
    ctx.member("pod-a-1").joins_as("pod-a").send().expect(Ok);
    ctx.member("pod-a-2")
        .joins_as("pod-a")
        .send()
        .expect(FencedInstanceId)
        .stored_nothing();
    assert!(!ctx.group.members.contains_key("pod-a-2"));
}

// ---- Resharding as a group sees it ----------------------------------------------------------------

#[test]
fn resharding_a_scale_out_widens_what_the_group_assigns() {
    let mut ctx = Context::new().shards(2).build();
    ctx.member("a").joins().send();
    let id = ctx.scale(4);
    assert!(ctx.sync(), "the group adopts the switch");
    assert_eq!(ctx.group_migration_state(&id), Some(MigrationState::Active));
    assert_eq!(ctx.group.routing_version, ctx.stream.routing_version);
    ctx.member("a").send().expect(Ok).assigned(&[0, 1, 2, 3]);
}

#[test]
fn resharding_removed_shards_stay_assigned_until_redis_shows_them_drained() {
    let mut ctx = Context::new().shards(4).build();
    ctx.member("a").joins().send();
    ctx.member("a").send();
    let id = ctx.scale(2);
    ctx.sync();
    assert_eq!(ctx.group.draining_shards, set(&[2, 3]));
    ctx.member("a").send().expect(Ok).assigned(&[0, 1, 2, 3]);
    ctx.tick();
    assert_eq!(
        ctx.group_migration_state(&id),
        Some(MigrationState::Draining)
    );
    assert!(ctx.drained(&[2, 3]));
    ctx.member("a").send().expect(Ok).assigned(&[0, 1]);
    ctx.member("a").send();
    ctx.tick();
    assert_eq!(
        ctx.group_migration_state(&id),
        Some(MigrationState::Deprecated)
    );
}

#[test]
fn resharding_an_ordered_switch_reaches_a_group_only_once_its_switch_points_are_recorded() {
    let mut ctx = Context::new().shards(2).build();
    ctx.member("a").joins().send();
    ctx.ordered().scale(4);
    assert!(!may_adopt(&ctx.stream));
    assert!(!ctx.sync(), "the routing version waits with it");
    ctx.record_switch_points();
    assert!(may_adopt(&ctx.stream));
    assert!(ctx.sync());
    assert_eq!(ctx.group.routing_version, ctx.stream.routing_version);
}

#[test]
fn resharding_an_ordered_scale_out_withholds_new_children_until_their_parents_drained() {
    let mut ctx = Context::new().shards(2).build();
    ctx.member("a").joins().send();
    ctx.ordered().scale(4);
    ctx.record_switch_points();
    ctx.sync();
    assert_eq!(ctx.group.gated_shards(), set(&[2, 3]));
    // Doubling leaves the survivors' keys where they were (no fence); the new children are granted to
    // nobody while their parents may hold records from before the switch.
    ctx.member("a")
        .send()
        .expect(Ok)
        .assigned(&[0, 1])
        .fences(&[]);
    let parents: Vec<u32> = ctx.group.waited_parents().into_iter().collect();
    assert!(ctx.parents_consumed(&parents));
    ctx.member("a")
        .send()
        .expect(Ok)
        .assigned(&[0, 1, 2, 3])
        .fences(&[]);
}

#[test]
fn resharding_an_ordered_scale_in_grants_survivors_with_a_read_fence() {
    let mut ctx = Context::new().shards(4).build();
    ctx.member("a").joins().send();
    ctx.member("a").send();
    ctx.ordered().scale(2);
    ctx.record_switch_points();
    ctx.sync();
    assert!(ctx.group.gated_shards().is_empty(), "nothing withheld");
    ctx.member("a")
        .send()
        .expect(Ok)
        .assigned(&[0, 1, 2, 3])
        .fences(&[(0, "100-0"), (1, "101-0")]);
}

#[test]
fn resharding_parent_evidence_read_for_a_migration_that_ended_opens_no_gate_of_the_next() {
    // A reconciler pass reads the parents for the gates of an ordered scale; meanwhile the operator rolls it
    // back and scales again, and the group adopts the new scale, whose gates wait for the same parents at
    // later switch points. The pass's evidence (consumed up to the old points) must not open them (found by
    // the simulation, seeds 14472 and 16112: a child granted without its read fence).
    let mut ctx = Context::new().shards(4).build();
    ctx.member("a").joins().send();
    ctx.member("a").send();
    let first = ctx.ordered().scale(2);
    ctx.record_switch_points();
    ctx.sync();
    let parents: Vec<u32> = ctx.group.waited_parents().into_iter().collect();
    ctx.end(MigrationState::RolledBack);
    assert!(ctx.sync());
    let second = ctx.scale(2);
    ctx.record_switch_points_from(200);
    assert!(ctx.sync());
    assert_eq!(
        ctx.group.active_migration_id.as_deref(),
        Some(second.as_str())
    );
    assert!(
        !ctx.parents_consumed_for(&first, &parents),
        "evidence of {first} taken for {second}'s gates"
    );
    ctx.member("a")
        .send()
        .expect(Ok)
        .assigned(&[0, 1, 2, 3])
        .fences(&[(0, "200-0"), (1, "201-0")]);
    assert!(ctx.parents_consumed_for(&second, &parents));
    ctx.member("a").send().expect(Ok).fences(&[]);
}

#[test]
fn resharding_a_migration_does_not_complete_while_a_gate_is_closed() {
    // Every child fenced, or nobody left to grant to: the group looks converged, yet a parent may still hold
    // records from before the switch (found by the simulation).
    let mut ctx = Context::new().shards(4).build();
    ctx.member("a").joins().send();
    ctx.member("a").send();
    let id = ctx.ordered().scale(2);
    ctx.record_switch_points();
    ctx.sync();
    ctx.member("a").send();
    ctx.member("a").send();
    ctx.tick();
    assert!(!ctx.group.ordering_gates.is_empty());
    assert_eq!(ctx.group_migration_state(&id), Some(MigrationState::Active));
    let parents: Vec<u32> = ctx.group.waited_parents().into_iter().collect();
    ctx.parents_consumed(&parents);
    ctx.drained(&[2, 3]);
    ctx.converge();
    ctx.tick();
    ctx.tick();
    assert_eq!(
        ctx.group_migration_state(&id),
        Some(MigrationState::Deprecated)
    );
}

#[test]
fn resharding_a_rollback_reaches_a_group_that_completed_its_copy_first() {
    // The stream's migration is still active (another group drains), this group completed its own: the
    // stream rolls back, and this group must route as the stream does again (found by the simulation).
    let mut ctx = Context::new().shards(4).build();
    ctx.member("a").joins().send();
    ctx.member("a").send();
    let id = ctx.scale(2);
    ctx.sync();
    ctx.tick();
    ctx.drained(&[2, 3]);
    ctx.converge();
    ctx.tick();
    assert_eq!(
        ctx.group_migration_state(&id),
        Some(MigrationState::Deprecated)
    );
    ctx.end(MigrationState::RolledBack);
    assert!(ctx.sync());
    assert_eq!(
        ctx.group_migration_state(&id),
        Some(MigrationState::RolledBack)
    );
    assert_eq!(ctx.group.shard_count, ctx.stream.shard_count);
    assert_eq!(ctx.group.routing_version, ctx.stream.routing_version);
    ctx.converge();
    ctx.member("a").send().expect(Ok).assigned(&[0, 1, 2, 3]);
}

#[test]
fn resharding_a_force_complete_lets_removed_shards_go_without_drain_evidence() {
    let mut ctx = Context::new().shards(4).build();
    ctx.member("a").joins().send();
    ctx.member("a").send();
    let id = ctx.scale(2);
    ctx.sync();
    ctx.end(MigrationState::ForceCompleted);
    assert!(ctx.sync());
    assert_eq!(
        ctx.group_migration_state(&id),
        Some(MigrationState::ForceCompleted)
    );
    assert!(ctx.group.draining_shards.is_empty());
    ctx.converge();
    ctx.member("a").send().expect(Ok).assigned(&[0, 1]);
    assert!(!ctx.complete_stream(), "ended already: nothing to complete");
}
