//! Handlers of the security endpoints: `POST /coord/v1/auth/login`, `POST /coord/v1/auth/revoke`,
//! `GET /coord/v1/monitoring/session` and `GET /coord/v1/monitoring/audit`. The logic they call (password
//! checks, token issue and revocation, the audit stream) is in `security`.

use super::extract::RawBody;
use crate::http::error::ApiError;
use crate::security::Security;
use crate::security::audit::AuditFilter;
use crate::security::authn::AuthFailure;
use crate::security::credentials::{self, Credentials};
use crate::security::guard::ClientAddr;
use crate::security::principal::{AuthMethod, Principal};
use crate::security::roles::Role;
use crate::security::tokens;
use axum::Extension;
use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use rsc_protocol::errors::ErrorCode;
use rsc_protocol::wire::auth::{LoginResponse, SessionResponse};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

type Sec = Extension<Arc<Security>>;

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginBody {
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

/// Login: `{username, password}` in the body, or — with no username in the body — Basic credentials in the
/// Authorization header. A password is required: a bearer token cannot mint another (the coord/v1 contract's
/// token exchange is deliberately not offered, so that revoking a token cannot be escaped by minting).
/// Each user has at most `max-tokens-per-user` live tokens; a login beyond it revokes the oldest.
pub async fn login(
    Extension(sec): Sec,
    Extension(ClientAddr(client)): Extension<ClientAddr>,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> Response {
    let parsed: LoginBody = if body.iter().all(u8::is_ascii_whitespace) {
        LoginBody::default()
    } else {
        match super::extract::decode::<LoginBody>(&body) {
            Ok(b) => b,
            Err(e) => return e.into_response(),
        }
    };
    let now = crate::security::now_ms();
    let mut attempted: Option<String> = None;
    let result = match parsed.username.filter(|u| !u.trim().is_empty()) {
        Some(username) => {
            attempted = Some(username.clone());
            let password = parsed.password.unwrap_or_default();
            password_login(&sec, &username, &password, &client).await
        }
        None => match credentials::parse(&headers) {
            Credentials::Basic { username, password } => {
                attempted = Some(username.clone());
                password_login(&sec, &username, &password, &client).await
            }
            Credentials::Bearer(_) => Err(AuthFailure::Unauthorized(
                "log in with a username and password ({\"username\", \"password\"} in the body, or Basic \
                 credentials): a bearer token cannot be exchanged for another"
                    .into(),
            )),
            _ => Err(AuthFailure::Unauthorized(
                "log in with a username and password: send {\"username\", \"password\"} in the body, or Basic \
                 credentials in the Authorization header"
                    .into(),
            )),
        },
    };
    let principal = match result {
        Ok(p) => p,
        Err(f) => return with_attempt(f.into_response(), attempted, None, 0),
    };
    // Signing in again and again (each answered from the credential cache) is refused before a token is
    // issued: a client should reuse its token (issue #32, finding 4).
    match sec.check_login_rate(&principal).await {
        Ok(Ok(())) => {}
        Ok(Err(limited)) => return with_attempt(limited.into_response(), attempted, None, 0),
        Err(e) => return ApiError::from(e).into_response(),
    }
    let (token, expires_ms, revoked_oldest) = match sec.issue_token(&principal, now).await {
        Ok(t) => t,
        Err(e) => return ApiError::from(e).into_response(),
    };
    tracing::info!(user = ?principal.username, client = ?client, "issued an access token");
    // A bearer token is a credential: no cache (browser, proxy) may keep the answer.
    let resp = (
        StatusCode::OK,
        [(
            axum::http::header::CACHE_CONTROL,
            axum::http::HeaderValue::from_static("no-store"),
        )],
        axum::Json(LoginResponse {
            access_token: token,
            token_type: "Bearer".to_owned(),
            expires_at: crate::runtime::clock::iso_ms(expires_ms),
            expires_in_seconds: (expires_ms - now).max(0) / 1000,
            roles: role_names(&principal),
        }),
    )
        .into_response();
    with_attempt(resp, attempted, Some(principal), revoked_oldest)
}

fn role_names(principal: &Principal) -> Vec<String> {
    principal
        .roles
        .names()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// The answer to revoking one token.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Revoked {
    revoked: bool,
}

/// The answer to revoking every token of a user.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevokedAll {
    revoked: bool,
    revoked_count: usize,
    username: String,
}

/// `GET /coord/v1/monitoring/audit`: the records, newest first.
#[derive(Serialize, utoipa::ToSchema)]
pub struct AuditRecords {
    records: Vec<crate::security::audit::AuditRecord>,
}

/// Tells the guard who tried to sign in (for the audit record); the password never leaves this handler.
fn with_attempt(
    mut resp: Response,
    username: Option<String>,
    principal: Option<Arc<Principal>>,
    revoked_oldest: usize,
) -> Response {
    resp.extensions_mut()
        .insert(crate::security::guard::LoginAttempt {
            username,
            principal,
            revoked_oldest,
        });
    resp
}

/// A password login (throttled; see `authn.rs`).
async fn password_login(
    sec: &Security,
    username: &str,
    password: &str,
    client: &str,
) -> Result<Arc<Principal>, AuthFailure> {
    sec.authenticate_password(username, password, client, AuthMethod::Bearer)
        .await
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RevokeBody {
    token: Option<String>,
    #[serde(default)]
    all: bool,
    username: Option<String>,
}

/// Revokes tokens:
/// - `{"token": "rsc_…"}`: that token (holding a token is the right to revoke it);
/// - no body: the caller's own bearer token;
/// - `{"all": true}`: every token of the caller (whichever way it authenticated);
/// - `{"all": true, "username": "x"}`: every token of user `x` — the caller's own, or anyone's for an ADMIN.
///
/// This replica forgets them at once; other replicas stop accepting them within
/// `coordinator.api.credential-cache-ttl`.
pub async fn revoke(
    Extension(sec): Sec,
    Extension(principal): Extension<Arc<Principal>>,
    RawBody(body): RawBody,
) -> Result<Response, ApiError> {
    let parsed: RevokeBody = if body.iter().all(u8::is_ascii_whitespace) {
        RevokeBody::default()
    } else {
        super::extract::decode(&body)?
    };
    if parsed.all {
        if parsed.token.is_some() {
            return Err(ApiError::invalid(
                "token: send either {\"token\": …} or {\"all\": true}, not both",
            ));
        }
        let user = parsed
            .username
            .as_deref()
            .map(str::trim)
            .unwrap_or(&principal.username)
            .to_owned();
        if !crate::security::config::valid_username(&user) {
            return Err(ApiError::invalid(
                "username: must be 1-64 characters of letters, digits, '.', '_', '-' or '@'",
            ));
        }
        if user != principal.username && !principal.roles.contains(Role::Admin) {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "revoking another user's tokens needs ADMIN; {:?} may revoke only its own ({{\"all\": true}})",
                    principal.username
                ),
            ));
        }
        let count = sec.revoke_all_tokens(&user).await?;
        tracing::info!(
            user = ?user,
            by = ?principal.username,
            revoked = count,
            "revoked all access tokens of a user"
        );
        return Ok((
            StatusCode::OK,
            axum::Json(RevokedAll {
                revoked: count > 0,
                revoked_count: count,
                username: user,
            }),
        )
            .into_response());
    }
    if parsed.username.is_some() {
        return Err(ApiError::invalid(
            "username: only with {\"all\": true} (revoke every token of that user)",
        ));
    }
    let digest = match (parsed.token, &principal.token) {
        (Some(t), _) => {
            if !tokens::well_formed(t.trim()) {
                return Err(ApiError::invalid("token: is not an rsc access token"));
            }
            tokens::digest(t.trim())
        }
        (None, Some(own)) => own.digest,
        (None, None) => {
            return Err(ApiError::invalid(
                "token: name the token to revoke ({\"token\": \"rsc_…\"}), call with Authorization: Bearer <token>, \
                 or revoke all of yours with {\"all\": true}",
            ));
        }
    };
    let revoked = sec.revoke_token(&digest).await?;
    Ok((StatusCode::OK, axum::Json(Revoked { revoked })).into_response())
}

