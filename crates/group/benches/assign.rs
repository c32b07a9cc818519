//! Benchmarks of the sticky balanced assignor over members ∈ {10, 100, 1000} × shards ∈ {100, 1000,
//! 10000}: a fresh assignment (empty previous) and one member joining a balanced group. The inputs
//! are built outside the timed section, so only `assign` itself is measured.

use std::collections::{BTreeMap, BTreeSet};

use divan::Bencher;
use rsc_group::assign::assign;

fn main() {
    divan::main();
}

fn member_ids(count: usize) -> BTreeSet<String> {
    (0..count).map(|i| format!("member-{i:05}")).collect()
}

fn shard_set(count: u32) -> BTreeSet<u32> {
    (0..count).collect()
}

#[divan::bench(consts = [10, 100, 1000], args = [100, 1000, 10000])]
fn fresh<const MEMBERS: usize>(bencher: Bencher, shards: u32) {
    let shards = shard_set(shards);
    let members = member_ids(MEMBERS);
    let previous = BTreeMap::new();
    bencher.bench(|| assign(&shards, &members, &previous));
}

#[divan::bench(consts = [10, 100, 1000], args = [100, 1000, 10000])]
fn one_joins<const MEMBERS: usize>(bencher: Bencher, shards: u32) {
    let shards = shard_set(shards);
    let mut members = member_ids(MEMBERS);
    let previous = assign(&shards, &members, &BTreeMap::new());
    members.insert("member-zzzzz".to_string());
    bencher.bench(|| assign(&shards, &members, &previous));
}
