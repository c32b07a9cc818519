//! Request extractors that fail with the contract's error body instead of axum's plain-text rejections.
//!
//! `Json<T>` reads the body whatever its Content-Type (an operator's curl without `-H` still works), and a
//! decoding error names the offending field path (`runtimeConsumerCapacity.runtimeMaxConcurrency: invalid
//! type…`). `RawBody` is the body as bytes, with the same error body when it is too large. `ApiPath<T>`
//! turns bad path parameters into 400 `INVALID_REQUEST`; [`Group`], [`MemberPath`], [`MigrationPath`] and
//! [`StreamPrefix`] read a route's names and validate them, so a handler and the operation it calls get a
//! `GroupName` (or prefix) that is already valid.

use crate::http::error::ApiError;
use crate::runtime::cache::GroupName;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use bytes::Bytes;
use rsc_protocol::validate;
use rsc_protocol::wire::AdminBody;
use serde::de::DeserializeOwned;
use std::collections::HashMap;

pub use crate::security::access::MAX_BODY_BYTES;

pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let RawBody(bytes) = RawBody::from_request(req, state).await?;
        decode(&bytes).map(Json)
    }
}

/// The request body as bytes (at most the route's limit, `access::BodyLimit`: [`MAX_BODY_BYTES`] but for the
/// heartbeat); a body too large or unreadable fails with the contract's error body, not axum's plain-text
/// rejection, and a body too large names the limit (and the setting that changes it).
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let limit = req
            .extensions()
            .get::<crate::security::access::MatchedRoute>()
            .map(|r| r.body_limit)
            .unwrap_or_default();
        Bytes::from_request(req, state)
            .await
            .map(RawBody)
            .map_err(|e| {
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    limit.too_large()
                } else if crate::security::access::is_body_timeout(&e) {
                    crate::security::access::body_timeout()
                } else {
                    ApiError::invalid(format!("request body could not be read: {e}"))
                }
            })
    }
}

/// Decodes a JSON body, naming the field path on failure.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    decode_with_hint(bytes, "")
}

/// An admin mutation's body: a JSON object of the fields the type declares, each named in errors; an
/// unknown field (a typo such as `shardCount` for `initialShardCount`) is refused, not ignored.
pub struct AdminJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + AdminBody> FromRequest<S> for AdminJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let RawBody(bytes) = RawBody::from_request(req, state).await?;
        let hint = format!(
            "; this endpoint takes {{{}}} (requestedBy is required)",
            T::FIELDS
                .iter()
                .map(|f| format!("\"{f}\""))
                .collect::<Vec<_>>()
                .join(", ")
        );
        decode_with_hint(&bytes, &hint).map(AdminJson)
    }
}

/// Decodes a JSON object body; `hint` is appended to the messages about the body's overall shape.
pub fn decode_with_hint<T: DeserializeOwned>(bytes: &[u8], hint: &str) -> Result<T, ApiError> {
    let Some(first) = bytes.iter().find(|b| !b.is_ascii_whitespace()) else {
        return Err(ApiError::invalid(format!(
            "request body is required: a JSON object{hint}"
        )));
    };
    // serde would also read a struct from a JSON array by position (`[1, "mallory", "x"]`), which no
    // client means and which hides the field names from validation and from the audit record.
    if *first != b'{' {
        return Err(ApiError::invalid(format!(
            "request body must be a JSON object with named fields, not {}{hint}",
            json_kind(*first)
        )));
    }
    // The common case, a body that decodes, takes the plain decoder; only a body that does not is decoded
    // again with its field path tracked, for the message (path tracking allocates per field: a tenth of a
    // steady heartbeat's decoding).
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    if let Ok(value) = <T as serde::Deserialize>::deserialize(&mut *de)
        && de.end().is_ok()
    {
        return Ok(value);
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = e.path().to_string();
        let inner = crate::http::error::plain_decode_error(&e.into_inner().to_string());
        if path == "." || path == "?" || path.is_empty() {
            ApiError::invalid(format!(
                "request body is not valid JSON for this endpoint: {inner}"
            ))
        } else {
            ApiError::invalid(format!("{path}: {inner}"))
        }
    })?;
    // One JSON value and nothing after it (`{…} garbage` is not a body to act on).
    de.end().map_err(|e| {
        ApiError::invalid(format!(
            "request body is not valid JSON for this endpoint: {e}"
        ))
    })?;
    Ok(value)
}

