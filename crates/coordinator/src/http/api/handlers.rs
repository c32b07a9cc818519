//! HTTP handlers: thin adapters from extracted, validated input to `Coordinator` operations.

use super::extract::{AdminJson, Group, Json, MemberPath, MigrationPath, StreamPrefix};
use crate::domain_error::CoordError;
use crate::http::error::ApiError;
use crate::runtime::coordinator::Coordinator;
use crate::security::audit::{AuditAction, AuditResult};
use crate::security::principal::Principal;
use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rsc_group::model::MigrationState;
use rsc_protocol::validate;
use rsc_protocol::wire::monitoring::{GroupList, MemberList};
use rsc_protocol::wire::offsets::OffsetResetRequest;
use rsc_protocol::wire::{
    CreateStreamRequest, DeleteGroupRequest, HeartbeatRequest, MigrationActionRequest,
    OrderingRequest, ScaleRequest,
};
use serde::Serialize;
use std::sync::Arc;

type Coord = State<Arc<Coordinator>>;

fn ok<T: serde::Serialize>(status: StatusCode, body: T) -> Response {
    (status, axum::Json(body)).into_response()
}

pub async fn create_stream(
    State(c): Coord,
    StreamPrefix(prefix): StreamPrefix,
    AdminJson(req): AdminJson<CreateStreamRequest>,
) -> Result<Response, ApiError> {
    Ok(ok(
        StatusCode::CREATED,
        c.admin().create_stream(&prefix, &req).await?,
    ))
}

pub async fn create_group(
    State(c): Coord,
    Group(name): Group,
    AdminJson(req): AdminJson<CreateStreamRequest>,
) -> Result<Response, ApiError> {
    // The first group of a prefix creates its stream (or is refused as a stream create would be): the audit
    // says so, whichever route was used.
    let (mut resp, stream_create) = match c.admin().create_group(&name, &req).await {
        Ok((group, created)) => (ok(StatusCode::CREATED, group), created),
        Err(e) => {
            let stream_create = matches!(e, CoordError::StreamExists(_));
            (ApiError::from(e).into_response(), stream_create)
        }
    };
    if stream_create {
        resp.extensions_mut().insert(AuditAction("CREATE_STREAM"));
    }
    Ok(resp)
}

pub async fn get_group(State(c): Coord, Group(name): Group) -> Result<Response, ApiError> {
    Ok(ok(StatusCode::OK, c.admin().get_group(&name).await?))
}

pub async fn delete_group(
    State(c): Coord,
    Group(name): Group,
    AdminJson(req): AdminJson<DeleteGroupRequest>,
) -> Result<Response, ApiError> {
    Ok(ok(
        StatusCode::OK,
        c.admin().delete_group(&name, &req).await?,
    ))
}

/// A heartbeat; the principal is absent when heartbeats are served without authentication.
pub async fn heartbeat(
    State(c): Coord,
    principal: Option<Extension<Arc<Principal>>>,
    MemberPath(name, member_id): MemberPath,
    Json(req): Json<HeartbeatRequest>,
) -> Result<Response, ApiError> {
    validate::validate_heartbeat_request(&req)?;
    let principal = principal.as_ref().map(|Extension(p)| &**p);
    Ok(ok(
        StatusCode::OK,
        c.heartbeats()
            .heartbeat(&name, &member_id, &req, principal)
            .await?,
    ))
}

/// Health; while Redis is down it answers even when the caller's credentials cannot be checked (then naming
/// no group), so that a monitor reads `DOWN` rather than a 503.
/// A principal scoped to some streams sees only their suspected groups (issue #32, Low).
pub async fn health(
    State(c): Coord,
    unchecked: Option<Extension<crate::security::guard::CredentialsUnchecked>>,
    principal: Option<Extension<Arc<Principal>>>,
) -> Response {
    let view = if unchecked.is_some() {
        c.monitoring().health_without_credentials().await
    } else {
        let scopes = principal.map(|Extension(p)| p.scopes.clone());
        c.monitoring()
            .health_view_for(|prefix| scopes.as_ref().is_none_or(|s| s.allows(prefix)))
            .await
    };
    ok(StatusCode::OK, view)
}

pub async fn compatibility(State(c): Coord) -> Response {
    ok(StatusCode::OK, c.monitoring().compatibility().await)
}

