//! Read fences of ordered streams, as a member must honour them: the ones the answers give, and the ones it
//! must take by itself between a routing switch and the first answer that reflects it.
//!
//! A heartbeat answer carries `readFences` for the assigned shards that survived an ordered scale and still
//! wait for other parents, and `routingVersion`, the stream routing version the group's state reflects. The
//! member keeps them as the answers say: an answer that carries a fence sets it, an answer that assigns the
//! shard without one lifts it, and a shard being given up keeps its fence while its local work lasts.
//!
//! Answers come a heartbeat interval apart, so right after a switch the owner of a surviving child has not
//! heard of its fence yet. It looks at the shard's routing boundary after every read
//! (`rsc_protocol::ordering::ShardBoundary`), and [`ReadFences::fence_for`] adds the fence the boundary
//! implies (`rsc_protocol::ordering::self_fence`) to the answered one: the earlier of the two holds.

use rsc_protocol::ordering::{ShardBoundary, self_fence};
use rsc_protocol::wire::HeartbeatResponse;
use std::collections::BTreeMap;

/// The fences the answers set (shard → switch point) and the routing versions they reflect.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadFences {
    answered: BTreeMap<u32, String>,
    /// `routingVersion` of the last accepted answer.
    routing_version: Option<i64>,
    /// Per shard, `routingVersion` of the last accepted answer that assigned it. A shard being given up keeps
    /// the version it was last assigned at: an answer that reflects a switch but no longer assigns the shard
    /// says nothing about its fence, so a read loop still finishing its work on it keeps fencing itself.
    assigned_at: BTreeMap<u32, i64>,
}

impl ReadFences {
    /// Applies an accepted answer. Returns whether anything changed.
    pub fn apply_answer(&mut self, resp: &HeartbeatResponse) -> bool {
        let mut changed = self.routing_version != resp.routing_version;
        self.routing_version = resp.routing_version;
        let assigned = &resp.assignment.assigned_shards;
        for s in assigned {
            let shard = s.shard_index;
            changed |= match resp.routing_version {
                // Never backwards: an answer reflects the group as committed when it was decided, and a later
                // call's answer is never decided on an older state; the maximum keeps that true even if one
                // were.
                Some(v) => {
                    let at = self.assigned_at.entry(shard).or_insert(i64::MIN);
                    let moved = *at < v;
                    *at = (*at).max(v);
                    moved
                }
                None => self.assigned_at.remove(&shard).is_some(),
            };
        }
        if resp.read_fences.is_empty() && self.answered.is_empty() {
            return changed;
        }
        for s in assigned {
            let shard = s.shard_index;
            changed |= match resp.read_fences.get(&shard.to_string()) {
                Some(id) => self.answered.insert(shard, id.clone()).as_ref() != Some(id),
                None => self.answered.remove(&shard).is_some(),
            };
        }
        changed
    }

    /// Forgets everything (the member dropped all ownership and rejoins).
    pub fn clear(&mut self) {
        *self = ReadFences::default();
    }

    /// The fence an answer set on `shard`, if any.
    pub fn answered(&self, shard: u32) -> Option<&str> {
        self.answered.get(&shard).map(String::as_str)
    }

    /// `routingVersion` of the last accepted answer (None when it carried none).
    pub fn routing_version(&self) -> Option<i64> {
        self.routing_version
    }

    /// The fence to honour on `shard` now, given its routing boundary as last read (None when unknown or
    /// never raised): the answered fence, or the one the boundary implies for a switch newer than the last
    /// answer that assigned the shard, whichever is earlier.
    pub fn fence_for(&self, shard: u32, boundary: Option<&ShardBoundary>) -> Option<String> {
        let assigned_at = self.assigned_at.get(&shard).copied();
        let own = boundary.and_then(|b| self_fence(shard, b, assigned_at));
        match (self.answered(shard), own) {
            (Some(a), Some(o)) => Some(if beyond(a, o) { o } else { a }.to_owned()),
            (a, o) => a.or(o).map(str::to_owned),
        }
    }
}

