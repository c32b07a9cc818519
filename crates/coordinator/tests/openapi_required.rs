//! The OpenAPI document's `required` lists agree with the Rust types: for every component the coordinator
//! decodes with serde (request bodies, and the wire answers clients decode), a value built from the document
//! alone (every property, each at a value its schema admits) decodes as the Rust type, and each property
//! whose absence the type refuses is in the schema's `required`. A property the schema requires that the
//! type does not is one the server requires itself (`openapi/ranges.rs`; `openapi_ranges::` sends bodies
//! without it and sees them refused).

use rsc_coordinator::http::api::openapi::ranges::body_field;
use rsc_coordinator::http::api::openapi::{decoders, document};
use rsc_coordinator::http::api::routes::table;
use serde_json::{Map, Value, json};

pub fn doc() -> Value {
    serde_json::to_value(document(&table()).expect("the document builds")).unwrap()
}

/// `schema`, with a `$ref` to a component followed.
pub fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
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

/// The first type a schema names that is not `null`.
fn kind(schema: &Value) -> Option<&str> {
    match &schema["type"] {
        Value::String(k) => Some(k.as_str()),
        Value::Array(ks) => ks.iter().filter_map(Value::as_str).find(|k| *k != "null"),
        _ => None,
    }
}

/// A value `schema` admits, built from the document alone: every property of an object when `all`, else its
/// required ones only; integers at their minimum (or 0 within the bounds), strings of `minLength` letters (at
/// least one), the first value of an enum, empty lists and maps.
pub fn example(doc: &Value, schema: &Value, all: bool) -> Value {
    let schema = resolve(doc, schema);
    if let Some(values) = schema["enum"].as_array()
        && let Some(first) = values.iter().find(|v| !v.is_null())
    {
        return first.clone();
    }
    if let Some(branches) = schema["oneOf"].as_array().or(schema["anyOf"].as_array()) {
        let branch = branches
            .iter()
            .find(|b| resolve(doc, b)["type"] != "null")
            .unwrap_or(&branches[0]);
        return example(doc, branch, all);
    }
    if let Some(parts) = schema["allOf"].as_array() {
        let mut merged = Map::new();
        for part in parts {
            if let Value::Object(o) = example(doc, part, all) {
                merged.extend(o);
            }
        }
        return Value::Object(merged);
    }
    match kind(schema) {
        Some("object") | None if schema["properties"].is_object() => {
            let required: Vec<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            for (name, prop) in schema["properties"].as_object().unwrap() {
                if all || required.contains(&name.as_str()) {
                    out.insert(name.clone(), example(doc, prop, all));
                }
            }
            Value::Object(out)
        }
        Some("object") => json!({}),
        Some("array") => json!([]),
        Some("string") => {
            let n = schema["minLength"].as_u64().unwrap_or(1).max(1) as usize;
            Value::String("a".repeat(n))
        }
        Some("integer") => {
            let lo = schema["minimum"].as_i64().unwrap_or(i64::MIN);
            let hi = schema["maximum"].as_i64().unwrap_or(i64::MAX);
            json!(0i64.max(lo).min(hi))
        }
        Some("number") => json!(0.0),
        Some("boolean") => json!(false),
        Some("null") => Value::Null,
        other => panic!("no example for a schema of type {other:?}: {schema}"),
    }
}

#[test]
fn every_property_the_rust_type_requires_is_required_in_the_document() {
    let doc = doc();
    let decoders = decoders();
    assert!(
        decoders.len() >= 20,
        "components decoded: {}",
        decoders.len()
    );
    let mut checked = 0;
    for (name, decode) in &decoders {
        let schema = &doc["components"]["schemas"][name.as_str()];
        assert!(schema.is_object(), "{name} is not a component");
        let Some(props) = schema["properties"].as_object() else {
            continue;
        };
        let full = example(&doc, schema, true);
        decode(&full).unwrap_or_else(|e| {
            panic!("{name}: a value built from the document does not decode as its Rust type: {e}\n{full}")
        });
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for field in props.keys() {
            let mut without = full.clone();
            without.as_object_mut().unwrap().remove(field);
            let type_requires = decode(&without).is_err();
            checked += 1;
            if type_requires {
                assert!(
                    required.contains(&field.as_str()),
                    "{name}.{field}: the Rust type refuses a value without it, but the document does not \
                     list it in `required`"
                );
            } else if required.contains(&field.as_str()) {
                assert!(
                    body_field(name, field).is_some_and(|r| r.required),
                    "{name}.{field}: the document requires it, but neither the Rust type nor the server's \
                     rules (openapi/ranges.rs) do"
                );
            }
        }
        // Only the required properties: what a minimal client sends, and must decode.
        let minimal = example(&doc, schema, false);
        decode(&minimal).unwrap_or_else(|e| {
            panic!("{name}: its required properties alone do not decode: {e}\n{minimal}")
        });
    }
    assert!(checked > 100, "properties checked: {checked}");
}
