//! The JSON views of a group's metadata durability (rsc's addition to the coord/v1 monitoring group):
//! the suspicion with its evidence, the last dismissal, an open correction round; and the answers of the
//! dismiss and recreate repairs.

use crate::runtime::clock::iso_ms;
use rsc_group::model::Group;
use rsc_group::model::{Evidence, RollbackSuspicion};
use rsc_protocol::wire::GroupResponse;
use serde::Serialize;
use std::collections::BTreeSet;

/// `metadataDurability` of a group: suspicion (with who raised it), the last dismissal and an open
/// correction round.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DurabilityView {
    /// `SUSPECTED_ROLLBACK` or `OK`.
    pub status: &'static str,
    pub lifecycle_id: String,
    pub store_revision: u64,
    pub rollback_suspicion: Option<SuspicionView>,
    pub last_dismissal: Option<DismissalView>,
    pub metadata_correction: Option<CorrectionView>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuspicionView {
    pub signals: Vec<&'static str>,
    pub detected_at: String,
    pub updated_at: String,
    pub stored_metadata_version: i64,
    pub highest_observed_metadata_version: i64,
    pub highest_observed_epoch: i64,
    pub highest_observed_revision: i64,
    pub last_signal: String,
    pub raised_by: Option<EvidenceView>,
    pub evidence: Vec<EvidenceView>,
    /// Always true: a suspected group refuses admin mutations.
    pub mutations_blocked: bool,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DismissalView {
    pub principal: String,
    pub requested_by: String,
    pub reason: String,
    pub at: String,
    pub signals: Vec<&'static str>,
    pub detected_at: String,
    pub highest_observed_metadata_version: i64,
    pub highest_observed_epoch: i64,
    pub highest_observed_revision: i64,
    pub evidence: Vec<EvidenceView>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CorrectionView {
    pub target_metadata_version: i64,
    pub observed_metadata_version: i64,
    pub requested_at: String,
    pub updated_at: String,
    pub acknowledged_members: BTreeSet<String>,
}

/// One piece of rollback evidence: what, by whom, when.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceView {
    pub signal: &'static str,
    pub observed: i64,
    pub stored: i64,
    pub source: String,
    pub principal: Option<String>,
    pub at: String,
}

/// `GET /coord/v1/monitoring/streams/{p}/groups/{g}`: GroupResponse plus `metadataDurability`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringGroupView {
    #[serde(flatten)]
    pub group: GroupResponse,
    pub metadata_durability: DurabilityView,
}

/// The answer to `POST …/durability/dismiss`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DismissResponse {
    pub stream_prefix: String,
    pub consumer_group: String,
    pub metadata_durability: DurabilityView,
}

/// The answer to `POST …/recreate`: the new lifecycle's GroupResponse with both lifecycle ids.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecreateResponse {
    #[serde(flatten)]
    pub group: GroupResponse,
    pub lifecycle_id: String,
    pub previous_lifecycle_id: Option<String>,
}

fn evidence_view(e: &Evidence) -> EvidenceView {
    EvidenceView {
        signal: e.kind.as_str(),
        observed: e.observed,
        stored: e.stored,
        source: e.source.clone(),
        principal: e.principal.clone(),
        at: iso_ms(e.at_ms),
    }
}

fn signals(s: &RollbackSuspicion) -> Vec<&'static str> {
    s.kinds.iter().map(|k| k.as_str()).collect()
}

/// The durability part of a group's monitoring.
pub fn durability_view(g: &Group) -> DurabilityView {
    let rollback_suspicion = g.rollback_suspicion.as_ref().map(|s| SuspicionView {
        signals: signals(s),
        detected_at: iso_ms(s.detected_at_ms),
        updated_at: iso_ms(s.updated_at_ms),
        stored_metadata_version: s.stored_metadata_version,
        highest_observed_metadata_version: s.highest_observed_metadata_version,
        highest_observed_epoch: s.highest_observed_epoch,
        highest_observed_revision: s.highest_observed_revision,
        last_signal: s.last_signal.clone(),
        raised_by: s.evidence.first().map(evidence_view),
        evidence: s.evidence.iter().map(evidence_view).collect(),
        mutations_blocked: true,
    });
    let last_dismissal = g.rollback_dismissal.as_ref().map(|d| DismissalView {
        principal: d.principal.clone(),
        requested_by: d.requested_by.clone(),
        reason: d.reason.clone(),
        at: iso_ms(d.at_ms),
        signals: signals(&d.suspicion),
        detected_at: iso_ms(d.suspicion.detected_at_ms),
        highest_observed_metadata_version: d.suspicion.highest_observed_metadata_version,
        highest_observed_epoch: d.suspicion.highest_observed_epoch,
        highest_observed_revision: d.suspicion.highest_observed_revision,
        evidence: d.suspicion.evidence.iter().map(evidence_view).collect(),
    });
    let metadata_correction = g.metadata_correction.as_ref().map(|c| CorrectionView {
        target_metadata_version: c.target_metadata_version,
        observed_metadata_version: c.observed_metadata_version,
        requested_at: iso_ms(c.requested_at_ms),
        updated_at: iso_ms(c.updated_at_ms),
        acknowledged_members: c.acknowledged_members.clone(),
    });
    DurabilityView {
        status: if g.rollback_suspicion.is_some() {
            "SUSPECTED_ROLLBACK"
        } else {
            "OK"
        },
        lifecycle_id: g.lifecycle_id.clone(),
        store_revision: g.store_revision,
        rollback_suspicion,
        last_dismissal,
        metadata_correction,
    }
}
