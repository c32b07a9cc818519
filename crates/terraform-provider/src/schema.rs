//! Small constructors for the schemas of the provider, its resources and data sources, and the `timeouts`
//! block shared by `rsc_stream` (so every schema reads as a list of attributes).

use serde::{Deserialize, Serialize};
use tf_provider::schema::{
    Attribute, AttributeConstraint, AttributeType, Block, Description, NestedBlock,
};
use tf_provider::value::Value;

/// An attribute of `ty` with `constraint`, described by `text`.
pub fn attr(ty: AttributeType, constraint: AttributeConstraint, text: &str) -> Attribute {
    Attribute {
        attr_type: ty,
        description: Description::plain(text.to_owned()),
        constraint,
        sensitive: false,
        deprecated: false,
    }
}

/// A required string.
pub fn required_string(text: &str) -> Attribute {
    attr(AttributeType::String, AttributeConstraint::Required, text)
}

/// An optional string.
pub fn optional_string(text: &str) -> Attribute {
    attr(AttributeType::String, AttributeConstraint::Optional, text)
}

/// An optional bool with a default the provider fills in (so it is always known in state).
pub fn optional_computed_bool(text: &str) -> Attribute {
    attr(
        AttributeType::Bool,
        AttributeConstraint::OptionalComputed,
        text,
    )
}

/// A computed string.
pub fn computed_string(text: &str) -> Attribute {
    attr(AttributeType::String, AttributeConstraint::Computed, text)
}

/// A computed number.
pub fn computed_number(text: &str) -> Attribute {
    attr(AttributeType::Number, AttributeConstraint::Computed, text)
}

/// A block of `attributes` described by `text`.
pub fn block(text: &str, attributes: Vec<(&str, Attribute)>) -> Block {
    Block {
        version: 1,
        attributes: attributes
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        description: Description::plain(text.to_owned()),
        ..Default::default()
    }
}

/// The optional `timeouts { update = "…" }` block (a duration such as `30s`, `10m`, `1h30m`): how long an
/// update may wait for its scale to be accepted, and converged when asked. Create and delete do not wait.
pub fn timeouts_block() -> NestedBlock {
    NestedBlock::Optional(block(
        "How long an update waits for its scale.",
        vec![(
            "update",
            optional_string(
                "Default 20m: a scale's wait until accepted (and converged with wait_for_convergence).",
            ),
        )],
    ))
}

/// The `timeouts` block's values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeouts {
    #[serde(default)]
    pub update: Value<String>,
}

/// A known string value, if any.
pub fn known(v: &Value<String>) -> Option<&str> {
    match v {
        Value::Value(s) => Some(s.as_str()),
        _ => None,
    }
}

/// An optional flag with a default (`false`): the configured value when there is one (unknown while the
/// configuration's is), else the value already held, else `false`. So leaving a flag out and setting it to
/// its default plan the same (no perpetual diff), and an imported resource needs no extra apply.
pub fn settle_flag(flag: &mut Value<bool>, config: &Value<bool>) {
    match config {
        Value::Value(v) => *flag = Value::Value(*v),
        Value::Unknown => *flag = Value::Unknown,
        Value::Null => {
            if !matches!(flag, Value::Value(_)) {
                *flag = Value::Value(false);
            }
        }
    }
}
