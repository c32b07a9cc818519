//! Metadata durability: the pure rules for suspecting that a group's Redis metadata moved backwards
//! (Redis restored from an older backup, a failover that lost writes), and for the only two repairs.
//!
//! Redis is the source of truth, so a rollback is only visible through what others remember: a member
//! reporting a newer metadataVersion or epoch than Redis holds, a producer that saw a newer routing
//! metadataVersion, a coordinator replica that already read a higher store revision, or rebalance state
//! moving backwards. Each such signal is recorded *in the aggregate* ([`RollbackSuspicion`]), written by
//! compare-and-set, so every replica agrees that the group is suspected and keeps saying so after a restart.
//!
//! While a group is suspected, admin mutations fail closed ([`mutation_block`]). Nothing here ever repairs
//! by bumping a version on the suspected state. The suspicion disappears only when the operator
//! - restores the metadata key from a backup that is at least as new as everything observed (the restored
//!   document carries no suspicion; an older backup is simply detected again), or
//! - recreates the group as a new lifecycle ([`new_lifecycle`]): no members, the shard count the operator
//!   states, a new lifecycle id, and epochs that start above every version any client reported, so no
//!   client is asked to go backwards and old members are told to rejoin, or
//! - dismisses it ([`dismiss`]) because the recorded evidence ([`Evidence`]: who reported what, when) does
//!   not support it. A dismissal changes no epoch or version; it is kept in the aggregate ([`Dismissal`]),
//!   and evidence it covered (an observation no higher than the dismissed ones) raises no new suspicion.
//!   For [`DISMISSAL_QUIET_MS`] after it, the principals whose evidence it dismissed raise none at all on the
//!   group (issue #32: one bogus reporter re-froze a group minutes after each dismissal by reporting one
//!   more); other principals' evidence still does, so a real rollback seen by anyone else is still caught.
//!
//! Who may raise a suspicion at all (which principals, how often) is the coordinator's decision; this module
//! records the principal with the evidence.

use crate::model::{
    Dismissal, EpochOverflow, Evidence, Group, MAX_EVIDENCE, RollbackSuspicion, SignalKind,
    incremented,
};
use rsc_protocol::wire::HeartbeatRequest;
use std::collections::BTreeSet;

/// Things a heartbeat decision saw that are worth counting and do not change its answer; the first two are
/// the heartbeat's evidence of a rollback ([`member_signal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Signals {
    /// A member reported a newer metadataVersion or epoch than the group holds.
    pub metadata_regression: bool,
    /// A member reported a shard as being revoked after its release was recorded.
    pub rebalance_regression: bool,
    /// The member was fenced by this request.
    pub fenced: bool,
    /// The transition this request calls for would overflow an epoch (answered RETRY, nothing stored).
    pub epochs_exhausted: bool,
}

/// One observation that the stored metadata is older than something already seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    /// What kind of observation it is.
    pub kind: SignalKind,
    /// The value that was observed elsewhere (version, epoch or revision).
    pub observed: i64,
    /// The value Redis holds now.
    pub stored: i64,
    /// Who reported it: a member id, `producer`, or `coordinator <id>`.
    pub source: String,
    /// The authenticated principal that sent it (None: unauthenticated heartbeats, or the coordinator itself).
    pub principal: Option<String>,
}

/// Why a dismissal was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DismissError {
    /// The group is not suspected.
    #[error("the group is not suspected of a metadata rollback; there is nothing to dismiss")]
    NotSuspected,
    /// The suspicion received evidence after the one the operator reviewed.
    #[error("the suspicion changed (updated at {current_updated_at_ms} ms) since the one reviewed")]
    Changed {
        /// When the suspicion now recorded was last updated.
        current_updated_at_ms: i64,
    },
}

/// How long after a dismissal the principals whose evidence it dismissed raise no new suspicion on the group.
pub const DISMISSAL_QUIET_MS: i64 = 60 * 60 * 1000;

/// Whether `signal` comes, within [`DISMISSAL_QUIET_MS`] of the last dismissal, from a principal whose
/// evidence that dismissal judged unsupported.
pub fn quieted(g: &Group, signal: &Signal, now_ms: i64) -> bool {
    let (Some(d), Some(p)) = (&g.rollback_dismissal, &signal.principal) else {
        return false;
    };
    now_ms < d.at_ms.saturating_add(DISMISSAL_QUIET_MS)
        && d.suspicion
            .evidence
            .iter()
            .any(|e| e.principal.as_deref() == Some(p.as_str()))
}

/// Whether an earlier dismissal already covers `signal`: the operator judged evidence at least this high.
fn dismissed(g: &Group, signal: &Signal) -> bool {
    let Some(d) = &g.rollback_dismissal else {
        return false;
    };
    let s = &d.suspicion;
    let covered = match signal.kind {
        SignalKind::MemberMetadataVersion | SignalKind::ProducerMetadataVersion => {
            s.highest_observed_metadata_version
        }
        SignalKind::MemberEpoch | SignalKind::RebalanceBackward => s.highest_observed_epoch,
        SignalKind::StoreRevision => s.highest_observed_revision,
    };
    s.kinds.contains(&signal.kind) && signal.observed <= covered
}

