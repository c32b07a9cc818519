//! The component schemas the document takes from the typed answers (`utoipa::ToSchema`): the coord/v1 wire
//! types of `rsc-protocol` (derived behind its `openapi` feature), the coordinator's own views, the Grafana
//! rows and the probes' status. An operation answers `$ref` to the component its `wire_type` names
//! (`items` of an array for the Grafana routes); `tests/openapi_schemas.rs` fails for a JSON answer left
//! without one.

use crate::http::api::auth::{AuditRecords, Revoked, RevokedAll};
use crate::http::api::handlers::{Index, ProbeStatus};
use crate::observability::grafana::{
    GrafanaAssignmentRow, GrafanaGroupRow, GrafanaMemberRow, GrafanaMessageRow, GrafanaOption,
    GrafanaShardRow,
};
use crate::services::durability::views::{DismissResponse, MonitoringGroupView};
use rsc_protocol::wire::monitoring::{
    AssignmentsResponse, CompatibilityResponse, ConsumptionResponse, GroupList, HealthResponse,
    MemberList, StreamShardOffsetsResponse,
};
use rsc_protocol::wire::resharding::{MigrationList, MigrationResponse, ScaleResponse};
use rsc_protocol::wire::{
    CreateStreamResponse, GroupResponse, HeartbeatResponse, OrderingResponse,
    ProducerRoutingResponse,
};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// (name, schema) of `T` and of the schemas it refers to.
fn add<T: ToSchema>(out: &mut Map<String, Value>) {
    let name = T::name().into_owned();
    add_as::<T>(out, &name);
}

/// [`add`], under the name the operation table uses for it (the contract's name where the Rust type's
/// differs, e.g. `StreamCreateResponse` for `CreateStreamResponse`).
fn add_as<T: ToSchema>(out: &mut Map<String, Value>, name: &str) {
    let mut nested = Vec::new();
    T::schemas(&mut nested);
    for (nested_name, schema) in nested {
        out.insert(
            nested_name,
            serde_json::to_value(schema).unwrap_or(Value::Null),
        );
    }
    out.insert(
        name.to_owned(),
        serde_json::to_value(T::schema()).unwrap_or(Value::Null),
    );
}

/// The typed component schemas, by name.
pub fn typed() -> Map<String, Value> {
    let mut out = Map::new();
    add::<GrafanaOption>(&mut out);
    add::<GrafanaGroupRow>(&mut out);
    add::<GrafanaMemberRow>(&mut out);
    add::<GrafanaShardRow>(&mut out);
    add::<GrafanaAssignmentRow>(&mut out);
    add::<GrafanaMessageRow>(&mut out);
    add::<ProbeStatus>(&mut out);
    add::<Index>(&mut out);
    add::<HeartbeatResponse>(&mut out);
    add::<GroupResponse>(&mut out);
    add::<GroupList>(&mut out);
    add::<MemberList>(&mut out);
    add::<AssignmentsResponse>(&mut out);
    add::<CompatibilityResponse>(&mut out);
    add::<ConsumptionResponse>(&mut out);
    add::<HealthResponse>(&mut out);
    add::<StreamShardOffsetsResponse>(&mut out);
    add::<rsc_protocol::wire::browse::StreamMessagesPageResponse>(&mut out);
    add::<rsc_protocol::wire::browse::MessageSearchSummary>(&mut out);
    add::<rsc_protocol::wire::browse::MergedMessagesPageResponse>(&mut out);
    add::<rsc_protocol::wire::pending::PendingEntriesResponse>(&mut out);
    add::<rsc_protocol::wire::auth::LoginResponse>(&mut out);
    add::<rsc_protocol::wire::auth::SessionResponse>(&mut out);
    add::<rsc_protocol::wire::quiesce::ProducerQuiescedResponse>(&mut out);
    add::<ProducerRoutingResponse>(&mut out);
    add::<OrderingResponse>(&mut out);
    add::<MigrationList>(&mut out);
    add::<MonitoringGroupView>(&mut out);
    add_as::<CreateStreamResponse>(&mut out, "StreamCreateResponse");
    add_as::<ScaleResponse>(&mut out, "StreamScaleResponse");
    add_as::<MigrationResponse>(&mut out, "Migration");
    add_as::<DismissResponse>(&mut out, "MetadataDurability");
    add_as::<AuditRecords>(&mut out, "AuditPage");
    add::<rsc_protocol::wire::HeartbeatRequest>(&mut out);
    add::<rsc_protocol::wire::CreateStreamRequest>(&mut out);
    add::<rsc_protocol::wire::DeleteGroupRequest>(&mut out);
    add::<rsc_protocol::wire::ScaleRequest>(&mut out);
    add::<rsc_protocol::wire::OrderingRequest>(&mut out);
    add::<rsc_protocol::wire::MigrationActionRequest>(&mut out);
    add::<rsc_protocol::wire::quiesce::ProducerQuiescedRequest>(&mut out);
    add::<crate::services::durability::DismissSuspicionRequest>(&mut out);
    add::<rsc_protocol::wire::offsets::OffsetResetRequest>(&mut out);
    add::<rsc_protocol::wire::offsets::OffsetResetResponse>(&mut out);
    add::<crate::services::durability::RecreateGroupRequest>(&mut out);
    add::<crate::http::api::auth::LoginBody>(&mut out);
    add::<crate::http::api::auth::RevokeBody>(&mut out);
    add::<Revoked>(&mut out);
    add::<RevokedAll>(&mut out);
    // One token, or every token of a user: two shapes.
    out.insert(
        "RevokeResponse".to_owned(),
        serde_json::json!({"oneOf": [
            {"$ref": "#/components/schemas/Revoked"},
            {"$ref": "#/components/schemas/RevokedAll"}
        ]}),
    );
    out
}

/// The schema of a JSON answer of `wire_type`: a reference when it is a typed component, else an object or
/// array described in words.
pub fn answer(wire_type: &str, array: bool, components: &Map<String, Value>) -> Value {
    let one = if components.contains_key(wire_type) {
        serde_json::json!({"$ref": format!("#/components/schemas/{wire_type}")})
    } else if array {
        serde_json::json!({"type": "object"})
    } else {
        return serde_json::json!({"type": "object", "description": format!("coord/v1 `{wire_type}`")});
    };
    if array {
        serde_json::json!({"type": "array", "items": one, "description": format!("rows of `{wire_type}`")})
    } else {
        one
    }
}
