//! Per-key order across a scale: which old shards a new shard's keys can come from (its *parents*).
//!
//! Routing is `hash mod count` (see [`crate::routing`]). For a key whose first hash `h` is accepted by both
//! the old count `from` and the new count `to`, the old shard is `h mod from` and the new one `h mod to`;
//! both are `h mod g` modulo `g = gcd(from, to)`, so a key of new shard `j` can only come from the old
//! shards `i ≡ j (mod g)`.
//!
//! Rejection sampling breaks this for counts that do not divide 2^32 (every count that is not a power of
//! two): a key whose hash falls in the rejected tail of one count but not of the other is rehashed with
//! another seed on one side only, and can land anywhere. No test over sample keys can prove a tighter rule
//! for every key (the tail is a few hash values out of 2^32, but an application may own exactly those keys),
//! so for such counts **every old shard is a parent of every new shard**.
//!
//! A new shard is a *child* (a shard whose reads must wait) when it has a parent other than itself: its own
//! old records are older than anything routed to it since, so only other parents matter.
//!
//! ## Surviving children: read fences
//!
//! A child that is not an old shard (index `j >= from`) holds nothing from before the switch, so it is
//! *withheld*: granted to nobody until every parent has drained for the group. A child that survives the
//! scale (`j < from`, every scale-in and every scale between counts that are not both powers of two) cannot
//! be withheld: it holds its own keys' pre-switch records, and it may itself be a parent of other children
//! (8 → 3 makes 0 wait for 1 and 1 wait for 0). Withholding it would deadlock. Such a child is granted
//! with a **read fence** at its *switch point* `S_j` (the last id in `j` at the routing switch): its owner
//! consumes `j` up to `S_j` and hands no record after `S_j` to the application until the gate opens (every
//! other parent drained for this group). Records after the fence that a read already delivered stay
//! pending, in order, and are handed over (or claimed by the next owner) once the fence is lifted.
//!
//! Drain evidence for a parent `p` is bounded by its own switch point: nothing pending up to `S_p` and
//! last-delivered at or past `S_p`. A fenced parent therefore drains by consuming exactly its pre-switch
//! records, which its fence allows, and since every parent is an old shard and no old shard is withheld, no
//! gate can wait on itself ([`fenced_children`]; the model in `tests/ordering_fences.rs` checks per-key
//! order, no loss and no deadlock over random scales, keys and schedules).
//!
//! Soundness needs two things the switch must provide (see ARCHITECTURE.md, "Ordered scales"):
//! every record appended to `j` before `S_j` was routed with the old routing and every record after it
//! with the new one (the switch point is taken atomically with the shard's routing boundary, behind which
//! the guarded publish script refuses old-routing appends), and the owner of a fenced shard learns the fence
//! before it can read a record past `S_j`. Until the switch provides both, [`ordered_scale_supported`]
//! keeps refusing scales with surviving children.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A stream's ordering option (`ordering` at create, or changed later): `NONE` (at-least-once, the
/// default) or `KEY` (records of one partition key are consumed in publish order across a scale).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Ordering {
    #[default]
    None,
    Key,
}

impl Ordering {
    pub fn as_str(self) -> &'static str {
        match self {
            Ordering::None => "NONE",
            Ordering::Key => "KEY",
        }
    }

    pub fn is_none(&self) -> bool {
        *self == Ordering::None
    }
}

/// Whether `count` divides 2^32 (a power of two): then routing never rehashes a key.
pub fn divides_hash_space(count: u32) -> bool {
    count.is_power_of_two()
}

fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The old shards (of `from`) that keys of new shard `child` (of `to`) can come from. Empty when either
/// count is 0 (there was or is nothing to route).
pub fn parents(from: u32, to: u32, child: u32) -> BTreeSet<u32> {
    if from == 0 || to == 0 || child >= to {
        return BTreeSet::new();
    }
    if !divides_hash_space(from) || !divides_hash_space(to) {
        return (0..from).collect();
    }
    let g = gcd(from, to);
    (0..from).filter(|i| i % g == child % g).collect()
}

/// Every child of a scale `from → to`, with its parents other than itself: the new shards whose reads must
/// wait until those parents hold nothing unconsumed from before the switch.
pub fn gates(from: u32, to: u32) -> BTreeMap<u32, BTreeSet<u32>> {
    (0..to)
        .filter_map(|j| {
            let mut p = parents(from, to, j);
            p.remove(&j);
            (!p.is_empty()).then_some((j, p))
        })
        .collect()
}

/// The children of `from → to` that survive the scale (index below both counts): granted with a read fence
/// at their switch point instead of withheld, because their own pre-switch records must be consumed.
pub fn fenced_children(from: u32, to: u32) -> BTreeSet<u32> {
    gates(from, to).into_keys().filter(|j| *j < from).collect()
}

