//! The guard: the one middleware every route of the table passes through, driven by the route's declared
//! `Access` and `audit_action` (so a route cannot exist without protection).
//!
//! For every route: read or generate the request id (echoed as `X-Request-Id`), resolve the client address,
//! refuse a browser's cross-site mutation (403, `browser.rs`). Then, unless the route is public: authenticate
//! (401; the Basic challenge only to a request that used Basic), check roles (403), check the principal's
//! stream scopes against the path's stream prefix (403), and for admin mutations count the rate limits (429).
//! Every route: a body must be `application/json` (415).
//! Audited routes (admin mutations) additionally buffer the body to fingerprint it and to read
//! `requestedBy`/`reason`, and write exactly one audit record — success or any rejection — before the
//! response leaves.

use super::Security;
use super::audit::{self, AuditRecord, BodyMeta};
use super::authn::AuthFailure;
use super::config::ApiConfig;
use super::principal::Principal;
use super::request_id;
use super::tokens::hex;
use crate::http::error::ApiError;
use crate::security::access::{Access, MatchedRoute};
use axum::body::Body;
use axum::extract::{ConnectInfo, FromRequestParts, RawPathParams, Request};
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

/// The roles that grant `access`, in words (403 messages and the OpenAPI document's descriptions).
pub fn needed_roles(access: Access) -> &'static str {
    match access {
        Access::Public | Access::Authenticated => "any role",
        Access::Read => "READ (or WRITE, MONITOR, ADMIN)",
        Access::Write => "WRITE (or ADMIN)",
        Access::Member => "MEMBER (or ADMIN)",
        Access::DataRead => "DATA_READ (or ADMIN): record payloads are not monitoring data",
    }
}

fn forbidden(message: String) -> Response {
    ApiError::new(ErrorCode::Forbidden, message).into_response()
}

