//! The stored record of a suspected metadata rollback (aggregate fields `rollbackSuspicion` and
//! `rollbackDismissal`): what kind of evidence raised it, each piece of evidence (who reported what, when),
//! and an operator's dismissal. The rules that raise, record and dismiss it are in `durability.rs`.

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
    /// The wire spelling, e.g. `MEMBER_EPOCH`.
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

/// How many pieces of evidence a suspicion keeps (the first, and the latest ones).
pub const MAX_EVIDENCE: usize = 20;

/// One recorded piece of evidence: what was observed, by whom, when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// What kind of observation it was.
    pub kind: SignalKind,
    /// The value observed elsewhere (version, epoch or revision).
    pub observed: i64,
    /// The value Redis held then.
    pub stored: i64,
    /// Who reported it: a member id, `producer`, or `coordinator <id>`.
    pub source: String,
    /// The authenticated principal that sent it (None: unauthenticated heartbeats, or the coordinator
    /// itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// When it was recorded.
    pub at_ms: i64,
}

/// The persisted suspicion of a group (aggregate field `rollbackSuspicion`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackSuspicion {
    /// Every kind of evidence recorded.
    pub kinds: BTreeSet<SignalKind>,
    /// When the first evidence was recorded.
    pub detected_at_ms: i64,
    /// When evidence was last added (a dismissal names it, so that newer evidence is not dismissed unseen).
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
    /// Who asked, as the request said.
    pub requested_by: String,
    /// Why the evidence does not support the suspicion, as the request said.
    pub reason: String,
    /// When it was dismissed.
    pub at_ms: i64,
    /// The suspicion dismissed (merged with what earlier dismissals covered).
    pub suspicion: RollbackSuspicion,
}
