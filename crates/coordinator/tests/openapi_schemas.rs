//! The OpenAPI document's typed answers: every route that answers JSON refers to a component schema with
//! properties (the Grafana routes an array of one), and the probes answer `ProbeStatus` (`/readyz`'s 503
//! too, which is not the error body). The real answers of a coordinator (the monitoring views and Grafana
//! rows of a group with a member and records; `/readyz` with Redis up, then down) are checked against the
//! document's schemas: no field the schema lacks, every required field present, each value of its declared
//! type or enum.

use crate::support;

use rsc_coordinator::http::api::openapi::document;
use rsc_coordinator::http::api::routes::table;
use rsc_testkit::RedisServer;
use serde_json::Value;
use std::time::Duration;
use support::*;

const GRAFANA: &str = "/coord/v1/monitoring/grafana/";

fn doc() -> Value {
    serde_json::to_value(document(&table()).expect("the document builds")).unwrap()
}

/// `schema`, with a `$ref` to a component followed.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => {
            let name = r
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("a local component reference: {r}"));
            let s = &doc["components"]["schemas"][name];
            assert!(s.is_object(), "{r} is not among the components");
            s
        }
        None => schema,
    }
}

fn kind_matches(kind: &str, v: &Value) -> bool {
    match kind {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        _ => false,
    }
}

/// What is wrong with `value` against `schema` (empty: it conforms).
fn problems(doc: &Value, schema: &Value, value: &Value, at: &str) -> Vec<String> {
    let schema = resolve(doc, schema);
    if let Some(any) = schema["oneOf"].as_array().or(schema["anyOf"].as_array()) {
        return if any.iter().any(|s| problems(doc, s, value, at).is_empty()) {
            Vec::new()
        } else {
            vec![format!("{at}: {value} matches none of {any:?}")]
        };
    }
    // A flattened part (`allOf`): the value must satisfy the properties of all parts together.
    if let Some(parts) = schema["allOf"].as_array() {
        let mut merged = serde_json::json!({"type": "object", "properties": {}, "required": []});
        for part in parts {
            let part = resolve(doc, part);
            for (k, v) in part["properties"].as_object().into_iter().flatten() {
                merged["properties"][k] = v.clone();
            }
            for r in part["required"].as_array().into_iter().flatten() {
                merged["required"].as_array_mut().unwrap().push(r.clone());
            }
        }
        return problems(doc, &merged, value, at);
    }
    let mut out = Vec::new();
    let kinds: Vec<&str> = match &schema["type"] {
        Value::String(k) => vec![k.as_str()],
        Value::Array(ks) => ks.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !kinds.is_empty() && !kinds.iter().any(|k| kind_matches(k, value)) {
        out.push(format!("{at}: {value} is not {kinds:?}"));
        return out;
    }
    if let Some(values) = schema["enum"].as_array()
        && !value.is_null()
        && !values.contains(value)
    {
        out.push(format!("{at}: {value} is not one of {values:?}"));
    }
    if let Some(object) = value.as_object() {
        let props = schema["properties"].as_object();
        for (k, v) in object {
            // A map's keys are not properties: its values follow `additionalProperties`.
            match props
                .and_then(|p| p.get(k))
                .or(schema.get("additionalProperties").filter(|a| a.is_object()))
            {
                Some(s) => out.extend(problems(doc, s, v, &format!("{at}.{k}"))),
                None => out.push(format!("{at}.{k}: not in the schema")),
            }
        }
        for r in schema["required"].as_array().into_iter().flatten() {
            let r = r.as_str().unwrap();
            if !object.contains_key(r) {
                out.push(format!("{at}.{r}: required, missing"));
            }
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for (i, v) in array.iter().enumerate() {
            out.extend(problems(doc, items, v, &format!("{at}[{i}]")));
        }
    }
    out
}

/// The JSON schema of `method path`'s answer with `status`.
fn answer_schema<'a>(doc: &'a Value, path: &str, status: u16) -> &'a Value {
    let s = &doc["paths"][path]["get"]["responses"][status.to_string()]["content"]["application/json"]
        ["schema"];
    assert!(s.is_object(), "GET {path} {status} has no JSON schema");
    s
}

