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
//!
//! Who may raise a suspicion at all (which principals, how often) is the coordinator's decision; this module
//! records the principal with the evidence.

use crate::model::{EpochOverflow, Group, incremented};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// What kind of evidence raised a suspicion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SignalKind {
    /// A member reported a higher metadataVersion than Redis holds.
    MemberMetadataVersion,
    /// A member reported a higher member/assignment epoch than Redis handed it.
    MemberEpoch,
    /// A producer reported (on a routing refresh) a higher metadataVersion than Redis holds.
    ProducerMetadataVersion,
    /// A coordinator replica read a lower store revision than it had already seen.
    StoreRevision,
    /// A shard was reported as being revoked again after its release was recorded.
    RebalanceBackward,
}

impl SignalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SignalKind::MemberMetadataVersion => "MEMBER_METADATA_VERSION",
            SignalKind::MemberEpoch => "MEMBER_EPOCH",
            SignalKind::ProducerMetadataVersion => "PRODUCER_METADATA_VERSION",
            SignalKind::StoreRevision => "STORE_REVISION",
            SignalKind::RebalanceBackward => "REBALANCE_BACKWARD",
        }
    }
}

/// One observation that the stored metadata is older than something already seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
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

/// How many pieces of evidence a suspicion keeps (the first, and the latest ones).
pub const MAX_EVIDENCE: usize = 20;

/// One recorded piece of evidence: what was observed, by whom, when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub kind: SignalKind,
    pub observed: i64,
    pub stored: i64,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    pub at_ms: i64,
}

/// The persisted suspicion of a group (aggregate field `rollbackSuspicion`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackSuspicion {
    pub kinds: BTreeSet<SignalKind>,
    pub detected_at_ms: i64,
    pub updated_at_ms: i64,
    /// The group's metadataVersion when the suspicion was first recorded.
    pub stored_metadata_version: i64,
    /// The highest metadataVersion any member or producer reported.
    pub highest_observed_metadata_version: i64,
    /// The highest member/assignment epoch any member reported.
    pub highest_observed_epoch: i64,
    /// The highest store revision a replica had seen before it read a lower one.
    pub highest_observed_revision: i64,
    /// The latest signal, for people.
    pub last_signal: String,
    /// Who raised it: the first piece of evidence and the latest ones (at most [`MAX_EVIDENCE`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
}

/// A suspicion an operator dismissed: who, when, why, and what it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Dismissal {
    /// The authenticated principal that dismissed it.
    pub principal: String,
    pub requested_by: String,
    pub reason: String,
    pub at_ms: i64,
    pub suspicion: RollbackSuspicion,
}

/// Why a dismissal was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DismissError {
    #[error("the group is not suspected of a metadata rollback; there is nothing to dismiss")]
    NotSuspected,
    /// The suspicion received evidence after the one the operator reviewed.
    #[error("the suspicion changed (updated at {current_updated_at_ms} ms) since the one reviewed")]
    Changed { current_updated_at_ms: i64 },
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

