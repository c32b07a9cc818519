//! Benchmark of one transition write's work in the coordinator, at 100, 1,000 and 10,000 members (one shard
//! each): a member joins a converged group (a real transition: a new member record, new epochs, no shard
//! moves), decided as a batch of one (`Batch`: the group copied once, the deferred rebalance run), the
//! invariants checked on the result, and the aggregate encoded for the store, whole (JSON, then LZ4 as
//! layoutVersion "3" stores a large one) or split (layoutVersion "4": the header and the entries of the members
//! the batch says it changed, `Group::write_form` as the coordinator calls it). `write_whole` and `write_split`
//! are the whole of that work; the others are its parts (`encode_split_compare_all`: the comparison of every
//! member's entries that writes other than a batch's make).
//! The group is built outside the timed section; the setup checks the decision is a write.
//!
//! `coordinator_*` run exactly the coordinator's CPU path of one heartbeat batch of one request, from deciding
//! to caching, in its order: `Heartbeats::commit_batch` (crates/coordinator/src/services/heartbeat/batch.rs)
//! decides the queue with `decide_queue_over` on the group's kept batch copy (groups of `MIN_MEMBERS` = 1,000 or
//! more: `batch_copies.rs`) or on the borrowed cached aggregate (copied by the batch's first write); then
//! `Coordinator::commit_with_progress` (crates/coordinator/src/runtime/coordinator.rs, default store settings:
//! layout "4", LZ4) stamps the revision, takes `Group::write_form` against the base held split with the batch's
//! changed members, turns the parts into the store's entries (`for_store`) and the script's arguments
//! (`split_args` in crates/store/src/store.rs: a field name and the JSON per entry); after the written outcome
//! it runs `observe_rebalance` (two fields compared), `check_invariants` (`invariants::check_changed` with the
//! base's `Facts`) and `replies`; `BatchCopies::keep` then catches the old base up to the revision written
//! (`Group::catch_up`) as the next batch's copy. Left out: Redis's round trip and the async runtime, and the
//! request's progress document (one small JSON). The member cap is set above every size here
//! (`coordinator.groups.max-members = 20000`: at the default 10,000 a join into a group of 10,000 is refused).
//! - `coordinator_join`: a member joins a converged group of N members over N shards (a new member record, new
//!   epochs, no shard moves); the kept copy and the old base are made, and everything the write leaves is
//!   freed, outside the timed section (for a group under 1,000 members the coordinator also frees the
//!   aggregate the write replaced: not timed here).
//! - `coordinator_release`: in a group of N members over 2N shards that a member just joined (one member told
//!   to revoke one shard for it), that member reports the shard revoked and the batch grants it to the joiner.
//! - `coordinator_join_then_leave`: the coordinator's state kept from one batch to the next, as it is (no group
//!   copied or freed but what the path itself copies or frees): the joiner joins, then leaves; two writes per
//!   iteration.
//! - `coordinator_join_decide` and `coordinator_join_check`: `coordinator_join`'s decision (the rebalance
//!   included) and invariant check alone.

mod common;

use common::{NOW_MS, converged_group};
use divan::Bencher;
use rsc_group::batch::{Batch, MemberCaps};
use rsc_group::invariants::{self, Facts};
use rsc_group::model::{Group, WriteForm};
use rsc_group::replica::CommitResult;
use rsc_group::replica::commit::{Queued, decide_queue_over, replies};
use rsc_group::timing::Timing;
use rsc_protocol::wire::{
    HeartbeatRequest, RevokeState, RevokingShardReport, RuntimeConsumerCapacity, ShardId,
};
use std::borrow::Cow;
use std::collections::BTreeSet;

fn main() {
    divan::main();
}

const SIZES: [usize; 3] = [100, 1_000, 10_000];

fn join_request() -> HeartbeatRequest {
    HeartbeatRequest {
        protocol_version: 1,
        request_id: "r-join".into(),
        member_id: "joiner".into(),
        member_name: Some("joiner".into()),
        client_name: None,
        client_version: None,
        group_instance_id: None,
        member_epoch: 0,
        metadata_version: 0,
        runtime_consumer_capacity: RuntimeConsumerCapacity {
            runtime_max_concurrency: 1,
            available_concurrency: 1,
        },
        owned_shards: vec![],
        revoking_shards: vec![],
        shard_progress: vec![],
    }
}

/// The join decided as a batch of one on `base`: the aggregate to commit.
fn decide_join(base: &Group, req: &HeartbeatRequest, timing: &Timing) -> Group {
    decide_join_noting(base, req, timing).0
}