fn assert_conforms(doc: &Value, path: &str, status: u16, body: &Value) {
    let p = problems(doc, answer_schema(doc, path, status), body, path);
    assert!(
        p.is_empty(),
        "GET {path} {status} does not match the document:\n{}\n{body}",
        p.join("\n")
    );
}

#[test]
fn every_json_answer_refers_to_a_typed_schema_with_properties() {
    let doc = doc();
    let mut grafana = 0;
    let mut typed = 0;
    for spec in table() {
        let op = &doc["paths"][spec.path][spec.method.as_str().to_ascii_lowercase()];
        let Some(responses) = op["responses"].as_object() else {
            // Not in the document (the console's and the reference page's assets; tests/openapi.rs
            // checks which routes the document must hold).
            continue;
        };
        let Some(ok) = responses
            .iter()
            .find(|(code, _)| code.starts_with('2'))
            .map(|(_, r)| r["content"]["application/json"]["schema"].clone())
            .filter(Value::is_object)
        else {
            // Text, YAML, HTML, the documentation assets, or no body at all.
            continue;
        };
        if spec.path == "/v3/api-docs" {
            // The document itself: its shape is OpenAPI 3.1's, validated by tests/openapi.rs.
            continue;
        }
        typed += 1;
        let one = if spec.path.starts_with(GRAFANA) {
            grafana += 1;
            assert_eq!(ok["type"], "array", "{}: a bare array", spec.path);
            ok["items"].clone()
        } else {
            ok
        };
        assert!(
            one["$ref"].is_string(),
            "{} {}: the answer refers to a component: {one}",
            spec.method,
            spec.path
        );
        let schema = resolve(&doc, &one);
        if let Some(shapes) = schema["oneOf"].as_array().or(schema["allOf"].as_array()) {
            assert!(
                shapes
                    .iter()
                    .all(|s| s["$ref"].is_string() || s["properties"].is_object()),
                "{schema}"
            );
            continue;
        }
        let props = schema["properties"].as_object();
        assert!(
            props.is_some_and(|p| !p.is_empty()),
            "{}: {one} has no properties: {schema}",
            spec.path
        );
        for (name, p) in props.unwrap() {
            assert!(
                p.get("type").is_some() || p.get("$ref").is_some() || p.get("oneOf").is_some(),
                "{}: property {name} has no type: {p}",
                spec.path
            );
        }
    }
    assert_eq!(grafana, 8, "the eight Grafana routes");
    assert!(typed > 30, "JSON answers checked: {typed}");
    // Every JSON request body names its component too.
    let mut bodies = 0;
    for spec in table() {
        let op = &doc["paths"][spec.path][spec.method.as_str().to_ascii_lowercase()];
        let body = &op["requestBody"]["content"]["application/json"]["schema"];
        if body.is_null() {
            continue;
        }
        bodies += 1;
        assert!(
            body["$ref"].is_string(),
            "{} {}: the request body refers to a component: {body}",
            spec.method,
            spec.path
        );
        assert!(
            resolve(&doc, body)["properties"].is_object(),
            "{}: {body} has properties",
            spec.path
        );
    }
    assert!(bodies >= 12, "request bodies checked: {bodies}");
    // The readiness probe's 503 is its own status body, not the error body.
    assert_eq!(
        doc["paths"]["/readyz"]["get"]["responses"]["503"]["content"]["application/json"]["schema"]
            ["$ref"],
        "#/components/schemas/ProbeStatus"
    );
    let states = &doc["components"]["schemas"]["ProbeStatus"]["properties"]["status"]["enum"];
    for s in ["UP", "READY", "NOT_READY"] {
        assert!(
            states.as_array().is_some_and(|a| a.contains(&s.into())),
            "{states}"
        );
    }
    // The checker itself refuses what does not match.
    let row = answer_schema(&doc, "/coord/v1/monitoring/grafana/assignments", 200);
    let wrong = serde_json::json!([{"streamPrefix": "p", "consumerGroup": "g", "shardIndex": "0",
        "targetOwners": "", "currentOwners": "", "extra": 1}]);
    let p = problems(&doc, row, &wrong, "x");
    assert!(
        p.iter().any(|x| x.contains("shardIndex"))
            && p.iter().any(|x| x.contains("extra"))
            && p.iter().any(|x| x.contains("revokingOwners")),
        "{p:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_grafana_rows_and_probe_bodies_match_the_documents_schemas() {
    let doc = doc();
    let mut redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    assert_eq!(api.create_stream("docs", 2).await.status, 201);
    let member = Member::new("m-1");
    api.heartbeat("docs", "docs", &member).await;
    let mut con = redis_conn(&redis.url()).await;
    for i in 0..3 {
        let _: String = redis::cmd("XADD")
            .arg(rsc_protocol::names::shard_stream_key("docs", 0))
            .arg("*")
            .arg("payload")
            .arg(format!("{{\"n\":{i}}}"))
            .arg("source")
            .arg("test")
            .query_async(&mut con)
            .await
            .unwrap();
    }
    for path in [
        "/",
        "/coord/v1/monitoring/health",
        "/coord/v1/monitoring/groups",
        "/coord/v1/monitoring/streams/{stream_prefix}/groups/{consumer_group}",
        "/coord/v1/monitoring/streams/{stream_prefix}/groups/{consumer_group}/members",
        "/coord/v1/monitoring/streams/{stream_prefix}/groups/{consumer_group}/assignments",
        "/coord/v1/monitoring/streams/{stream_prefix}/groups/{consumer_group}/offsets",
        "/coord/v1/monitoring/streams/{stream_prefix}/groups/{consumer_group}/migrations",
        "/coord/v1/streams/{stream_prefix}/groups/{consumer_group}/producer-routing",
    ] {
        if doc["paths"][path]["get"].is_null() {
            panic!("{path} is not a GET route of the document");
        }
        let real = path
            .replace("{stream_prefix}", "docs")
            .replace("{consumer_group}", "docs");
        let r = api.send("GET", &real, None).await;
        assert_eq!(r.status, 200, "{real}: {}", r.body);
        assert_conforms(&doc, path, 200, &r.body);
    }
    let group = "streamPrefix=docs&consumerGroup=docs";
    for (route, query) in [
        ("groups", ""),
        ("options/streams", ""),
        ("options/consumer-groups", ""),
        ("options/shards", group),
        ("members", group),
        ("shards", group),
        ("assignments", group),
        (
            "messages",
            "streamPrefix=docs&consumerGroup=docs&shardIndex=0&limit=2",
        ),
    ] {
        let path = format!("{GRAFANA}{route}");
        let r = api.send("GET", &format!("{path}?{query}"), None).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert!(
            r.body.as_array().is_some_and(|a| !a.is_empty()),
            "{path}: rows to check: {}",
            r.body
        );
        assert_conforms(&doc, &path, 200, &r.body);
    }

    let anonymous = api.with_auth(Auth::None);
    let ready = anonymous.send("GET", "/readyz", None).await;
    assert_eq!(ready.status, 200);
    assert_eq!(ready.body["status"], "READY");
    assert_conforms(&doc, "/readyz", 200, &ready.body);
    let live = anonymous.send("GET", "/healthz", None).await;
    assert_conforms(&doc, "/healthz", 200, &live.body);

    redis.stop();
    let down = wait_for(
        "/readyz 503 with Redis stopped",
        Duration::from_secs(30),
        || {
            let anonymous = anonymous.clone();
            async move {
                let r = anonymous.send("GET", "/readyz", None).await;
                (r.status == 503).then_some(r)
            }
        },
    )
    .await;
    assert_eq!(down.body["status"], "NOT_READY", "{}", down.body);
    assert_conforms(&doc, "/readyz", 503, &down.body);
    let as_error = problems(
        &doc,
        &serde_json::json!({"$ref": "#/components/schemas/ErrorResponse"}),
        &down.body,
        "/readyz",
    );
    assert!(
        !as_error.is_empty(),
        "the 503 body is not the error body, so the document must not say it is"
    );
    redis.restart();
    let up = wait_for(
        "/readyz 200 with Redis back",
        Duration::from_secs(30),
        || {
            let anonymous = anonymous.clone();
            async move {
                let r = anonymous.send("GET", "/readyz", None).await;
                (r.status == 200).then_some(r)
            }
        },
    )
    .await;
    assert_conforms(&doc, "/readyz", 200, &up.body);
    running.shutdown().await.unwrap();
}
