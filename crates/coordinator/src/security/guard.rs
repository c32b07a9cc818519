//! The guard: the one middleware every route of the table passes through, driven by the route's declared
//! `Access` and `audit_action` (so a route cannot exist without protection).
//!
//! For every route: read or generate the request id (echoed as `X-Request-Id`), resolve the client address.
//! Then, unless the route is public: authenticate (401), check roles (403), check the principal's stream
//! scopes against the path's stream prefix (403), and for admin mutations count the rate limits (429).
//! Audited routes (admin mutations) additionally buffer the body to fingerprint it and to read
//! `requestedBy`/`reason`, and write exactly one audit record — success or any rejection — before the
//! response leaves.

use super::Security;
use super::audit::{self, AuditRecord, BodyMeta};
use super::config::ApiConfig;
use super::principal::Principal;
use super::request_id;
use super::tokens::hex;
use crate::api::MatchedRoute;
use crate::api::extract::MAX_BODY_BYTES;
use crate::api::routes::Access;
use crate::error::ApiError;
use axum::body::Body;
use axum::extract::{ConnectInfo, FromRequestParts, RawPathParams, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rsc_protocol::errors::ErrorCode;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

/// The client address (request extension for handlers).
#[derive(Debug, Clone)]
pub struct ClientAddr(pub String);

/// The request id (request extension for handlers).
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// The group a request is about, from its path parameters.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub stream_prefix: Option<String>,
    pub consumer_group: Option<String>,
    pub resharding_id: Option<String>,
}

/// The access a route needs under this configuration (heartbeats may be configured public).
pub fn effective_access(access: Access, config: &ApiConfig) -> Access {
    match access {
        Access::Member if !config.authenticate_member_api => Access::Public,
        a => a,
    }
}

fn needed_roles(access: Access) -> &'static str {
    match access {
        Access::Public | Access::Authenticated => "any role",
        Access::Read => "READ (or WRITE, MONITOR, ADMIN)",
        Access::Write => "WRITE (or ADMIN)",
        Access::Member => "MEMBER (or ADMIN)",
    }
}

fn forbidden(message: String) -> Response {
    ApiError::new(ErrorCode::Forbidden, message).into_response()
}

pub async fn guard(State(sec): State<Arc<Security>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let Some(route) = req.extensions().get::<MatchedRoute>().cloned() else {
        return next.run(req).await;
    };
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let client = sec.proxies.client_addr(peer, req.headers());
    let id = request_id::read(req.headers());
    let echo = id
        .as_ref()
        .map_or_else(|_| uuid::Uuid::now_v7().to_string(), Clone::clone);
    let (mut parts, body) = req.into_parts();
    let target = target_of(&mut parts).await;
    parts.extensions.insert(ClientAddr(client.clone()));
    parts.extensions.insert(RequestId(echo.clone()));
    let mut resp = match (route.audit_action, id) {
        (Some(action), id) => {
            let ctx = Ctx {
                sec: &sec,
                route: &route,
                target: &target,
                client: &client,
            };
            audited(ctx, action, id.err(), &echo, parts, body, next, started).await
        }
        (None, Err(e)) => e.into_response(),
        (None, Ok(_)) => {
            let ctx = Ctx {
                sec: &sec,
                route: &route,
                target: &target,
                client: &client,
            };
            protect(ctx, Request::from_parts(parts, body), next).await.0
        }
    };
    if let Ok(v) = HeaderValue::from_str(&echo) {
        resp.headers_mut().insert(request_id::HEADER, v);
    }
    resp
}

async fn target_of(parts: &mut Parts) -> Target {
    let mut t = Target::default();
    if let Ok(params) = RawPathParams::from_request_parts(parts, &()).await {
        for (k, v) in params.iter() {
            match k {
                "stream_prefix" => t.stream_prefix = Some(v.to_owned()),
                "consumer_group" => t.consumer_group = Some(v.to_owned()),
                "resharding_id" | "migration_id" => t.resharding_id = Some(v.to_owned()),
                _ => {}
            }
        }
    }
    t
}

#[derive(Clone, Copy)]
struct Ctx<'a> {
    sec: &'a Security,
    route: &'a MatchedRoute,
    target: &'a Target,
    client: &'a str,
}

