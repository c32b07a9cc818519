//! The value ranges the document publishes: which bound of `rsc_protocol::bounds` (the constants the
//! validators use) applies to each path parameter, each query parameter of an operation, and each field of a
//! request body's component schema, and which fields the server requires although their Rust type is
//! optional (`requestedBy`, …: refused with 400 naming the field when absent or blank). `mod.rs` writes them
//! into the document as `minimum`/`maximum`, `minLength`/`maxLength`, `pattern`, `enum`, `maxItems` and
//! `required`; `tests/openapi_ranges.rs` sends each bound and the value just outside it to a real
//! coordinator.

use rsc_protocol::bounds::{self as b, Bound};
use serde_json::{Map, Value, json};

/// What the server enforces on one request-body field.
#[derive(Debug, Clone, Copy)]
pub struct FieldRule {
    /// Its range, if it has one.
    pub bound: Option<Bound>,
    /// The server refuses a body without it (400 naming it), whatever its Rust type says.
    pub required: bool,
}

const fn rule(bound: Bound, required: bool) -> Option<FieldRule> {
    Some(FieldRule {
        bound: Some(bound),
        required,
    })
}

const REQUIRED: Option<FieldRule> = Some(FieldRule {
    bound: None,
    required: true,
});

/// The bound of path parameter `name` (as the route table spells it) of `operation_id`.
pub fn path_param(operation_id: &str, name: &str) -> Option<Bound> {
    Some(match (operation_id, name) {
        // A stream create names the stream's first group after the prefix: a group name, without ':'.
        ("createStreamGroup", "stream_prefix") => b::CONSUMER_GROUP,
        (_, name) => return path_param_anywhere(name),
    })
}

/// The bound of a path parameter wherever it appears.
fn path_param_anywhere(name: &str) -> Option<Bound> {
    Some(match name {
        "stream_prefix" => b::STREAM_PREFIX,
        "consumer_group" => b::CONSUMER_GROUP,
        "member_id" => b::MEMBER_ID,
        "shard_index" => b::SHARD_INDEX,
        _ => return None,
    })
}

