//! Building heartbeat responses: a member's view of the group, rejections, exhaustion, fenced and
//! restricted (SYNC_METADATA / REVOKE_PENDING) answers.

use super::{Decision, Outcome};
use crate::durability::Signals;
use crate::model::{Group, Member, MemberState, ShardSet};
use crate::timing::Timing;
use rsc_protocol::wire::{
    AssignmentView, HeartbeatRequest, HeartbeatResponse, HeartbeatStatus, ShardId,
};

/// The response for a member in the group as it stands.
pub fn member_response(
    g: &Group,
    member_id: &str,
    req: &HeartbeatRequest,
    timing: &Timing,
) -> HeartbeatResponse {
    let (member_epoch, assigned, pending, acknowledge) = match g.members.get(member_id) {
        Some(m) if m.state == MemberState::Active => {
            let target = g.target_of(member_id);
            let pending: ShardSet = target.difference(&m.assigned).copied().collect();
            (
                m.member_epoch,
                m.assigned.clone(),
                pending,
                awaits_acknowledgement(m, req),
            )
        }
        Some(m) => (m.member_epoch, ShardSet::new(), ShardSet::new(), false),
        None => (req.member_epoch, ShardSet::new(), ShardSet::new(), false),
    };
    let mut response = response(
        g,
        req,
        timing,
        HeartbeatStatus::Ok,
        member_epoch,
        &assigned,
        &pending,
    );
    if acknowledge {
        response.heartbeat_interval_ms = timing.acknowledge_interval_ms();
    }
    response
}

/// Whether `m`'s release of a shard waits only for a report at this answer's epoch: the shard was revoked at
/// an epoch later than the one `req` reports, and `req` neither owns nor drains it (typically a grant moved on
/// before the member heard of it). Such a member is asked back at once (`Timing::acknowledge_interval_ms`);
/// one that owns a revoked shard heartbeats as soon as it has drained it, as it always did.
fn awaits_acknowledgement(m: &Member, req: &HeartbeatRequest) -> bool {
    req.member_epoch >= 0
        && m.revoking.iter().any(|(s, &revoked_at)| {
            revoked_at > req.member_epoch
                && !req.owned_shards.iter().any(|o| o.shard_index == *s)
                && !req
                    .revoking_shards
                    .iter()
                    .any(|r| r.shard.shard_index == *s)
        })
}

pub(super) fn response(
    g: &Group,
    req: &HeartbeatRequest,
    timing: &Timing,
    status: HeartbeatStatus,
    member_epoch: i64,
    assigned: &ShardSet,
    pending: &ShardSet,
) -> HeartbeatResponse {
    HeartbeatResponse {
        response_to: req.request_id.clone(),
        status,
        member_id: req.member_id.clone(),
        member_epoch,
        heartbeat_interval_ms: timing.heartbeat_interval_ms,
        rebalance_timeout_ms: timing.rebalance_timeout_ms,
        group_epoch: g.group_epoch,
        assignment_epoch: g.assignment_epoch,
        metadata_version: g.metadata_version,
        assignment: AssignmentView {
            assigned_shards: assigned.iter().map(|&s| ShardId::new(s)).collect(),
            pending_shards: pending.iter().map(|&s| ShardId::new(s)).collect(),
            metadata_version: g.metadata_version,
        },
        message: None,
        read_fences: g
            .read_fences(assigned)
            .into_iter()
            .map(|(s, id)| (s.to_string(), id))
            .collect(),
        routing_version: (g.routing_version > 0).then_some(g.routing_version),
    }
}

/// The "rejected" shape: epochs echo the request, group values 0, empty assignment, nothing stored.
pub fn rejected_response(
    req: &HeartbeatRequest,
    timing: &Timing,
    status: HeartbeatStatus,
) -> HeartbeatResponse {
    HeartbeatResponse {
        response_to: req.request_id.clone(),
        status,
        member_id: req.member_id.clone(),
        member_epoch: req.member_epoch,
        heartbeat_interval_ms: timing.heartbeat_interval_ms,
        rebalance_timeout_ms: timing.rebalance_timeout_ms,
        group_epoch: 0,
        assignment_epoch: 0,
        metadata_version: 0,
        assignment: AssignmentView::default(),
        message: None,
        read_fences: Default::default(),
        routing_version: None,
    }
}

pub(super) fn rejected(
    req: &HeartbeatRequest,
    timing: &Timing,
    status: HeartbeatStatus,
    needs_fresh_state: bool,
) -> Decision {
    Decision {
        response: rejected_response(req, timing, status),
        outcome: Outcome::Rejected { needs_fresh_state },
        signals: Signals::default(),
    }
}

/// A transition that would overflow an epoch: nothing is stored and the member is told RETRY (it keeps its
/// state and its lease is not renewed, so it stops reading when the lease runs out). Fails closed.
pub(super) fn exhausted(req: &HeartbeatRequest, timing: &Timing) -> Decision {
    Decision {
        response: rejected_response(req, timing, HeartbeatStatus::Retry),
        outcome: Outcome::Rejected {
            needs_fresh_state: true,
        },
        signals: Signals {
            epochs_exhausted: true,
            ..Signals::default()
        },
    }
}

pub(super) fn fenced_reply(
    g: &Group,
    member: &Member,
    req: &HeartbeatRequest,
    timing: &Timing,
) -> Decision {
    let empty = ShardSet::new();
    Decision {
        response: response(
            g,
            req,
            timing,
            HeartbeatStatus::FencedMemberEpoch,
            member.member_epoch,
            &empty,
            &empty,
        ),
        outcome: Outcome::Rejected {
            needs_fresh_state: true,
        },
        signals: Signals::default(),
    }
}

/// SYNC_METADATA / REVOKE_PENDING payload: keep only shards already read that the member still holds.
pub(super) fn restricted_response(
    g: &Group,
    m: &Member,
    req: &HeartbeatRequest,
    timing: &Timing,
    status: HeartbeatStatus,
) -> HeartbeatResponse {
    let owned: ShardSet = req.owned_shards.iter().map(|s| s.shard_index).collect();
    let assigned: ShardSet = owned.intersection(&m.assigned).copied().collect();
    let target = g.target_of(&m.member_id);
    let pending: ShardSet = target.difference(&assigned).copied().collect();
    response(g, req, timing, status, m.member_epoch, &assigned, &pending)
}
