//! The release forecast (`rsc_group::heartbeat::release_forecast`): a member whose steady answer names a
//! pending shard waits for its holder's next report; the holder's lease tells when that report is due, and
//! the waiting member is asked back just after it instead of a whole interval later. Only the cadence of the
//! waiting member changes: what releases and grants a shard does not.

use crate::context;

use context::answer::Persisted;
use context::{Context, TIMING};
use rsc_group::heartbeat::release_forecast::{
    Holder, Holders, back_for_release_ms, release_margin_ms,
};
use rsc_group::model::{Group, Member, MemberState, ShardSet};
use rsc_protocol::wire::HeartbeatStatus::Ok;

fn pending(answer: &rsc_protocol::wire::HeartbeatResponse) -> Vec<u32> {
    answer
        .assignment
        .pending_shards
        .iter()
        .map(|s| s.shard_index)
        .collect()
}

/// The member `waiting` waits for first, by id.
fn awaited<'h>(holders: &'h Holders, waiting: &str, pending: Vec<u32>) -> Option<&'h str> {
    holders
        .awaited_by(waiting, pending)
        .map(|h| h.member_id.as_str())
}

/// `a` owns all four shards; 300 ms later `c` joins and is targeted two of them, still `a`'s to release.
fn c_waits_for_a() -> Context {
    let mut ctx = Context::new().shards(4).build();
    ctx.member("a").joins().send().expect(Ok);
    ctx.converge();
    assert_eq!(ctx.views["a"].assigned.len(), 4);
    ctx.advance(300);
    let join = ctx.member("c").joins().send();
    join.expect(Ok);
    assert_eq!(pending(&join.response).len(), 2, "c waits for two shards");
    ctx
}

#[test]
fn a_member_waiting_for_a_shard_comes_back_just_after_its_holder_is_due_to_release_it() {
    let mut ctx = c_waits_for_a();
    ctx.advance(100);
    ctx.member("c").send().expect(Ok); // c's first echo of its join epoch
    ctx.advance(100);
    let steady = ctx.member("c").send();
    steady.expect(Ok).persisted(Persisted::Renewal);
    let waited_for = pending(&steady.response);
    let holders = Holders::of(&ctx.group, &TIMING);
    let a = holders.awaited_by("c", waited_for.clone()).expect("a");
    assert_eq!(a.member_id, "a");
    let a_deadline = ctx.lease_ends()["a"];
    let a_heard_at = a_deadline - TIMING.member_lease_ttl_ms;
    assert!(
        a.revoking_since_ms.expect("a is revoking them") > a_heard_at,
        "a has not heard of it since"
    );
    let back_in =
        back_for_release_ms(&TIMING, ctx.now, a, a_deadline).expect("sooner than the interval");
    assert_eq!(
        ctx.now + back_in,
        a_heard_at + TIMING.heartbeat_interval_ms + release_margin_ms(&TIMING),
        "c comes back a margin after a's next heartbeat is due"
    );
    assert!(back_in < TIMING.heartbeat_interval_ms);

    // a heartbeats when due: told to revoke, it stops reading the two shards and reports them released.
    ctx.now = a_heard_at + TIMING.heartbeat_interval_ms;
    ctx.member("a").send().expect(Ok);
    ctx.member("a").send().expect(Ok);
    assert!(
        waited_for
            .iter()
            .all(|s| !ctx.views["a"].assigned.contains(s)),
        "a released them"
    );
    // c, back at the forecast, is granted both: a round sooner than its own interval would have it.
    ctx.now = a_heard_at + TIMING.heartbeat_interval_ms + release_margin_ms(&TIMING);
    let back = ctx.member("c").send();
    back.expect(Ok);
    assert!(
        pending(&back.response).is_empty(),
        "nothing left to wait for"
    );
    assert_eq!(
        ctx.views["c"].assigned,
        waited_for.iter().copied().collect::<ShardSet>()
    );
    assert_eq!(
        awaited(&Holders::of(&ctx.group, &TIMING), "c", waited_for),
        None,
        "c holds them itself now"
    );
}

