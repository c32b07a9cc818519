//! Benchmark of one transition write's work in the coordinator, at 100, 1,000 and 10,000 members (one shard
//! each): a member joins a converged group (a real transition: a new member record, new epochs, no shard
//! moves), decided as a batch of one (`Batch`: the group copied once, the deferred rebalance run), the
//! invariants checked on the result, and the aggregate encoded for the store, whole (JSON, then LZ4 as
//! layoutVersion "3" stores a large one) or split (layoutVersion "4": the header and the entries of the members
//! the batch says it changed, `Group::write_form` as the coordinator calls it). `write_whole` and `write_split`
//! are the whole of that work; the others are its parts (`encode_split_compare_all`: the comparison of every
//! member's entries that writes other than a batch's make).
//! The group is built outside the timed section; the setup checks the decision is a write.

mod common;

use common::{NOW_MS, converged_group};
use divan::Bencher;
use rsc_group::batch::Batch;
use rsc_group::invariants;
use rsc_group::model::{Group, WriteForm};
use rsc_group::timing::Timing;
use rsc_protocol::wire::{HeartbeatRequest, RuntimeConsumerCapacity};
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