/// The wire name error messages use for a path parameter (`stream_prefix` → `streamPrefix`).
pub fn wire_name(param: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in param.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The bound of query parameter `name` of `operation_id`.
pub fn query_param(operation_id: &str, name: &str) -> Option<Bound> {
    Some(match (operation_id, name) {
        ("listAuditRecords", "limit") => b::AUDIT_LIMIT,
        (
            "getStreamShardMessages" | "getMergedStreamMessages" | "listGrafanaMessageRows",
            "limit",
        ) => b::PAGE_LIMIT,
        (
            "getStreamShardMessages" | "getMergedStreamMessages" | "listGrafanaMessageRows",
            "direction",
        ) => b::DIRECTION,
        ("getStreamShardMessages" | "getMergedStreamMessages", "scanLimit") => b::SCAN_LIMIT,
        ("getStreamShardMessages" | "getMergedStreamMessages", "scanMaxBytes") => b::SCAN_MAX_BYTES,
        ("listShardPendingEntries", "count") => {
            Bound::between(1, i64::from(crate::services::messages::pending::MAX_COUNT))
        }
        ("listShardPendingEntries", "consumer") => b::OPTIONAL_TEXT,
        ("getProducerRoutingMetadata", "observedMetadataVersion") => b::OBSERVED_VERSION,
        ("getProducerRoutingMetadata", "producerId") => b::PRODUCER_ID,
        _ => return None,
    })
}

/// What the server enforces on field `field` of the request-body component `schema`.
pub fn body_field(schema: &str, field: &str) -> Option<FieldRule> {
    match (schema, field) {
        ("LoginBody" | "RevokeBody", _) => None,
        (_, "requestedBy") => rule(b::REQUIRED_TEXT, true),
        ("CreateStreamRequest", "reason") => rule(b::OPTIONAL_TEXT, false),
        (_, "reason") => rule(b::REQUIRED_TEXT, true),
        ("CreateStreamRequest", "initialShardCount") => rule(b::INITIAL_SHARD_COUNT, false),
        ("ScaleRequest", "targetShardCount") => rule(b::TARGET_SHARD_COUNT, true),
        ("ProducerQuiesceRequest", "timeoutMs") => rule(b::QUIESCE_TIMEOUT_MS, true),
        ("OrderingRequest", "ordering") => REQUIRED,
        ("OffsetResetRequest", "to") => REQUIRED,
        ("OffsetResetRequest", "value") => rule(b::OPTIONAL_TEXT, false),
        // Not 0 either (SHIFT needs a move); the range is the validator's.
        ("OffsetResetRequest", "shift") => {
            use crate::services::offset_reset::target::MAX_SHIFT;
            rule(Bound::between(-MAX_SHIFT, MAX_SHIFT), false)
        }
        ("RecreateGroupRequest", "shardCount") => rule(b::INITIAL_SHARD_COUNT, true),
        ("RecreateGroupRequest", "minimumMetadataVersion") => rule(b::OBSERVED_VERSION, false),
        ("ProducerQuiescedRequest", "producerId") => rule(b::PRODUCER_ID, true),
        ("ProducerQuiescedRequest", "reshardingId") => REQUIRED,
        ("ProducerQuiescedRequest", "observedRoutingVersion") => rule(b::OBSERVED_VERSION, true),
        ("HeartbeatRequest", "protocolVersion") => rule(b::PROTOCOL_VERSION, true),
        ("HeartbeatRequest", "requestId") => rule(b::REQUEST_ID, true),
        ("HeartbeatRequest", "memberName" | "clientName" | "clientVersion") => {
            rule(b::DISPLAY_TEXT, false)
        }
        ("HeartbeatRequest", "groupInstanceId") => rule(b::GROUP_INSTANCE_ID, false),
        ("HeartbeatRequest", "memberEpoch") => rule(b::MEMBER_EPOCH, true),
        ("HeartbeatRequest", "metadataVersion") => rule(b::OBSERVED_VERSION, true),
        ("HeartbeatRequest", "ownedShards" | "revokingShards" | "shardProgress") => {
            rule(b::SHARD_LIST, false)
        }
        ("RuntimeConsumerCapacity", "runtimeMaxConcurrency") => rule(b::CONCURRENCY, true),
        ("RuntimeConsumerCapacity", "availableConcurrency") => rule(b::COUNT, true),
        ("RevokingShardReport", "inFlight") => rule(b::COUNT, false),
        ("ShardProgressReport", "pendingCount") => rule(b::COUNT, false),
        ("ShardProgressReport", "streamKey" | "lastDeliveredId" | "lastAckedId" | "updatedAt") => {
            rule(b::PROGRESS_TEXT, false)
        }
        _ => None,
    }
}

/// Writes `bound` into `schema` (a JSON Schema object).
pub fn apply(schema: &mut Value, bound: Bound) {
    let Some(s) = schema.as_object_mut() else {
        return;
    };
    match bound {
        Bound::Integer { min, max } => {
            if let Some(m) = min {
                s.insert("minimum".into(), json!(m));
            }
            if let Some(m) = max {
                s.insert("maximum".into(), json!(m));
            }
        }
        Bound::Text {
            min_length,
            max_length,
            pattern,
        } => {
            if min_length > 0 {
                s.insert("minLength".into(), json!(min_length));
            }
            s.insert("maxLength".into(), json!(max_length));
            if let Some(p) = pattern {
                s.insert("pattern".into(), json!(p));
            }
        }
        Bound::OneOf(words) => {
            s.insert("enum".into(), json!(words));
        }
        Bound::List { max_items } => {
            s.insert("maxItems".into(), json!(max_items));
        }
    }
}

/// The schema of a query or path parameter with `bound` (a string without one).
pub fn param_schema(bound: Option<Bound>) -> Value {
    let mut schema = match bound {
        Some(Bound::Integer { .. }) => json!({"type": "integer"}),
        _ => json!({"type": "string"}),
    };
    if let Some(bound) = bound {
        apply(&mut schema, bound);
    }
    schema
}

/// Applies the field rules to every request-body component (`names`, with the components they refer to):
/// bounds on the properties, server-required fields added to `required` (and no longer `null`able).
pub fn apply_to_components(components: &mut Map<String, Value>, names: &[String]) {
    let mut todo: Vec<String> = names.to_vec();
    let mut seen: Vec<String> = Vec::new();
    while let Some(name) = todo.pop() {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name.clone());
        let Some(schema) = components.get_mut(&name) else {
            continue;
        };
        refs(schema, &mut todo);
        let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
            continue;
        };
        let mut required: Vec<String> = Vec::new();
        for (field, prop) in props.iter_mut() {
            let Some(r) = body_field(&name, field) else {
                continue;
            };
            if let Some(bound) = r.bound {
                apply(prop, bound);
            }
            if r.required {
                required.push(field.clone());
                strip_null(prop);
            }
        }
        if required.is_empty() {
            continue;
        }
        let list = schema
            .as_object_mut()
            .map(|s| s.entry("required").or_insert_with(|| json!([])));
        if let Some(Value::Array(list)) = list {
            for field in required {
                if !list.iter().any(|f| f == field.as_str()) {
                    list.push(json!(field));
                }
            }
        }
    }
}

/// The component names `schema` refers to.
fn refs(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str)
                && let Some(name) = r.strip_prefix("#/components/schemas/")
            {
                out.push(name.to_owned());
            }
            m.values().for_each(|v| refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// A required field is never `null`: `["string", "null"]` becomes `"string"`, and a `oneOf` loses its
/// `null` branch.
fn strip_null(prop: &mut Value) {
    if let Some(Value::Array(kinds)) = prop.get("type") {
        let kept: Vec<Value> = kinds.iter().filter(|k| *k != "null").cloned().collect();
        prop["type"] = if kept.len() == 1 {
            kept[0].clone()
        } else {
            Value::Array(kept)
        };
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = prop.get_mut(key) {
            branches.retain(|b| b.get("type").is_none_or(|t| t != "null"));
            if branches.len() == 1 {
                let only = branches.remove(0);
                if let Some(p) = prop.as_object_mut() {
                    p.remove(key);
                    if let Some(o) = only.as_object() {
                        for (k, v) in o {
                            p.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                    }
                }
            }
        }
    }
}