/// Every live group the caller may see: a principal scoped to some stream prefixes sees only those.
pub async fn list_groups(
    State(c): Coord,
    principal: Option<Extension<Arc<Principal>>>,
) -> Result<Response, ApiError> {
    let scopes = principal.map(|Extension(p)| p.scopes.clone());
    let visible = |prefix: &str| scopes.as_ref().is_none_or(|s| s.allows(prefix));
    Ok(ok(
        StatusCode::OK,
        GroupList {
            groups: c.admin().list_groups(visible).await?,
        },
    ))
}

pub async fn members(State(c): Coord, Group(name): Group) -> Result<Response, ApiError> {
    Ok(ok(
        StatusCode::OK,
        MemberList {
            members: c.monitoring().members(&name).await?,
        },
    ))
}

pub async fn assignments(State(c): Coord, Group(name): Group) -> Result<Response, ApiError> {
    Ok(ok(StatusCode::OK, c.monitoring().assignments(&name).await?))
}

/// `GET /`: what this server is and where to go next.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Index {
    name: &'static str,
    description: &'static str,
    version: &'static str,
    /// The deployment this replica belongs to (random, shared by its replicas; no secret): clients key
    /// stored logins by it. Absent while Redis cannot be reached.
    #[serde(rename = "clusterId", skip_serializing_if = "Option::is_none")]
    cluster_id: Option<String>,
    links: IndexLinks,
    authentication: &'static str,
    documentation: &'static str,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct IndexLinks {
    liveness: &'static str,
    readiness: &'static str,
    login: &'static str,
    health: &'static str,
    groups: &'static str,
    metrics: &'static str,
}

/// The answer of the probes (`/healthz`, and `/readyz` with 200 or 503).
#[derive(Serialize, utoipa::ToSchema)]
pub struct ProbeStatus {
    #[schema(inline)]
    status: ProbeState,
}

/// UP (`/healthz`), READY (`/readyz` 200) or NOT_READY (`/readyz` 503: terminating or Redis unreachable).
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ProbeState {
    Up,
    Ready,
    NotReady,
}

/// `GET /`: what this server is and where to go next. Public, so it says nothing the route list of docs/api.md
/// does not (no coordinator id, no Redis, no groups) beyond the deployment's random cluster id, which lets a
/// client tell that two URLs are replicas of one deployment.
pub async fn index(State(c): Coord) -> Response {
    ok(
        StatusCode::OK,
        Index {
            name: "rsc",
            description: "Redis Stream Coordinator (coord/v1)",
            version: env!("CARGO_PKG_VERSION"),
            cluster_id: c.cluster_id().await,
            links: IndexLinks {
                liveness: "/healthz",
                readiness: "/readyz",
                login: "POST /coord/v1/auth/login",
                health: "/coord/v1/monitoring/health",
                groups: "/coord/v1/monitoring/groups",
                metrics: "/metrics",
            },
            authentication: "every /coord/v1 route except login, and /metrics, need credentials: \
                Authorization: Bearer <accessToken from login> or Basic",
            documentation: "docs/api.md of the rsc source: \"Routes\" lists every route with its access",
        },
    )
}

/// Liveness probe: the process answers. Reveals nothing else.
pub async fn healthz() -> Response {
    ok(
        StatusCode::OK,
        ProbeStatus {
            status: ProbeState::Up,
        },
    )
}

/// Readiness probe: not while terminating, not while Redis is unreachable. Reveals nothing beyond that.
pub async fn readyz(State(c): Coord) -> Response {
    let redis_ok = !c.is_terminating()
        && tokio::time::timeout(std::time::Duration::from_secs(1), c.store().ping())
            .await
            .is_ok_and(|r| r.is_ok());
    if redis_ok {
        ok(
            StatusCode::OK,
            ProbeStatus {
                status: ProbeState::Ready,
            },
        )
    } else {
        ok(
            StatusCode::SERVICE_UNAVAILABLE,
            ProbeStatus {
                status: ProbeState::NotReady,
            },
        )
    }
}

