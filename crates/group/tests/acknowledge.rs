//! An answer that revokes a shard the member holds nothing of asks for the next heartbeat at once
//! (`Timing::acknowledge_interval_ms`): the shard is released by a report at that answer's epoch, and waiting a
//! whole interval for it would keep the shard's new owner waiting a second interval. The typical case is a
//! rolling restart: a leaver's shards are granted to a member that has not heartbeated since, and a rejoin moves
//! them on before it heard of them. Only the cadence changes; what releases a shard does not.

use crate::context;

use context::answer::Persisted;
use context::{Context, TIMING};
use rsc_protocol::wire::HeartbeatStatus::Ok;

/// `a` and `b` share four shards, `b` leaves and its two are granted to `a`, which does not heartbeat; then
/// `c` joins and is targeted the two `a` never heard of. Returns the context and `a`'s epoch before all this.
fn a_grant_moved_on_before_its_member_heard_of_it() -> (Context, i64) {
    let mut ctx = Context::new().shards(4).build();
    ctx.member("a").joins().send().expect(Ok);
    ctx.member("b").joins().send().expect(Ok);
    ctx.converge();
    assert_eq!(ctx.views["a"].assigned.len(), 2, "a owns two shards");
    let a_epoch = ctx.views["a"].epoch;
    let b_shards = ctx.views["b"].assigned.clone();
    ctx.member("b").leaves().send().expect(Ok);
    assert!(
        b_shards.is_subset(&ctx.group.members["a"].assigned),
        "b's shards are granted to a in the aggregate, before a heartbeats"
    );
    ctx.member("c").joins().send().expect(Ok);
    let c_target = ctx.group.target_of("c");
    assert_eq!(c_target.len(), 2, "c is targeted two shards");
    assert!(
        c_target
            .iter()
            .all(|s| ctx.group.members["a"].revoking.contains_key(s)),
        "c's shards are being revoked from a: {:?}",
        ctx.group.members["a"]
    );
    (ctx, a_epoch)
}

#[test]
fn an_answer_revoking_a_grant_the_member_never_heard_of_asks_for_the_next_heartbeat_at_once() {
    let (mut ctx, a_epoch) = a_grant_moved_on_before_its_member_heard_of_it();
    let a = ctx.member("a").send();
    a.expect(Ok);
    assert!(a.request.member_epoch == a_epoch, "a reports its old epoch");
    assert!(a.response.member_epoch > a_epoch, "the answer moves a on");
    assert_eq!(
        a.response.heartbeat_interval_ms,
        TIMING.acknowledge_interval_ms(),
        "a is asked back at once"
    );
    assert!(TIMING.acknowledge_interval_ms() < TIMING.heartbeat_interval_ms);
    // The acknowledgement at the answer's epoch releases the two shards, and c is granted them.
    let ack = ctx.member("a").send();
    ack.expect(Ok).persisted(Persisted::Written);
    assert_eq!(
        ack.response.heartbeat_interval_ms, TIMING.heartbeat_interval_ms,
        "nothing is left to acknowledge"
    );
    assert!(ctx.group.members["a"].revoking.is_empty());
    let c_target: Vec<u32> = ctx.group.target_of("c").into_iter().collect();
    ctx.member("c").send().expect(Ok).assigned(&c_target);
}

#[test]
fn a_report_made_before_the_revocation_still_releases_nothing_whatever_the_interval() {
    let (mut ctx, a_epoch) = a_grant_moved_on_before_its_member_heard_of_it();
    let revoking = ctx.group.members["a"].revoking.clone();
    // Sent at the old epoch again and again (a client that ignores its answers), nothing is released: an
    // answer naming the shards may still be on its way to it.
    for _ in 0..3 {
        let stale = ctx.member("a").epoch(a_epoch).send();
        stale.expect(Ok);
        assert_eq!(
            stale.response.heartbeat_interval_ms,
            TIMING.acknowledge_interval_ms()
        );
        assert_eq!(ctx.group.members["a"].revoking, revoking);
    }
}

#[test]
fn a_member_that_owns_the_revoked_shard_is_not_hurried_it_heartbeats_when_drained() {
    let mut ctx = crate::rules::two_members_one_revoking();
    ctx.member("b").joins().send().expect(Ok);
    // a owns all four: the answer revoking two of them keeps the normal interval (the SDK heartbeats as soon
    // as they have drained, and a report of them draining needs no hurry).
    let a = ctx.member("a").send();
    a.expect(Ok);
    assert_eq!(a.response.assignment.assigned_shards.len(), 2);
    assert_eq!(
        a.response.heartbeat_interval_ms,
        TIMING.heartbeat_interval_ms
    );
}

#[test]
fn steady_answers_and_joins_keep_the_heartbeat_interval() {
    let mut ctx = Context::new().shards(4).build();
    let join = ctx.member("a").joins().send();
    assert_eq!(
        join.response.heartbeat_interval_ms,
        TIMING.heartbeat_interval_ms
    );
    ctx.converge();
    let steady = ctx.member("a").send();
    steady.expect(Ok).persisted(Persisted::Renewal);
    assert_eq!(
        steady.response.heartbeat_interval_ms,
        TIMING.heartbeat_interval_ms
    );
}

#[test]
fn the_acknowledge_interval_is_a_tenth_of_the_heartbeat_interval_within_1_to_100_ms() {
    let with = |ms| rsc_group::timing::Timing {
        heartbeat_interval_ms: ms,
        ..TIMING
    };
    assert_eq!(with(3_000).acknowledge_interval_ms(), 100);
    assert_eq!(with(500).acknowledge_interval_ms(), 50);
    assert_eq!(with(5).acknowledge_interval_ms(), 1);
}
