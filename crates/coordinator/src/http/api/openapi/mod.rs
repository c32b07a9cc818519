//! The OpenAPI 3.1 document of the coord/v1 API, generated from the route table (`routes.rs`): every route
//! with its method, path parameters, operation id, access level (`x-rsc-access` and a security requirement),
//! audit action (`x-rsc-audit-action`) and error bodies. What each operation takes and answers is described
//! in `operations.rs`; a route without a description there fails [`document`]. Each operation's
//! `description` says what it does, who may call it and which error codes it answers (`describe.rs`); the
//! value ranges of parameters and request fields and the fields the server requires come from
//! `rsc_protocol::bounds`, the constants the validators use (`ranges.rs`). Served as JSON at
//! `GET /v3/api-docs`, as YAML at `GET /openapi.yaml`, and rendered by the offline page at `GET /docs`
//! (`docs.rs`).

mod describe;
mod docs;
mod operations;
pub mod ranges;
mod schemas;

pub use docs::{api_docs_json, api_docs_yaml, docs_file, docs_index};
pub use schemas::{Decoder, decoders};

use super::routes::{Access, RouteSpec, table};
use operations::{Body, describe};
use rsc_protocol::errors::{ErrorCode, http_status_name};
use serde_json::{Map, Value, json};
use std::sync::OnceLock;
use utoipa::openapi::OpenApi;

/// The wire name of an access level (as the routes table of docs/api.md spells it).
pub fn access_name(access: Access) -> &'static str {
    match access {
        Access::Public => "public",
        Access::Read => "READ",
        Access::Write => "WRITE",
        Access::Member => "MEMBER",
        Access::DataRead => "DATA_READ",
        Access::Authenticated => "authenticated",
    }
}

/// The document, built once per process.
pub fn cached() -> &'static Result<OpenApi, String> {
    static DOC: OnceLock<Result<OpenApi, String>> = OnceLock::new();
    DOC.get_or_init(|| document(&table()))
}

/// Builds the document for `routes`. A route that `operations.rs` does not describe is still listed (with its
/// access level and error bodies) and marked `x-rsc-undescribed`, which the document's test refuses.
pub fn document(routes: &[RouteSpec]) -> Result<OpenApi, String> {
    let mut typed = schemas::typed();
    let requests: Vec<String> = routes
        .iter()
        .filter_map(|r| operations::request_type(r.operation_id))
        .map(str::to_owned)
        .collect();
    ranges::apply_to_components(&mut typed, &requests);
    let mut paths: Map<String, Value> = Map::new();
    for spec in routes {
        let op = describe(spec.operation_id).unwrap_or_else(|| undescribed(spec));
        let item = paths
            .entry(openapi_path(spec.path))
            .or_insert_with(|| json!({}));
        let mut o = operation(spec, &op, &typed);
        if describe(spec.operation_id).is_none() {
            o["x-rsc-undescribed"] = json!(true);
        }
        item[spec.method.as_str().to_ascii_lowercase()] = o;
    }
    let doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "rsc coordinator — coord/v1",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The coord/v1 API of rsc, a Redis Stream Coordinator. Generated from the coordinator's \
                route table: each operation's `x-rsc-access` is the access level the coordinator enforces \
                (`public`, `READ`, `WRITE`, `MEMBER`, `authenticated`). Errors answer the contract's error body.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"}
        },
        "paths": paths,
        "components": {
            "schemas": components(typed),
            "securitySchemes": {
                "basic": {"type": "http", "scheme": "basic", "description": "username and password"},
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "a token from POST /coord/v1/auth/login"}
            }
        },
        "tags": [
            {"name": "admin", "description": "streams, groups, scaling and repairs (WRITE, audited)"},
            {"name": "members", "description": "the heartbeat protocol"},
            {"name": "producers", "description": "producer quiesce reports (READ)"},
            {"name": "monitoring", "description": "read-only views (READ)"},
            {"name": "grafana", "description": "rows for Grafana's JSON API data source (READ)"},
            {"name": "auth", "description": "sign-in, tokens, session"},
            {"name": "service", "description": "probes, metrics, this document"}
        ]
    });
    serde_json::from_value(doc).map_err(|e| format!("the generated document does not parse: {e}"))
}

/// A generic description for a route `operations.rs` lacks.
fn undescribed(spec: &RouteSpec) -> operations::Operation {
    operations::Operation {
        summary: spec.operation_id,
        tag: "service",
        wire_type: "undescribed",
        array: false,
        body: if spec.method == axum::http::Method::GET {
            Body::None
        } else {
            Body::Json("undescribed")
        },
        query: &[],
        success: (200, "application/json", "OK"),
        errors: &[400],
        own_error_bodies: &[],
        reads_redis: true,
    }
}

/// axum's `{*rest}` wildcard is an ordinary `{rest}` parameter in OpenAPI.
fn openapi_path(path: &str) -> String {
    path.replace("{*", "{")
}

/// The parameters of a path template, in order.
fn path_params(path: &str) -> Vec<String> {
    path.split('{')
        .skip(1)
        .filter_map(|s| {
            s.split_once('}')
                .map(|(p, _)| p.trim_start_matches('*').to_owned())
        })
        .collect()
}