/// [`decide_join`] with the members the batch says it changed.
fn decide_join_noting(
    base: &Group,
    req: &HeartbeatRequest,
    timing: &Timing,
) -> (Group, BTreeSet<String>) {
    let mut batch = Batch::on(base, NOW_MS + 1_000, timing);
    batch
        .decide("joiner", req)
        .expect("the join is a transition");
    let t = batch.finish().expect("a decided batch").transition;
    (
        t.group.expect("a write carries its aggregate"),
        t.changed_members.expect("a batch notes its changes"),
    )
}

fn whole(next: &Group) -> usize {
    let json = next.to_json();
    lz4_flex::block::compress_prepend_size(json.as_bytes()).len()
}

fn split(next: &mut Group, base: &Group, changed: &BTreeSet<String>) -> usize {
    match next.write_form(base, true, Some(changed)) {
        WriteForm::Split(w) => w.header.len() + w.entries.len(),
        WriteForm::Whole => unreachable!("a join changes two entries"),
    }
}

#[divan::bench(args = SIZES)]
fn write_whole(bencher: Bencher, members: usize) {
    let (g, req, timing) = (
        converged_group(members, members as u32),
        join_request(),
        Timing::default(),
    );
    bencher.bench(|| {
        let next = decide_join(&g, &req, &timing);
        assert!(invariants::check(&next).is_empty());
        whole(&next)
    });
}

#[divan::bench(args = SIZES)]
fn write_split(bencher: Bencher, members: usize) {
    let (g, req, timing) = (
        converged_group(members, members as u32),
        join_request(),
        Timing::default(),
    );
    let (mut next, changed) = decide_join_noting(&g, &req, &timing);
    let w = next.split_changes_among(&g, &changed);
    let written: Vec<&str> = w.entries.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        written,
        ["joiner", "joiner"],
        "only the joiner's record and its target are written"
    );
    assert_eq!(w, next.split_changes(&g), "as comparing every member finds");
    bencher.bench(|| {
        let (mut next, changed) = decide_join_noting(&g, &req, &timing);
        assert!(invariants::check(&next).is_empty());
        split(&mut next, &g, &changed)
    });
}

#[divan::bench(args = SIZES)]
fn decide_batch_of_one(bencher: Bencher, members: usize) {
    let (g, req, timing) = (
        converged_group(members, members as u32),
        join_request(),
        Timing::default(),
    );
    bencher.bench(|| decide_join(&g, &req, &timing));
}

#[divan::bench(args = SIZES)]
fn check_invariants(bencher: Bencher, members: usize) {
    let g = converged_group(members, members as u32);
    let next = decide_join(&g, &join_request(), &Timing::default());
    bencher.bench(|| invariants::check(&next));
}

#[divan::bench(args = SIZES)]
fn encode_whole(bencher: Bencher, members: usize) {
    let g = converged_group(members, members as u32);
    let next = decide_join(&g, &join_request(), &Timing::default());
    bencher.bench(|| whole(&next));
}

#[divan::bench(args = SIZES)]
fn encode_split(bencher: Bencher, members: usize) {
    let g = converged_group(members, members as u32);
    let (next, changed) = decide_join_noting(&g, &join_request(), &Timing::default());
    bencher
        .with_inputs(|| next.clone())
        .bench_local_refs(|next| split(next, &g, &changed));
}

#[divan::bench(args = SIZES)]
fn encode_split_compare_all(bencher: Bencher, members: usize) {
    let g = converged_group(members, members as u32);
    let next = decide_join(&g, &join_request(), &Timing::default());
    bencher
        .with_inputs(|| next.clone())
        .bench_local_refs(|next| {
            let w = next.split_changes(&g);
            w.header.len() + w.entries.len()
        });
}

/// `batch_copies::MIN_MEMBERS`: groups this large decide on a kept copy.
const MIN_MEMBERS: usize = 1_000;

/// A group as the coordinator holds it between batches: the cached aggregate, its facts, and (large groups)
/// the copy the next batch decides on.
struct Held {
    base: Group,
    facts: Facts,
}

/// What one write leaves: the aggregate written and its facts, the caught-up copy, the members the batch
/// changed, and a figure of the work (so that nothing is optimised away). Returned so that it is dropped
/// outside the timed section.
struct Written {
    group: Group,
    facts: Facts,
    copy: Option<Group>,
    changed: BTreeSet<String>,
    work: usize,
}

