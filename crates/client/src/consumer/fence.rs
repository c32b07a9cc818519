//! Read fences (ordered streams): the shards this member may read only up to a switch point for now.
//!
//! A heartbeat answer carries `readFences` for the assigned shards that survived an ordered scale and
//! still wait for other parents. The member keeps them as the answers say: an answer that carries a fence
//! sets it, an answer that assigns the shard without one lifts it, and a shard being given up keeps its
//! fence while its local work lasts. A shard's read loop hands no entry after its fence to the handler:
//! the entry stays pending (in order) and is claimed again once the fence is lifted.

use rsc_protocol::wire::HeartbeatResponse;
use std::collections::BTreeMap;

/// Shard → switch point (a stream id).
pub(crate) type Fences = BTreeMap<u32, String>;

/// Applies an accepted answer's fences to `fences`. Returns whether anything changed.
pub(crate) fn apply_answer(fences: &mut Fences, resp: &HeartbeatResponse) -> bool {
    let mut changed = false;
    for s in &resp.assignment.assigned_shards {
        let shard = s.shard_index;
        changed |= match resp.read_fences.get(&shard.to_string()) {
            Some(id) => fences.insert(shard, id.clone()).as_ref() != Some(id),
            None => fences.remove(&shard).is_some(),
        };
    }
    changed
}

fn parse_id(id: &str) -> Option<(u64, u64)> {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

/// Whether the entry `id` lies after the fence `fence` (an id that cannot be read is after every fence,
/// and every entry is after a fence that cannot be read: unreadable ids hold entries back, never release).
pub(crate) fn beyond(id: &str, fence: &str) -> bool {
    match (parse_id(id), parse_id(fence)) {
        (Some(i), Some(f)) => i > f,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsc_protocol::wire::{AssignmentView, HeartbeatStatus, ShardId};

    fn answer(assigned: &[u32], fences: &[(u32, &str)]) -> HeartbeatResponse {
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
        }
    }

    #[test]
    fn answers_set_keep_and_lift_fences() {
        let mut f = Fences::new();
        assert!(apply_answer(&mut f, &answer(&[0, 1], &[(0, "5-0")])));
        assert_eq!(f, Fences::from([(0, "5-0".to_owned())]));
        assert!(!apply_answer(&mut f, &answer(&[0, 1], &[(0, "5-0")])));
        // Shard 0 is being given up (not assigned in this answer): its fence stays.
        assert!(!apply_answer(&mut f, &answer(&[1], &[])));
        assert_eq!(f.len(), 1);
        // Assigned without a fence: lifted.
        assert!(apply_answer(&mut f, &answer(&[0], &[])));
        assert!(f.is_empty());
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
