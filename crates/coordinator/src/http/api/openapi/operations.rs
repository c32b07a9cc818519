//! What each operation of the route table takes and answers, by operation id: summary, tag, request body,
//! query parameters, success status and media type, the coord/v1 wire type of the answer, and its own error
//! statuses (those implied by the access level are added by `mod.rs`). The test of the document fails for a
//! route of the table that is missing here.

/// A request body.
pub enum Body {
    None,
    /// A JSON object, described in words.
    Json(&'static str),
}

pub struct Operation {
    pub summary: &'static str,
    pub tag: &'static str,
    /// The coord/v1 type of the JSON answer (`crates/protocol/src/wire`), or what a text answer is.
    pub wire_type: &'static str,
    /// The JSON answer is an array (the Grafana rows).
    pub array: bool,
    pub body: Body,
    /// (name, required, description)
    pub query: &'static [(&'static str, bool, &'static str)],
    /// (status, media type, description)
    pub success: (u16, &'static str, &'static str),
    pub errors: &'static [u16],
    /// (status, component schema, description) of error statuses answered with another body than the
    /// error body.
    pub own_error_bodies: &'static [(u16, &'static str, &'static str)],
    pub reads_redis: bool,
}

const JSON: &str = "application/json";
const ADMIN_BODY: &str =
    "requestedBy (required), reason and the operation's fields; unknown fields are refused";
const GRAFANA_GROUP: &[(&str, bool, &str)] = &[
    ("streamPrefix", true, "the stream prefix (blank: no rows)"),
    ("consumerGroup", true, "the consumer group (blank: no rows)"),
];
const GRAFANA_FILTER: &[(&str, bool, &str)] = &[
    (
        "streamPrefix",
        false,
        "only this stream (blank: all you may see)",
    ),
    ("consumerGroup", false, "only this group (blank: all)"),
];

fn read(summary: &'static str, wire_type: &'static str) -> Operation {
    Operation {
        summary,
        tag: "monitoring",
        wire_type,
        array: false,
        body: Body::None,
        query: &[],
        success: (200, JSON, "OK"),
        errors: &[400, 404],
        own_error_bodies: &[],
        reads_redis: true,
    }
}

fn admin(summary: &'static str, status: u16, wire_type: &'static str) -> Operation {
    Operation {
        summary,
        tag: "admin",
        wire_type,
        array: false,
        body: Body::Json(ADMIN_BODY),
        query: &[],
        success: (
            status,
            JSON,
            if status == 202 { "accepted" } else { "done" },
        ),
        errors: &[400, 404, 408, 409, 413],
        own_error_bodies: &[],
        reads_redis: true,
    }
}

/// A Grafana route: a JSON array of `row` (a typed component schema, `schemas.rs`).
fn grafana(
    summary: &'static str,
    row: &'static str,
    query: &'static [(&'static str, bool, &'static str)],
) -> Operation {
    Operation {
        tag: "grafana",
        array: true,
        query,
        errors: &[400],
        ..read(summary, row)
    }
}

fn service(summary: &'static str, media: &'static str, what: &'static str) -> Operation {
    Operation {
        summary,
        tag: "service",
        wire_type: what,
        array: false,
        body: Body::None,
        query: &[],
        success: (200, media, what),
        errors: &[],
        own_error_bodies: &[],
        reads_redis: false,
    }
}

/// The component schema of an operation's JSON request body (registered in `schemas.rs`), by operation id.
pub fn request_type(operation_id: &str) -> Option<&'static str> {
    Some(match operation_id {
        "createStreamGroup" | "createCoordinatorGroup" => "CreateStreamRequest",
        "deleteCoordinatorGroup" => "DeleteGroupRequest",
        "sendConsumerHeartbeat" => "HeartbeatRequest",
        "scaleStreamShards" | "startGroupResharding" => "ScaleRequest",
        "setStreamOrdering" => "OrderingRequest",
        "rollbackReshardingMigration" | "forceCompleteReshardingMigration" => {
            "MigrationActionRequest"
        }
        "dismissRollbackSuspicion" => "DismissSuspicionRequest",
        "resetGroupOffsets" => "OffsetResetRequest",
        "recreateGroupLifecycle" => "RecreateGroupRequest",
        "reportProducerQuiesced" => "ProducerQuiescedRequest",
        "loginCoordinatorApi" => "LoginBody",
        "revokeAccessToken" => "RevokeBody",
        _ => return None,
    })
}

