//! `ApiError`: a typed error that renders as the contract's JSON error body with the right HTTP status.
//!
//! Every failure an endpoint can meet is mapped here, so no handler builds a response by hand and nothing
//! ever answers a bare 500: unexpected store failures become 503 `REDIS_UNAVAILABLE` (retry later), and
//! unreadable metadata fails closed with 409 `METADATA_CORRUPT`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rsc_protocol::errors::{ErrorBody, ErrorCode};
use rsc_protocol::validate::ValidationError;
use rsc_store::StoreError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::InvalidRequest, message)
    }

    pub fn group_not_found(p: &str, g: &str) -> Self {
        ApiError::new(
            ErrorCode::GroupNotFound,
            format!(
                "consumer group {g:?} of stream {p:?} does not exist; create it with POST /coord/v1/streams/{p}"
            ),
        )
    }

    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl From<ValidationError> for ApiError {
    fn from(e: ValidationError) -> Self {
        ApiError::invalid(e.to_string())
    }
}

/// The text of a store error as raw Redis calls reported it: for a failed command, the Redis error
/// itself (without the store's "Redis command failed" prefix), so messages read as they always did.
pub fn store_error_text(e: &StoreError) -> String {
    match e {
        StoreError::Redis(inner) => inner.to_string(),
        other => other.to_string(),
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::Corrupt { .. }
            | StoreError::UnknownSchema { .. }
            | StoreError::UnknownLayout { .. } => ApiError::new(
                ErrorCode::MetadataCorrupt,
                format!(
                    "{e}; the group fails closed until its metadata key is restored from backup"
                ),
            ),
            _ => ApiError::new(
                ErrorCode::RedisUnavailable,
                format!("Redis is unavailable: {e}; retry later"),
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = ErrorBody::new(self.code, self.message);
        let mut resp = (status, axum::Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"redis-stream-coordinator\""),
            );
        }
        resp
    }
}