pub async fn scale_stream(
    State(c): Coord,
    StreamPrefix(prefix): StreamPrefix,
    AdminJson(req): AdminJson<ScaleRequest>,
) -> Result<Response, ApiError> {
    Ok(ok(
        StatusCode::ACCEPTED,
        c.resharding().scale_stream(&prefix, &req).await?,
    ))
}

pub async fn set_ordering(
    State(c): Coord,
    StreamPrefix(prefix): StreamPrefix,
    AdminJson(req): AdminJson<OrderingRequest>,
) -> Result<Response, ApiError> {
    Ok(ok(
        StatusCode::OK,
        c.resharding().change_stream_ordering(&prefix, &req).await?,
    ))
}

pub async fn scale_group(
    State(c): Coord,
    Group(name): Group,
    AdminJson(req): AdminJson<ScaleRequest>,
) -> Result<Response, ApiError> {
    Ok(ok(
        StatusCode::ACCEPTED,
        c.resharding().scale_group(&name, &req).await?,
    ))
}

pub async fn get_migration(
    State(c): Coord,
    MigrationPath(name, id): MigrationPath,
) -> Result<Response, ApiError> {
    Ok(ok(
        StatusCode::OK,
        c.resharding().migration_detail(&name, &id).await?,
    ))
}

pub async fn rollback_migration(
    State(c): Coord,
    MigrationPath(name, id): MigrationPath,
    AdminJson(req): AdminJson<MigrationActionRequest>,
) -> Result<Response, ApiError> {
    let m = c
        .resharding()
        .end_migration(&name, &id, &req, MigrationState::RolledBack)
        .await?;
    Ok(ok(StatusCode::ACCEPTED, m))
}

pub async fn force_complete_migration(
    State(c): Coord,
    MigrationPath(name, id): MigrationPath,
    AdminJson(req): AdminJson<MigrationActionRequest>,
) -> Result<Response, ApiError> {
    let m = c
        .resharding()
        .end_migration(&name, &id, &req, MigrationState::ForceCompleted)
        .await?;
    Ok(ok(StatusCode::ACCEPTED, m))
}

/// `POST …/groups/{g}/offsets/reset`: WRITE, audited (`RESET_OFFSETS`); a dry run changes nothing. The
/// audit record's `result` says which shards moved from where to where — also when the reset stopped
/// partway (409 `OFFSET_RESET_INCOMPLETE`, whose body says the same).
pub async fn reset_offsets(
    State(c): Coord,
    Group(name): Group,
    AdminJson(req): AdminJson<OffsetResetRequest>,
) -> Result<Response, ApiError> {
    let (mut resp, result) = match c.admin().reset_offsets(&name, &req).await {
        Ok(done) => {
            let result = done.applied.then(|| reset_audit::applied(&done.shards));
            (ok(StatusCode::OK, done), result)
        }
        Err(CoordError::ResetIncomplete(r)) => {
            let result = reset_audit::incomplete(&r.done);
            let e = ApiError::from(CoordError::ResetIncomplete(r));
            (e.into_response(), Some(result))
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(result) = result {
        resp.extensions_mut().insert(AuditResult(result));
    }
    Ok(resp)
}

/// What an offset reset's audit record keeps of what it did (`AuditRecord::result`).
mod reset_audit {
    use rsc_protocol::wire::offsets::{IncompleteReset, ShardReset};
    use serde_json::{Map, Value, json};

    fn moved(rows: &[ShardReset]) -> Value {
        rows.iter()
            .map(|r| json!({"shard": r.shard_index, "from": r.current_id, "to": r.new_id}))
            .collect()
    }

    /// An applied reset: `shardsMoved`, every shard it set (`from` = `to` for one that stayed).
    pub fn applied(rows: &[ShardReset]) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("shardsMoved".into(), moved(rows));
        m
    }

    /// A reset that stopped partway: `shardsMoved`, `shardInDoubt`, `shardsNotMoved` and the cause.
    pub fn incomplete(d: &IncompleteReset) -> Map<String, Value> {
        let mut m = applied(&d.moved);
        if let Some(r) = &d.in_doubt {
            m.insert(
                "shardInDoubt".into(),
                json!({"shard": r.shard_index, "from": r.current_id, "to": r.new_id}),
            );
        }
        m.insert("shardsNotMoved".into(), json!(d.not_moved));
        m.insert("stoppedBecause".into(), json!(d.cause));
        m
    }
}
