//! The metadata-correction round (a member synchronising down to a lower store revision), writing one
//! member's record, and re-stating a batch's answers on the aggregate committed.

use super::draft::{Draft, Rebalance};
use super::respond::{member_response, restricted_response};
use super::{Decision, Outcome, Transition, probe_write};
use crate::durability::Signals;
use crate::model::{Group, Member, MemberState, MetadataCorrection};
use crate::timing::Timing;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatResponse, HeartbeatStatus};

/// Opens (or extends) a metadata-correction round and asks the member to synchronise down.
pub(super) fn sync_metadata(
    g: &mut Draft<'_>,
    member: &Member,
    req: &HeartbeatRequest,
    now_ms: i64,
    timing: &Timing,
    signals: Signals,
) -> Decision {
    let observed = req.metadata_version.max(g.metadata_version);
    let response = restricted_response(g, member, req, timing, HeartbeatStatus::SyncMetadata);
    // An open round that already covers what this member saw changes nothing.
    let covered = g
        .metadata_correction
        .as_ref()
        .is_some_and(|c| c.observed_metadata_version >= observed);
    if covered {
        return Decision {
            response,
            outcome: Outcome::Steady,
            signals,
        };
    }
    let Some(next) = g.write() else {
        return probe_write(req, timing, signals);
    };
    let target = next.metadata_version;
    let correction = next
        .metadata_correction
        .get_or_insert_with(|| MetadataCorrection {
            target_metadata_version: target,
            observed_metadata_version: observed,
            requested_at_ms: now_ms,
            updated_at_ms: now_ms,
            acknowledged_members: Default::default(),
        });
    correction.observed_metadata_version = correction.observed_metadata_version.max(observed);
    correction.updated_at_ms = now_ms;
    next.updated_at_ms = now_ms;
    let t = Transition::renewing(&member.member_id);
    Decision {
        response,
        outcome: Outcome::Write(Box::new(t)),
        signals,
    }
}

/// While a correction round is open, members keep only shards they already read; the round closes when
/// every active member has reported the current version and nothing is being revoked.
pub(super) fn correction_round(
    g: &mut Draft<'_>,
    m: &Member,
    correction: &MetadataCorrection,
    req: &HeartbeatRequest,
    now_ms: i64,
    timing: &Timing,
    signals: Signals,
) -> Decision {
    let unchanged = g.members.get(&m.member_id) == Some(m);
    if req.metadata_version != g.metadata_version {
        let response = restricted_response(g, m, req, timing, HeartbeatStatus::SyncMetadata);
        let outcome = if unchanged {
            Outcome::Steady
        } else {
            write_member(g, m, now_ms)
        };
        return Decision {
            response,
            outcome,
            signals,
        };
    }
    let mut corr = correction.clone();
    corr.acknowledged_members.insert(m.member_id.clone());
    // The group as it would be with this member's record: judged without changing `g` yet.
    let with_m = |x: &'_ Member| -> bool { x.member_id == m.member_id };
    let members = || {
        g.members
            .values()
            .map(move |x| if with_m(x) { m } else { x })
    };
    let all_acknowledged = members()
        .filter(|x| x.state == MemberState::Active)
        .all(|x| corr.acknowledged_members.contains(&x.member_id));
    let nothing_revoking = members()
        .filter(|x| x.state.is_live())
        .all(|x| x.revoking.is_empty());
    if all_acknowledged && nothing_revoking {
        let Some(next) = g.write() else {
            return probe_write(req, timing, signals);
        };
        next.members.insert(m.member_id.clone(), m.clone());
        next.metadata_correction = None;
        g.rebalance(Rebalance::Grants, now_ms, timing);
        let next = g.written();
        next.updated_at_ms = now_ms;
        let response = member_response(next, &m.member_id, req, timing);
        let t = Transition::renewing(&m.member_id);
        return Decision {
            response,
            outcome: Outcome::Write(Box::new(t)),
            signals,
        };
    }
    let response = restricted_response(g, m, req, timing, HeartbeatStatus::RevokePending);
    if corr == *correction && unchanged {
        return Decision {
            response,
            outcome: Outcome::Steady,
            signals,
        };
    }
    corr.updated_at_ms = now_ms;
    let Some(next) = g.write() else {
        return probe_write(req, timing, signals);
    };
    next.members.insert(m.member_id.clone(), m.clone());
    next.metadata_correction = Some(corr);
    next.updated_at_ms = now_ms;
    let t = Transition::renewing(&m.member_id);
    Decision {
        response,
        outcome: Outcome::Write(Box::new(t)),
        signals,
    }
}

fn write_member(g: &mut Draft<'_>, m: &Member, now_ms: i64) -> Outcome {
    let Some(next) = g.write() else {
        return Outcome::Write(Box::default());
    };
    next.members.insert(m.member_id.clone(), m.clone());
    next.updated_at_ms = now_ms;
    let t = Transition::renewing(&m.member_id);
    Outcome::Write(Box::new(t))
}

/// Re-states an answer decided on an aggregate that later writes of the same commit changed (a batch's), in
/// terms of the aggregate committed: an OK to a member active there gets its committed assignment and epochs,
/// a restricted answer is restricted again on the committed record. Other answers (a leave, a fence, a
/// rejection) do not describe an assignment and are kept.
pub fn restate_on_committed(
    committed: &Group,
    req: &HeartbeatRequest,
    timing: &Timing,
    answer: &mut HeartbeatResponse,
) {
    let Some(m) = committed
        .members
        .get(&req.member_id)
        .filter(|m| m.state == MemberState::Active)
    else {
        return;
    };
    match answer.status {
        HeartbeatStatus::Ok => *answer = member_response(committed, &req.member_id, req, timing),
        HeartbeatStatus::SyncMetadata | HeartbeatStatus::RevokePending => {
            *answer = restricted_response(committed, m, req, timing, answer.status);
        }
        _ => {}
    }
}
