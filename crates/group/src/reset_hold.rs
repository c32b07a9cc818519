//! The hold an operator's offset reset keeps on the shards it moves, closing the window between the check
//! that nobody reads for the group and the `XGROUP SETID`s on the shard streams (ARCHITECTURE.md,
//! "Resetting a group's position").
//!
//! [`place`] writes a [`Hold`] for the pseudo-member [`RESET_HOLD_MEMBER`] (braces are not allowed in a
//! member id, so no member can share it) over the reset's shards, only on an aggregate where no live member
//! holds any shard and no other hold lasts: the coordinator commits it with the group's revision
//! compare-and-set, so no member was granted anything in between. While it lasts, `rebalance::settle` grants
//! those shards to nobody — a member that joins meanwhile is ACTIVE with an empty assignment. [`extend`]
//! moves its end when the reset runs long; [`lift`] removes it and settles, so the next heartbeat is granted
//! the shards at their new position. A coordinator that dies in between leaves the hold to end by itself
//! (`tick` drops it at `until_ms`).

use crate::model::{Group, Hold, HoldReason, ShardSet};
use crate::rebalance::settle;
use crate::timing::Timing;

/// The member id of a reset's hold: not a valid member id (`{` and `}` are refused), so it names no member.
pub const RESET_HOLD_MEMBER: &str = "{offset reset}";

/// Why a reset hold could not be placed: something may still read the group's shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlaceError {
    /// This live member (ACTIVE or LEAVING) holds shards or may be granted some.
    LiveMember(String),
    /// A hold (a fenced incarnation's, or another reset's) lasts past `now`.
    Held(Hold),
}

/// `g` with a reset hold over `shards` until `until_ms`, placed at `now_ms` (Redis time: the caller makes
/// the write conditional on it); refused while a member is live or any hold is in effect at `now_ms`
/// (`Hold::in_effect_at`: one whose end is still to be counted is; holds that have ended are left for `tick`
/// to drop).
pub fn place(
    g: &Group,
    shards: &ShardSet,
    now_ms: i64,
    until_ms: i64,
) -> Result<Group, PlaceError> {
    if let Some(m) = g.members.values().find(|m| m.state.is_live()) {
        return Err(PlaceError::LiveMember(m.member_id.clone()));
    }
    if let Some(h) = g.holds.iter().find(|h| h.in_effect_at(now_ms)) {
        return Err(PlaceError::Held(h.clone()));
    }
    let mut next = g.clone();
    next.holds.push(Hold {
        member_id: RESET_HOLD_MEMBER.to_owned(),
        shards: shards.clone(),
        until_ms,
        reason: HoldReason::OffsetReset,
        anchor_pending: false,
    });
    next.updated_at_ms = now_ms;
    Ok(next)
}

/// The reset hold of `g`, if it still has one.
pub fn reset_hold(g: &Group) -> Option<&Hold> {
    g.holds.iter().find(|h| h.member_id == RESET_HOLD_MEMBER)
}

/// `g` with its reset hold lasting until `until_ms`; None when it has none (it ended and was dropped) or
/// already lasts that long.
pub fn extend(g: &Group, until_ms: i64, now_ms: i64) -> Option<Group> {
    let h = reset_hold(g)?;
    if h.until_ms >= until_ms {
        return None;
    }
    let mut next = g.clone();
    for h in &mut next.holds {
        if h.member_id == RESET_HOLD_MEMBER {
            h.until_ms = until_ms;
        }
    }
    next.updated_at_ms = now_ms;
    Some(next)
}

/// `g` without its reset hold, settled at `now_ms` (the held shards go to the members that joined
/// meanwhile, as when `tick` drops a hold); None when it has no reset hold.
pub fn lift(g: &Group, now_ms: i64, timing: &Timing) -> Option<Group> {
    reset_hold(g)?;
    let mut next = g.clone();
    next.holds.retain(|h| h.member_id != RESET_HOLD_MEMBER);
    settle(&mut next, now_ms, timing);
    next.updated_at_ms = now_ms;
    Some(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invariants;
    use crate::model::Member;
    use crate::rebalance::recompute_target;

    fn group() -> Group {
        Group::new("p", "g", 4, 1_000, "life")
    }

    #[test]
    fn a_member_joining_under_a_reset_hold_gets_no_shard_until_it_is_lifted() {
        let timing = Timing::default();
        let shards: ShardSet = [0, 1, 2, 3].into_iter().collect();
        let held = place(&group(), &shards, 1_000, 31_000).expect("nobody reads");
        assert_eq!(reset_hold(&held).map(|h| h.until_ms), Some(31_000));
        // A member joins (as the heartbeat's join does: a new member, its target, then settle).
        let mut joined = held.clone();
        joined
            .members
            .insert("m1".into(), Member::new("m1", "m1", 2_000));
        recompute_target(&mut joined, 2_000, &timing);
        settle(&mut joined, 2_000, &timing);
        assert_eq!(joined.target_of("m1"), shards);
        assert!(joined.members["m1"].assigned.is_empty(), "{joined:?}");
        assert_eq!(invariants::check(&joined), Vec::<String>::new());
        // A second reset is refused while the first holds.
        assert!(matches!(
            place(&joined, &shards, 2_000, 32_000),
            Err(PlaceError::LiveMember(_))
        ));
        let longer = extend(&joined, 61_000, 3_000).expect("moved");
        assert_eq!(reset_hold(&longer).map(|h| h.until_ms), Some(61_000));
        assert_eq!(extend(&longer, 61_000, 3_000), None);
        let lifted = lift(&longer, 4_000, &timing).expect("it had a hold");
        assert!(reset_hold(&lifted).is_none());
        assert_eq!(lifted.members["m1"].assigned, shards);
        assert_eq!(invariants::check(&lifted), Vec::<String>::new());
        assert_eq!(lift(&lifted, 5_000, &timing), None);
    }

    #[test]
    fn a_reset_hold_is_refused_while_a_hold_lasts() {
        let mut g = group();
        g.holds.push(Hold {
            member_id: "old".into(),
            shards: [1].into_iter().collect(),
            until_ms: 5_000,
            reason: HoldReason::RebalanceTimeout,
            anchor_pending: false,
        });
        let shards: ShardSet = [0].into_iter().collect();
        assert!(matches!(
            place(&g, &shards, 4_999, 9_000),
            Err(PlaceError::Held(h)) if h.member_id == "old"
        ));
        let placed = place(&g, &shards, 5_000, 9_000).expect("the old hold ended");
        assert_eq!(placed.holds.len(), 2, "the ended hold is tick's to drop");
        assert_eq!(placed.holds[1].member_id, RESET_HOLD_MEMBER);
        // A hold whose end is still to be counted keeps its shards whatever its first end says.
        g.holds[0].anchor_pending = true;
        assert!(matches!(
            place(&g, &shards, 50_000, 90_000),
            Err(PlaceError::Held(h)) if h.member_id == "old"
        ));
    }
}
