//! coord/v1 resharding responses: the Migration object (scale, rollback, force-complete, the migration
//! list) and the stream-level scale response.

use serde::Serialize;

/// The contract's Migration object, with the phase timestamps rsc also keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MigrationResponse {
    pub resharding_id: String,
    pub from_shard_count: u32,
    pub to_shard_count: u32,
    pub state: String,
    pub created_at: String,
    pub updated_at: String,
    pub requested_by: String,
    pub reason: String,
    pub activated_at: Option<String>,
    pub draining_at: Option<String>,
    pub completed_at: Option<String>,
    pub end_reason: Option<String>,
    /// rsc: the group this migration is of, in a stream-level scale response (absent elsewhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer_group: Option<String>,
}

/// `POST /coord/v1/streams/{p}/scale` (StreamScaleResponse): one migration per affected group, in the
/// order of `affectedConsumerGroups`, each naming its group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ScaleResponse {
    pub stream_prefix: String,
    pub target_shard_count: u32,
    pub affected_consumer_groups: Vec<String>,
    pub migrations: Vec<MigrationResponse>,
}

/// `GET …/migrations`: every migration the group keeps, oldest first, and the active one's id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MigrationList {
    pub migrations: Vec<MigrationResponse>,
    pub active_resharding_id: Option<String>,
}
