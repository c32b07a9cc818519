//! The read-only queries of an ordered stream's gates on a group (`Group::ordering_gates`,
//! `Group::ordering_switch_points`): which shards no member may be granted, which granted shards carry a
//! read fence, and which parents the gates still wait for. The rules that close and open the gates are in
//! `ordering.rs`; `rebalance::settle` and the heartbeat answers ask these.

use super::{Group, ShardSet};
use std::collections::BTreeMap;

impl Group {
    /// Shards no member may be granted now (children whose parents may still hold pre-switch records and
    /// that are not granted with a read fence: new shards, and survivors whose switch point is unknown).
    pub fn gated_shards(&self) -> ShardSet {
        self.ordering_gates
            .keys()
            .filter(|s| !self.ordering_switch_points.contains_key(s))
            .copied()
            .collect()
    }

    /// The read fences of the shards in `held` (shard → switch point): the gated children among them that
    /// are granted fenced, which a member holding them may not read past until their gates open.
    pub fn read_fences(&self, held: &ShardSet) -> BTreeMap<u32, String> {
        self.ordering_gates
            .keys()
            .filter(|s| held.contains(s))
            .filter_map(|s| Some((*s, self.ordering_switch_points.get(s)?.clone())))
            .collect()
    }

    /// The parents any gate still waits for (the shards whose drain evidence the reconciler must read).
    pub fn waited_parents(&self) -> ShardSet {
        self.ordering_gates.values().flatten().copied().collect()
    }
}
