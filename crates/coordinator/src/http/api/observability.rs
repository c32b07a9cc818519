//! Handlers for operator visibility: a stream as a whole (describe, history), the group summary with its durability state, consumption, offsets,
//! migrations, a shard's messages page by page, producer routing with the producer's observed metadataVersion, and the audited repairs
//! "recreate as a new group lifecycle" and "dismiss a rollback suspicion".

use super::extract::{AdminJson, Group, ShardPath, StreamPrefix};
use crate::http::error::ApiError;
use crate::runtime::coordinator::Coordinator;
use crate::security::principal::Principal;
use crate::services::durability::{DismissSuspicionRequest, RecreateGroupRequest};
use axum::Extension;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::collections::BTreeMap;
use std::sync::Arc;

type Coord = State<Arc<Coordinator>>;

fn ok<T: serde::Serialize>(body: T) -> Response {
    (StatusCode::OK, axum::Json(body)).into_response()
}

pub async fn monitoring_group(State(c): Coord, Group(name): Group) -> Result<Response, ApiError> {
    Ok(ok(c.monitoring().monitoring_group(&name).await?))
}

pub async fn consumption(State(c): Coord, Group(name): Group) -> Result<Response, ApiError> {
    Ok(ok(c.monitoring().consumption(&name).await?))
}

pub async fn migrations(State(c): Coord, Group(name): Group) -> Result<Response, ApiError> {
    Ok(ok(c.monitoring().migrations(&name).await?))
}

/// `GET /coord/v1/streams/{p}/describe`: the stream as a whole.
pub async fn describe_stream(
    State(c): Coord,
    StreamPrefix(prefix): StreamPrefix,
) -> Result<Response, ApiError> {
    Ok(ok(c.monitoring().describe_stream(&prefix).await?))
}

/// `GET /coord/v1/streams/{p}/history?minutes=`: lag and rates over the last minutes.
pub async fn stream_history(
    State(c): Coord,
    StreamPrefix(prefix): StreamPrefix,
    query: Result<Query<BTreeMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(params) =
        query.map_err(|e| ApiError::invalid(format!("query string: {}", e.body_text())))?;
    let minutes = crate::services::describe::history_minutes(params.get("minutes"))?;
    Ok(ok(c.monitoring().stream_history(&prefix, minutes).await?))
}

pub async fn offsets(State(c): Coord, Group(name): Group) -> Result<Response, ApiError> {
    Ok(ok(c.monitoring().offsets(&name).await?))
}

/// `GET …/shards/{shard_index}/messages?direction=&cursor=&limit=`: one page of a shard's records.
pub async fn shard_messages(
    State(c): Coord,
    ShardPath(name, shard): ShardPath,
    query: Result<Query<BTreeMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(params) =
        query.map_err(|e| ApiError::invalid(format!("query string: {}", e.body_text())))?;
    let page = crate::services::messages::PageQuery::parse(&params)?;
    Ok(ok(c
        .monitoring()
        .shard_messages(&name, shard, &page)
        .await?))
}

/// `GET …/shards/{i}/pending?consumer=&count=&cursor=`: one page of the group's pending entries on the shard.
pub async fn shard_pending(
    State(c): Coord,
    ShardPath(name, shard): ShardPath,
    query: Result<Query<BTreeMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(params) =
        query.map_err(|e| ApiError::invalid(format!("query string: {}", e.body_text())))?;
    let query = crate::services::messages::pending::PendingQuery::parse(&params)?;
    Ok(ok(c
        .monitoring()
        .shard_pending(&name, shard, &query)
        .await?))
}

/// `GET …/groups/{g}/messages?direction=&cursor=&limit=&fromId=&fromTime=&field=&search=&scanLimit=&scanMaxBytes=`:
/// every shard's records merged by time, one page (or a bounded search over every shard).
pub async fn merged_messages(
    State(c): Coord,
    Group(name): Group,
    query: Result<Query<BTreeMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(params) =
        query.map_err(|e| ApiError::invalid(format!("query string: {}", e.body_text())))?;
    Ok(ok(c.monitoring().merged_messages(&name, &params).await?))
}