/// Records `signal` in the group's suspicion. None when the group already records this kind of evidence with
/// an observed value at least as high (so repeated reports cause no writes), or when an operator dismissed
/// evidence of this kind at least as high.
pub fn record(g: &Group, signal: &Signal, now_ms: i64) -> Option<Group> {
    if dismissed(g, signal) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn group() -> Group {
        Group::new("orders", "orders", 4, 1_000, "life-1")
    }

    fn signal(kind: SignalKind, observed: i64) -> Signal {
        Signal {
            kind,
            observed,
            stored: 3,
            source: "m1".into(),
            principal: Some("app".into()),
        }
    }

    #[test]
    fn a_signal_is_recorded_once_and_again_only_when_it_brings_something_new() {
        let g = group();
        let g1 = record(&g, &signal(SignalKind::MemberMetadataVersion, 7), 2_000).unwrap();
        let s = g1.rollback_suspicion.as_ref().unwrap();
        assert_eq!(s.highest_observed_metadata_version, 7);
        assert_eq!(s.stored_metadata_version, g.metadata_version);
        assert!(record(&g1, &signal(SignalKind::MemberMetadataVersion, 7), 3_000).is_none());
        assert!(record(&g1, &signal(SignalKind::MemberMetadataVersion, 6), 3_000).is_none());
        let g2 = record(&g1, &signal(SignalKind::MemberMetadataVersion, 9), 3_000).unwrap();
        assert_eq!(
            g2.rollback_suspicion
                .as_ref()
                .unwrap()
                .highest_observed_metadata_version,
            9
        );
        let g3 = record(&g2, &signal(SignalKind::StoreRevision, 2), 4_000).unwrap();
        let s = g3.rollback_suspicion.as_ref().unwrap();
        assert_eq!(s.kinds.len(), 2);
        assert_eq!(s.detected_at_ms, 2_000);
    }

    #[test]
    fn mutations_are_blocked_only_while_suspected() {
        let g = group();
        assert!(mutation_block(&g).is_none());
        let g = record(&g, &signal(SignalKind::ProducerMetadataVersion, 12), 2_000).unwrap();
        let why = mutation_block(&g).unwrap();
        assert!(why.contains("PRODUCER_METADATA_VERSION"), "{why}");
        assert!(why.contains("/recreate"), "{why}");
    }

    #[test]
    fn a_new_lifecycle_starts_above_everything_observed_and_carries_nothing_over() {
        let g = record(
            &group(),
            &signal(SignalKind::MemberMetadataVersion, 40),
            2_000,
        )
        .unwrap();
        let g = record(&g, &signal(SignalKind::MemberEpoch, 55), 2_000).unwrap();
        let n = new_lifecycle(Some(&g), 0, "orders", "orders", 8, 5_000, "life-2").unwrap();
        assert_eq!(n.metadata_version, 56);
        assert_eq!(n.group_epoch, 56);
        assert_eq!(n.assignment_epoch, 56);
        assert_eq!(n.shard_count, 8);
        assert!(n.members.is_empty() && n.rollback_suspicion.is_none());
        assert_eq!(n.lifecycle_id, "life-2");
        assert_eq!(lifecycle_start(None, 99), Ok(100));
        let top = record(
            &group(),
            &signal(SignalKind::ProducerMetadataVersion, i64::MAX),
            2_000,
        )
        .unwrap();
        assert_eq!(
            lifecycle_start(Some(&top), 0),
            Err(EpochOverflow {
                field: "metadataVersion",
                value: i64::MAX
            }),
            "an overflow is an error, never a wrap"
        );
    }

    #[test]
    fn evidence_names_who_raised_it_and_is_bounded() {
        let mut g = group();
        for v in 5..(5 + 3 * MAX_EVIDENCE as i64) {
            g = record(&g, &signal(SignalKind::ProducerMetadataVersion, v), v).unwrap();
        }
        let s = g.rollback_suspicion.as_ref().unwrap();
        assert_eq!(s.evidence.len(), MAX_EVIDENCE);
        assert_eq!(s.evidence[0].observed, 5, "the first piece is kept");
        assert_eq!(s.evidence[0].principal.as_deref(), Some("app"));
        assert_eq!(
            s.evidence.last().unwrap().observed,
            4 + 3 * MAX_EVIDENCE as i64
        );
    }

    #[test]
    fn a_dismissal_changes_no_version_is_recorded_and_covers_what_it_judged() {
        let g = record(
            &group(),
            &signal(SignalKind::ProducerMetadataVersion, 9),
            2_000,
        )
        .unwrap();
        let updated = g.rollback_suspicion.as_ref().unwrap().updated_at_ms;
        assert_eq!(
            dismiss(
                &g,
                Some(updated - 1),
                "ops",
                "alice",
                "a test producer",
                3_000
            ),
            Err(DismissError::Changed {
                current_updated_at_ms: updated
            })
        );
        let d = dismiss(&g, Some(updated), "ops", "alice", "a test producer", 3_000).unwrap();
        assert!(d.rollback_suspicion.is_none() && mutation_block(&d).is_none());
        assert_eq!(
            (d.group_epoch, d.metadata_version, d.assignment_epoch),
            (g.group_epoch, g.metadata_version, g.assignment_epoch),
            "no version is bumped"
        );
        let dismissal = d.rollback_dismissal.as_ref().unwrap();
        assert_eq!(
            (
                dismissal.principal.as_str(),
                dismissal.requested_by.as_str()
            ),
            ("ops", "alice")
        );
        assert_eq!(
            dismiss(&d, None, "ops", "alice", "again", 4_000),
            Err(DismissError::NotSuspected)
        );
        // The same (or lower) evidence does not raise it again; higher evidence, or another kind, does.
        assert!(record(&d, &signal(SignalKind::ProducerMetadataVersion, 9), 5_000).is_none());
        assert!(record(&d, &signal(SignalKind::MemberMetadataVersion, 8), 5_000).is_some());
        assert!(record(&d, &signal(SignalKind::ProducerMetadataVersion, 10), 5_000).is_some());
        let back = Group::from_json(&d.to_json()).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn the_suspicion_survives_a_json_round_trip_and_old_documents_read_without_it() {
        let g = record(&group(), &signal(SignalKind::StoreRevision, 12), 2_000).unwrap();
        let back = Group::from_json(&g.to_json()).unwrap();
        assert_eq!(back, g);
        let plain = group().to_json();
        assert!(!plain.contains("rollbackSuspicion"));
        assert!(
            Group::from_json(&plain)
                .unwrap()
                .rollback_suspicion
                .is_none()
        );
    }
}