/// What a body that is not a JSON object starts as, for the error message.
fn json_kind(first: u8) -> &'static str {
    match first {
        b'[' => "an array",
        b'"' => "a string",
        b'-' | b'0'..=b'9' => "a number",
        b't' | b'f' => "a boolean",
        b'n' => "null",
        _ => "valid JSON",
    }
}

pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(v)| ApiPath(v))
            .map_err(|e| ApiError::invalid(format!("path parameter: {}", e.body_text())))
    }
}

/// The path parameters of a route, by name (`{stream_prefix}`, `{consumer_group}`, …).
async fn path_params<S: Send + Sync>(
    parts: &mut Parts,
    state: &S,
) -> Result<HashMap<String, String>, ApiError> {
    ApiPath::<HashMap<String, String>>::from_request_parts(parts, state)
        .await
        .map(|ApiPath(params)| params)
}

fn param(params: &mut HashMap<String, String>, name: &str) -> String {
    params.remove(name).unwrap_or_default()
}

/// The `{stream_prefix}/{consumer_group}` of a route under `…/streams/{p}/groups/{g}`, validated as the
/// contract's names: a bad one is 400 `INVALID_REQUEST` naming the field, before the handler runs.
pub struct Group(pub GroupName);

/// Validates a group's two path segments.
fn group_name(params: &mut HashMap<String, String>) -> Result<GroupName, ApiError> {
    let p = param(params, "stream_prefix");
    let g = param(params, "consumer_group");
    validate::validate_stream_prefix(&p)?;
    validate::validate_consumer_group(&g)?;
    Ok(GroupName::new(&p, &g))
}

impl<S: Send + Sync> FromRequestParts<S> for Group {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        group_name(&mut path_params(parts, state).await?).map(Group)
    }
}

/// A member's heartbeat path: the group and a validated `{member_id}`.
pub struct MemberPath(pub GroupName, pub String);

impl<S: Send + Sync> FromRequestParts<S> for MemberPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let mut params = path_params(parts, state).await?;
        let name = group_name(&mut params)?;
        let member_id = param(&mut params, "member_id");
        validate::validate_member_id(&member_id)?;
        Ok(MemberPath(name, member_id))
    }
}

/// A migration's path: the group and its `{resharding_id}` (an unknown id is the operation's 404).
pub struct MigrationPath(pub GroupName, pub String);

impl<S: Send + Sync> FromRequestParts<S> for MigrationPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let mut params = path_params(parts, state).await?;
        let name = group_name(&mut params)?;
        Ok(MigrationPath(name, param(&mut params, "resharding_id")))
    }
}

/// The `{stream_prefix}` of a route under `…/streams/{p}`, validated.
pub struct StreamPrefix(pub String);

impl<S: Send + Sync> FromRequestParts<S> for StreamPrefix {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let prefix = param(&mut path_params(parts, state).await?, "stream_prefix");
        validate::validate_stream_prefix(&prefix)?;
        Ok(StreamPrefix(prefix))
    }
}

/// A shard's path: the group and its `{shard_index}`, a non-negative integer (whether the group has that
/// shard is the operation's check).
pub struct ShardPath(pub GroupName, pub u32);

impl<S: Send + Sync> FromRequestParts<S> for ShardPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let mut params = path_params(parts, state).await?;
        let name = group_name(&mut params)?;
        let raw = param(&mut params, "shard_index");
        let index = raw.parse::<u32>().map_err(|_| {
            ApiError::invalid(format!(
                "shardIndex: {raw:?} is not a shard index (an integer from 0 to the group's shard count - 1)"
            ))
        })?;
        Ok(ShardPath(name, index))
    }
}