/// Parses `observedMetadataVersion` (optional, an integer in `0..=2^53-1`).
fn observed_version(params: &BTreeMap<String, String>) -> Result<Option<i64>, ApiError> {
    match params.get("observedMetadataVersion") {
        None => Ok(None),
        Some(raw) => match raw.trim().parse::<i64>() {
            Ok(v) if v >= 0 => Ok(Some(rsc_protocol::validate::validate_observed(
                "observedMetadataVersion",
                v,
                0,
            )?)),
            _ => Err(ApiError::invalid(format!(
                "observedMetadataVersion: {raw:?} is not a non-negative integer (the highest metadataVersion \
                 this producer has seen)"
            ))),
        },
    }
}

/// `GET …/producer-routing[?observedMetadataVersion=N]`. Whether the observation may raise a rollback
/// suspicion depends on the caller's roles (`durability::may_raise_suspicion`). A bad group name counts as
/// a failed routing request, like every other refusal after the query was read.
pub async fn producer_routing(
    State(c): Coord,
    method: axum::http::Method,
    principal: Option<Extension<Arc<Principal>>>,
    addr: Option<Extension<crate::security::guard::ClientAddr>>,
    group: Result<Group, ApiError>,
    query: Result<Query<BTreeMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let principal = principal.as_ref().map(|Extension(p)| &**p);
    let Query(params) =
        query.map_err(|e| ApiError::invalid(format!("query string: {}", e.body_text())))?;
    let observed = observed_version(&params)?;
    let reader = super::quiesce::routing_reader(&params, principal, addr.as_ref().map(|a| &a.0))?;
    let Group(name) = group
        .inspect_err(|_| crate::observability::stats::Stats::bump(&c.stats().routing_error))?;
    if let Some(observed) = observed
        && let Err(e) = c
            .durability()
            .check_producer_observation(&name, observed, principal)
            .await
    {
        crate::observability::stats::Stats::bump(&c.stats().routing_error);
        return Err(e.into());
    }
    // Seen before routing is read, so a scale's switch decision made after its quiesce flag was set counts
    // this reader (reshard/quiesce.rs). A HEAD only probes the route: no producer behind it.
    // Only producers count: a principal with MEMBER (or ADMIN); a READ caller's routing reads (a dashboard,
    // an operator) register no producer that a scale would wait for (issue #32, finding 7).
    let producer = principal.is_none_or(|p| {
        use crate::security::roles::Role;
        p.roles.contains(Role::Member) || p.roles.contains(Role::Admin)
    });
    if method != axum::http::Method::HEAD && producer {
        c.resharding()
            .note_producer_seen(
                &name.stream_prefix,
                &reader,
                principal.map(|p| p.username.as_str()),
            )
            .await;
    }
    let routing = c.admin().producer_routing(&name).await?;
    Ok((StatusCode::OK, axum::Json(routing)).into_response())
}

/// `POST …/durability/dismiss`: WRITE, audited (`DISMISS_ROLLBACK_SUSPICION`).
pub async fn dismiss_suspicion(
    State(c): Coord,
    principal: Option<Extension<Arc<Principal>>>,
    Group(name): Group,
    AdminJson(req): AdminJson<DismissSuspicionRequest>,
) -> Result<Response, ApiError> {
    let who = principal
        .as_ref()
        .map_or("anonymous", |Extension(p)| p.username.as_str());
    Ok(ok(c
        .durability()
        .dismiss_suspicion(&name, &req, who)
        .await?))
}

/// `POST …/recreate`: WRITE, audited.
pub async fn recreate_group(
    State(c): Coord,
    Group(name): Group,
    AdminJson(req): AdminJson<RecreateGroupRequest>,
) -> Result<Response, ApiError> {
    Ok(ok(c.durability().recreate_group(&name, &req).await?))
}
