//! coord/v1 resharding responses: the Migration object (scale, rollback, force-complete, the migration
//! list) and the stream-level scale response.

use serde::Serialize;

/// The contract's Migration object, with the phase timestamps rsc also keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MigrationResponse {
    /// The migration's id (`reshard-<uuid>`).
    pub resharding_id: String,
    /// The shard count before the scale.
    pub from_shard_count: u32,
    /// The shard count the scale moves to.
    pub to_shard_count: u32,
    /// `PREPARING`, `ACTIVE`, `DRAINING`, `DEPRECATED` (complete), `ROLLED_BACK`, `FORCE_COMPLETED` or
    /// `ABORTED`.
    pub state: String,
    /// When the scale was requested (ISO-8601 UTC).
    pub created_at: String,
    /// When the migration last changed (ISO-8601 UTC).
    pub updated_at: String,
    /// Who requested the scale.
    pub requested_by: String,
    /// Why, as the request said.
    pub reason: String,
    /// When routing switched to the new shard count (ISO-8601 UTC); null before.
    pub activated_at: Option<String>,
    /// When members had converged and the drain began (ISO-8601 UTC); null before.
    pub draining_at: Option<String>,
    /// When it ended, however it ended (ISO-8601 UTC); null while it runs.
    pub completed_at: Option<String>,
    /// Why an operator ended it (rollback, force-complete, abort); null otherwise.
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
    /// The stream scaled.
    pub stream_prefix: String,
    /// The shard count requested.
    pub target_shard_count: u32,
    /// Every group of the stream, by name.
    pub affected_consumer_groups: Vec<String>,
    /// One migration per group, in the order of `affectedConsumerGroups`.
    pub migrations: Vec<MigrationResponse>,
}

/// `GET …/migrations`: every migration the group keeps, oldest first, and the active one's id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MigrationList {
    /// Every migration the group keeps (a bounded history), oldest first.
    pub migrations: Vec<MigrationResponse>,
    /// The id of the migration under way; null when none is.
    pub active_resharding_id: Option<String>,
}