/// Why an ordered scale `from → to` cannot keep per-key order by withholding grants alone, or Ok.
///
/// Withholding a child from every member keeps order only when no child is an old shard that goes on
/// being written: such a *surviving* child holds pre-switch records of its own keys (which must be read)
/// and, right after the switch, records of keys moved from its parents (which must wait); telling the two
/// apart needs reads bounded by the switch point, which rsc does not do (yet). So an ordered scale is
/// accepted when every surviving shard (index below both counts) is a child of nobody but itself: a
/// scale-out between powers of two (`from` divides `to`), or between any counts where `from` is 0 or 1.
pub fn ordered_scale_supported(from: u32, to: u32) -> Result<(), String> {
    if from == to {
        return Ok(());
    }
    let gates = gates(from, to);
    match gates.keys().find(|j| **j < from) {
        None => Ok(()),
        Some(j) => Err(format!(
            "an ordered stream cannot scale from {from} to {to} shards: shard {j} survives the scale and \
             would receive keys from shards {:?}, which needs reads bounded by the switch point (not \
             supported); ordered streams scale out between powers of two (e.g. 4 -> 8), or set \
             ordering NONE first",
            gates[j]
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::shard_for_key;
    use proptest::prelude::*;

    #[test]
    fn powers_of_two_follow_the_gcd_rule() {
        assert_eq!(parents(4, 8, 5), BTreeSet::from([1]));
        assert_eq!(parents(4, 8, 1), BTreeSet::from([1]));
        assert_eq!(parents(8, 4, 1), BTreeSet::from([1, 5]));
        assert_eq!(parents(8, 2, 0), BTreeSet::from([0, 2, 4, 6]));
        assert_eq!(
            gates(4, 8).keys().copied().collect::<Vec<_>>(),
            [4, 5, 6, 7]
        );
        assert_eq!(gates(4, 8)[&6], BTreeSet::from([2]));
        assert_eq!(gates(8, 4)[&3], BTreeSet::from([7]));
        assert!(gates(4, 4).is_empty());
    }

    #[test]
    fn counts_that_rehash_make_every_old_shard_a_parent() {
        assert_eq!(parents(3, 6, 4), (0..3).collect());
        assert_eq!(parents(8, 3, 0), (0..8).collect());
        assert_eq!(parents(6, 12, 11), (0..6).collect());
        assert!(parents(0, 4, 1).is_empty());
        assert!(parents(4, 0, 0).is_empty());
        assert!(parents(4, 8, 8).is_empty());
    }

    #[test]
    fn only_scales_without_surviving_children_are_supported() {
        for (from, to) in [(4, 8), (1, 8), (1, 3), (2, 16), (0, 5), (5, 5)] {
            assert_eq!(ordered_scale_supported(from, to), Ok(()), "{from} -> {to}");
        }
        for (from, to) in [(8, 4), (8, 3), (3, 6), (4, 6), (2, 1)] {
            let err = ordered_scale_supported(from, to).unwrap_err();
            assert!(err.contains("ordering NONE"), "{err}");
        }
    }

    #[test]
    fn surviving_children_are_fenced_and_nothing_deadlocks() {
        assert_eq!(fenced_children(8, 3), BTreeSet::from([0, 1, 2]));
        assert_eq!(fenced_children(3, 6), BTreeSet::from([0, 1, 2]));
        assert_eq!(fenced_children(8, 4), BTreeSet::from([0, 1, 2, 3]));
        assert!(
            fenced_children(4, 8).is_empty(),
            "4 -> 8 only withholds new shards"
        );
        assert!(gates(8, 3)[&0].contains(&1) && gates(8, 3)[&1].contains(&0));
        // No deadlock: every parent is an old shard, and an old shard is never withheld (a child among
        // the old shards is fenced), so every parent can be consumed up to its switch point.
        for from in 0..20 {
            for to in 0..20 {
                for (j, parents) in gates(from, to) {
                    assert!(parents.iter().all(|p| *p < from), "{from} -> {to}: {j}");
                    assert_eq!(j < from, fenced_children(from, to).contains(&j));
                }
            }
        }
    }

    /// The hash-space tail: for 3 only one hash value is rehashed; a key there routes by another seed.
    #[test]
    fn a_rehashed_key_is_still_covered() {
        // Keys whose first hash is rejected by 6 but accepted by 3 exist; whatever they do, the rule
        // for (3, 6) names every old shard, so it covers them.
        for j in 0..6 {
            assert_eq!(parents(3, 6, j).len(), 3);
        }
    }

    proptest! {
        /// Over many keys and count pairs: the old shard of every key is a parent of its new shard.
        #[test]
        fn every_key_comes_from_a_parent(key in proptest::collection::vec(any::<u8>(), 0..24),
                                         from in 1u32..40, to in 1u32..40) {
            let old = shard_for_key(&key, from).unwrap();
            let new = shard_for_key(&key, to).unwrap();
            prop_assert!(parents(from, to, new).contains(&old), "{from}->{to}: {old} -> {new}");
            if old != new {
                prop_assert!(gates(from, to)[&new].contains(&old));
            }
        }

        /// Powers of two: the tight rule holds for every key (no rehashing, so no exception).
        #[test]
        fn powers_of_two_are_tight(key in proptest::collection::vec(any::<u8>(), 0..24),
                                   a in 0u32..7, b in 0u32..7) {
            let (from, to) = (1u32 << a, 1u32 << b);
            let old = shard_for_key(&key, from).unwrap();
            let new = shard_for_key(&key, to).unwrap();
            let g = gcd(from, to);
            prop_assert_eq!(old % g, new % g);
        }
    }
}
