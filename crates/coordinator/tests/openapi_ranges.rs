//! The ranges the OpenAPI document publishes are the server's: driven by the document alone, for every path
//! and query parameter and every request-body field with a range (`minimum`/`maximum`, `maxLength`/
//! `minLength`, `enum`, `maxItems`), a real coordinator over real Redis refuses the value just outside each
//! end with 400 `INVALID_REQUEST` naming it, and does not refuse the end itself; and a body without a field
//! the document lists as `required` is refused naming that field. A client generated from the document thus
//! refuses exactly what the server refuses at each bound. (The document's numbers come from
//! `rsc_protocol::bounds`, which the validators use; this test is what keeps both honest.)

use crate::openapi_required::{doc, example, resolve};
use crate::support::*;
use rsc_testkit::RedisServer;
use serde_json::{Value, json};

/// The stream and group the probes address (created with two shards).
const STREAM: &str = "rng";

/// Names and values of path or query parameters.
type Pairs = Vec<(String, String)>;

/// A value to send in place of a valid one, and whether the server must refuse it.
struct Probe {
    /// None: leave the field out.
    value: Option<Value>,
    refused: bool,
}

/// `schema` with a `$ref` followed and a nullable `oneOf`/`anyOf` reduced to its other branch.
fn effective<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    let schema = resolve(doc, schema);
    match schema["oneOf"].as_array().or(schema["anyOf"].as_array()) {
        Some(branches) => {
            let real: Vec<&Value> = branches
                .iter()
                .filter(|b| resolve(doc, b)["type"] != "null")
                .collect();
            if real.len() == 1 {
                effective(doc, real[0])
            } else {
                schema
            }
        }
        None => schema,
    }
}

/// The probes of `schema`'s range: each end (accepted) and the value just outside it (refused). Empty
/// strings and lists are only probed in bodies (an empty query value reads as absent).
fn probes(doc: &Value, schema: &Value, in_body: bool) -> Vec<Probe> {
    let s = effective(doc, schema);
    let mut out = Vec::new();
    let mut push = |value: Value, refused: bool| {
        out.push(Probe {
            value: Some(value),
            refused,
        })
    };
    if let Some(min) = s["minimum"].as_i64() {
        push(json!(min - 1), true);
        push(json!(min), false);
    }
    if let Some(max) = s["maximum"].as_i64() {
        push(json!(max + 1), true);
        push(json!(max), false);
    }
    if let Some(max) = s["maxLength"].as_u64() {
        push(json!("a".repeat(max as usize + 1)), true);
        push(json!("a".repeat(max as usize)), false);
    }
    if in_body && s["minLength"].as_u64().is_some_and(|m| m >= 1) {
        push(json!(""), true);
    }
    if let Some(pattern) = s["pattern"].as_str() {
        for (sample, matches) in pattern_samples(pattern) {
            // A path segment of dots is resolved away by URL parsers before it reaches the server.
            if !in_body && sample.trim_start_matches('.').is_empty() {
                continue;
            }
            push(json!(sample), !matches);
        }
    }
    if let Some(values) = s["enum"].as_array() {
        push(json!("NOT_ONE_OF_THEM"), true);
        for v in values {
            push(v.clone(), false);
        }
    }
    if in_body && let Some(max) = s["maxItems"].as_u64() {
        let item = example(doc, &s["items"], false);
        push(Value::Array(vec![item.clone(); max as usize + 1]), true);
        push(Value::Array(vec![item; max as usize]), false);
    }
    out
}

/// Strings that probe a `pattern`: blank, surrounding and inner whitespace, hash-tag and other
/// punctuation, dots, control characters, non-ASCII.
const PATTERN_SAMPLES: &[&str] = &[
    "a", "ab", "a-b_c.9", "a b", " a", "a ", "   ", "a{b", "a}b", "a:b", ".", "..", "...", ".a",
    "a.", "a\u{7}b", "a\tb", "\u{85}a", "ü", "a/b",
];

/// Each pattern of the document with whether each of [`PATTERN_SAMPLES`] matches it, as JSON Schema reads
/// a pattern (an unanchored regular-expression search; evaluated by Python's `re`, which agrees with
/// ECMA-262 on these patterns).
static PATTERNS: std::sync::OnceLock<std::collections::HashMap<String, Vec<bool>>> =
    std::sync::OnceLock::new();