/// One batch of one request on the coordinator's path (see above). `own`: the kept copy of `held.base`
/// (large groups); `old`: the coordinator's old base, owned once the cache replaced it (caught up as the next
/// copy; large groups only).
fn coordinator_write(
    held: &Held,
    own: Option<Group>,
    old: Option<Group>,
    member_id: &str,
    req: &HeartbeatRequest,
    timing: &Timing,
) -> Written {
    let now = NOW_MS + 1_000;
    let caps = MemberCaps {
        max_members: Some(20_000),
        max_per_principal: None,
    };
    // commit_batch
    let base_group = match own {
        Some(copy) => Cow::Owned(copy),
        None => Cow::Borrowed(&held.base),
    };
    let queue = vec![Queued {
        member_id: member_id.to_owned(),
        req: req.clone(),
        principal: None,
        acts_for_any_member: false,
        reply_to: (),
    }];
    let decided = decide_queue_over(base_group, queue, now, timing, caps);
    let t = decided.transition.expect("the request is a transition");
    let changed = t.changed_members.clone();
    // commit_with_progress
    let mut group = t.group.expect("a write carries its aggregate");
    group.store_revision = held.base.store_revision + 1;
    let (_drop_lease, _remove): (Vec<String>, Vec<String>) = t
        .remove
        .into_iter()
        .partition(|m| group.members.contains_key(m));
    let mut work = 0;
    match group.write_form(&held.base, true, t.changed_members.as_ref()) {
        WriteForm::Split(parts) => {
            // for_store, then split_args
            let parts_field = rsc_group::model::SPLIT_PARTS.join(",");
            work += parts.header.len() + parts_field.len();
            for e in parts.entries {
                let part = e.part.to_owned();
                let field = format!("{part}/{}", e.key);
                work += field.len() + e.json.map_or(0, |j| j.len());
            }
        }
        WriteForm::Whole => unreachable!("one member's write is stored as its changes"),
    }
    // The written outcome: observe_rebalance, check_invariants, replies.
    work += usize::from(held.base.reconciling_since_ms != group.reconciling_since_ms);
    let changed = changed.expect("a batch notes its changes");
    let (violations, facts) = invariants::check_changed(&held.base, &held.facts, &group, &changed);
    assert!(violations.is_empty(), "{violations:?}");
    work += replies(decided.included, &CommitResult::Written).len();
    // BatchCopies::keep
    let copy = (group.members.len() >= MIN_MEMBERS)
        .then_some(old)
        .flatten()
        .map(|mut old| {
            old.catch_up(&group, &changed);
            old
        });
    Written {
        group,
        facts,
        copy,
        changed,
        work,
    }
}

/// The heartbeat of `id` in `g` reporting `shard` revoked (nothing in flight) and holding the rest.
fn release_request(g: &Group, id: &str, shard: u32) -> HeartbeatRequest {
    let m = &g.members[id];
    HeartbeatRequest {
        request_id: "r-release".into(),
        member_id: id.into(),
        member_name: Some(id.into()),
        member_epoch: m.member_epoch,
        metadata_version: g.metadata_version,
        owned_shards: m.assigned.iter().map(|&s| ShardId::new(s)).collect(),
        revoking_shards: vec![RevokingShardReport {
            shard: ShardId::new(shard),
            state: RevokeState::Revoked,
            in_flight: 0,
            acked_at: None,
        }],
        ..join_request()
    }
}

/// Runs `coordinator_write` of (`member_id`, `req`) on `held` as the benchmark's timed section, inputs (the
/// kept copy and the old base, for large groups) made outside it.
fn bench_path(bencher: Bencher, held: &Held, member_id: &str, req: &HeartbeatRequest) {
    let timing = Timing::default();
    let large = held.base.members.len() >= MIN_MEMBERS;
    bencher
        .with_inputs(|| {
            large
                .then(|| (held.base.clone(), held.base.clone()))
                .unzip()
        })
        .bench_local_values(|(own, old)| {
            coordinator_write(held, own, old, member_id, req, &timing)
        });
}

/// A converged group of `members` over `shards`, with its facts, as the coordinator holds it.
fn held(members: usize, shards: u32) -> Held {
    let base = converged_group(members, shards);
    let facts = Facts::of(&base);
    Held { base, facts }
}

#[divan::bench(args = SIZES)]
fn coordinator_join(bencher: Bencher, members: usize) {
    let held = held(members, members as u32);
    let req = join_request();
    let large = (members >= MIN_MEMBERS).then(|| held.base.clone());
    let w = coordinator_write(
        &held,
        large.clone(),
        large,
        "joiner",
        &req,
        &Timing::default(),
    );
    assert_eq!(w.group.members.len(), members + 1, "the joiner is a member");
    if let Some(copy) = w.copy {
        assert!(
            copy == w.group,
            "the copy caught up is the aggregate written"
        );
    }
    bench_path(bencher, &held, "joiner", &req);
}

