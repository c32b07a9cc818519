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
//! decides the queue with `decide_queue_indexed` on the group's kept batch copy and its rebalance index (groups of
//! `MIN_MEMBERS` = 1,000 or more: `batch_copies.rs`) or on the borrowed cached aggregate (copied by the batch's
//! first write; no index); then
//! `Coordinator::commit_with_progress` (crates/coordinator/src/runtime/coordinator.rs, default store settings:
//! layout "4", LZ4) stamps the revision, takes `Group::write_form` against the base held split with the batch's
//! changed members, turns the parts into the store's entries (`for_store`) and the script's arguments
//! (`split_args` in crates/store/src/store.rs: a field name and the JSON per entry); after the written outcome
//! it runs `observe_rebalance` (two fields compared), `check_invariants` (`invariants::check_changed` with the
//! base's `Facts`, updated in place) and `replies`; `BatchCopies::keep` then catches the old base up to the revision written
//! (`Group::catch_up`) as the next batch's copy, kept with the batch's index. Left out: Redis's round trip and the async runtime, and the
//! request's progress document (one small JSON). The member cap is set above every size here
//! (`coordinator.groups.max-members = 20000`: at the default 10,000 a join into a group of 10,000 is refused).
//! The single-write benches time one write per sample, on the state the previous sample's write was undone
//! from in what it changed (`Before::restore`, outside the timed section: the aggregates caught up back, the
//! index and the facts counted back), so that no group is copied or freed around the timed write, as in the
//! coordinator, which keeps a large group's aggregates from batch to batch (copying and freeing two groups of
//! 10,000 members per sample charged the allocator's work to the timed write). What the path itself copies or
//! frees is timed: a small group's copy in the decision, and the aggregate the write replaced, which the
//! coordinator frees once the cache holds the new one.
//! - `coordinator_join`: a member joins a converged group of N members over N shards (a new member record, new
//!   epochs, no shard moves).
//! - `coordinator_static_join`: `coordinator_join` with static members (every member and the joiner have a
//!   `groupInstanceId`).
//! - `coordinator_release`: in a group of N members over 2N shards that a member just joined (one member told
//!   to revoke one shard for it), that member reports the shard revoked and the batch grants it to the joiner.
//! - `coordinator_join_then_leave`: the coordinator's state kept from one batch to the next, as it is (no group
//!   copied or freed but what the path itself copies or frees): the joiner joins, then leaves; two writes per
//!   iteration.
//! - `coordinator_join_decide` and `coordinator_join_check`: `coordinator_join`'s decision (the rebalance
//!   included) and invariant check alone (the check of the join and of its reverse, which brings the facts
//!   back: two checks per iteration).

mod common;

use common::{NOW_MS, converged_group};
use divan::Bencher;
use rsc_group::batch::{Batch, MemberCaps};
use rsc_group::invariants::{self, Facts};
use rsc_group::model::{Group, WriteForm};
use rsc_group::rebalance::RebalanceIndex;
use rsc_group::replica::CommitResult;
use rsc_group::replica::commit::{Queued, decide_queue_indexed, replies};
use rsc_group::timing::Timing;
use rsc_protocol::wire::{
    HeartbeatRequest, RevokeState, RevokingShardReport, RuntimeConsumerCapacity, ShardId,
};
use std::borrow::Cow;
use std::cell::RefCell;
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
/// the rebalance index kept with the copy the next batch decides on.
struct Held {
    base: Group,
    facts: Facts,
    /// The rebalance index kept beside the copy (large groups).
    index: Option<RebalanceIndex>,
}

/// What one write leaves: the aggregate written, the caught-up copy, the members the batch changed, and a
/// figure of the work (so that nothing is optimised away). The facts are updated in place.
struct Written {
    group: Group,
    copy: Option<Group>,
    /// The rebalance index of the aggregate written, kept beside the copy.
    index: Option<RebalanceIndex>,
    changed: BTreeSet<String>,
    work: usize,
}

