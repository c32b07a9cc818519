//! Tests of the coordinator client: path encoding, URL validation and typed error bodies.

use super::*;

#[test]
fn path_segments_are_percent_encoded() {
    let base = Url::parse("http://127.0.0.1:8080/").unwrap();
    let url = join(&base, &["coord", "v1", "streams", "a/b c", "groups", "g"]).unwrap();
    assert_eq!(
        url.as_str(),
        "http://127.0.0.1:8080/coord/v1/streams/a%2Fb%20c/groups/g"
    );
    let base = Url::parse("http://127.0.0.1:8080/prefix/").unwrap();
    let url = join(&base, &["coord"]).unwrap();
    assert_eq!(url.as_str(), "http://127.0.0.1:8080/prefix/coord");
}

#[test]
fn urls_are_validated() {
    assert!(CoordinatorClient::new(Vec::<String>::new()).is_err());
    assert!(CoordinatorClient::new(["ftp://x"]).is_err());
    let e = CoordinatorClient::new(["http://admin:pw@127.0.0.1:8080"])
        .err()
        .unwrap();
    assert!(!e.to_string().contains("pw"), "{e}");
    assert!(CoordinatorClient::new(["http://127.0.0.1:8080"]).is_ok());
}

#[test]
fn error_bodies_become_typed_errors() {
    let body = br#"{"status":"NOT_FOUND","errorCode":"GROUP_NOT_FOUND","message":"nope"}"#;
    let e = decode::<serde_json::Value>(StatusCode::NOT_FOUND, body).unwrap_err();
    assert_eq!(e.error_code(), Some("GROUP_NOT_FOUND"));
    let e = decode::<serde_json::Value>(StatusCode::BAD_REQUEST, b"plain").unwrap_err();
    assert!(matches!(
        e,
        ClientError::Api {
            status: 400,
            error_code: None,
            ..
        }
    ));
}
