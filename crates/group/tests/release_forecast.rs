//! The release forecast (`rsc_group::heartbeat::release_forecast`): a member whose steady answer names a
//! pending shard waits for its holder's next report; the holder's lease tells when that report is due, and
//! the waiting member is asked back just after it instead of a whole interval later. Only the cadence of the
//! waiting member changes: what releases and grants a shard does not.

use crate::context;

use context::answer::Persisted;
use context::{Context, TIMING};
use rsc_group::heartbeat::release_forecast::{Holders, back_for_release_ms, release_margin_ms};
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
    let holders = Holders::of(&ctx.group);
    assert_eq!(holders.awaited_by("c", waited_for.clone()), Some("a"));
    let a_deadline = ctx.lease_ends()["a"];
    let a_heard_at = a_deadline - TIMING.member_lease_ttl_ms;
    let back_in =
        back_for_release_ms(&TIMING, ctx.now, a_deadline).expect("sooner than the interval");
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
        Holders::of(&ctx.group).awaited_by("c", waited_for),
        None,
        "c holds them itself now"
    );
}

#[test]
fn the_forecast_is_never_sooner_than_an_acknowledgement_nor_later_than_the_interval() {
    let now = 5_000_000;
    let deadline_heard = |heard_at: i64| heard_at + TIMING.member_lease_ttl_ms;
    let margin = release_margin_ms(&TIMING);
    assert_eq!(margin, 2 * TIMING.acknowledge_interval_ms());
    // Heard 300 ms ago: due in 700 ms, back in 700 ms + the margin.
    assert_eq!(
        back_for_release_ms(&TIMING, now, deadline_heard(now - 300)),
        Some(700 + margin)
    );
    // Due a moment ago but within the margin: back at the end of the margin, at least an acknowledgement away.
    let heard = now - TIMING.heartbeat_interval_ms - margin + 10;
    assert_eq!(
        back_for_release_ms(&TIMING, now, deadline_heard(heard)),
        Some(TIMING.acknowledge_interval_ms())
    );
    // Overdue (its heartbeat and the margin have passed): not waited for faster; its lease runs out instead.
    let overdue = now - TIMING.heartbeat_interval_ms - margin - 1;
    assert_eq!(
        back_for_release_ms(&TIMING, now, deadline_heard(overdue)),
        None
    );
    // Just heard: its next report is no sooner than the waiting member's own interval.
    assert_eq!(back_for_release_ms(&TIMING, now, deadline_heard(now)), None);
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
    let holders = Holders::of(&g);
    assert_eq!(
        holders.awaited_by("w", [0]),
        None,
        "an expired member holds nothing"
    );
    assert_eq!(holders.awaited_by("w", [1, 0]), Some("leaving"));
    assert_eq!(holders.awaited_by("w", [2]), Some("r"), "revoking counts");
    assert_eq!(holders.awaited_by("w", [3]), None, "not itself");
    assert_eq!(holders.awaited_by("w", [3, 2]), Some("r"));
}
