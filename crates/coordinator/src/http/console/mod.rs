//! The web console: a static page and its scripts and styles, embedded in the binary and served at
//! `/console` (public, like any static file). Everything the page shows or changes goes through the
//! authenticated coord/v1 API with the operator's bearer token; these handlers serve no data. Every answer
//! carries a strict Content-Security-Policy (scripts, styles and requests only from this origin, no inline
//! code, no framing), so a console page cannot be made to run or load anything else.

use crate::http::error::ApiError;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rsc_protocol::errors::ErrorCode;

/// The policy sent with every console answer.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// One embedded file: its name under `/console/`, content type and text.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_str!(concat!("../../../console/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file the console page loads.
const ASSETS: &[Asset] = &[
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("dom.js", JS),
    asset!("overview.js", JS),
    asset!("group.js", JS),
    asset!("messages.js", JS),
    asset!("pending.js", JS),
    asset!("audit.js", JS),
    asset!("admin.js", JS),
    asset!("triage.js", JS),
];

const INDEX: &str = include_str!("../../../console/index.html");

/// `GET /console`: the page.
pub async fn page() -> Response {
    respond("text/html; charset=utf-8", INDEX)
}

/// `GET /console/{asset}`: one of the page's scripts or styles; anything else is a JSON 404.
pub async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|a| a.name == name) {
        Some(a) => respond(a.content_type, a.body),
        None => ApiError::new(
            ErrorCode::NotFound,
            format!(
                "no console file {name:?}; the console is at /console (files: {})",
                ASSETS.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")
            ),
        )
        .into_response(),
    }
}

fn respond(content_type: &'static str, body: &'static str) -> Response {
    let mut resp = (StatusCode::OK, body).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // Small files that change with the binary: revalidate rather than keep a stale console.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_the_page_names_is_served() {
        for a in ASSETS {
            if a.name.ends_with(".js") || a.name.ends_with(".css") {
                assert!(!a.body.is_empty(), "{} is empty", a.name);
            }
        }
        for needed in ["/console/style.css", "/console/app.js"] {
            assert!(INDEX.contains(needed), "index.html loads {needed}");
        }
        // Modules import each other by absolute path; each one imported must be served.
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            for part in a.body.split("from \"/console/").skip(1) {
                let file = part.split('"').next().unwrap_or_default();
                assert!(
                    ASSETS.iter().any(|x| x.name == file),
                    "{} imports {file}, which is not served",
                    a.name
                );
            }
        }
    }

    #[test]
    fn nothing_is_loaded_from_elsewhere_and_no_code_is_inline() {
        let all = std::iter::once(INDEX).chain(ASSETS.iter().map(|a| a.body));
        for text in all {
            assert!(!text.contains("http://") && !text.contains("https://"));
            assert!(!text.contains("<script>"), "no inline script");
            assert!(!text.contains(" style=\""), "no inline style");
            assert!(!text.contains("onclick="), "no inline handler");
        }
    }
}
