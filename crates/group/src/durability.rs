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
//!   client is asked to go backwards and old members are told to rejoin.

use crate::model::Group;
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
}

/// Records `signal` in the group's suspicion. None when the group already records this kind of evidence with
/// an observed value at least as high (so repeated reports cause no writes).
pub fn record(g: &Group, signal: &Signal, now_ms: i64) -> Option<Group> {
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
    next.updated_at_ms = now_ms;
    Some(next)
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
         (metadataVersion {}), or recreates the group as a new lifecycle with \
         POST /coord/v1/streams/{}/groups/{}/recreate",
        g.stream_prefix,
        g.consumer_group,
        kinds.join(", "),
        s.last_signal,
        s.highest_observed_metadata_version
            .max(s.stored_metadata_version),
        g.stream_prefix,
        g.consumer_group
    ))
}

/// The first version of a recreated group: above every version and epoch the old lifecycle stored or any
/// client reported, and above `floor` (what the operator knows clients saw when the old document is gone).
pub fn lifecycle_start(old: Option<&Group>, floor: i64) -> i64 {
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
    top + 1
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
) -> Group {
    let start = lifecycle_start(old, floor);
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
    g
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
        let n = new_lifecycle(Some(&g), 0, "orders", "orders", 8, 5_000, "life-2");
        assert_eq!(n.metadata_version, 56);
        assert_eq!(n.group_epoch, 56);
        assert_eq!(n.assignment_epoch, 56);
        assert_eq!(n.shard_count, 8);
        assert!(n.members.is_empty() && n.rollback_suspicion.is_none());
        assert_eq!(n.lifecycle_id, "life-2");
        assert_eq!(lifecycle_start(None, 99), 100);
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