fn param_description(name: &str) -> &'static str {
    match name {
        "stream_prefix" => "the stream prefix (shard streams are `<prefix>:<index>`)",
        "consumer_group" => "the consumer group",
        "member_id" => "the member's id",
        "resharding_id" => "the migration's id",
        "shard_index" => "a shard index, 0 ≤ i < shardCount",
        _ => "a path segment",
    }
}

/// The error body and the typed answers' schemas.
fn components(typed: Map<String, Value>) -> Value {
    let mut all = Map::new();
    all.insert("ErrorResponse".into(), error_schema());
    all.extend(typed);
    Value::Object(all)
}

fn operation(spec: &RouteSpec, op: &operations::Operation, typed: &Map<String, Value>) -> Value {
    let mut params: Vec<Value> = path_params(spec.path)
        .into_iter()
        .map(|p| {
            let schema = ranges::param_schema(ranges::path_param(spec.operation_id, &p));
            json!({"name": p, "in": "path", "required": true, "description": param_description(&p),
                   "schema": schema})
        })
        .collect();
    for (name, required, description) in op.query {
        let schema = ranges::param_schema(ranges::query_param(spec.operation_id, name));
        params.push(json!({"name": name, "in": "query", "required": required,
                           "description": description, "schema": schema}));
    }
    let mut responses = Map::new();
    let statuses = error_statuses(spec.access, op);
    let (status, media, description) = op.success;
    responses.insert(
        status.to_string(),
        json!({"description": description, "content": {media: {"schema": success_schema(media, op, typed)}}}),
    );
    for &code in &statuses {
        // An operation may answer a status with its own body instead of the error body (`/readyz`'s 503).
        let (description, body) = match op.own_error_bodies.iter().find(|(c, _, _)| *c == code) {
            Some((_, schema, description)) => (description.to_string(), *schema),
            None => (error_description(code), "ErrorResponse"),
        };
        responses.insert(
            code.to_string(),
            json!({"description": description,
                   "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{body}")}}}}),
        );
    }
    let mut o = json!({
        "operationId": spec.operation_id,
        "summary": op.summary,
        "description": describe::description(spec, op, &statuses),
        "tags": [op.tag],
        "parameters": params,
        "responses": responses,
        "x-rsc-access": access_name(spec.access),
    });
    if let Some(action) = spec.audit_action {
        o["x-rsc-audit-action"] = json!(action);
    }
    o["security"] = match spec.access {
        Access::Public => json!([]),
        // Heartbeats need MEMBER only when member authentication is on (`coordinator.api.authenticate-members`).
        Access::Member => json!([{}, {"basic": []}, {"bearer": []}]),
        _ => json!([{"basic": []}, {"bearer": []}]),
    };
    if let Body::Json(description) = op.body {
        let schema = match operations::request_type(spec.operation_id) {
            Some(name) if typed.contains_key(name) => {
                json!({"$ref": format!("#/components/schemas/{name}")})
            }
            _ => json!({"type": "object"}),
        };
        o["requestBody"] = json!({"required": true, "description": description,
            "content": {"application/json": {"schema": schema}}});
    }
    o
}

fn success_schema(media: &str, op: &operations::Operation, typed: &Map<String, Value>) -> Value {
    match media {
        "application/json" => schemas::answer(op.wire_type, op.array, typed),
        _ => json!({"type": "string"}),
    }
}

/// The statuses an operation may answer with the error body: what its access level implies (401, 403,
/// 429 for admin mutations), its own, and 503 for any operation that reads Redis.
fn error_statuses(access: Access, op: &operations::Operation) -> Vec<u16> {
    let mut out: Vec<u16> = op.errors.to_vec();
    match access {
        Access::Public => {}
        Access::Write => out.extend([401, 403, 429]),
        _ => out.extend([401, 403]),
    }
    if op.reads_redis {
        out.push(503);
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn error_description(code: u16) -> String {
    let what = match code {
        400 => "invalid request (INVALID_REQUEST names the field)",
        401 => "no or bad credentials",
        403 => "the caller lacks the role or stream scope",
        404 => "no such group, stream, migration or path",
        408 => "the body did not arrive in time",
        409 => "conflict with the group's state",
        413 => "body too large",
        422 => "not allowed in the migration's state",
        429 => "rate limited (Retry-After)",
        503 => "Redis unavailable or the coordinator is terminating; retry",
        _ => "error",
    };
    format!("{} — {what}", http_status_name(code))
}

fn error_schema() -> Value {
    let codes: Vec<String> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    json!({
        "type": "object",
        "description": "The contract's error body: the HTTP status name, a stable error code and an actionable message.",
        "required": ["status", "errorCode", "message"],
        "properties": {
            "status": {"type": "string", "description": "the HTTP status name, e.g. BAD_REQUEST"},
            "errorCode": {"type": "string", "enum": codes},
            "message": {"type": "string"},
            "incompleteReset": {
                "$ref": "#/components/schemas/IncompleteReset",
                "description": "only with OFFSET_RESET_INCOMPLETE: the shards the interrupted offset reset moved, the one in doubt and those it did not touch"
            }
        }
    })
}
