//! Which replica runs a group's (or a stream's) background work: rendezvous hashing over the live replicas.
//!
//! Every replica registers itself in Redis with a lease and reads back the set of live replicas; from that set
//! each computes, for every group, the one replica whose weight for the group's name is highest. A replica
//! that joins takes over only the groups it now outweighs everyone on; a replica that leaves gives up only its
//! own groups, each to the replica with the next highest weight. No coordination is needed to agree: replicas
//! with the same view compute the same owner.
//!
//! Ownership only decides who *spends* time on a group (the reconciler's visits, metrics refresh). It is never
//! a safety condition: every write is a compare-and-set checked by Redis, so two replicas that both believe
//! they own a group (views that disagree during a join, a lease running out, a partition) at worst lose a race,
//! and a group nobody believes it owns for a moment is picked up as soon as the views agree again.

use rsc_protocol::routing::murmur3_x86_32;

/// The live replicas as one replica sees them (ids, sorted, without duplicates).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaSet {
    ids: Vec<String>,
}

impl ReplicaSet {
    /// The set of `ids` (sorted, duplicates dropped).
    pub fn new<I, S>(ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut ids: Vec<String> = ids.into_iter().map(Into::into).collect();
        ids.sort();
        ids.dedup();
        ReplicaSet { ids }
    }

    /// The set with `me` in it: a replica always counts itself live (its own registration may not have been
    /// read back yet), so it never leaves work undone because of its own view.
    pub fn with(mut self, me: &str) -> Self {
        if let Err(at) = self.ids.binary_search_by(|id| id.as_str().cmp(me)) {
            self.ids.insert(at, me.to_owned());
        }
        self
    }

    /// The replica ids, sorted.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    /// How many replicas.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no replica is live.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The owner of `work` (a group's or a stream's key, see [`group_work`] and [`stream_work`]): the replica
    /// with the highest weight; None when the set is empty.
    pub fn owner(&self, work: &str) -> Option<&str> {
        self.ids
            .iter()
            .max_by_key(|id| (weight(id, work), id.as_str()))
            .map(String::as_str)
    }

    /// Whether `me` owns `work` in this view.
    pub fn owns(&self, me: &str, work: &str) -> bool {
        self.owner(work) == Some(me)
    }
}

/// The rendezvous weight of `replica` for `work`: 64 bits from two MurmurHash3 runs over the work's name,
/// seeded by the replica's id (the routing hash's implementation, so no other hash crate is needed).
pub fn weight(replica: &str, work: &str) -> u64 {
    let seed = murmur3_x86_32(replica.as_bytes(), 0x5253_4352);
    let high = murmur3_x86_32(work.as_bytes(), seed);
    let low = murmur3_x86_32(work.as_bytes(), seed ^ 0x9E37_79B9);
    (u64::from(high) << 32) | u64::from(low)
}

/// The name a group's background work is owned under.
pub fn group_work(stream_prefix: &str, consumer_group: &str) -> String {
    format!("group\n{stream_prefix}\n{consumer_group}")
}

/// The name a stream's resharding pass is owned under.
pub fn stream_work(stream_prefix: &str) -> String {
    format!("stream\n{stream_prefix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(ids: &[String]) -> ReplicaSet {
        ReplicaSet::new(ids.iter().cloned())
    }

    #[test]
    fn an_empty_set_owns_nothing_and_a_lone_replica_owns_everything() {
        assert_eq!(ReplicaSet::default().owner("g"), None);
        let one = ReplicaSet::default().with("a");
        assert!(one.owns("a", "g") && one.owns("a", "h"));
        assert_eq!(one.clone().with("a"), one, "with() does not duplicate");
    }

    #[test]
    fn work_spreads_over_replicas() {
        let s = ReplicaSet::new(["r1", "r2", "r3"]);
        let mut counts = std::collections::BTreeMap::new();
        for i in 0..3_000 {
            *counts
                .entry(s.owner(&group_work("p", &format!("g{i}"))).unwrap())
                .or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 3);
        for (r, n) in counts {
            assert!((800..1_200).contains(&n), "{r} owns {n} of 3000");
        }
    }

    proptest! {
        /// A replica joining takes only groups it now owns, from whoever had them; no other group moves.
        #[test]
        fn a_join_moves_only_the_joiners_groups(
            ids in proptest::collection::btree_set("[a-z]{1,6}", 1..6),
            joiner in "[A-Z]{1,6}",
            works in proptest::collection::vec("[a-z0-9]{1,12}", 1..60),
        ) {
            let ids: Vec<String> = ids.into_iter().collect();
            let before = set(&ids);
            let after = before.clone().with(&joiner);
            for w in &works {
                let (b, a) = (before.owner(w).unwrap(), after.owner(w).unwrap());
                prop_assert!(a == b || a == joiner, "{w}: {b} -> {a}");
            }
        }

        /// A replica leaving gives up only its own groups; every other group keeps its owner.
        #[test]
        fn a_leave_moves_only_the_leavers_groups(
            ids in proptest::collection::btree_set("[a-z]{1,6}", 2..7),
            leaver_at in 0usize..7,
            works in proptest::collection::vec("[a-z0-9]{1,12}", 1..60),
        ) {
            let ids: Vec<String> = ids.into_iter().collect();
            let leaver = ids[leaver_at % ids.len()].clone();
            let before = set(&ids);
            let after = ReplicaSet::new(ids.iter().filter(|i| **i != leaver).cloned());
            for w in &works {
                let (b, a) = (before.owner(w).unwrap(), after.owner(w).unwrap());
                prop_assert!(a == b || b == leaver, "{w}: {b} -> {a}");
                prop_assert!(a != leaver);
            }
        }

        /// Replicas with the same view agree, whatever order they learnt the ids in.
        #[test]
        fn the_same_view_gives_the_same_owner(
            mut ids in proptest::collection::vec("[a-z]{1,6}", 1..6),
            work in "[a-z0-9]{1,12}",
        ) {
            let a = set(&ids).owner(&work).map(str::to_owned);
            ids.reverse();
            let reversed = set(&ids);
            prop_assert_eq!(a.as_deref(), reversed.owner(&work));
        }
    }
}