/// Which heartbeat evidence points at a rollback (None when the decision raised no signal).
pub fn member_signal(
    g: &Group,
    member_id: &str,
    req: &HeartbeatRequest,
    signals: &Signals,
) -> Option<Signal> {
    // A shard reported revoking after its release was recorded is counted (`rebalance_regression`), never
    // recorded as a suspicion: a delayed, duplicated or re-sent copy of the member's earlier DRAINING report
    // produces exactly that, and nothing in the request tells it from a rollback (found by the simulation).
    if !signals.metadata_regression {
        return None;
    }
    let stored_epoch = g.members.get(member_id).map_or(0, |m| m.member_epoch);
    let (kind, observed, stored) = if req.metadata_version > g.metadata_version {
        (
            SignalKind::MemberMetadataVersion,
            req.metadata_version,
            g.metadata_version,
        )
    } else {
        (SignalKind::MemberEpoch, req.member_epoch, stored_epoch)
    };
    Some(Signal {
        kind,
        observed,
        stored,
        source: member_id.to_owned(),
        principal: None,
    })
}

/// Records `signal` in the group's suspicion. None when the group already records this kind of evidence with
/// an observed value at least as high (so repeated reports cause no writes), when an operator dismissed
/// evidence of this kind at least as high, or when the signal's principal had its evidence dismissed within
/// [`DISMISSAL_QUIET_MS`].
pub fn record(g: &Group, signal: &Signal, now_ms: i64) -> Option<Group> {
    if dismissed(g, signal) || quieted(g, signal, now_ms) {
        return None;
    }
    let mut next = g.clone();
    let s = next
        .rollback_suspicion
        .get_or_insert_with(|| RollbackSuspicion {
            kinds: BTreeSet::new(),
            detected_at_ms: now_ms,
            updated_at_ms: now_ms,
            stored_metadata_version: g.metadata_version,
            highest_observed_metadata_version: 0,
            highest_observed_epoch: 0,
            highest_observed_revision: 0,
            last_signal: String::new(),
            evidence: Vec::new(),
        });
    let new_kind = s.kinds.insert(signal.kind);
    let slot = match signal.kind {
        SignalKind::MemberMetadataVersion | SignalKind::ProducerMetadataVersion => {
            &mut s.highest_observed_metadata_version
        }
        SignalKind::MemberEpoch => &mut s.highest_observed_epoch,
        SignalKind::StoreRevision => &mut s.highest_observed_revision,
        SignalKind::RebalanceBackward => &mut s.highest_observed_epoch,
    };
    let higher = signal.observed > *slot;
    *slot = (*slot).max(signal.observed);
    if !new_kind && !higher {
        return None;
    }
    s.updated_at_ms = now_ms;
    s.last_signal = describe(signal);
    if s.evidence.len() >= MAX_EVIDENCE {
        // Keep the first (who raised it) and the latest.
        s.evidence.remove(1);
    }
    s.evidence.push(Evidence {
        kind: signal.kind,
        observed: signal.observed,
        stored: signal.stored,
        source: signal.source.clone(),
        principal: signal.principal.clone(),
        at_ms: now_ms,
    });
    next.updated_at_ms = now_ms;
    Some(next)
}

/// Dismisses the group's suspicion: the aggregate without it, the dismissal recorded, no epoch or version
/// changed. `expected_updated_at_ms`: the suspicion the operator reviewed (None = whatever is recorded); a
/// suspicion that received evidence since is not dismissed.
pub fn dismiss(
    g: &Group,
    expected_updated_at_ms: Option<i64>,
    principal: &str,
    requested_by: &str,
    reason: &str,
    now_ms: i64,
) -> Result<Group, DismissError> {
    let s = g
        .rollback_suspicion
        .as_ref()
        .ok_or(DismissError::NotSuspected)?;
    if let Some(expected) = expected_updated_at_ms
        && expected != s.updated_at_ms
    {
        return Err(DismissError::Changed {
            current_updated_at_ms: s.updated_at_ms,
        });
    }
    let mut next = g.clone();
    let mut suspicion = next
        .rollback_suspicion
        .take()
        .ok_or(DismissError::NotSuspected)?;
    // What earlier dismissals covered stays covered.
    if let Some(previous) = &g.rollback_dismissal {
        let p = &previous.suspicion;
        suspicion.kinds.extend(p.kinds.iter().copied());
        suspicion.highest_observed_metadata_version = suspicion
            .highest_observed_metadata_version
            .max(p.highest_observed_metadata_version);
        suspicion.highest_observed_epoch = suspicion
            .highest_observed_epoch
            .max(p.highest_observed_epoch);
        suspicion.highest_observed_revision = suspicion
            .highest_observed_revision
            .max(p.highest_observed_revision);
    }
    next.rollback_dismissal = Some(Dismissal {
        principal: principal.to_owned(),
        requested_by: requested_by.to_owned(),
        reason: reason.to_owned(),
        at_ms: now_ms,
        suspicion,
    });
    next.updated_at_ms = now_ms;
    Ok(next)
}

