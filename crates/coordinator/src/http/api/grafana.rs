//! Handlers of the Grafana data routes (`/coord/v1/monitoring/grafana/*`, READ): read the query, apply the
//! caller's stream scopes (rows of other streams are left out; naming one in `streamPrefix` is 403), and
//! answer the rows `crate::observability::grafana` builds as a bare JSON array.

use crate::domain_error::{CoordError, Forbidden};
use crate::http::error::ApiError;
use crate::observability::grafana::{self, Params};
use crate::runtime::coordinator::Coordinator;
use crate::security::principal::Principal;
use axum::Extension;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

type Coord = State<Arc<Coordinator>>;
type Caller = Option<Extension<Arc<Principal>>>;
type RawQuery = Result<Query<Params>, QueryRejection>;

/// The query, and a visibility check from the caller's scopes; a `streamPrefix` outside them is refused.
fn prepare(
    principal: &Caller,
    query: RawQuery,
) -> Result<(Params, impl Fn(&str) -> bool + Send + Sync), ApiError> {
    let Query(params) =
        query.map_err(|e| ApiError::invalid(format!("query string: {}", e.body_text())))?;
    let scopes = principal.as_ref().map(|Extension(p)| p.scopes.clone());
    let visible = move |prefix: &str| scopes.as_ref().is_none_or(|s| s.allows(prefix));
    if let Some(p) = grafana::param(&params, "streamPrefix")
        && !visible(p)
    {
        return Err(CoordError::from(Forbidden::OutsideScopes {
            stream: p.to_owned(),
        })
        .into());
    }
    Ok((params, visible))
}

fn rows<T: serde::Serialize>(rows: Vec<T>) -> Response {
    (StatusCode::OK, axum::Json(rows)).into_response()
}

pub async fn groups(State(c): Coord, who: Caller, q: RawQuery) -> Result<Response, ApiError> {
    let (params, visible) = prepare(&who, q)?;
    let names = grafana::filtered(&c, &visible, &params).await?;
    Ok(rows(grafana::group_rows(&c, &names).await?))
}

pub async fn stream_options(
    State(c): Coord,
    who: Caller,
    q: RawQuery,
) -> Result<Response, ApiError> {
    let (_, visible) = prepare(&who, q)?;
    Ok(rows(grafana::stream_options(&c, &visible).await?))
}

pub async fn group_options(
    State(c): Coord,
    who: Caller,
    q: RawQuery,
) -> Result<Response, ApiError> {
    let (params, visible) = prepare(&who, q)?;
    Ok(rows(grafana::group_options(&c, &visible, &params).await?))
}

pub async fn shard_options(
    State(c): Coord,
    who: Caller,
    q: RawQuery,
) -> Result<Response, ApiError> {
    let (params, _) = prepare(&who, q)?;
    Ok(rows(grafana::shard_options(&c, &params).await?))
}

pub async fn members(State(c): Coord, who: Caller, q: RawQuery) -> Result<Response, ApiError> {
    let (params, _) = prepare(&who, q)?;
    match grafana::one_group(&params)? {
        None => Ok(rows(Vec::<grafana::GrafanaMemberRow>::new())),
        Some(name) => Ok(rows(grafana::member_rows(&c, &name).await?)),
    }
}

pub async fn shards(State(c): Coord, who: Caller, q: RawQuery) -> Result<Response, ApiError> {
    let (params, visible) = prepare(&who, q)?;
    let names = grafana::filtered(&c, &visible, &params).await?;
    Ok(rows(grafana::shard_rows(&c, &names).await?))
}

pub async fn assignments(State(c): Coord, who: Caller, q: RawQuery) -> Result<Response, ApiError> {
    let (params, visible) = prepare(&who, q)?;
    let names = grafana::filtered(&c, &visible, &params).await?;
    Ok(rows(grafana::assignment_rows(&c, &names).await?))
}

pub async fn messages(State(c): Coord, who: Caller, q: RawQuery) -> Result<Response, ApiError> {
    let (params, _) = prepare(&who, q)?;
    Ok(rows(grafana::message_rows(&c, &params).await?))
}
