//! The document's routes: `GET /v3/api-docs` (JSON), `GET /openapi.yaml`, and the API reference page at
//! `GET /docs` — Swagger UI embedded in the binary (utoipa-swagger-ui, `vendored`), so it works with no
//! network. The page loads `/v3/api-docs` from the same server and calls no external validator. All are public routes of the route table
//! (the document describes the API, not its data), passing the guard like every route.

use crate::http::api::extract::ApiPath;
use crate::http::error::ApiError;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rsc_protocol::errors::ErrorCode;
use std::sync::{Arc, OnceLock};
use utoipa_swagger_ui::Config;

/// Where the page loads the document from.
const DOC_URL: &str = "/v3/api-docs";

fn unavailable(e: &str) -> ApiError {
    ApiError::new(
        ErrorCode::Internal,
        format!("the OpenAPI document could not be built: {e}"),
    )
}

fn text(content_type: &'static str, body: impl Into<axum::body::Body>) -> Response {
    let mut r = (StatusCode::OK, body.into()).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// `GET /v3/api-docs`.
pub async fn api_docs_json() -> Result<Response, ApiError> {
    let doc = super::cached().as_ref().map_err(|e| unavailable(e))?;
    let json = doc
        .to_pretty_json()
        .map_err(|e| unavailable(&e.to_string()))?;
    Ok(text("application/json", json))
}

/// `GET /openapi.yaml`.
pub async fn api_docs_yaml() -> Result<Response, ApiError> {
    let doc = super::cached().as_ref().map_err(|e| unavailable(e))?;
    let yaml = doc.to_yaml().map_err(|e| unavailable(&e.to_string()))?;
    Ok(text("application/yaml", yaml))
}

fn config() -> Arc<Config<'static>> {
    static CONFIG: OnceLock<Arc<Config<'static>>> = OnceLock::new();
    CONFIG
        // No validator: Swagger UI would otherwise send the document to validator.swagger.io whenever the
        // page is served from a host other than localhost.
        .get_or_init(|| Arc::new(Config::from(DOC_URL).validator_url("none")))
        .clone()
}

/// One embedded file of the page, or a JSON 404.
fn file(path: &str) -> Result<Response, ApiError> {
    let not_found = || {
        ApiError::new(
            ErrorCode::NotFound,
            format!("the API reference page has no file {path:?}; open /docs"),
        )
    };
    let f = utoipa_swagger_ui::serve(path, config())
        .map_err(|_| not_found())?
        .ok_or_else(not_found)?;
    let mut bytes = f.bytes.into_owned();
    if path.is_empty() {
        // Served at /docs (no trailing slash): the page's relative asset links resolve under /docs/.
        let html =
            String::from_utf8_lossy(&bytes).replacen("<head>", "<head><base href=\"/docs/\">", 1);
        bytes = html.into_bytes();
    }
    let mut r = (StatusCode::OK, bytes).into_response();
    if let Ok(v) = HeaderValue::from_str(&f.content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    if f.gzpipped {
        r.headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    // The page runs only its own files (Swagger UI sets inline styles), talks only to this server, and is
    // never framed (issue #32, Low).
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
             connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    Ok(r)
}

/// `GET /docs`: the page.
pub async fn docs_index() -> Result<Response, ApiError> {
    file("")
}

/// `GET /docs/{*file}`: its scripts and styles.
pub async fn docs_file(ApiPath(path): ApiPath<String>) -> Result<Response, ApiError> {
    file(&path)
}