/// Runs the guard for a request already resolved to a route of the table (the API's edge middleware calls it
/// with the route's [`MatchedRoute`] attached), then the handler behind `next` if the request may pass.
pub async fn guard(sec: &Security, req: Request, next: Next) -> Response {
    let started = Instant::now();
    // Fail closed: a request that did not resolve to a route of the table never reaches a handler (the
    // edge refuses it first; this is the second lock on the same door).
    let Some(route) = req.extensions().get::<MatchedRoute>().cloned() else {
        return ApiError::new(
            ErrorCode::NotFound,
            format!("no route for {} {}", req.method(), req.uri().path()),
        )
        .into_response();
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
    let used_basic = super::browser::uses_basic(req.headers());
    let has_body = {
        use axum::body::HttpBody;
        let body = req.body();
        !(body.is_end_stream() || body.size_hint().exact() == Some(0))
    };
    let (mut parts, body) = req.into_parts();
    let target = target_of(&mut parts).await;
    parts.extensions.insert(ClientAddr(client.clone()));
    parts.extensions.insert(RequestId(echo.clone()));
    let ctx = Ctx {
        sec,
        route: &route,
        target: &target,
        client: &client,
        request_id: &echo,
        started,
    };
    // Authentication and authorisation come first, before any body is read or any record is written.
    let checked = match id {
        Err(e) => Err(Refusal {
            response: e.into_response(),
            principal: None,
            unchecked: false,
        }),
        // A browser's cross-site mutation is refused before anything else (issue #32, finding 1); a body
        // that is not JSON only after authentication, so an anonymous caller learns nothing from it.
        Ok(_) => match super::browser::check_same_origin(&parts.method, &parts.headers) {
            Err(e) => Err(Refusal::new(e.into_response(), None)),
            Ok(()) => match authorize(ctx, &parts).await {
                Ok(principal) => super::browser::check_body_type(has_body, &parts.headers)
                    .map(|()| principal.clone())
                    .map_err(|e| Refusal::new(e.into_response(), principal.as_ref())),
                Err(refusal) => Err(refusal),
            },
        },
    };
    let mut resp = match checked {
        Err(refusal) if refusal.unchecked => {
            parts.extensions.insert(CredentialsUnchecked);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(refusal) => {
            if route.audit_action.is_some() {
                let (resp, record) =
                    ctx.record(&parts, refusal.response, refusal.principal.as_deref(), None);
                sec.audit.rejected(record).await;
                resp
            } else {
                refusal.response
            }
        }
        Ok(principal) => {
            if let Some(p) = &principal {
                parts.extensions.insert(p.clone());
            }
            match route.audit_action {
                None => next.run(Request::from_parts(parts, body)).await,
                Some(LOGIN_ACTION) => login_audited(ctx, parts, body, next).await,
                Some(_) => audited(ctx, principal, parts, body, next).await,
            }
        }
    };
    super::browser::challenge(used_basic, &mut resp);
    // No answer is ever sniffed into another media type (a JSON body read as HTML).
    resp.headers_mut()
        .entry(header::X_CONTENT_TYPE_OPTIONS)
        .or_insert(HeaderValue::from_static("nosniff"));
    if let Ok(v) = HeaderValue::from_str(&echo) {
        resp.headers_mut().insert(request_id::HEADER, v);
    }
    resp
}

/// The audit action of sign-ins: recorded from what the login handler reports, never from its body.
pub const LOGIN_ACTION: &str = "LOGIN";

/// What the login handler reports to the guard (as a response extension) for the audit record.
#[derive(Debug, Clone)]
pub struct LoginAttempt {
    /// The username the attempt named, if any.
    pub username: Option<String>,
    /// The principal that signed in, on success.
    pub principal: Option<Arc<Principal>>,
    /// The user's oldest tokens this sign-in revoked to stay within `max-tokens-per-user` (audited as
    /// `requestSummary.revokedOldestTokens`: another client holding one of them now gets 401).
    pub revoked_oldest: usize,
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
    request_id: &'a str,
    started: Instant,
}

/// A request refused before its handler: the response, and who it was if authentication succeeded.
struct Refusal {
    response: Response,
    principal: Option<Arc<Principal>>,
    /// The credentials could not be checked because Redis is unreachable, on a route that answers anyway
    /// ([`ANSWERS_WHILE_REDIS_IS_DOWN`]): its handler runs with [`CredentialsUnchecked`] instead.
    unchecked: bool,
}

/// Routes that answer while Redis is down even though credentials cannot be checked then (bearer tokens and
/// the sign-in throttle live in Redis): health and metrics, so that a monitor sees `DOWN` and `redis_up 0`
/// instead of a 503. Their handlers then answer only what `/readyz` already tells anyone: no group data.
pub const ANSWERS_WHILE_REDIS_IS_DOWN: [&str; 2] = ["getCoordinatorHealth", "getPrometheusMetrics"];

/// Request extension: the caller's credentials could not be checked (Redis unreachable); the handler must
/// answer nothing beyond liveness and health status.
#[derive(Debug, Clone, Copy)]
pub struct CredentialsUnchecked;

impl Refusal {
    fn new(response: Response, principal: Option<&Arc<Principal>>) -> Self {
        Refusal {
            response,
            principal: principal.cloned(),
            unchecked: false,
        }
    }
}

/// Authentication, roles, scopes and rate limits. `Ok(None)` for a public route (nobody to name).
async fn authorize(ctx: Ctx<'_>, parts: &Parts) -> Result<Option<Arc<Principal>>, Refusal> {
    let sec = ctx.sec;
    let access = effective_access(ctx.route.access, &sec.config);
    if access == Access::Public {
        return Ok(None);
    }
    let principal = match sec.authenticate(&parts.headers, ctx.client).await {
        Ok(p) => p,
        Err(AuthFailure::Unavailable(e))
            if ANSWERS_WHILE_REDIS_IS_DOWN.contains(&ctx.route.operation_id) =>
        {
            let mut refusal = Refusal::new(AuthFailure::Unavailable(e).into_response(), None);
            refusal.unchecked = true;
            return Err(refusal);
        }
        Err(f) => return Err(Refusal::new(f.into_response(), None)),
    };
    if !principal.roles.satisfies(access) {
        return Err(Refusal::new(
            forbidden(format!(
                "{} needs {}; {:?} has {}",
                ctx.route.operation_id,
                needed_roles(access),
                principal.username,
                principal.roles.names().join(", ")
            )),
            Some(&principal),
        ));
    }
    if principal.scopes.is_restricted() {
        let allowed = match &ctx.target.stream_prefix {
            Some(prefix) => principal.scopes.allows(prefix),
            None => !matches!(access, Access::Write | Access::Member),
        };
        if !allowed {
            return Err(Refusal::new(
                forbidden(format!(
                    "{:?} may only touch streams matching {}; this request is about {}",
                    principal.username,
                    principal.scopes.describe().join(", "),
                    ctx.target
                        .stream_prefix
                        .as_deref()
                        .map_or_else(|| "no single stream".to_owned(), |s| format!("{s:?}"))
                )),
                Some(&principal),
            ));
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
            Err(e) => {
                return Err(Refusal::new(
                    ApiError::from(e).into_response(),
                    Some(&principal),
                ));
            }
            Ok(Err(limited)) => {
                return Err(Refusal::new(limited.into_response(), Some(&principal)));
            }
            Ok(Ok(())) => {}
        }
    }
    Ok(Some(principal))
}

/// An authorised admin mutation: buffers the body (to fingerprint it and read `requestedBy`/`reason`), runs
/// the handler, and writes the one audit record before the response leaves.
async fn audited(
    ctx: Ctx<'_>,
    principal: Option<Arc<Principal>>,
    parts: Parts,
    body: Body,
    next: Next,
) -> Response {
    let head = parts.clone_head();
    // The route's own limit, the one its body extractor applies (`access::BodyLimit`).
    let limit = ctx.route.body_limit;
    let (resp, body_facts) = match axum::body::to_bytes(body, limit.max_bytes).await {
        Err(e) if crate::security::access::is_body_timeout(&e) => (
            crate::security::access::body_timeout().into_response(),
            None,
        ),
        Err(_) => (limit.too_large().into_response(), None),
        Ok(bytes) => {
            let facts = (hex(&digest_bytes(&bytes)), BodyMeta::parse(&bytes));
            let resp = next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
            (resp, Some(facts))
        }
    };
    let (resp, record) = ctx.record(&head, resp, principal.as_deref(), body_facts);
    ctx.sec.audit.write(&record).await;
    resp
}

/// A sign-in: a success is recorded in the sign-in stream (naming who signed in, folded per address and
/// principal), a failure is folded like any refused request. The body (it holds a password) is neither read nor fingerprinted here.
async fn login_audited(ctx: Ctx<'_>, parts: Parts, body: Body, next: Next) -> Response {
    let head = parts.clone_head();
    let resp = next.run(Request::from_parts(parts, body)).await;
    let attempt = resp.extensions().get::<LoginAttempt>().cloned();
    let principal = attempt.as_ref().and_then(|a| a.principal.clone());
    let (resp, mut record) = ctx.record(&head, resp, principal.as_deref(), None);
    if resp.status().is_success() {
        let revoked = attempt
            .as_ref()
            .map(|a| a.revoked_oldest)
            .filter(|n| *n > 0);
        if let Some(n) = revoked {
            record
                .request_summary
                .insert("revokedOldestTokens".to_owned(), n.into());
        }
        // Sign-ins have a stream of their own, folded per address and principal: however many there are,
        // they never push an admin mutation's record out (issue #32, finding 4).
        ctx.sec.audit.signed_in(record, revoked.is_some()).await;
    } else {
        record.attempted_username = attempt
            .and_then(|a| a.username)
            .map(|u| ctx.sec.attempted_username(&u));
        ctx.sec.audit.rejected(record).await;
    }
    resp
}

/// Head of a request without its body, kept for the audit record after the request moved to the handler.
trait CloneHead {
    fn clone_head(&self) -> Parts;
}

impl CloneHead for Parts {
    fn clone_head(&self) -> Parts {
        let mut builder = axum::http::Request::builder()
            .method(self.method.clone())
            .uri(self.uri.clone())
            .version(self.version);
        if let Some(h) = builder.headers_mut()
            && let Some(ua) = self.headers.get(header::USER_AGENT)
        {
            h.insert(header::USER_AGENT, ua.clone());
        }
        builder
            .body(())
            .map(|r| r.into_parts().0)
            .unwrap_or_else(|_| axum::http::Request::new(()).into_parts().0)
    }
}

impl Ctx<'_> {
    /// The audit record of this request with the given response (whose error code it reads from the
    /// response's extensions).
    fn record(
        &self,
        head: &Parts,
        resp: Response,
        principal: Option<&Principal>,
        body_facts: Option<(String, BodyMeta)>,
    ) -> (Response, AuditRecord) {
        let error_code = error_code_of(&resp);
        let status = resp.status().as_u16();
        let now = super::now_ms();
        let user_agent = head
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(256).collect::<String>());
        let (sha, meta) = match body_facts {
            Some((sha, meta)) => (Some(sha), meta),
            None => (None, BodyMeta::default()),
        };
        let record = AuditRecord {
            id: None,
            timestamp: crate::runtime::clock::iso_ms(now),
            timestamp_ms: now,
            coordinator_id: self.sec.coordinator_id.clone(),
            action: resp
                .extensions()
                .get::<audit::AuditAction>()
                .map(|a| a.0)
                .or(self.route.audit_action)
                .unwrap_or("-")
                .to_owned(),
            outcome: audit::outcome(status).to_owned(),
            status,
            error_code,
            principal: principal.map(|p| p.username.clone()),
            roles: principal
                .map(|p| p.roles.names().iter().map(|s| (*s).to_owned()).collect())
                .unwrap_or_default(),
            auth_method: principal.map(|p| p.method.as_str().to_owned()),
            method: head.method.to_string(),
            route: self.route.path.to_owned(),
            path: head.uri.path().to_owned(),
            query_string: audit::known_query(head.uri.query()),
            request_id: self.request_id.to_owned(),
            request_body_sha256: sha,
            client_address: self.client.to_owned(),
            user_agent,
            duration_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            stream_prefix: self.target.stream_prefix.clone(),
            consumer_group: self.target.consumer_group.clone(),
            resharding_id: self.target.resharding_id.clone(),
            requested_by: meta.requested_by,
            reason: meta.reason,
            request_summary: meta.summary,
            result: resp
                .extensions()
                .get::<audit::AuditResult>()
                .map(|r| r.0.clone())
                .unwrap_or_default(),
            attempted_username: None,
            repeats: None,
        };
        (resp, record)
    }
}

