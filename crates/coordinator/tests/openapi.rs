//! The OpenAPI document: every route of the route table is in it with its operation id, access level
//! (`x-rsc-access` and a security requirement) and error bodies; it validates against the OpenAPI 3.1 schema
//! (openapi-spec-validator, pinned in scripts/test and .ci/run — the test fails saying so when it is
//! missing); the real coordinator serves it as JSON and YAML without credentials, and the API reference page
//! and its assets from the binary, with no link off the server.

use crate::support;

use rsc_coordinator::http::api::openapi::{access_name, document};
use rsc_coordinator::http::api::routes::{Access, table};
use rsc_protocol::errors::ErrorCode;
use rsc_testkit::RedisServer;
use serde_json::Value;
use std::process::Command;
use support::*;

/// Validates a document file with openapi-spec-validator (Python), failing clearly when it is missing.
fn validate(path: &std::path::Path) {
    let probe = Command::new("python3")
        .args(["-c", "import openapi_spec_validator"])
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        _ => panic!(
            "openapi-spec-validator is missing: `python3 -m pip install openapi-spec-validator==0.9.0` \
             (scripts/test and .ci/run install it)"
        ),
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys\nfrom openapi_spec_validator import validate\nfrom openapi_spec_validator.readers import read_from_filename\n\
             from openapi_spec_validator import OpenAPIV31SpecValidator\n\
             spec, _ = read_from_filename(sys.argv[1])\nassert spec['openapi'].startswith('3.1'), spec['openapi']\n\
             validate(spec, cls=OpenAPIV31SpecValidator)\nprint('valid')",
        ])
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{} is not a valid OpenAPI 3.1 document:\n{}{}",
        path.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn check_routes(doc: &Value) {
    let routes = table();
    let mut operations = 0;
    for spec in &routes {
        let path = spec.path.replace("{*", "{");
        let op = &doc["paths"][&path][spec.method.as_str().to_ascii_lowercase()];
        assert!(
            op.is_object(),
            "{} {} is not in the document",
            spec.method,
            spec.path
        );
        operations += 1;
        assert_eq!(op["operationId"], spec.operation_id, "{path}");
        assert_eq!(op["x-rsc-access"], access_name(spec.access), "{path}");
        assert!(
            op.get("x-rsc-undescribed").is_none(),
            "{} has no description in api/openapi/operations.rs",
            spec.operation_id
        );
        assert_eq!(
            op["x-rsc-audit-action"].as_str(),
            spec.audit_action,
            "{path}: audit action"
        );
        let security = op["security"].as_array().expect("security listed");
        match spec.access {
            Access::Public => assert!(security.is_empty(), "{path}"),
            _ => assert!(
                security.iter().any(|s| s.get("bearer").is_some())
                    && security.iter().any(|s| s.get("basic").is_some()),
                "{path}: {security:?}"
            ),
        }
        let responses = op["responses"].as_object().unwrap();
        let errors: Vec<&String> = responses.keys().filter(|k| !k.starts_with('2')).collect();
        if spec.access != Access::Public {
            for code in ["401", "403"] {
                assert!(responses.contains_key(code), "{path}: no {code}");
            }
        }
        if spec.access == Access::Write {
            assert!(responses.contains_key("429"), "{path}: no 429");
        }
        for code in errors {
            // `/readyz` answers 503 with its status body (NOT_READY), not the error body.
            let body = if path == "/readyz" && code == "503" {
                "#/components/schemas/ProbeStatus"
            } else {
                "#/components/schemas/ErrorResponse"
            };
            assert_eq!(
                responses[code]["content"]["application/json"]["schema"]["$ref"], body,
                "{path} {code}"
            );
        }
        // Every path parameter of the template is declared.
        for p in spec.path.split('{').skip(1) {
            let name = p.split('}').next().unwrap().trim_start_matches('*');
            assert!(
                op["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x["name"] == name && x["in"] == "path"),
                "{path}: parameter {name}"
            );
        }
    }
    let in_doc: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| item.as_object().unwrap().len())
        .sum();
    assert_eq!(
        in_doc, operations,
        "the document has operations the route table lacks"
    );
    let codes = doc["components"]["schemas"]["ErrorResponse"]["properties"]["errorCode"]["enum"]
        .as_array()
        .unwrap();
    assert!(codes.iter().any(|c| c == "INVALID_REQUEST"));
}

