//! Coordinator errors and invalid input as Terraform diagnostics: the summary is the coordinator's
//! `errorCode` and message, the diagnostic points at the attribute the error is about, and the detail names
//! the request id to look up in the audit (`GET /coord/v1/monitoring/audit`).

use rsc_client::{AdminError, ClientError};
use rsc_protocol::validate::ValidationError;
use tf_provider::{AttributePath, Diagnostic, Diagnostics};

/// The errorCode the coordinator gives a rejected input (and the provider's plan-time checks, which run the
/// same validation).
pub const INVALID_REQUEST: &str = "INVALID_REQUEST";

/// Which attribute a coordinator message is about: the wire field it starts with (`streamPrefix: …`), else
/// `fallback`.
pub fn attribute_for(message: &str, fallback: &str) -> AttributePath {
    let field = message.split(':').next().unwrap_or("").trim();
    let attr = match field {
        "streamPrefix" => "stream_prefix",
        "consumerGroup" => "consumer_group",
        "initialShardCount" | "targetShardCount" | "shardCount" => "shard_count",
        "reason" => "reason",
        _ => fallback,
    };
    if attr.is_empty() {
        AttributePath::root()
    } else {
        AttributePath::new(attr.to_owned())
    }
}

/// A plan-time validation failure on `attr`, worded as the coordinator would answer it.
pub fn invalid(diags: &mut Diagnostics, attr: &str, e: &ValidationError) {
    error(
        diags,
        format!("{INVALID_REQUEST}: {e}"),
        format!(
            "The coordinator refuses this value ({INVALID_REQUEST}, HTTP 400): {e}. Nothing was sent."
        ),
        AttributePath::new(attr.to_owned()),
    );
}

/// A failed mutation: `what` says what was attempted (e.g. `scale stream "orders" to 8 shards`).
pub fn mutation(diags: &mut Diagnostics, what: &str, e: &AdminError, fallback_attr: &str) {
    let (summary, attr) = summary_and_attr(&e.error, fallback_attr);
    error(
        diags,
        summary,
        format!(
            "Could not {what}: {}. Request id {} (see GET /coord/v1/monitoring/audit).",
            e.error, e.request_id
        ),
        attr,
    );
}

/// A failed read: `what` says what was read.
pub fn read(diags: &mut Diagnostics, what: &str, e: &ClientError, fallback_attr: &str) {
    let (summary, attr) = summary_and_attr(e, fallback_attr);
    error(diags, summary, format!("Could not read {what}: {e}."), attr);
}

fn summary_and_attr(e: &ClientError, fallback_attr: &str) -> (String, AttributePath) {
    match e {
        ClientError::Api {
            error_code,
            message,
            ..
        } => (
            match error_code {
                Some(code) => format!("{code}: {message}"),
                None => message.clone(),
            },
            attribute_for(message, fallback_attr),
        ),
        ClientError::Unauthorized { .. } => (
            "UNAUTHORIZED: the coordinator rejected the provider's credentials".into(),
            AttributePath::root(),
        ),
        ClientError::Forbidden { .. } => (
            "FORBIDDEN: the provider's principal lacks the role (WRITE for changes, READ for plans)".into(),
            AttributePath::root(),
        ),
        ClientError::Unreachable(_) => (
            "COORDINATOR_UNREACHABLE: no coordinator URL answered".into(),
            AttributePath::root(),
        ),
        other => (other.to_string(), AttributePath::root()),
    }
}

/// An error on `attr`. (Built directly: the plugin library's constructors append a backtrace to the detail
/// whenever RUST_BACKTRACE is set, which would bury the coordinator's message.)
pub fn error(
    diags: &mut Diagnostics,
    summary: impl Into<String>,
    detail: impl Into<String>,
    attr: AttributePath,
) {
    diags.add_error(Diagnostic {
        summary: summary.into().into(),
        detail: detail.into().into(),
        attribute: attr,
    });
}

/// An error about the whole resource or provider.
pub fn root_error(diags: &mut Diagnostics, summary: impl Into<String>, detail: impl Into<String>) {
    error(diags, summary, detail, AttributePath::root());
}

/// A warning about the whole resource or provider.
pub fn root_warning(
    diags: &mut Diagnostics,
    summary: impl Into<String>,
    detail: impl Into<String>,
) {
    diags.add_warning(Diagnostic {
        summary: summary.into().into(),
        detail: detail.into().into(),
        attribute: AttributePath::root(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_point_at_their_attribute() {
        assert_eq!(
            attribute_for(
                "targetShardCount: must be between 0 and 16384 (got -1)",
                "x"
            ),
            AttributePath::new("shard_count")
        );
        assert_eq!(
            attribute_for("streamPrefix: must not be blank", ""),
            AttributePath::new("stream_prefix")
        );
        assert_eq!(
            attribute_for("group has active members (m1)", "force_destroy"),
            AttributePath::new("force_destroy")
        );
        assert_eq!(attribute_for("anything", ""), AttributePath::root());
    }
}
