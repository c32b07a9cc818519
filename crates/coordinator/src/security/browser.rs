//! What a browser may make the coordinator do on a user's behalf (issue #32, finding 1: cross-site request
//! forgery). Three rules, each a pure function of the request head:
//!
//! - a request that carries a body must declare it `Content-Type: application/json` (UTF-8), else 415: an
//!   HTML form (`text/plain`, `application/x-www-form-urlencoded`, `multipart/form-data`) can then never
//!   deliver a body the API acts on, because a page on another origin cannot send `application/json`
//!   without a CORS preflight, which the coordinator never grants;
//! - a mutation (any method but GET/HEAD/OPTIONS) that the browser marks as coming from another site
//!   (`Sec-Fetch-Site`), or whose `Origin` names another host, is refused (403) before authentication;
//! - the `WWW-Authenticate: Basic` challenge is only sent to a request that itself used Basic, so a browser
//!   that opens an API URL is never invited to cache Basic credentials it would then attach to forged
//!   requests (the console signs in with its own form and a bearer token).

use crate::http::error::ApiError;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use rsc_protocol::errors::ErrorCode;

/// The challenge sent with a 401 to a request that used Basic credentials.
pub const BASIC_CHALLENGE: &str = "Basic realm=\"redis-stream-coordinator\"";

/// Whether the request's credentials are HTTP Basic (only such requests get the Basic challenge on a 401).
pub fn uses_basic(headers: &HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().get(..6))
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case(b"basic "))
}

/// Adds the Basic challenge to a 401 answered to a request that used Basic credentials.
pub fn challenge(used_basic: bool, response: &mut axum::response::Response) {
    if used_basic && response.status() == axum::http::StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(BASIC_CHALLENGE),
        );
    }
}

/// A request with a body must say `Content-Type: application/json` (optionally `; charset=utf-8`).
pub fn check_body_type(has_body: bool, headers: &HeaderMap) -> Result<(), ApiError> {
    if !has_body {
        return Ok(());
    }
    let declared = headers.get(header::CONTENT_TYPE);
    match declared.map(|v| json_media_type(v.as_bytes())) {
        Some(Ok(())) => Ok(()),
        Some(Err(why)) => Err(unsupported(&format!(
            "Content-Type {:?} {why}",
            String::from_utf8_lossy(declared.map_or(&[][..], HeaderValue::as_bytes))
        ))),
        None => Err(unsupported("the request has a body but no Content-Type")),
    }
}

fn unsupported(what: &str) -> ApiError {
    ApiError::new(
        ErrorCode::UnsupportedMediaType,
        format!("{what}: request bodies must be sent as Content-Type: application/json (UTF-8)"),
    )
}

/// Whether a Content-Type value is `application/json` with no charset other than UTF-8.
fn json_media_type(value: &[u8]) -> Result<(), &'static str> {
    let text = std::str::from_utf8(value).map_err(|_| "is not text")?;
    let mut parts = text.split(';');
    let essence = parts.next().unwrap_or("").trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return Err("is not JSON");
    }
    for param in parts {
        let Some((name, value)) = param.split_once('=') else {
            continue;
        };
        if name.trim().eq_ignore_ascii_case("charset") {
            let charset = value.trim().trim_matches('"');
            if !charset.eq_ignore_ascii_case("utf-8") && !charset.eq_ignore_ascii_case("utf8") {
                return Err("names a charset other than UTF-8");
            }
        }
    }
    Ok(())
}

/// Refuses a mutation that a browser sent from another site: `Sec-Fetch-Site` other than `same-origin` or
/// `none` (typed by the user), or, from browsers that do not send it, an `Origin` whose host differs from
/// the request's `Host`. Requests without either header (curl, the SDK, the CLI, Terraform) pass.
pub fn check_same_origin(method: &Method, headers: &HeaderMap) -> Result<(), ApiError> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.as_bytes();
        if site.eq_ignore_ascii_case(b"same-origin") || site.eq_ignore_ascii_case(b"none") {
            return Ok(());
        }
        return Err(cross_site(&format!(
            "the browser marked it Sec-Fetch-Site: {}",
            String::from_utf8_lossy(site)
        )));
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .map(|(_, host)| host.trim_end_matches('/'));
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    match (origin_host, host) {
        (Some(o), Some(h)) if o.eq_ignore_ascii_case(h) => Ok(()),
        _ => Err(cross_site(&format!(
            "its Origin {:?} is not this coordinator's host {:?}",
            String::from_utf8_lossy(origin.as_bytes()),
            host.unwrap_or("")
        ))),
    }
}

fn cross_site(why: &str) -> ApiError {
    ApiError::new(
        ErrorCode::Forbidden,
        format!(
            "cross-site request refused: {why}; the API takes changes only from its own console or from \
             non-browser clients"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn only_json_bodies_pass() {
        assert!(check_body_type(false, &headers(&[])).is_ok());
        assert!(check_body_type(false, &headers(&[("content-type", "text/plain")])).is_ok());
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=\"UTF-8\"",
        ] {
            let h = headers(&[("content-type", ok)]);
            assert!(check_body_type(true, &h).is_ok(), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/json; charset=utf-16",
            "application/jsonx",
            "",
        ] {
            let h = headers(&[("content-type", bad)]);
            let e = check_body_type(true, &h).unwrap_err();
            assert_eq!(e.code, ErrorCode::UnsupportedMediaType, "{bad}");
            assert!(e.message.contains("application/json"), "{}", e.message);
        }
        assert!(check_body_type(true, &headers(&[])).is_err());
    }

    #[test]
    fn cross_site_mutations_are_refused() {
        let post = Method::POST;
        assert!(check_same_origin(&post, &headers(&[])).is_ok());
        assert!(check_same_origin(&post, &headers(&[("sec-fetch-site", "same-origin")])).is_ok());
        assert!(check_same_origin(&post, &headers(&[("sec-fetch-site", "none")])).is_ok());
        for site in ["cross-site", "same-site"] {
            let h = headers(&[("sec-fetch-site", site)]);
            assert!(check_same_origin(&post, &h).is_err(), "{site}");
            assert!(check_same_origin(&Method::GET, &h).is_ok(), "{site}");
        }
        let same = headers(&[("origin", "http://rsc:8080"), ("host", "rsc:8080")]);
        assert!(check_same_origin(&post, &same).is_ok());
        for origin in ["http://evil.example", "null", "http://rsc:8081"] {
            let h = {
                let mut h = headers(&[("host", "rsc:8080")]);
                h.insert("origin", HeaderValue::from_static(origin));
                h
            };
            assert!(check_same_origin(&Method::DELETE, &h).is_err(), "{origin}");
        }
    }

    #[test]
    fn only_basic_requests_are_challenged() {
        assert!(uses_basic(&headers(&[("authorization", "Basic YTpi")])));
        assert!(uses_basic(&headers(&[("authorization", "basic YTpi")])));
        assert!(!uses_basic(&headers(&[("authorization", "Bearer rsc_x")])));
        assert!(!uses_basic(&headers(&[])));
    }
}
