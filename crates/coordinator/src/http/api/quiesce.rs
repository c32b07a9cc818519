//! The producer side of a scale's producer quiesce: `POST /coord/v1/streams/{p}/producers/quiesced` (a
//! producer says it has stopped publishing for a resharding), and who a routing fetch is from (its
//! `producerId` query parameter, or for clients that send none, their principal and address).

use super::extract::{AdminJson, StreamPrefix};
use crate::http::error::ApiError;
use crate::runtime::coordinator::Coordinator;
use crate::security::guard::ClientAddr;
use crate::security::principal::Principal;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rsc_protocol::wire::quiesce::ProducerQuiescedRequest;
use std::collections::BTreeMap;
use std::sync::Arc;

/// `POST /coord/v1/streams/{p}/producers/quiesced`: MEMBER (producers hold it; a READ caller cannot fake a
/// producer's report), and only from the principal whose routing reads registered the producer id; not
/// audited.
pub async fn producer_quiesced(
    State(c): State<Arc<Coordinator>>,
    principal: Option<axum::Extension<Arc<Principal>>>,
    StreamPrefix(prefix): StreamPrefix,
    AdminJson(req): AdminJson<ProducerQuiescedRequest>,
) -> Result<Response, ApiError> {
    let principal = principal.as_ref().map(|axum::Extension(p)| &**p);
    let answer = c
        .resharding()
        .producer_quiesced(&prefix, &req, principal)
        .await?;
    Ok((StatusCode::OK, axum::Json(answer)).into_response())
}

/// Who fetched routing: the `producerId` it sent (checked), else `unidentified:<principal>@<address>` so
/// that a client that ignores quiesce is still named in the migration view and the audit.
pub fn routing_reader(
    params: &BTreeMap<String, String>,
    principal: Option<&Principal>,
    addr: Option<&ClientAddr>,
) -> Result<String, ApiError> {
    if let Some(id) = params.get("producerId") {
        crate::services::reshard::validate_producer_id("producerId", id)?;
        return Ok(id.clone());
    }
    let who = principal.map_or("anonymous", |p| p.username.as_str());
    let addr = addr.map_or("unknown", |a| a.0.as_str());
    let id: String = format!("unidentified:{who}@{addr}")
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .take(200)
        .collect();
    Ok(id)
}