fn digest_bytes(bytes: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).into()
}

/// The `errorCode` of a response, as the edge attached it (`ApiError` inserts its [`ErrorCode`] as a response
/// extension): the body is never read or parsed for it.
fn error_code_of(resp: &Response) -> Option<String> {
    resp.extensions().get::<ErrorCode>().map(|c| c.as_str())
}

#[cfg(test)]
mod tests {
    use super::error_code_of;
    use axum::body::Body;
    use axum::response::Response;
    use rsc_protocol::errors::ErrorCode;

    #[test]
    fn the_audited_code_comes_from_the_extension_not_the_body() {
        // A body that is not JSON at all, carrying the extension: recorded with its code.
        let mut plain = Response::new(Body::from("not json"));
        *plain.status_mut() = axum::http::StatusCode::SERVICE_UNAVAILABLE;
        plain
            .extensions_mut()
            .insert(ErrorCode::CoordinatorTerminating);
        assert_eq!(
            error_code_of(&plain).as_deref(),
            Some("COORDINATOR_TERMINATING")
        );
        // A JSON error body without the extension: its `errorCode` is not read.
        let mut json = Response::new(Body::from(
            r#"{"status":"FORBIDDEN","errorCode":"FORBIDDEN","message":"no"}"#,
        ));
        *json.status_mut() = axum::http::StatusCode::FORBIDDEN;
        assert_eq!(error_code_of(&json), None);
    }
}
