//! Property test of `rsc_group::deadline`: a group's reconciler tick finds nothing to do before the group's
//! computed next visit. The owner replica visits an idle group only at that deadline (or when the group is
//! written), so a tick that would have acted earlier is work the schedule silently delays.
//!
//! Groups come from random histories on the test context (members joining — some static —, heartbeating,
//! leaving, going silent; the clock moving on, with the owner's visits at each deadline on the way). After
//! every step the next visit is computed from the aggregate and the lease set, and the tick is run at several
//! moments before it, with the leases lapsed by each moment: it must find nothing due.

#[allow(dead_code)]
use crate::context;

use context::{Context, TIMING};
use proptest::prelude::*;
use rsc_group::deadline::{LeaseView, NextVisit, next_visit};
use rsc_group::tick::tick;
use std::collections::BTreeSet;

#[derive(Debug, Clone)]
enum Step {
    Join(u8),
    JoinStatic(u8),
    Beat(u8),
    Leave(u8),
    /// Every member the context knows heartbeats until nothing changes.
    Converge,
    /// The clock moves on this many ms; the owner visits the group at each deadline on the way.
    Wait(i64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0u8..5).prop_map(Step::Join),
        1 => (0u8..5).prop_map(Step::JoinStatic),
        4 => (0u8..5).prop_map(Step::Beat),
        1 => (0u8..5).prop_map(Step::Leave),
        2 => Just(Step::Converge),
        3 => (1i64..40_000).prop_map(Step::Wait),
    ]
}

fn member(i: u8) -> String {
    format!("m{i}")
}

fn lease_view(ctx: &Context) -> LeaseView {
    let ends = ctx.lease_ends();
    LeaseView {
        earliest_end_ms: ends.values().min().copied(),
        entries: ends.len(),
    }
}

/// Members whose lease entry ended by `at`.
fn lapsed_at(ctx: &Context, at: i64) -> BTreeSet<String> {
    ctx.lease_ends()
        .iter()
        .filter(|(_, end)| **end <= at)
        .map(|(m, _)| m.clone())
        .collect()
}

/// The property: no tick before the next visit has anything to do.
fn nothing_due_before_next_visit(ctx: &Context) -> Result<(), TestCaseError> {
    let next = next_visit(&ctx.group, lease_view(ctx), &ctx.timing);
    let probes: Vec<i64> = match next {
        NextVisit::EveryTick => return Ok(()),
        NextVisit::At(d) if d <= ctx.now => return Ok(()),
        NextVisit::At(d) => vec![ctx.now, ctx.now + (d - ctx.now) / 2, d - 1],
        // Nothing waits on time: not even a day later.
        NextVisit::OnChange => vec![ctx.now, ctx.now + 86_400_000],
    };
    for at in probes {
        let found = tick(&ctx.group, at, &lapsed_at(ctx, at), &ctx.timing)
            .expect("the context's epochs stay small");
        prop_assert!(
            found.is_none(),
            "the tick at {at} acted before the next visit {next:?} (now {}): {:?}\n{:#?}",
            ctx.now,
            found.map(|(_, report)| report),
            ctx.group
        );
    }
    Ok(())
}

/// The owner's visits from now to `until`: at each deadline on the way (every tick while the group needs
/// every tick), as `reconciler.rs` makes them — never twice at the same moment.
fn visits_until(ctx: &mut Context, until: i64) {
    for _ in 0..1_000 {
        let next = next_visit(&ctx.group, lease_view(ctx), &ctx.timing);
        let at = match next {
            NextVisit::At(d) => d.max(ctx.now + 1),
            NextVisit::EveryTick => ctx.now + ctx.timing.heartbeat_interval_ms,
            NextVisit::OnChange => break,
        };
        if at > until {
            break;
        }
        ctx.now = at;
        ctx.tick();
    }
    ctx.now = until.max(ctx.now);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_tick_before_the_deadline_finds_nothing_to_do(steps in prop::collection::vec(step(), 1..40)) {
        let mut ctx = Context::new().build();
        prop_assert_eq!(ctx.timing, TIMING);
        nothing_due_before_next_visit(&ctx)?;
        for s in steps {
            match s {
                Step::Join(i) => {
                    ctx.member(&member(i)).joins().send();
                }
                Step::JoinStatic(i) => {
                    ctx.member(&member(i)).joins_as(&format!("instance-{i}")).send();
                }
                Step::Beat(i) => {
                    if ctx.views.contains_key(&member(i)) {
                        ctx.member(&member(i)).send();
                    }
                }
                Step::Leave(i) => {
                    if ctx.views.contains_key(&member(i)) {
                        ctx.member(&member(i)).leaves().send();
                    }
                }
                Step::Converge => {
                    let ids: Vec<String> = ctx.views.keys().cloned().collect();
                    for _ in 0..3 {
                        for id in &ids {
                            ctx.member(id).send();
                        }
                    }
                }
                Step::Wait(ms) => {
                    let until = ctx.now + ms;
                    visits_until(&mut ctx, until);
                }
            }
            nothing_due_before_next_visit(&ctx)?;
        }
    }
}