/// The caller as the coordinator sees it.
pub async fn session(Extension(principal): Extension<Arc<Principal>>) -> Response {
    (
        StatusCode::OK,
        axum::Json(SessionResponse {
            authenticated: true,
            username: principal.username.clone(),
            roles: role_names(&principal),
            auth_method: principal.method.as_str().to_owned(),
            stream_prefixes: principal.scopes.describe(),
            expires_at: principal
                .token
                .as_ref()
                .map(|t| crate::runtime::clock::iso_ms(t.expires_ms)),
        }),
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditQuery {
    stream_prefix: Option<String>,
    consumer_group: Option<String>,
    principal: Option<String>,
    action: Option<String>,
    outcome: Option<String>,
    /// The `X-Request-Id` of the request the record is about.
    request_id: Option<String>,
    /// ISO-8601 instant or epoch milliseconds (inclusive).
    since: Option<String>,
    until: Option<String>,
    limit: Option<usize>,
}

/// The largest `limit` of an audit page (shared with the OpenAPI document).
pub use rsc_protocol::bounds::MAX_AUDIT_LIMIT;

/// Audit records, newest first, filtered by group, principal, action, outcome and time range. A scoped
/// principal sees only records about its own streams.
pub async fn audit_log(
    Extension(sec): Sec,
    Extension(principal): Extension<Arc<Principal>>,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = query.map_err(|e| {
        ApiError::invalid(format!(
            "query: {}; known parameters: streamPrefix, consumerGroup, principal, action, outcome, requestId, since, until, limit",
            e.body_text()
        ))
    })?;
    let limit = q.limit.unwrap_or(100);
    if limit == 0 || limit > MAX_AUDIT_LIMIT {
        return Err(ApiError::invalid(format!(
            "limit: must be between 1 and {MAX_AUDIT_LIMIT}"
        )));
    }
    let filter = AuditFilter {
        stream_prefix: q.stream_prefix,
        consumer_group: q.consumer_group,
        principal: q.principal,
        action: q.action,
        outcome: q.outcome,
        request_id: q.request_id,
        since_ms: q
            .since
            .as_deref()
            .map(|s| instant("since", s))
            .transpose()?,
        until_ms: q
            .until
            .as_deref()
            .map(|s| instant("until", s))
            .transpose()?,
        limit,
    };
    if let (Some(a), Some(b)) = (filter.since_ms, filter.until_ms)
        && a > b
    {
        return Err(ApiError::invalid("since: must not be after until"));
    }
    let records = sec
        .audit_records(&filter, |r| {
            !principal.scopes.is_restricted()
                || r.stream_prefix
                    .as_deref()
                    .is_some_and(|p| principal.scopes.allows(p))
        })
        .await?;
    Ok((StatusCode::OK, axum::Json(AuditRecords { records })).into_response())
}

fn instant(field: &str, text: &str) -> Result<i64, ApiError> {
    if let Ok(ms) = text.trim().parse::<i64>()
        && ms >= 0
    {
        return Ok(ms);
    }
    time::OffsetDateTime::parse(text.trim(), &time::format_description::well_known::Rfc3339)
        .map(|t| i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(0).max(0))
        .map_err(|_| {
            ApiError::new(
                ErrorCode::InvalidRequest,
                format!("{field}: {text:?} is not an ISO-8601 instant (2026-01-01T00:00:00Z) or epoch milliseconds"),
            )
        })
}