/// The description of an operation of the route table.
pub fn describe(operation_id: &str) -> Option<Operation> {
    Some(match operation_id {
        "createStreamGroup" => admin(
            "Create a stream and its first consumer group",
            201,
            "StreamCreateResponse",
        ),
        "setStreamOrdering" => admin(
            "Set a stream's ordering option (KEY: per-key order across scales)",
            200,
            "OrderingResponse",
        ),
        "createCoordinatorGroup" => admin("Add a consumer group to a stream", 201, "GroupResponse"),
        "deleteCoordinatorGroup" => admin(
            "Delete a group's coordinator metadata",
            200,
            "GroupResponse",
        ),
        "recreateGroupLifecycle" => admin(
            "Recreate a group as a new lifecycle (repair)",
            200,
            "GroupResponse",
        ),
        "dismissRollbackSuspicion" => admin(
            "Dismiss a metadata-rollback suspicion",
            200,
            "MetadataDurability",
        ),
        "resetGroupOffsets" => admin(
            "Reset a group's position on its shard streams (to EARLIEST, LATEST, a DATETIME, an ID or by a SHIFT of records; dryRun plans only; reason required)",
            200,
            "OffsetResetResponse",
        ),
        "scaleStreamShards" => admin("Scale every group of a stream", 202, "StreamScaleResponse"),
        "startGroupResharding" => admin("Scale the stream of a group", 202, "Migration"),
        "rollbackReshardingMigration" => Operation {
            errors: &[400, 404, 408, 409, 413, 422],
            ..admin("Roll back the active migration", 202, "Migration")
        },
        "forceCompleteReshardingMigration" => {
            admin("Force a stuck migration to complete", 202, "Migration")
        }
        "getCoordinatorGroup" => read("A group", "GroupResponse"),
        "getProducerRoutingMetadata" => Operation {
            query: &[
                (
                    "observedMetadataVersion",
                    false,
                    "the highest metadataVersion this producer saw",
                ),
                (
                    "producerId",
                    false,
                    "the producer's stable id (a scale with producerQuiesce waits for it)",
                ),
            ],
            errors: &[400, 404, 409],
            ..read(
                "Producer routing: every shard's stream key and slot",
                "ProducerRoutingResponse",
            )
        },
        "getReshardingMigration" => read("One migration", "Migration"),
        "reportProducerQuiesced" => Operation {
            tag: "producers",
            body: Body::Json(
                "ProducerQuiescedRequest: producerId, reshardingId, observedRoutingVersion; unknown fields are refused",
            ),
            errors: &[400, 404, 408, 413],
            ..read(
                "A producer has stopped publishing for a quiesced scale",
                "ProducerQuiescedResponse",
            )
        },
        "sendConsumerHeartbeat" => Operation {
            tag: "members",
            body: Body::Json(
                "HeartbeatRequest: protocolVersion, requestId, memberId, memberEpoch, metadataVersion, runtimeConsumerCapacity, …",
            ),
            errors: &[400, 408, 413],
            ..read(
                "A member's heartbeat (always 200 with a status)",
                "HeartbeatResponse",
            )
        },
        "getCoordinatorHealth" => Operation {
            errors: &[],
            ..read("Health with checked components", "HealthResponse")
        },
        "getCoordinatorCompatibility" => Operation {
            errors: &[],
            ..read(
                "Supported protocol versions and timing defaults",
                "CompatibilityResponse",
            )
        },
        "listCoordinatorGroups" => Operation {
            errors: &[],
            ..read("Every group the caller may see", "GroupList")
        },
        "getMonitoringGroup" => read("A group with its metadataDurability", "MonitoringGroupView"),
        "getConsumptionProgress" => read(
            "Members' reported progress per shard",
            "ConsumptionResponse",
        ),
        "listReshardingMigrations" => read("A group's migrations", "MigrationList"),
        "getStreamShardOffsets" => read(
            "Per-shard offsets, pending and lag",
            "StreamShardOffsetsResponse",
        ),
        "describeStream" => read(
            "A stream as a whole: shards (length, memory, produce rate, hottest), groups side by side (state, \
             members, lag, consume rate, active migration) and routing version; rates from the answering \
             replica's samples",
            "StreamDescribeResponse",
        ),
        "getStreamHistory" => Operation {
            query: &[(
                "minutes",
                false,
                "minutes of history, an integer from 1 to 15 (default 15)",
            )],
            ..read(
                "Lag and produce/consume rates over the last minutes, one point per sample of the answering \
                 replica",
                "StreamHistoryResponse",
            )
        },
        "getMergedStreamMessages" => Operation {
            query: &[
                (
                    "direction",
                    false,
                    "FORWARD (oldest first) or BACKWARD (newest first, the default)",
                ),
                (
                    "cursor",
                    false,
                    "the nextCursor of the previous page: each shard's position, <shard>=<id>,… (exclusive)",
                ),
                ("limit", false, "records per page, 1 to 1000 (default 25)"),
                (
                    "fromId",
                    false,
                    "start every shard at this record id <ms>-<seq> or <ms> (inclusive; not with cursor)",
                ),
                (
                    "fromTime",
                    false,
                    "start every shard at this RFC 3339 time, read as <ms>-0 (inclusive; not with cursor)",
                ),
                (
                    "field",
                    false,
                    "search: keep records whose field <name> equals <value>, given as <name>=<value>",
                ),
                (
                    "search",
                    false,
                    "search: keep records whose payload contains this text",
                ),
                (
                    "scanLimit",
                    false,
                    "search: records scanned at most over every shard together, 1 to 100000 (default 1000)",
                ),
                (
                    "scanMaxBytes",
                    false,
                    "search: bytes scanned at most over every shard together, 1024 to 67108864 (default \
                     4194304)",
                ),
            ],
            ..read(
                "Every shard's records merged by time, one page",
                "MergedMessagesPageResponse",
            )
        },
        "getStreamShardMessages" => Operation {
            query: &[
                (
                    "direction",
                    false,
                    "FORWARD (oldest first) or BACKWARD (newest first, the default)",
                ),
                (
                    "cursor",
                    false,
                    "the nextCursor of the previous page (a record id, exclusive)",
                ),
                ("limit", false, "records per page, 1 to 1000 (default 25)"),
                (
                    "fromId",
                    false,
                    "start at this record id <ms>-<seq> or <ms> (inclusive; not with cursor)",
                ),
                (
                    "fromTime",
                    false,
                    "start at this RFC 3339 time, read as the id <ms>-0 (inclusive; not with cursor or fromId)",
                ),
                (
                    "field",
                    false,
                    "search: keep records whose field <name> equals <value>, given as <name>=<value>",
                ),
                (
                    "search",
                    false,
                    "search: keep records whose payload contains this text",
                ),
                (
                    "scanLimit",
                    false,
                    "search: records scanned at most, 1 to 100000 (default 1000)",
                ),
                (
                    "scanMaxBytes",
                    false,
                    "search: bytes scanned at most, 1024 to 67108864 (default 4194304)",
                ),
            ],
            ..read(
                "One page of a shard's records",
                "StreamMessagesPageResponse",
            )
        },
        "listShardPendingEntries" => Operation {
            query: &[
                (
                    "consumer",
                    false,
                    "only this Redis consumer's entries (a member's consumer name)",
                ),
                ("count", false, "entries per page, 1 to 1000 (default 100)"),
                (
                    "cursor",
                    false,
                    "the nextCursor of the previous page (a record id, exclusive)",
                ),
            ],
            ..read(
                "The group's pending entries on a shard, each with the message-browser page of its record",
                "PendingEntriesResponse",
            )
        },
        "listGroupMembers" => read("A group's members", "MemberList"),
        "getGroupAssignments" => read(
            "Target, current and granted assignments",
            "AssignmentsResponse",
        ),
        "getPrometheusMetrics" => Operation {
            tag: "service",
            errors: &[],
            success: (200, "application/openmetrics-text", "OpenMetrics text"),
            ..read("Prometheus metrics", "OpenMetrics text")
        },
        "loginCoordinatorApi" => Operation {
            tag: "auth",
            body: Body::Json("LoginRequest: username, password (or Basic credentials)"),
            errors: &[400, 401, 408, 413, 429],
            ..read("Sign in: a bearer token", "LoginResponse")
        },
        "revokeAccessToken" => Operation {
            tag: "auth",
            body: Body::Json("token, or all: true (an ADMIN may add username)"),
            errors: &[400, 408, 413],
            ..read("Revoke tokens", "RevokeResponse")
        },
        "getMonitoringSession" => Operation {
            tag: "auth",
            errors: &[],
            ..read(
                "Who the caller is: user, roles, scopes, token expiry",
                "SessionResponse",
            )
        },
        "listAuditRecords" => Operation {
            query: &[
                ("streamPrefix", false, "filter"),
                ("consumerGroup", false, "filter"),
                ("principal", false, "filter"),
                ("action", false, "filter"),
                ("outcome", false, "filter"),
                (
                    "requestId",
                    false,
                    "the X-Request-Id of the request recorded",
                ),
                ("since", false, "ISO-8601 instant"),
                ("until", false, "ISO-8601 instant"),
                ("limit", false, "records, newest first"),
            ],
            errors: &[400],
            ..read("Audit records, newest first", "AuditPage")
        },
        "getIndex" => service("Where to go next", JSON, "Index"),
        "healthz" => service("Liveness", JSON, "ProbeStatus"),
        "readyz" => Operation {
            errors: &[503],
            own_error_bodies: &[(
                503,
                "ProbeStatus",
                "Service Unavailable — not ready (terminating or Redis unreachable): status NOT_READY",
            )],
            ..service("Readiness", JSON, "ProbeStatus")
        },
        "getOpenApiJson" => service("This document (JSON)", JSON, "OpenAPI 3.1 document"),
        "getOpenApiYaml" => service(
            "This document (YAML)",
            "application/yaml",
            "OpenAPI 3.1 document",
        ),
        "getApiReference" => service(
            "The API reference page (Swagger UI, embedded)",
            "text/html",
            "HTML page",
        ),
        "getApiReferenceFile" => Operation {
            errors: &[404],
            ..service(
                "A file of the API reference page",
                "application/octet-stream",
                "an asset",
            )
        },
        "getConsole" => service(
            "The web console (embedded; its data comes from the authenticated routes)",
            "text/html",
            "HTML page",
        ),
        "getConsoleAsset" => Operation {
            errors: &[404],
            ..service(
                "A script or style of the web console",
                "application/octet-stream",
                "an asset",
            )
        },
        "listGrafanaGroups" => grafana(
            "One row per group: state, members, shards, totals",
            "GrafanaGroupRow",
            GRAFANA_FILTER,
        ),
        "listGrafanaStreamOptions" => {
            grafana("Stream prefixes, as variable options", "GrafanaOption", &[])
        }
        "listGrafanaConsumerGroupOptions" => grafana(
            "Consumer groups, as variable options",
            "GrafanaOption",
            &[("streamPrefix", false, "only this stream")],
        ),
        "listGrafanaShardOptions" => grafana(
            "A group's shards, as variable options",
            "GrafanaOption",
            GRAFANA_GROUP,
        ),
        "listGrafanaMemberRows" => grafana("A group's members", "GrafanaMemberRow", GRAFANA_GROUP),
        "listGrafanaShardRows" => grafana(
            "Per-shard offsets and owners",
            "GrafanaShardRow",
            GRAFANA_FILTER,
        ),
        "listGrafanaAssignmentRows" => grafana(
            "Target, current and revoking owners per shard",
            "GrafanaAssignmentRow",
            GRAFANA_FILTER,
        ),
        "listGrafanaMessageRows" => grafana(
            "Records of a shard as rows",
            "GrafanaMessageRow",
            &[
                ("streamPrefix", true, "the stream prefix"),
                ("consumerGroup", true, "the consumer group"),
                ("shardIndex", false, "a shard index (default 0)"),
                ("direction", false, "FORWARD or BACKWARD (default)"),
                ("cursor", false, "a record id (exclusive)"),
                ("limit", false, "1 to 1000 (default 25)"),
            ],
        ),
        _ => return None,
    })
}