#[test]
fn every_route_is_in_the_document_with_its_access_and_error_bodies_and_it_validates() {
    let doc = serde_json::to_value(document(&table()).expect("document builds")).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    check_routes(&doc);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    validate(&file);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coordinator_serves_the_document_and_an_offline_reference_page_without_credentials() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    let anonymous = api.with_auth(Auth::None);

    let json = anonymous.send("GET", "/v3/api-docs", None).await;
    assert_eq!(json.status, 200, "{}", json.body);
    assert!(
        json.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    check_routes(&json.body);

    let yaml = anonymous.send("GET", "/openapi.yaml", None).await;
    assert_eq!(yaml.status, 200);
    assert!(
        yaml.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/yaml")
    );
    let text = yaml.body.as_str().expect("YAML is text");
    assert!(
        text.starts_with("openapi: 3.1.0"),
        "{}",
        &text[..80.min(text.len())]
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.yaml");
    std::fs::write(&file, text).unwrap();
    validate(&file);

    let page = anonymous.send("GET", "/docs", None).await;
    assert_eq!(page.status, 200);
    assert!(
        page.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.body.as_str().unwrap();
    assert!(
        html.contains("<base href=\"/docs/\">") && html.contains("swagger-ui"),
        "{html}"
    );
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "the page links off the server: {html}"
    );
    for asset in [
        "swagger-ui-bundle.js",
        "swagger-ui.css",
        "swagger-initializer.js",
    ] {
        let r = anonymous.send("GET", &format!("/docs/{asset}"), None).await;
        assert_eq!(r.status, 200, "{asset}");
    }
    let init = anonymous
        .send("GET", "/docs/swagger-initializer.js", None)
        .await;
    assert!(init.body.as_str().unwrap().contains("/v3/api-docs"));
    // No document is sent to Swagger's public validator, whatever host serves the page (issue #33).
    assert!(
        init.body
            .as_str()
            .unwrap()
            .contains("\"validatorUrl\": \"none\""),
        "{}",
        init.body
    );
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("connect-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    let missing = anonymous.send("GET", "/docs/nope.js", None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body["errorCode"], "NOT_FOUND");
    running.shutdown().await.unwrap();
}

#[test]
fn every_operation_has_a_summary_and_a_description_of_its_access_and_error_codes() {
    let doc = serde_json::to_value(document(&table()).expect("document builds")).unwrap();
    for spec in table() {
        let path = spec.path.replace("{*", "{");
        let op = &doc["paths"][&path][spec.method.as_str().to_ascii_lowercase()];
        let id = spec.operation_id;
        let summary = op["summary"].as_str().unwrap_or("");
        assert!(!summary.trim().is_empty(), "{id}: no summary");
        let description = op["description"].as_str().unwrap_or("");
        assert!(
            description.starts_with(summary.trim_end_matches('.')),
            "{id}: the description starts with what the operation does: {description}"
        );
        assert!(
            description.contains(&format!("**Access:** `{}`", access_name(spec.access))),
            "{id}: the description names the access level: {description}"
        );
        if let Some(action) = spec.audit_action {
            assert!(
                description.contains(&format!("Audited as `{action}`")),
                "{id}: the description names the audit action: {description}"
            );
        }
        for (status, response) in op["responses"].as_object().unwrap() {
            if status.starts_with('2') {
                continue;
            }
            assert!(
                description.contains(&format!("{status} ")),
                "{id}: the description lists status {status}: {description}"
            );
            let error_body = response["content"]["application/json"]["schema"]["$ref"]
                == "#/components/schemas/ErrorResponse";
            let code: u16 = status.parse().unwrap();
            if error_body {
                assert!(
                    ErrorCode::ALL
                        .iter()
                        .filter(|c| c.http_status() == code)
                        .any(|c| description.contains(&format!("`{}`", c.as_str()))),
                    "{id}: the description names the error codes of {status}: {description}"
                );
            }
        }
    }
}
