//! Parsing the `Authorization` header (coord/v1 contract): `Bearer <token>` or `Basic <base64(user:pw)>`,
//! schemes case-insensitive. Pure: no I/O.

use axum::http::{HeaderMap, header};
use base64::Engine;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    None,
    Bearer(String),
    Basic {
        username: String,
        password: String,
    },
    /// A header is present but is not a usable Bearer or Basic credential.
    Malformed(&'static str),
}

pub fn parse(headers: &HeaderMap) -> Credentials {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Credentials::None;
    };
    if values.next().is_some() {
        return Credentials::Malformed("send exactly one Authorization header");
    }
    let Ok(value) = value.to_str() else {
        return Credentials::Malformed("the Authorization header is not ASCII");
    };
    let (scheme, rest) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        if rest.is_empty() {
            return Credentials::Malformed("the Bearer token is empty");
        }
        return Credentials::Bearer(rest.to_owned());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(rest) else {
            return Credentials::Malformed("the Basic credentials are not valid base64");
        };
        let Ok(text) = String::from_utf8(raw) else {
            return Credentials::Malformed("the Basic credentials are not UTF-8");
        };
        let Some((username, password)) = text.split_once(':') else {
            return Credentials::Malformed("the Basic credentials must be username:password");
        };
        return Credentials::Basic {
            username: username.to_owned(),
            password: password.to_owned(),
        };
    }
    Credentials::Malformed("use the Bearer or Basic scheme")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert(header::AUTHORIZATION, v.parse().unwrap());
        m
    }

    #[test]
    fn parses_bearer_and_basic_case_insensitively() {
        assert_eq!(parse(&HeaderMap::new()), Credentials::None);
        assert_eq!(parse(&h("bearer  abc ")), Credentials::Bearer("abc".into()));
        // "admin:pa:ss" → split on the first ':'.
        assert_eq!(
            parse(&h("BASIC YWRtaW46cGE6c3M=")),
            Credentials::Basic {
                username: "admin".into(),
                password: "pa:ss".into()
            }
        );
        assert!(matches!(parse(&h("Basic !!!")), Credentials::Malformed(_)));
        assert!(matches!(parse(&h("Bearer")), Credentials::Malformed(_)));
        assert!(matches!(parse(&h("Digest x")), Credentials::Malformed(_)));
    }
}