fn parse_id(id: &str) -> Option<(u64, u64)> {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

/// Whether the entry `id` lies after the fence `fence` (an id that cannot be read is after every fence,
/// and every entry is after a fence that cannot be read: unreadable ids hold entries back, never release).
pub fn beyond(id: &str, fence: &str) -> bool {
    match (parse_id(id), parse_id(fence)) {
        (Some(i), Some(f)) => i > f,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsc_protocol::wire::{AssignmentView, HeartbeatStatus, ShardId};

    fn answer(assigned: &[u32], fences: &[(u32, &str)], version: Option<i64>) -> HeartbeatResponse {
        HeartbeatResponse {
            response_to: "r".into(),
            status: HeartbeatStatus::Ok,
            member_id: "m".into(),
            member_epoch: 1,
            heartbeat_interval_ms: 1000,
            rebalance_timeout_ms: 1000,
            group_epoch: 1,
            assignment_epoch: 1,
            metadata_version: 1,
            assignment: AssignmentView {
                assigned_shards: assigned.iter().map(|s| ShardId::new(*s)).collect(),
                pending_shards: Vec::new(),
                metadata_version: 1,
            },
            message: None,
            read_fences: fences
                .iter()
                .map(|(s, id)| (s.to_string(), (*id).to_owned()))
                .collect(),
            routing_version: version,
        }
    }

    #[test]
    fn answers_set_keep_and_lift_fences() {
        let mut f = ReadFences::default();
        assert!(f.apply_answer(&answer(&[0, 1], &[(0, "5-0")], Some(2))));
        assert_eq!(f.answered(0), Some("5-0"));
        assert_eq!(f.routing_version(), Some(2));
        assert!(!f.apply_answer(&answer(&[0, 1], &[(0, "5-0")], Some(2))));
        // Shard 0 is being given up (not assigned in this answer): its fence stays.
        assert!(!f.apply_answer(&answer(&[1], &[], Some(2))));
        assert_eq!(f.answered(0), Some("5-0"));
        // Assigned without a fence: lifted.
        assert!(f.apply_answer(&answer(&[0], &[], Some(2))));
        assert_eq!(f.answered(0), None);
        assert!(
            f.apply_answer(&answer(&[0], &[], Some(3))),
            "a new routing version is a change"
        );
    }

    #[test]
    fn a_boundary_newer_than_the_answers_fences_the_shard_until_they_catch_up() {
        let mut f = ReadFences::default();
        f.apply_answer(&answer(&[1], &[], Some(4)));
        let b = ShardBoundary::from_fields(Some("5"), Some("100-3"), Some("5 8 3 1"));
        assert_eq!(f.fence_for(1, b.as_ref()).as_deref(), Some("100-3"));
        assert_eq!(f.fence_for(1, None), None);
        // The answer that reflects the switch carries the same fence; then lifts it when the gate opens.
        f.apply_answer(&answer(&[1], &[(1, "100-3")], Some(5)));
        assert_eq!(f.fence_for(1, b.as_ref()).as_deref(), Some("100-3"));
        f.apply_answer(&answer(&[1], &[], Some(5)));
        assert_eq!(f.fence_for(1, b.as_ref()), None);
    }

    #[test]
    fn a_shard_given_up_keeps_fencing_itself_for_a_switch_its_answers_did_not_assign_it_under() {
        let mut f = ReadFences::default();
        f.apply_answer(&answer(&[1, 2], &[], Some(4)));
        let b = ShardBoundary::from_fields(Some("5"), Some("100-3"), Some("5 8 3 1"));
        // The answer that reflects the switch moves shard 1 elsewhere: its loop, still finishing, keeps the
        // fence; shard 2, assigned by that answer without one, has none.
        f.apply_answer(&answer(&[2], &[], Some(5)));
        assert_eq!(f.fence_for(1, b.as_ref()).as_deref(), Some("100-3"));
        assert_eq!(f.fence_for(2, b.as_ref()), None);
        // Given back later, by an answer that reflects the switch: the answers decide again.
        f.apply_answer(&answer(&[1, 2], &[], Some(5)));
        assert_eq!(f.fence_for(1, b.as_ref()), None);
        // Answers without a routing version (an older coordinator) fence nothing by themselves.
        f.apply_answer(&answer(&[1, 2], &[], None));
        let newer = ShardBoundary::from_fields(Some("6"), Some("200-0"), None);
        assert_eq!(f.fence_for(1, newer.as_ref()), None);
    }

    #[test]
    fn the_earlier_of_two_fences_holds() {
        let mut f = ReadFences::default();
        f.apply_answer(&answer(&[1], &[(1, "50-0")], Some(4)));
        let later = ShardBoundary::from_fields(Some("5"), Some("100-3"), None);
        assert_eq!(f.fence_for(1, later.as_ref()).as_deref(), Some("50-0"));
        let earlier = ShardBoundary::from_fields(Some("5"), Some("20-1"), None);
        assert_eq!(f.fence_for(1, earlier.as_ref()).as_deref(), Some("20-1"));
    }

    #[test]
    fn ids_compare_as_stream_ids() {
        assert!(!beyond("5-0", "5-0"));
        assert!(!beyond("4-9", "5-0"));
        assert!(beyond("5-1", "5-0"));
        assert!(beyond("10-0", "9-99"), "numeric, not lexical");
        assert!(!beyond("7", "7-0"));
        assert!(beyond("x", "5-0") && beyond("1-0", "bad"));
    }
}
