//! The component schemas the document takes from the typed answers (`utoipa::ToSchema`): the coord/v1 wire
//! types of `rsc-protocol` (derived behind its `openapi` feature), the coordinator's own views, the Grafana
//! rows and the probes' status. An operation answers `$ref` to the component its `wire_type` names
//! (`items` of an array for the Grafana routes); `tests/openapi_schemas.rs` fails for a JSON answer left
//! without one. The components the coordinator or its clients decode with serde are registered with a
//! decoder ([`decoders`]), by which `tests/openapi_required.rs` checks each schema's `required` against the
//! Rust type.

use crate::http::api::auth::{AuditRecords, Revoked, RevokedAll};
use crate::http::api::handlers::{Index, ProbeStatus};
use crate::observability::grafana::{
    GrafanaAssignmentRow, GrafanaGroupRow, GrafanaMemberRow, GrafanaMessageRow, GrafanaOption,
    GrafanaShardRow,
};
use crate::services::durability::views::{DismissResponse, MonitoringGroupView};
use rsc_protocol::wire::describe::{StreamDescribeResponse, StreamHistoryResponse};
use rsc_protocol::wire::monitoring::{
    AssignmentsResponse, CompatibilityResponse, ConsumptionResponse, GroupList, HealthResponse,
    MemberList, StreamShardOffsetsResponse,
};
use rsc_protocol::wire::resharding::{MigrationList, MigrationResponse, ScaleResponse};
use rsc_protocol::wire::{
    CreateStreamResponse, GroupResponse, HeartbeatResponse, OrderingResponse,
    ProducerRoutingResponse,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// Decodes a JSON value as a component's Rust type (the error in words).
pub type Decoder = fn(&Value) -> Result<(), String>;

fn decoder<T: DeserializeOwned>() -> Decoder {
    |v| {
        serde_json::from_value::<T>(v.clone())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// The component schemas being collected, and the decoders of those serde decodes.
#[derive(Default)]
struct Components {
    schemas: Map<String, Value>,
    decoders: Vec<(String, Decoder)>,
}

impl Components {
    /// (name, schema) of `T` and of the schemas it refers to.
    fn add<T: ToSchema>(&mut self) {
        let name = T::name().into_owned();
        self.add_as::<T>(&name);
    }

    /// [`Components::add`], under the name the operation table uses for it (the contract's name where the
    /// Rust type's differs, e.g. `StreamCreateResponse` for `CreateStreamResponse`).
    fn add_as<T: ToSchema>(&mut self, name: &str) {
        let mut nested = Vec::new();
        T::schemas(&mut nested);
        for (nested_name, schema) in nested {
            self.schemas.insert(
                nested_name,
                serde_json::to_value(schema).unwrap_or(Value::Null),
            );
        }
        self.schemas.insert(
            name.to_owned(),
            serde_json::to_value(T::schema()).unwrap_or(Value::Null),
        );
    }

    /// [`Components::add`] of a type serde decodes, with its decoder.
    fn add_de<T: ToSchema + DeserializeOwned>(&mut self) {
        let name = T::name().into_owned();
        self.add_de_as::<T>(&name);
    }

    /// [`Components::add_as`] of a type serde decodes, with its decoder.
    fn add_de_as<T: ToSchema + DeserializeOwned>(&mut self, name: &str) {
        self.add_as::<T>(name);
        self.decoders.push((name.to_owned(), decoder::<T>()));
    }
}

/// The typed component schemas, by name.
pub fn typed() -> Map<String, Value> {
    all().schemas
}

/// The components serde decodes, each with its decoder.
pub fn decoders() -> Vec<(String, Decoder)> {
    all().decoders
}

fn all() -> Components {
    let mut out = Components::default();
    out.add::<GrafanaOption>();
    out.add::<GrafanaGroupRow>();
    out.add::<GrafanaMemberRow>();
    out.add::<GrafanaShardRow>();
    out.add::<GrafanaAssignmentRow>();
    out.add::<GrafanaMessageRow>();
    out.add::<ProbeStatus>();
    out.add::<Index>();
    out.add_de::<HeartbeatResponse>();
    out.add_de::<GroupResponse>();
    out.add::<GroupList>();
    out.add::<MemberList>();
    out.add::<AssignmentsResponse>();
    out.add::<CompatibilityResponse>();
    out.add::<ConsumptionResponse>();
    out.add::<HealthResponse>();
    out.add::<StreamShardOffsetsResponse>();
    out.add_de::<StreamDescribeResponse>();
    out.add::<StreamHistoryResponse>();
    out.add::<rsc_protocol::wire::browse::StreamMessagesPageResponse>();
    out.add::<rsc_protocol::wire::browse::MessageSearchSummary>();
    out.add::<rsc_protocol::wire::browse::MergedMessagesPageResponse>();
    out.add::<rsc_protocol::wire::pending::PendingEntriesResponse>();
    out.add::<rsc_protocol::wire::auth::LoginResponse>();
    out.add::<rsc_protocol::wire::auth::SessionResponse>();
    out.add_de::<rsc_protocol::wire::quiesce::ProducerQuiescedResponse>();
    out.add_de::<ProducerRoutingResponse>();
    out.add_de::<OrderingResponse>();
    out.add::<MigrationList>();
    out.add::<MonitoringGroupView>();
    out.add_de_as::<CreateStreamResponse>("StreamCreateResponse");
    out.add_as::<ScaleResponse>("StreamScaleResponse");
    out.add_as::<MigrationResponse>("Migration");
    out.add_as::<DismissResponse>("MetadataDurability");
    out.add_as::<AuditRecords>("AuditPage");
    out.add_de::<rsc_protocol::wire::HeartbeatRequest>();
    out.add_de::<rsc_protocol::wire::RuntimeConsumerCapacity>();
    out.add_de::<rsc_protocol::wire::RevokingShardReport>();
    out.add_de::<rsc_protocol::wire::ShardProgressReport>();
    out.add_de::<rsc_protocol::wire::ShardId>();
    out.add_de::<rsc_protocol::wire::quiesce::ProducerQuiesceRequest>();
    out.add_de::<rsc_protocol::wire::CreateStreamRequest>();
    out.add_de::<rsc_protocol::wire::DeleteGroupRequest>();
    out.add_de::<rsc_protocol::wire::ScaleRequest>();
    out.add_de::<rsc_protocol::wire::OrderingRequest>();
    out.add_de::<rsc_protocol::wire::MigrationActionRequest>();
    out.add_de::<rsc_protocol::wire::quiesce::ProducerQuiescedRequest>();
    out.add_de::<crate::services::durability::DismissSuspicionRequest>();
    out.add_de::<rsc_protocol::wire::offsets::OffsetResetRequest>();
    out.add_de::<rsc_protocol::wire::offsets::OffsetResetResponse>();
    out.add_de::<rsc_protocol::wire::offsets::IncompleteReset>();
    out.add_de::<crate::services::durability::RecreateGroupRequest>();
    out.add_de::<crate::http::api::auth::LoginBody>();
    out.add_de::<crate::http::api::auth::RevokeBody>();
    out.add::<Revoked>();
    out.add::<RevokedAll>();
    // One token, or every token of a user: two shapes.
    out.schemas.insert(
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
