//! Producer quiesce on the wire (rsc additions to coord/v1): the scale request's `producerQuiesce`, the
//! routing answer's `quiesce` notice, and the body of `POST /coord/v1/streams/{p}/producers/quiesced`, by
//! which a producer says it has stopped publishing for a resharding.

use serde::{Deserialize, Serialize};

/// `"producerQuiesce": {"timeoutMs": …}` in a scale request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProducerQuiesceRequest {
    /// How long to wait for producers before switching anyway (1 ms … 10 minutes).
    #[serde(default)]
    pub timeout_ms: Option<i64>,
}

/// `quiesce` in the routing answer while a scale waits for producers to stop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct QuiesceNotice {
    /// The migration that waits; a producer reports with this id once it has stopped publishing.
    pub resharding_id: String,
    /// When routing switches even if not every producer quiesced (ISO-8601, UTC).
    pub deadline: String,
    /// Milliseconds from this answer to the deadline (for producers whose clock differs from Redis').
    pub remaining_ms: i64,
}

/// `POST /coord/v1/streams/{p}/producers/quiesced`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProducerQuiescedRequest {
    /// The producer's stable id (1–200 printable characters).
    #[serde(default)]
    pub producer_id: Option<String>,
    /// The quiesce notice's `reshardingId`.
    #[serde(default)]
    pub resharding_id: Option<String>,
    /// The `routingVersion` of the routing the producer holds.
    #[serde(default)]
    pub observed_routing_version: Option<i64>,
}

/// The answer to a quiesced report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ProducerQuiescedResponse {
    /// The reporting producer's id, as sent.
    pub producer_id: String,
    /// The migration reported on, as sent.
    pub resharding_id: String,
    /// Whether the scale still waits for producers (false: routing switched or the quiesce ended; refresh).
    pub waiting: bool,
}

impl super::AdminBody for ProducerQuiescedRequest {
    const FIELDS: &'static [&'static str] =
        &["producerId", "reshardingId", "observedRoutingVersion"];
}
