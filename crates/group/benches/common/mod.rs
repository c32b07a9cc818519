//! What the group crate's benchmarks share: a converged (STABLE) group of a given size, built outside the
//! timed sections.

use rsc_group::assign::assign;
use rsc_group::model::{Group, GroupState, Member, ShardSet};
use rsc_group::rebalance::derive_state;
use std::collections::BTreeMap;

/// The benchmarks' clock: every decision is taken at or after this instant.
pub const NOW_MS: i64 = 1_700_000_000_000;

/// A STABLE group of `members` members over `shards` shards, every member holding exactly its target.
pub fn converged_group(members: usize, shards: u32) -> Group {
    let mut g = Group::new("bench", "bench", shards, NOW_MS, "lifecycle-1");
    let ids = (0..members).map(|i| format!("member-{i:05}")).collect();
    let all: ShardSet = (0..shards).collect();
    let targets = assign(&all, &ids, &BTreeMap::new());
    g.group_epoch = members as i64 + 1;
    g.assignment_epoch = g.group_epoch;
    g.metadata_version = g.group_epoch;
    for id in &ids {
        let mut m = Member::new(id, id, NOW_MS);
        m.member_epoch = g.assignment_epoch;
        m.incarnation_epoch = g.assignment_epoch;
        m.join_confirmed = true;
        m.assigned = targets.get(id).cloned().unwrap_or_default();
        m.reported_owned = m.assigned.clone();
        g.members.insert(id.clone(), m);
    }
    g.target_assignments = targets;
    g.state = derive_state(&g);
    assert_eq!(g.state, GroupState::Stable, "the bench group is not STABLE");
    g
}
