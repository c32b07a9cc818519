//! The console's routes: the page and its files need no credentials and carry a strict
//! Content-Security-Policy; an unknown file is a JSON 404; the page holds no data (it reads everything
//! through the authenticated API, which still refuses callers without credentials).

use crate::support;

use rsc_testkit::RedisServer;
use support::*;

#[tokio::test]
async fn the_console_is_served_without_credentials_under_a_strict_policy() {
    let redis = RedisServer::start();
    let (_running, api) = coordinator(test_config(&redis.url())).await;
    let anonymous = api.with_auth(Auth::None);

    let page = anonymous.raw("GET", "/console", None).await;
    assert_eq!(page.status, 200);
    let header = |r: &Reply, name: &str| {
        r.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert!(header(&page, "content-type").starts_with("text/html"));
    let csp = header(&page, "content-security-policy");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
    assert_eq!(header(&page, "x-content-type-options"), "nosniff");
    let html = page.body.as_str().expect("the page is text").to_owned();
    assert!(html.contains("/console/app.js"));

    for (file, kind) in [("app.js", "text/javascript"), ("style.css", "text/css")] {
        let r = anonymous
            .raw("GET", &format!("/console/{file}"), None)
            .await;
        assert_eq!(r.status, 200, "{file}");
        assert!(header(&r, "content-type").starts_with(kind), "{file}");
        assert!(header(&r, "content-security-policy").contains("default-src 'none'"));
    }
    let head = anonymous.raw("HEAD", "/console/app.js", None).await;
    assert_eq!(head.status, 200);

    let missing = anonymous.raw("GET", "/console/secrets.txt", None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body["errorCode"], "NOT_FOUND", "{}", missing.body);
    let traversal = anonymous
        .raw("GET", "/console/..%2F..%2FCargo.toml", None)
        .await;
    assert_eq!(traversal.status, 404, "{}", traversal.body);

    // The data stays behind authentication.
    let groups = anonymous
        .raw("GET", "/coord/v1/monitoring/groups", None)
        .await;
    assert_eq!(groups.status, 401);
    let post = anonymous.raw("POST", "/console", None).await;
    assert_eq!(post.status, 405);
}