#[divan::bench(args = SIZES)]
fn coordinator_release(bencher: Bencher, members: usize) {
    let timing = Timing::default();
    let before = held(members, 2 * members as u32);
    let Written {
        group: joined,
        facts,
        ..
    } = coordinator_write(&before, None, None, "joiner", &join_request(), &timing);
    // The one member told to revoke a shard for the joiner.
    let (revoker, shard) = joined
        .members
        .values()
        .find_map(|m| Some((m.member_id.clone(), *m.revoking.keys().next()?)))
        .expect("the join revokes a shard");
    assert!(
        joined.members["joiner"].assigned.is_empty(),
        "the joiner waits for the shard"
    );
    let held = Held {
        base: joined,
        facts,
    };
    let req = release_request(&held.base, &revoker, shard);
    let next = coordinator_write(&held, None, None, &revoker, &req, &timing).group;
    assert!(
        next.members["joiner"].assigned.contains(&shard),
        "the release grants the shard to the joiner"
    );
    bench_path(bencher, &held, &revoker, &req);
}

/// `coordinator_join`'s decision alone (`decide_queue_over` on the kept copy or the borrowed aggregate, the
/// rebalance included).
#[divan::bench(args = SIZES)]
fn coordinator_join_decide(bencher: Bencher, members: usize) {
    let held = held(members, members as u32);
    let (req, timing) = (join_request(), Timing::default());
    let large = members >= MIN_MEMBERS;
    bencher
        .with_inputs(|| large.then(|| held.base.clone()))
        .bench_local_values(|own| {
            let base = match own {
                Some(copy) => Cow::Owned(copy),
                None => Cow::Borrowed(&held.base),
            };
            let queue = vec![Queued {
                member_id: "joiner".to_owned(),
                req: req.clone(),
                principal: None,
                acts_for_any_member: false,
                reply_to: (),
            }];
            decide_queue_over(base, queue, NOW_MS + 1_000, &timing, MemberCaps::default())
                .transition
        });
}

/// `coordinator_join`'s invariant check alone (`check_changed` with the base's facts).
#[divan::bench(args = SIZES)]
fn coordinator_join_check(bencher: Bencher, members: usize) {
    let held = held(members, members as u32);
    let (next, changed) = decide_join_noting(&held.base, &join_request(), &Timing::default());
    bencher.bench(|| invariants::check_changed(&held.base, &held.facts, &next, &changed));
}

/// The coordinator's state of one group between batches: the cached aggregate with its facts, and (groups of
/// 1,000 or more) the kept batch copy, equal to it.
struct Coordinator {
    held: Held,
    copy: Option<Group>,
}

impl Coordinator {
    fn of(base: Group) -> Self {
        let copy = (base.members.len() >= MIN_MEMBERS).then(|| base.clone());
        Coordinator {
            held: Held {
                facts: Facts::of(&base),
                base,
            },
            copy,
        }
    }

    /// One batch of one request, as `coordinator_write`, then the cache replaced: the old aggregate becomes the
    /// next batch's copy (caught up) or, for a group under 1,000 members, is freed.
    fn write(&mut self, member_id: &str, req: &HeartbeatRequest, timing: &Timing) -> usize {
        let own = self.copy.take();
        let large = own.is_some();
        // The old aggregate is owned once the write replaced it in the cache: caught up after the write.
        let w = coordinator_write(&self.held, own, None, member_id, req, timing);
        let next = Held {
            base: w.group,
            facts: w.facts,
        };
        let old = std::mem::replace(&mut self.held, next);
        if large {
            let mut old = old.base;
            old.catch_up(&self.held.base, &w.changed);
            self.copy = Some(old);
        }
        w.work
    }
}

/// The leave of `id` (it holds nothing) in `g`.
fn leave_request(g: &Group, id: &str) -> HeartbeatRequest {
    HeartbeatRequest {
        request_id: "r-leave".into(),
        member_id: id.into(),
        member_epoch: -1,
        metadata_version: g.metadata_version,
        ..join_request()
    }
}

/// Two writes on the coordinator's path with its state kept from one batch to the next (no copy of the group
/// made or freed outside the path, as in the coordinator): the joiner joins (a converged group of N members
/// over N shards), then leaves again. Each iteration is both writes.
#[divan::bench(args = SIZES)]
fn coordinator_join_then_leave(bencher: Bencher, members: usize) {
    let timing = Timing::default();
    let mut c = Coordinator::of(converged_group(members, members as u32));
    let join = join_request();
    bencher.bench_local(|| {
        let mut work = c.write("joiner", &join, &timing);
        let leave = leave_request(&c.held.base, "joiner");
        work += c.write("joiner", &leave, &timing);
        work
    });
}