/// A one-line description of a signal.
pub fn describe(signal: &Signal) -> String {
    match signal.kind {
        SignalKind::MemberMetadataVersion => format!(
            "member {} reported metadataVersion {} but Redis holds {}",
            signal.source, signal.observed, signal.stored
        ),
        SignalKind::MemberEpoch => format!(
            "member {} reported epoch {} but Redis handed it {}",
            signal.source, signal.observed, signal.stored
        ),
        SignalKind::ProducerMetadataVersion => format!(
            "a producer reported metadataVersion {} but Redis holds {}",
            signal.observed, signal.stored
        ),
        SignalKind::StoreRevision => format!(
            "{} had seen store revision {} but Redis holds {}",
            signal.source, signal.observed, signal.stored
        ),
        SignalKind::RebalanceBackward => format!(
            "member {} reported a shard as revoking after its release was recorded (epoch {})",
            signal.source, signal.observed
        ),
    }
}

/// Why an admin mutation on `g` must be refused, if it must.
pub fn mutation_block(g: &Group) -> Option<String> {
    let s = g.rollback_suspicion.as_ref()?;
    let kinds: Vec<&str> = s.kinds.iter().map(|k| k.as_str()).collect();
    Some(format!(
        "group {}/{} is suspected of a metadata rollback ({}; {}); admin mutations are refused until an \
         operator restores the metadata key from a backup at least as new as what clients observed \
         (metadataVersion {}), recreates the group as a new lifecycle with \
         POST /coord/v1/streams/{p}/groups/{g}/recreate, or, if the evidence (shown in the group's \
         metadataDurability) does not support it, dismisses it with \
         POST /coord/v1/streams/{p}/groups/{g}/durability/dismiss",
        g.stream_prefix,
        g.consumer_group,
        kinds.join(", "),
        s.last_signal,
        s.highest_observed_metadata_version
            .max(s.stored_metadata_version),
        p = g.stream_prefix,
        g = g.consumer_group
    ))
}

/// The first version of a recreated group: above every version and epoch the old lifecycle stored or any
/// client reported, and above `floor` (what the operator knows clients saw when the old document is gone).
/// An error when that is not representable.
pub fn lifecycle_start(old: Option<&Group>, floor: i64) -> Result<i64, EpochOverflow> {
    let mut top = floor.max(0);
    if let Some(g) = old {
        top = top
            .max(g.group_epoch)
            .max(g.metadata_version)
            .max(g.assignment_epoch);
        for m in g.members.values() {
            top = top.max(m.member_epoch);
        }
        if let Some(s) = &g.rollback_suspicion {
            top = top
                .max(s.highest_observed_metadata_version)
                .max(s.highest_observed_epoch);
        }
    }
    incremented("metadataVersion", top)
}

/// A recreated group: a new lifecycle with no members, the stated shard count, and epochs starting at
/// [`lifecycle_start`]. Nothing of the old state is carried over: it cannot be trusted.
pub fn new_lifecycle(
    old: Option<&Group>,
    floor: i64,
    stream_prefix: &str,
    consumer_group: &str,
    shard_count: u32,
    now_ms: i64,
    lifecycle_id: &str,
) -> Result<Group, EpochOverflow> {
    let start = lifecycle_start(old, floor)?;
    let mut g = Group::new(
        stream_prefix,
        consumer_group,
        shard_count,
        now_ms,
        lifecycle_id,
    );
    g.group_epoch = start;
    g.metadata_version = start;
    g.assignment_epoch = start;
    Ok(g)
}

/// The time before which a producer of the group's stream must have been first seen for its observation to
/// count as rollback evidence (issue #32, finding 12: a MEMBER principal became a "producer" of any stream
/// with one routing read and froze the group with the next): when the group's routing last changed as far as
/// the stored state shows — the start of its latest scale on record, or its creation if it never scaled — and
/// never later than the observation itself (`observed_at_ms`).
///
/// A producer that arrived after that has seen no routing the stored state could have lost. The rule may
/// miss a real producer that started between the last recorded scale and a lost one; the group's members
/// (consumers) report the same rollback through their heartbeats, and a principal with a live member in the
/// group has a stake whenever it arrived.
pub fn producer_stake_cutoff_ms(g: &Group, observed_at_ms: i64) -> i64 {
    g.migrations
        .iter()
        .map(|m| m.created_at_ms)
        .max()
        .unwrap_or(g.created_at_ms)
        .min(observed_at_ms)
}

/// Whether one producer sighting gives its principal a stake ([`producer_stake_cutoff_ms`]): first seen
/// strictly before the cutoff. A sighting stored without a first-seen time (written by a version that did not
/// keep one) counts from its last-seen time, the earliest moment it is known to have been there: it has a
/// stake only if even that is before the cutoff.
pub fn producer_sighting_has_stake(
    first_seen_ms: Option<i64>,
    last_seen_ms: i64,
    cutoff_ms: i64,
) -> bool {
    first_seen_ms.unwrap_or(last_seen_ms) < cutoff_ms
}

#[cfg(test)]
mod tests;
