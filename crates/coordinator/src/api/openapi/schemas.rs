//! The component schemas the document takes from typed answers (`utoipa::ToSchema`): the Grafana rows and
//! the probes' status. An operation whose `wire_type` names one of them answers `$ref` to it (`items` of an
//! array for the Grafana routes); the others are still described in words.

use crate::api::handlers::ProbeStatus;
use crate::grafana::{
    GrafanaAssignmentRow, GrafanaGroupRow, GrafanaMemberRow, GrafanaMessageRow, GrafanaOption,
    GrafanaShardRow,
};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// (name, schema) of `T` and of the schemas it refers to.
fn add<T: ToSchema>(out: &mut Map<String, Value>) {
    let mut nested = Vec::new();
    T::schemas(&mut nested);
    for (name, schema) in nested {
        out.insert(name, serde_json::to_value(schema).unwrap_or(Value::Null));
    }
    out.insert(
        T::name().into_owned(),
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