/// Authentication, roles, scopes and rate limits; then the handler.
async fn protect(ctx: Ctx<'_>, mut req: Request, next: Next) -> (Response, Option<Arc<Principal>>) {
    let sec = ctx.sec;
    let access = effective_access(ctx.route.access, &sec.config);
    if access == Access::Public {
        return (next.run(req).await, None);
    }
    let principal = match sec.authenticate(req.headers(), ctx.client).await {
        Ok(p) => p,
        Err(f) => return (f.into_response(), None),
    };
    let p = Some(principal.clone());
    if !principal.roles.satisfies(access) {
        return (
            forbidden(format!(
                "{} needs {}; {:?} has {}",
                ctx.route.operation_id,
                needed_roles(access),
                principal.username,
                principal.roles.names().join(", ")
            )),
            p,
        );
    }
    if principal.scopes.is_restricted() {
        let allowed = match &ctx.target.stream_prefix {
            Some(prefix) => principal.scopes.allows(prefix),
            None => !matches!(access, Access::Write | Access::Member),
        };
        if !allowed {
            return (
                forbidden(format!(
                    "{:?} may only touch streams matching {}; this request is about {}",
                    principal.username,
                    principal.scopes.describe().join(", "),
                    ctx.target
                        .stream_prefix
                        .as_deref()
                        .map_or_else(|| "no single stream".to_owned(), |s| format!("{s:?}"))
                )),
                p,
            );
        }
    }
    if access == Access::Write {
        let t = ctx.target;
        match sec
            .limits
            .check(
                &principal.username,
                t.stream_prefix.as_deref(),
                t.consumer_group.as_deref(),
            )
            .await
        {
            Err(e) => return (e.into_response(), p),
            Ok(Err(limited)) => return (limited.into_response(), p),
            Ok(Ok(())) => {}
        }
    }
    req.extensions_mut().insert(principal);
    (next.run(req).await, p)
}

#[allow(clippy::too_many_arguments)]
async fn audited(
    ctx: Ctx<'_>,
    action: &'static str,
    bad_request_id: Option<ApiError>,
    request_id: &str,
    parts: Parts,
    body: Body,
    next: Next,
    started: Instant,
) -> Response {
    let method = parts.method.to_string();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().map(str::to_owned);
    let user_agent = parts
        .headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.chars().take(256).collect::<String>());
    let (resp, principal, sha, meta) = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Err(_) => (
            ApiError::new(
                ErrorCode::PayloadTooLarge,
                format!("request body exceeds {MAX_BODY_BYTES} bytes"),
            )
            .into_response(),
            None,
            None,
            BodyMeta::default(),
        ),
        Ok(bytes) => {
            let sha = hex(&digest_bytes(&bytes));
            let meta = BodyMeta::parse(&bytes);
            let (resp, principal) = match bad_request_id {
                Some(e) => (e.into_response(), None),
                None => protect(ctx, Request::from_parts(parts, Body::from(bytes)), next).await,
            };
            (resp, principal, Some(sha), meta)
        }
    };
    let (resp, error_code) = error_code_of(resp).await;
    let status = resp.status().as_u16();
    let now = super::now_ms();
    let record = AuditRecord {
        id: None,
        timestamp: crate::clock::iso_ms(now),
        timestamp_ms: now,
        coordinator_id: ctx.sec.coordinator_id.clone(),
        action: action.to_owned(),
        outcome: audit::outcome(status).to_owned(),
        status,
        error_code,
        principal: principal.as_ref().map(|p| p.username.clone()),
        roles: principal
            .as_ref()
            .map(|p| p.roles.names().iter().map(|s| (*s).to_owned()).collect())
            .unwrap_or_default(),
        auth_method: principal.as_ref().map(|p| p.method.as_str().to_owned()),
        method,
        route: ctx.route.path.to_owned(),
        path,
        query_string: query,
        request_id: request_id.to_owned(),
        request_body_sha256: sha,
        client_address: ctx.client.to_owned(),
        user_agent,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        stream_prefix: ctx.target.stream_prefix.clone(),
        consumer_group: ctx.target.consumer_group.clone(),
        resharding_id: ctx.target.resharding_id.clone(),
        requested_by: meta.requested_by,
        reason: meta.reason,
        request_summary: meta.summary,
    };
    ctx.sec.audit.write(&record).await;
    resp
}

fn digest_bytes(bytes: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).into()
}

/// Reads the `errorCode` of an error response (small JSON bodies), keeping the response intact.
async fn error_code_of(resp: Response) -> (Response, Option<String>) {
    if resp.status().as_u16() < 400 {
        return (resp, None);
    }
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, 64 * 1024)
        .await
        .unwrap_or_default();
    let code = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| {
            v.get("errorCode")
                .and_then(|c| c.as_str())
                .map(str::to_owned)
        });
    (Response::from_parts(parts, Body::from(bytes)), code)
}