/// Finds every `pattern` of the document and evaluates the samples against it, once.
fn load_patterns(doc: &Value) {
    fn collect(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(p)) = m.get("pattern")
                    && !out.contains(p)
                {
                    out.push(p.clone());
                }
                m.values().for_each(|x| collect(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
            _ => {}
        }
    }
    let mut patterns = Vec::new();
    collect(doc, &mut patterns);
    let input = json!({"patterns": patterns, "samples": PATTERN_SAMPLES}).to_string();
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import json, re, sys\nd = json.load(sys.stdin)\n\
             print(json.dumps([[re.search(p, s) is not None for s in d['samples']] for p in d['patterns']]))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python3 evaluates the patterns");
    let matches: Vec<Vec<bool>> = serde_json::from_slice(&out.stdout).unwrap();
    let _ = PATTERNS.set(patterns.into_iter().zip(matches).collect());
}

/// The samples of `pattern`, each with whether it matches.
fn pattern_samples(pattern: &str) -> Vec<(&'static str, bool)> {
    let table = PATTERNS.get().expect("load_patterns ran");
    PATTERN_SAMPLES
        .iter()
        .copied()
        .zip(table[pattern].iter().copied())
        .collect()
}

/// A body field's probes: its range, and its absence when the document requires it; nested objects of the
/// base body are walked. Each with the field's path in the body.
fn body_probes(
    doc: &Value,
    schema: &Value,
    base: &Value,
    at: &[String],
) -> Vec<(Vec<String>, Probe)> {
    let s = effective(doc, schema);
    let required: Vec<&str> = s["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for (field, prop) in s["properties"].as_object().into_iter().flatten() {
        let mut path = at.to_vec();
        path.push(field.clone());
        let p = effective(doc, prop);
        if p["properties"].is_object() && base[field].is_object() {
            out.extend(body_probes(doc, p, &base[field], &path));
        }
        for probe in probes(doc, prop, true) {
            out.push((path.clone(), probe));
        }
        if required.contains(&field.as_str()) {
            out.push((
                path,
                Probe {
                    value: None,
                    refused: true,
                },
            ));
        }
    }
    out
}

/// `base` with the field at `path` set to `value` (or removed).
fn with(base: &Value, path: &[String], value: &Option<Value>) -> Value {
    let mut body = base.clone();
    let (last, parents) = path.split_last().unwrap();
    let mut at = &mut body;
    for p in parents {
        at = &mut at[p.as_str()];
    }
    let object = at.as_object_mut().expect("an object in the base body");
    match value {
        Some(v) => {
            object.insert(last.clone(), v.clone());
        }
        None => {
            object.remove(last);
        }
    }
    body
}

