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
//! ## The switch point, and learning it in time
//!
//! Soundness needs two things, and the switch provides both (ARCHITECTURE.md, "Ordered scales"):
//!
//! - **An exact switch point.** Every record appended to shard `j` up to `S_j` was routed with the old
//!   routing, every record after it with the new one. Each shard stream has a routing boundary beside it
//!   (its *routing key*, in its own slot): SDK producers append through a script that refuses an append whose
//!   routing version is below the boundary, and *raises* the boundary itself, recording `S_j`, when an
//!   append carries a newer version than it (the coordinator raises every shard's boundary right after the
//!   switch too; whichever comes first records `S_j`, atomically with the raise).
//! - **The fence in time.** The owner of a surviving child learns its fence from a heartbeat answer, which
//!   can come a heartbeat interval after the switch. Until then it fences itself: after every read it looks
//!   at the shard's boundary ([`ShardBoundary`]), and when the boundary is newer than the routing version
//!   of the last answer it applied (`routingVersion`) and the switch made the shard a child, it treats
//!   `S_j` as its fence ([`self_fence`]). A record after `S_j` was appended after the raise, so a read that
//!   returned one is followed by a look at the boundary that sees the raise.
//!
//! Plain-XADD clients bypass the script: at-least-once, without the order guarantee.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A stream's ordering option (`ordering` at create, or changed later): `NONE` (at-least-once, the
/// default) or `KEY` (records of one partition key are consumed in publish order across a scale).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Ordering {
    /// At-least-once only: after a scale, a key's records on its new shard may be read before its older
    /// records on the old shard (the default).
    #[default]
    None,
    /// Per-key order across scales: a new shard's records wait (withheld shards, read fences) until the
    /// old shards its keys come from have drained for the group.
    Key,
}

impl Ordering {
    /// The wire name: `NONE` or `KEY`.
    pub fn as_str(self) -> &'static str {
        match self {
            Ordering::None => "NONE",
            Ordering::Key => "KEY",
        }
    }

    /// Whether this is `NONE` (serde skips the field then).
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

/// Whether new shard `shard` of a scale `from → to` is a child: a shard whose keys can come from an old shard
/// other than itself. The same answer as `gates(from, to).contains_key(&shard)`, in O(log) instead of
/// O(from · to): a consumer asks it after every read.
pub fn is_child(from: u32, to: u32, shard: u32) -> bool {
    if from == 0 || shard >= to {
        return false;
    }
    if !divides_hash_space(from) || !divides_hash_space(to) {
        // Every old shard is a parent: a child unless its only parent is itself.
        return from > 1 || shard >= from;
    }
    // Parents are the old shards i ≡ shard (mod g): from / g of them, and shard itself only when shard < from.
    let g = gcd(from, to);
    from / g > 1 || shard >= from
}

/// The scale a routing boundary was raised for, as the coordinator annotates it: the switch `from → to`
/// of routing version `version`, on a stream whose ordering option was `ordered` then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundaryScale {
    /// The stream's routing version the switch introduced.
    pub version: i64,
    /// The shard count before the switch.
    pub from: u32,
    /// The shard count after the switch.
    pub to: u32,
    /// Whether the stream's ordering option was `KEY` at the switch.
    pub ordered: bool,
}

impl BoundaryScale {
    /// The routing key's `scale` field: `<version> <from> <to> <0|1>`.
    pub fn encode(&self) -> String {
        format!(
            "{} {} {} {}",
            self.version,
            self.from,
            self.to,
            u8::from(self.ordered)
        )
    }

    /// Parses [`BoundaryScale::encode`]; None for anything else.
    pub fn decode(s: &str) -> Option<BoundaryScale> {
        let mut it = s.split(' ');
        let scale = BoundaryScale {
            version: it.next()?.parse().ok()?,
            from: it.next()?.parse().ok()?,
            to: it.next()?.parse().ok()?,
            ordered: match it.next()? {
                "0" => false,
                "1" => true,
                _ => return None,
            },
        };
        it.next().is_none().then_some(scale)
    }
}

/// A shard stream's routing boundary as a consumer reads it (the store's routing key: `floor`, `switchId`,
/// `scale`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardBoundary {
    /// The lowest routing version a guarded append may carry: the version of the latest switch (0: none).
    pub floor: i64,
    /// The shard's last stream id when the boundary was raised to `floor` (its switch point).
    pub switch_id: String,
    /// What the coordinator recorded about the switch; None until it has (a producer raised the boundary
    /// first), or when it describes an older switch than `floor`.
    pub scale: Option<BoundaryScale>,
}

