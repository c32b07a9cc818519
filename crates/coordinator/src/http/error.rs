//! `ApiError`: the HTTP shape of a failure — the contract's error code and message — rendered as the
//! contract's JSON error body with the right HTTP status. Operations fail with the domain's `CoordError`
//! (`domain_error.rs`), turned into an `ApiError` by the API (`api/error.rs`); only the HTTP edge
//! (extractors, the guard, the connection cap) answers with `ApiError` directly.
//!
//! No handler builds an error response by hand and nothing ever answers a bare 500: unexpected store
//! failures become 503 `REDIS_UNAVAILABLE` (retry later), and unreadable metadata fails closed with 409
//! `METADATA_CORRUPT`.
//!
//! Every error response also carries its [`ErrorCode`] as a response extension, which the audit reads.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rsc_protocol::errors::{ErrorBody, ErrorCode};
use rsc_protocol::validate::ValidationError;
use rsc_protocol::wire::offsets::IncompleteReset;
use rsc_store::StoreError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    /// With `OFFSET_RESET_INCOMPLETE`: the body's `incompleteReset` (what the interrupted reset had done).
    pub incomplete_reset: Option<Box<IncompleteReset>>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            incomplete_reset: None,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::InvalidRequest, message)
    }

    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

/// A JSON decoding error in words a request's author knows: serde says `expected i64` or `expected u32`
/// where the field wants a whole number.
pub fn plain_decode_error(serde_message: &str) -> String {
    const INTEGER_TYPES: [&str; 10] = [
        "i64", "u64", "i32", "u32", "i16", "u16", "i8", "u8", "usize", "isize",
    ];
    let mut out = serde_message.to_owned();
    for t in INTEGER_TYPES {
        let from = format!("expected {t}");
        let mut rest = out.as_str();
        let mut replaced = String::with_capacity(out.len());
        while let Some(i) = rest.find(&from) {
            let after = &rest[i + from.len()..];
            let whole_word = !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
            replaced.push_str(&rest[..i]);
            replaced.push_str(if whole_word {
                "expected a whole number"
            } else {
                &from
            });
            rest = after;
        }
        replaced.push_str(rest);
        out = replaced;
    }
    out
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

pub use crate::domain_error::store_error_text;

/// A store failure in the domain's words (`CoordError`'s), which write its message.
impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        crate::domain_error::CoordError::from(e).into()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut body = ErrorBody::new(self.code, self.message);
        body.incomplete_reset = self.incomplete_reset.map(|d| *d);
        // No `WWW-Authenticate` here: the guard adds the Basic challenge only to requests that used Basic
        // (security/browser.rs), so browsers are never invited to cache credentials.
        let mut response = (status, axum::Json(body)).into_response();
        // The code also travels beside the body, for the layers that record it (the audit): they read this
        // extension and never parse the body.
        response.extensions_mut().insert(self.code);
        response
    }
}

#[cfg(test)]
mod tests {
    use super::{ApiError, plain_decode_error};
    use axum::response::IntoResponse;
    use rsc_protocol::errors::ErrorCode;

    #[test]
    fn an_error_response_carries_its_code_as_an_extension() {
        let response = ApiError::new(ErrorCode::MetadataCorrupt, "unreadable").into_response();
        assert_eq!(response.status().as_u16(), 409);
        assert_eq!(
            response.extensions().get::<ErrorCode>(),
            Some(&ErrorCode::MetadataCorrupt)
        );
    }

    #[test]
    fn integer_types_read_as_a_whole_number() {
        assert_eq!(
            plain_decode_error("invalid type: string \"4\", expected i64"),
            "invalid type: string \"4\", expected a whole number"
        );
        assert_eq!(
            plain_decode_error("invalid value: integer `-1`, expected u32 at line 1 column 9"),
            "invalid value: integer `-1`, expected a whole number at line 1 column 9"
        );
        assert_eq!(
            plain_decode_error("invalid type: integer `4`, expected a string"),
            "invalid type: integer `4`, expected a string"
        );
        // Only the whole type name.
        assert_eq!(
            plain_decode_error("expected u8x or expected u8"),
            "expected u8x or expected a whole number"
        );
    }
}