/// A valid body of each operation that takes one, and the path values it is sent with (the defaults of
/// [`path_value`] otherwise). Each is valid but fails after validation, changing nothing: the stream or
/// group exists already, or does not exist, or is healthy.
fn base(operation_id: &str) -> Option<(&'static [(&'static str, &'static str)], Value)> {
    const NONE: &[(&str, &str)] = &[("stream_prefix", "nope"), ("consumer_group", "nope")];
    let admin = json!({"requestedBy": "range test", "reason": "range test"});
    let merge = |extra: Value| {
        let mut b = admin.clone();
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    Some(match operation_id {
        // The stream and the group exist: 409 after the body is checked.
        "createStreamGroup" | "createCoordinatorGroup" => {
            (&[], merge(json!({"initialShardCount": 2})))
        }
        "deleteCoordinatorGroup"
        | "rollbackReshardingMigration"
        | "forceCompleteReshardingMigration" => (NONE, admin),
        // A healthy group: refused after the body is checked (nothing to recreate or dismiss).
        "recreateGroupLifecycle" => (&[], merge(json!({"shardCount": 2}))),
        "dismissRollbackSuspicion" => (&[], admin),
        "resetGroupOffsets" => (
            NONE,
            json!({"to": "EARLIEST", "requestedBy": "range test", "reason": "range test"}),
        ),
        "scaleStreamShards" | "startGroupResharding" => (
            NONE,
            merge(json!({"targetShardCount": 1, "producerQuiesce": {"timeoutMs": 1000}})),
        ),
        "setStreamOrdering" => (NONE, merge(json!({"ordering": "KEY"}))),
        "reportProducerQuiesced" => (
            NONE,
            json!({"producerId": "p-range", "reshardingId": "reshard-none", "observedRoutingVersion": 1}),
        ),
        "sendConsumerHeartbeat" => (
            &[],
            json!({"protocolVersion": 1, "requestId": "r-1", "memberId": "m-range", "memberEpoch": 0,
                   "metadataVersion": 0,
                   "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1}}),
        ),
        _ => return None,
    })
}

/// Fields whose end cannot be accepted with the operation's base body, and why.
const NOT_ACCEPTED_ALONE: &[(&str, &str, &str)] = &[
    (
        "resetGroupOffsets",
        "value",
        "EARLIEST takes no value; DATETIME and ID need a time or id, not a run of letters",
    ),
    (
        "resetGroupOffsets",
        "shift",
        "only SHIFT takes a shift, and SHIFT with the base body's group would move its position",
    ),
];

/// Parameters whose upper end only some groups accept, and why: the probes send the value past it only.
const END_DEPENDS_ON_THE_GROUP: &[(&str, &str)] = &[(
    "shard_index",
    "a shard index must also be below the group's shard count: only a group of 16,384 shards has shard 16,383",
)];

/// The value of a path parameter or a required query parameter.
fn path_value(name: &str, overrides: &[(&str, &str)]) -> String {
    if let Some((_, v)) = overrides.iter().find(|(n, _)| *n == name) {
        return (*v).to_owned();
    }
    match name {
        "stream_prefix" | "consumer_group" | "streamPrefix" | "consumerGroup" => STREAM.into(),
        "member_id" => "m-range".into(),
        "shard_index" | "shardIndex" => "0".into(),
        "resharding_id" => "reshard-none".into(),
        "asset" | "file" | "rest" => "x".into(),
        other => panic!("no value for parameter {other}: add one to openapi_ranges.rs"),
    }
}

/// The wire name a message uses for a parameter (`stream_prefix` → `streamPrefix`).
fn wire(name: &str) -> String {
    rsc_coordinator::http::api::openapi::ranges::wire_name(name)
}

/// Whether `reply` refuses the field `name` (400 naming it: `name: …` or a missing field `` `name` ``).
fn names_it(reply: &Reply, name: &str) -> bool {
    let message = reply.body["message"].as_str().unwrap_or("");
    reply.status == 400
        && (message.contains(&format!("{name}:")) || message.contains(&format!("`{name}`")))
}

/// What is wrong with `reply` to `probe` (None: the server did as the document says).
fn check(reply: &Reply, probe: &Probe, name: &str, method: &str, what: &str) -> Option<String> {
    let wrong = if reply.status >= 500 {
        "a server error"
    } else if probe.refused
        && !(names_it(reply, name) && reply.body["errorCode"] == "INVALID_REQUEST")
    {
        "must be refused with 400 INVALID_REQUEST naming the field"
    } else if !probe.refused && (names_it(reply, name) || (method == "GET" && reply.status == 400))
    {
        "is within the document's range but refused"
    } else {
        return None;
    };
    Some(format!("{what}: {wrong}: {} {}", reply.status, reply.body))
}

/// `value` percent-encoded for a path segment or a query value (only unreserved characters stay).
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn query_string(pairs: &Pairs) -> String {
    let encoded: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect();
    if encoded.is_empty() {
        String::new()
    } else {
        format!("?{}", encoded.join("&"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_refuses_just_outside_each_documented_range_and_accepts_its_ends() {
    let doc = doc();
    load_patterns(&doc);
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    // Hundreds of admin requests in a few seconds: the rate limit is not what this test is about.
    config.coordinator.api.rate_limit.enabled = false;
    let (running, api) = coordinator(config).await;
    assert_eq!(api.create_stream(STREAM, 2).await.status, 201);
    let mut con = redis_conn(&redis.url()).await;
    let _: String = redis::cmd("XADD")
        .arg(rsc_protocol::names::shard_stream_key(STREAM, 0))
        .arg("*")
        .arg("payload")
        .arg("{}")
        .query_async(&mut con)
        .await
        .unwrap();

    let mut params_probed = 0;
    let mut fields_probed = 0;
    let mut without_base = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for (template, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let method = method.to_ascii_uppercase();
            let id = op["operationId"].as_str().unwrap();
            let body_schema = &op["requestBody"]["content"]["application/json"]["schema"];
            let base = base(id);
            let (overrides, base_body) = match &base {
                Some((o, b)) => (*o, Some(b.clone())),
                None => (&[][..], None),
            };
            let params = op["parameters"].as_array().cloned().unwrap_or_default();
            let send = |path_values: Vec<(String, String)>,
                        query: Vec<(String, String)>,
                        body: Option<Value>| {
                let mut path = template.clone();
                for (k, v) in &path_values {
                    path = path.replace(&format!("{{{k}}}"), &encode(v));
                }
                let url = format!("{path}{}", query_string(&query));
                let api = api.clone();
                let method = method.clone();
                async move { api.send(&method, &url, body).await }
            };
            let defaults = |skip: &str| -> (Pairs, Pairs) {
                let mut path = Vec::new();
                let mut query = Vec::new();
                for p in &params {
                    let name = p["name"].as_str().unwrap();
                    if name == skip {
                        continue;
                    }
                    if p["in"] == "path" {
                        path.push((name.to_owned(), path_value(name, overrides)));
                    } else if p["required"] == true {
                        query.push((name.to_owned(), path_value(name, overrides)));
                    }
                }
                (path, query)
            };
            // A parameter is checked before the body is read: an empty object (refused for its missing
            // fields, which are not the parameter) keeps probes that pass from changing anything.
            let request_body = || (!body_schema.is_null()).then(|| json!({}));
            for p in &params {
                let name = p["name"].as_str().unwrap();
                for probe in probes(&doc, &p["schema"], false) {
                    let value = probe.value.as_ref().unwrap();
                    if !probe.refused
                        && p["schema"]["maximum"] == *value
                        && END_DEPENDS_ON_THE_GROUP.iter().any(|(n, _)| *n == name)
                    {
                        continue;
                    }
                    let text = value
                        .as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| value.to_string());
                    let (mut path, mut query) = defaults(name);
                    if p["in"] == "path" {
                        path.push((name.to_owned(), text.clone()));
                    } else {
                        query.push((name.to_owned(), text.clone()));
                    }
                    let reply = send(path, query, request_body()).await;
                    let shown = if text.len() > 20 {
                        format!("{} characters", text.len())
                    } else {
                        text
                    };
                    failures.extend(check(
                        &reply,
                        &probe,
                        &wire(name),
                        &method,
                        &format!("{method} {template} {name}={shown}"),
                    ));
                    params_probed += 1;
                }
            }
            if body_schema.is_null() {
                continue;
            }
            let Some(base_body) = base_body else {
                if !body_probes(&doc, body_schema, &json!({}), &[]).is_empty() {
                    without_base.push(id.to_owned());
                }
                continue;
            };
            let (path, query) = defaults("");
            let fine = send(path.clone(), query.clone(), Some(base_body.clone())).await;
            for field in base_body.as_object().unwrap().keys() {
                assert!(
                    !names_it(&fine, field),
                    "{id}: the base body is valid: {}",
                    fine.body
                );
            }
            for (field, probe) in body_probes(&doc, body_schema, &base_body, &[]) {
                let leaf = field.last().unwrap().as_str();
                if !probe.refused
                    && NOT_ACCEPTED_ALONE
                        .iter()
                        .any(|(o, f, _)| *o == id && *f == leaf)
                {
                    continue;
                }
                let body = with(&base_body, &field, &probe.value);
                let reply = send(path.clone(), query.clone(), Some(body)).await;
                let shown = match &probe.value {
                    None => "absent".to_owned(),
                    Some(Value::String(s)) if s.len() > 20 => format!("{} characters", s.len()),
                    Some(Value::Array(a)) => format!("{} items", a.len()),
                    Some(v) => v.to_string(),
                };
                failures.extend(check(
                    &reply,
                    &probe,
                    leaf,
                    &method,
                    &format!("{id} body {}={shown}", field.join(".")),
                ));
                fields_probed += 1;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "the server and the document disagree:\n{}",
        failures.join("\n")
    );
    assert!(
        without_base.is_empty(),
        "operations whose body has ranges or required fields but no base body in openapi_ranges.rs: {without_base:?}"
    );
    assert!(params_probed > 100, "parameter probes: {params_probed}");
    assert!(fields_probed > 60, "body probes: {fields_probed}");
    running.shutdown().await.unwrap();
}