/// One batch of one request on the coordinator's path (see above), on `base` with its kept `facts` (made the
/// facts of the aggregate written, in place, as the coordinator does once the write is in Redis). `own`: the
/// kept copy of `base` (large groups); `old`: the coordinator's old base, owned once the cache replaced it
/// (caught up as the next copy; large groups only).
fn coordinator_write(
    base: &Group,
    facts: &mut Facts,
    own: Option<(Group, Option<RebalanceIndex>)>,
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
    let (base_group, index) = match own {
        Some((copy, index)) => (Cow::Owned(copy), index),
        None => (Cow::Borrowed(base), None),
    };
    let queue = vec![Queued {
        member_id: member_id.to_owned(),
        req: req.clone(),
        principal: None,
        acts_for_any_member: false,
        reply_to: (),
    }];
    let decided = decide_queue_indexed(base_group, index, queue, now, timing, caps, None);
    let index = decided.index;
    let t = decided.transition.expect("the request is a transition");
    let changed = t.changed_members.clone();
    // commit_with_progress
    let mut group = t.group.expect("a write carries its aggregate");
    group.store_revision = base.store_revision + 1;
    let (_drop_lease, _remove): (Vec<String>, Vec<String>) = t
        .remove
        .into_iter()
        .partition(|m| group.members.contains_key(m));
    let mut work = 0;
    match group.write_form(base, true, t.changed_members.as_ref()) {
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
    // The written outcome: observe_rebalance, check_invariants (the base's facts taken and updated in place),
    // replies.
    work += usize::from(base.reconciling_since_ms != group.reconciling_since_ms);
    let changed = changed.expect("a batch notes its changes");
    let violations = invariants::check_changed(base, facts, &group, &changed);
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
    // BatchCopies::keep counts the index afresh when the batch had none.
    let index = index.or_else(|| copy.as_ref().and_then(RebalanceIndex::of));
    Written {
        group,
        copy,
        index,
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

/// The coordinator's state of one group before a single write of `bench_path`: the base's facts and, for a
/// large group, the kept copy with its index and the old base to be caught up (each equal to `held.base`);
/// for a small group, the aggregate the write replaces, which the coordinator frees once the cache holds the
/// new one. After the write it holds what the write left, until [`Before::restore`] brings it back.
struct Before {
    facts: Facts,
    copy: Option<(Group, Option<RebalanceIndex>)>,
    old: Option<Group>,
    /// A small group's replaced aggregate (freed by the timed write, as the coordinator frees it).
    replaced: Option<Group>,
    written: Option<Written>,
}

impl Before {
    fn of(held: &Held) -> Self {
        let large = held.base.members.len() >= MIN_MEMBERS;
        Before {
            facts: held.facts.clone(),
            copy: large.then(|| (held.base.clone(), held.index.clone())),
            old: large.then(|| held.base.clone()),
            replaced: (!large).then(|| held.base.clone()),
            written: None,
        }
    }

    /// Undoes the write this state last made, in what it changed (the aggregates caught up back to
    /// `held.base`, the index and the facts counted back): no group copied or freed, so the allocator's state
    /// is the coordinator's (which keeps a large group's aggregates between batches rather than freeing them).
    fn restore(&mut self, held: &Held) {
        let Some(w) = self.written.take() else {
            return;
        };
        let base = &held.base;
        // Counted back from the aggregate written to the base, as a write of the base's entries would.
        self.facts.update(&w.group, base, &w.changed);
        let mut index = w.index;
        if let Some(index) = &mut index {
            if index.fits(base) {
                for id in &w.changed {
                    index.recount(
                        base,
                        id,
                        w.group.members.get(id),
                        w.group.target_assignments.get(id),
                    );
                }
            } else {
                *index = RebalanceIndex::of(base).expect("the base's index");
            }
        }
        match w.copy {
            Some(mut copy) => {
                let mut group = w.group;
                group.catch_up(base, &w.changed);
                copy.catch_up(base, &w.changed);
                self.copy = Some((group, index));
                self.old = Some(copy);
            }
            // A small group: the written aggregate is the next write's replaced one.
            None => {
                let mut group = w.group;
                group.catch_up(base, &w.changed);
                self.replaced = Some(group);
            }
        }
    }

    /// Whether this state is exactly the one the benchmark starts from.
    fn is_of(&self, held: &Held) -> bool {
        self.facts == held.facts
            && self
                .copy
                .as_ref()
                .is_none_or(|(c, i)| *c == held.base && *i == held.index)
            && self.old.as_ref().is_none_or(|o| *o == held.base)
            && self.replaced.as_ref().is_none_or(|r| *r == held.base)
    }
}

/// One timed write of `bench_path` on `state` (see [`Before`]).
fn write_once(
    held: &Held,
    state: &mut Before,
    member_id: &str,
    req: &HeartbeatRequest,
    timing: &Timing,
) -> usize {
    let own = state.copy.take();
    let old = state.old.take();
    let w = coordinator_write(
        &held.base,
        &mut state.facts,
        own,
        old,
        member_id,
        req,
        timing,
    );
    // A small group's cache drops the aggregate the write replaced.
    drop(state.replaced.take());
    let work = w.work;
    state.written = Some(w);
    work
}

/// Runs `coordinator_write` of (`member_id`, `req`) on `held` as the benchmark's timed section, one write per
/// sample: before each, the state the previous write left is undone in what it changed ([`Before::restore`],
/// not timed), so that no copy of the group is made or freed around the timed write (the copies the coordinator
/// itself makes or frees on the path are in it).
fn bench_path(bencher: Bencher, held: &Held, member_id: &str, req: &HeartbeatRequest) {
    let timing = Timing::default();
    let mut state = Before::of(held);
    write_once(held, &mut state, member_id, req, &timing);
    state.restore(held);
    assert!(
        state.is_of(held),
        "the restored state is the one before the write"
    );
    let state = RefCell::new(state);
    bencher
        .with_inputs(|| state.borrow_mut().restore(held))
        .bench_local_values(|()| {
            write_once(held, &mut state.borrow_mut(), member_id, req, &timing)
        });
}

/// A converged group of `members` over `shards`, with its facts, as the coordinator holds it.
fn held(members: usize, shards: u32) -> Held {
    let base = converged_group(members, shards);
    Held::of(base)
}

impl Held {
    /// `base` with its facts and (large groups) its rebalance index.
    fn of(base: Group) -> Self {
        let facts = Facts::of(&base);
        let index = (base.members.len() >= MIN_MEMBERS)
            .then(|| RebalanceIndex::of(&base))
            .flatten();
        Held { base, facts, index }
    }
}

#[divan::bench(args = SIZES, sample_size = 1)]
fn coordinator_join(bencher: Bencher, members: usize) {
    let held = held(members, members as u32);
    let req = join_request();
    let large = (members >= MIN_MEMBERS).then(|| held.base.clone());
    let w = coordinator_write(
        &held.base,
        &mut held.facts.clone(),
        large.clone().map(|g| (g, held.index.clone())),
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

/// `coordinator_join` with static members: every member of the converged group has a `groupInstanceId`, and so
/// has the joiner (a new one), so the join asks whether another live member holds its instance id.
#[divan::bench(args = SIZES, sample_size = 1)]
fn coordinator_static_join(bencher: Bencher, members: usize) {
    let mut base = converged_group(members, members as u32);
    for m in base.members.values_mut() {
        m.group_instance_id = Some(format!("instance-{}", m.member_id));
    }
    let held = Held::of(base);
    let mut req = join_request();
    req.group_instance_id = Some("instance-joiner".into());
    let w = coordinator_write(
        &held.base,
        &mut held.facts.clone(),
        (members >= MIN_MEMBERS).then(|| (held.base.clone(), held.index.clone())),
        (members >= MIN_MEMBERS).then(|| held.base.clone()),
        "joiner",
        &req,
        &Timing::default(),
    );
    assert_eq!(
        w.group.members["joiner"].group_instance_id.as_deref(),
        Some("instance-joiner"),
        "the joiner is a static member"
    );
    bench_path(bencher, &held, "joiner", &req);
}

#[divan::bench(args = SIZES, sample_size = 1)]
fn coordinator_release(bencher: Bencher, members: usize) {
    let timing = Timing::default();
    let before = held(members, 2 * members as u32);
    let Written { group: joined, .. } = coordinator_write(
        &before.base,
        &mut before.facts.clone(),
        None,
        None,
        "joiner",
        &join_request(),
        &timing,
    );
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
    let held = Held::of(joined);
    let req = release_request(&held.base, &revoker, shard);
    let next = coordinator_write(
        &held.base,
        &mut held.facts.clone(),
        None,
        None,
        &revoker,
        &req,
        &timing,
    )
    .group;
    assert!(
        next.members["joiner"].assigned.contains(&shard),
        "the release grants the shard to the joiner"
    );
    bench_path(bencher, &held, &revoker, &req);
}

/// `coordinator_join`'s decision alone (`decide_queue_indexed` on the kept copy and its index, or the borrowed
/// aggregate, the rebalance included).
#[divan::bench(args = SIZES)]
fn coordinator_join_decide(bencher: Bencher, members: usize) {
    let held = held(members, members as u32);
    let (req, timing) = (join_request(), Timing::default());
    let large = members >= MIN_MEMBERS;
    bencher
        .with_inputs(|| large.then(|| (held.base.clone(), held.index.clone())))
        .bench_local_values(|own| {
            let (base, index) = match own {
                Some((copy, index)) => (Cow::Owned(copy), index),
                None => (Cow::Borrowed(&held.base), None),
            };
            let queue = vec![Queued {
                member_id: "joiner".to_owned(),
                req: req.clone(),
                principal: None,
                acts_for_any_member: false,
                reply_to: (),
            }];
            // The whole decided batch is returned (dropped outside the timed section): the coordinator keeps
            // its index with the next copy rather than freeing it.
            decide_queue_indexed(
                base,
                index,
                queue,
                NOW_MS + 1_000,
                &timing,
                MemberCaps::default(),
                None,
            )
        });
}

/// `coordinator_join`'s invariant check alone (`check_changed` with the base's facts, updated in place), and
/// the check of the reverse write (the joiner's entries as before), which brings the facts back: two checks
/// per iteration.
#[divan::bench(args = SIZES)]
fn coordinator_join_check(bencher: Bencher, members: usize) {
    let held = held(members, members as u32);
    let (next, changed) = decide_join_noting(&held.base, &join_request(), &Timing::default());
    let mut facts = held.facts.clone();
    bencher.bench_local(|| {
        let joined = invariants::check_changed(&held.base, &mut facts, &next, &changed);
        let back = invariants::check_changed(&next, &mut facts, &held.base, &changed);
        joined.len() + back.len()
    });
    assert!(
        facts == held.facts,
        "the reverse write's check brought the facts back"
    );
}

/// The coordinator's state of one group between batches: the cached aggregate with its facts, and (groups of
/// 1,000 or more) the kept batch copy, equal to it.
struct Coordinator {
    held: Held,
    copy: Option<(Group, Option<RebalanceIndex>)>,
}

impl Coordinator {
    fn of(base: Group) -> Self {
        let held = Held::of(base);
        let copy = (held.base.members.len() >= MIN_MEMBERS)
            .then(|| (held.base.clone(), held.index.clone()));
        Coordinator { held, copy }
    }

    /// One batch of one request, as `coordinator_write`, then the cache replaced: the old aggregate becomes the
    /// next batch's copy (caught up) or, for a group under 1,000 members, is freed.
    fn write(&mut self, member_id: &str, req: &HeartbeatRequest, timing: &Timing) -> usize {
        let own = self.copy.take();
        let large = own.is_some();
        // The old aggregate is owned once the write replaced it in the cache: caught up after the write.
        let w = coordinator_write(
            &self.held.base,
            &mut self.held.facts,
            own,
            None,
            member_id,
            req,
            timing,
        );
        let old = std::mem::replace(&mut self.held.base, w.group);
        self.held.index = None;
        if large {
            let mut old = old;
            old.catch_up(&self.held.base, &w.changed);
            self.copy = Some((old, w.index));
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