impl ShardBoundary {
    /// Builds a boundary from the routing key's fields as read (`HMGET floor switchId scale`). None when no
    /// boundary was ever raised.
    pub fn from_fields(
        floor: Option<&str>,
        switch_id: Option<&str>,
        scale: Option<&str>,
    ) -> Option<ShardBoundary> {
        let floor: i64 = floor?.parse().ok()?;
        let scale = scale
            .and_then(BoundaryScale::decode)
            .filter(|s| s.version == floor);
        Some(ShardBoundary {
            floor,
            switch_id: switch_id.unwrap_or("0-0").to_owned(),
            scale,
        })
    }
}

/// The read fence a consumer must hold on `shard` by itself, from the shard's routing boundary, when the last
/// answer it applied said the group's state reflects routing version `answered` (`routingVersion`; None when
/// the coordinator sends none, which fences nothing).
///
/// A boundary no newer than `answered` is the answers' business (they carry `readFences`). A newer one was
/// raised by a switch the coordinator has not told this member about yet: if that switch made `shard` a child
/// of an ordered stream, or if the coordinator has not annotated it yet (so it cannot be told apart), the
/// records after its switch point must wait.
pub fn self_fence(shard: u32, boundary: &ShardBoundary, answered: Option<i64>) -> Option<&str> {
    let answered = answered?;
    if boundary.floor <= answered {
        return None;
    }
    match boundary.scale {
        Some(s) if !s.ordered || !is_child(s.from, s.to, shard) => None,
        _ => Some(boundary.switch_id.as_str()),
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
    fn is_child_agrees_with_the_gates() {
        for from in 0..40 {
            for to in 0..40 {
                let gates = gates(from, to);
                for j in 0..to + 2 {
                    assert_eq!(
                        is_child(from, to, j),
                        gates.contains_key(&j),
                        "{from} -> {to}: {j}"
                    );
                }
            }
        }
        assert!(is_child(1024, 3, 0) && !is_child(512, 1024, 3) && is_child(512, 1024, 600));
    }

    #[test]
    fn boundary_scales_round_trip_and_bad_ones_are_none() {
        let s = BoundaryScale {
            version: 7,
            from: 8,
            to: 3,
            ordered: true,
        };
        assert_eq!(s.encode(), "7 8 3 1");
        assert_eq!(BoundaryScale::decode(&s.encode()), Some(s));
        for bad in ["", "7 8 3", "7 8 3 2", "7 8 3 1 9", "x 8 3 1", "7 -1 3 0"] {
            assert_eq!(BoundaryScale::decode(bad), None, "{bad:?}");
        }
        assert_eq!(ShardBoundary::from_fields(None, Some("1-0"), None), None);
        let b = ShardBoundary::from_fields(Some("7"), Some("5-1"), Some("6 4 8 1")).unwrap();
        assert_eq!(
            b.scale, None,
            "a scale of an older switch is not this boundary's"
        );
    }

    #[test]
    fn a_consumer_fences_itself_only_for_a_switch_it_was_not_told_of() {
        let boundary = |scale: Option<&str>| {
            ShardBoundary::from_fields(Some("5"), Some("100-3"), scale).unwrap()
        };
        // 8 -> 3 on an ordered stream: shard 1 survives and is a child.
        let b = boundary(Some("5 8 3 1"));
        assert_eq!(self_fence(1, &b, Some(4)), Some("100-3"));
        assert_eq!(self_fence(1, &b, Some(5)), None, "the answers know of it");
        assert_eq!(
            self_fence(1, &b, None),
            None,
            "no routingVersion: nothing to compare"
        );
        // 4 -> 8 (powers of two): shard 1 keeps only its own keys.
        assert_eq!(self_fence(1, &boundary(Some("5 4 8 1")), Some(4)), None);
        // Unordered streams never fence.
        assert_eq!(self_fence(1, &boundary(Some("5 8 3 0")), Some(4)), None);
        // Raised by a producer, not annotated yet: fenced until it is.
        assert_eq!(self_fence(1, &boundary(None), Some(4)), Some("100-3"));
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