#[test]
fn a_member_that_asks_just_after_its_holder_was_told_to_give_the_shard_up_comes_back_a_margin_later()
 {
    let mut ctx = c_waits_for_a();
    ctx.advance(100);
    ctx.member("c").send().expect(Ok); // c's first echo of its join epoch
    ctx.advance(1_000);
    // a heartbeats: its answer tells it to give the two shards up.
    let told = ctx.member("a").send();
    told.expect(Ok);
    let waited_for = pending(&ctx.member("c").send().response);
    assert_eq!(
        waited_for.len(),
        2,
        "c asked before a reported them released"
    );
    // c, asking a moment after a was told, is asked back a margin from now, not a whole interval after a's
    // next heartbeat.
    ctx.advance(5);
    let steady = ctx.member("c").send();
    steady.expect(Ok);
    let holders = Holders::of(&ctx.group, &TIMING);
    let a = holders
        .awaited_by("c", pending(&steady.response))
        .expect("a");
    assert_eq!(a.member_id, "a");
    let margin = release_margin_ms(&TIMING);
    assert_eq!(
        back_for_release_ms(&TIMING, ctx.now, a, ctx.lease_ends()["a"]),
        Some(margin)
    );
    // a reports them released at once (nothing in flight); c, back after the margin, is granted both.
    ctx.member("a").send().expect(Ok);
    ctx.advance(margin);
    let back = ctx.member("c").send();
    back.expect(Ok);
    assert!(pending(&back.response).is_empty(), "granted");
    assert_eq!(
        ctx.views["c"].assigned,
        waited_for.iter().copied().collect::<ShardSet>()
    );
}

#[test]
fn the_forecast_is_never_sooner_than_the_margin_nor_later_than_the_interval() {
    let now = 5_000_000;
    let deadline_heard = |heard_at: i64| heard_at + TIMING.member_lease_ttl_ms;
    let margin = release_margin_ms(&TIMING);
    assert_eq!(margin, 2 * TIMING.acknowledge_interval_ms());
    let revoking_since = |since: i64| Holder {
        member_id: "a".into(),
        revoking_since_ms: Some(since),
    };
    let assigned = Holder {
        member_id: "a".into(),
        revoking_since_ms: None,
    };
    let not_told = revoking_since(now);
    let back = |holder: &Holder, heard_at: i64| {
        back_for_release_ms(&TIMING, now, holder, deadline_heard(heard_at))
    };
    // Heard 300 ms ago: due in 700 ms, back in 700 ms + the margin.
    assert_eq!(
        back(&not_told, now - 300),
        Some(TIMING.heartbeat_interval_ms - 300 + margin)
    );
    // Due a moment ago but within the margin: back at the end of the margin, at least a margin away.
    let heard = now - TIMING.heartbeat_interval_ms - margin + 10;
    assert_eq!(back(&not_told, heard), Some(margin));
    // Overdue (its heartbeat and the margin have passed): not waited for faster; its lease runs out instead.
    let overdue = now - TIMING.heartbeat_interval_ms - margin - 1;
    assert_eq!(back(&not_told, overdue), None);
    // Just heard, an acknowledgement or more after its revocations began: that answer told it to give the
    // shard up; back a margin from now.
    let ack = TIMING.acknowledge_interval_ms();
    let told = revoking_since(now - 50 - ack);
    assert_eq!(back(&told, now - 10), Some(margin));
    assert_eq!(back(&told, now - 50), Some(margin));
    // Just heard, but less than an acknowledgement after its revocations began (their start is a replica's
    // estimate of Redis time, which may lag it), or holding the shard as its own: not known to be told; its
    // next heartbeat is a whole interval away, no sooner than the waiting member's own.
    assert_eq!(back(&told, now - 51), None);
    assert_eq!(back(&assigned, now - 10), None);
    // Heard exactly a margin ago: no longer just told; its next heartbeat is a whole interval after its last.
    assert_eq!(back(&revoking_since(now - margin), now - margin), None);
}

#[test]
fn only_a_live_member_other_than_the_waiting_one_is_awaited() {
    let mut g = Group::new("orders", "billing", 4, 0, "life-1");
    let holding = |id: &str, state: MemberState, shards: &[u32]| {
        let mut m = Member::new(id, id, 0);
        m.state = state;
        m.assigned = shards.iter().copied().collect();
        m
    };
    g.members
        .insert("gone".into(), holding("gone", MemberState::Expired, &[0]));
    g.members.insert(
        "leaving".into(),
        holding("leaving", MemberState::Leaving, &[1]),
    );
    let mut revoking = holding("r", MemberState::Active, &[]);
    revoking.revoking.insert(2, 7);
    g.members.insert("r".into(), revoking);
    g.members
        .insert("w".into(), holding("w", MemberState::Active, &[3]));
    let holders = Holders::of(&g, &TIMING);
    assert_eq!(
        awaited(&holders, "w", vec![0]),
        None,
        "an expired member holds nothing"
    );
    assert_eq!(awaited(&holders, "w", vec![1, 0]), Some("leaving"));
    assert_eq!(
        awaited(&holders, "w", vec![2]),
        Some("r"),
        "revoking counts"
    );
    assert_eq!(awaited(&holders, "w", vec![3]), None, "not itself");
    assert_eq!(awaited(&holders, "w", vec![3, 2]), Some("r"));
}
