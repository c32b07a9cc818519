//! Route access levels and what the security guard needs to know about the matched route and its body,
//! shared by the router (`api`) and the guard (`security`) so that neither imports the other for it: `api`
//! declares each route's [`Access`] and attaches a [`MatchedRoute`] to the request, `security` enforces it;
//! both read a body within its route's [`BodyLimit`] (the route's spec carries it, so they cannot disagree)
//! and answer a body-read timeout with [`body_timeout`].

use crate::http::error::ApiError;
use rsc_protocol::errors::ErrorCode;

/// What a caller needs to use a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No credentials (login, probes).
    Public,
    /// Monitoring and other reads.
    Read,
    /// Admin mutations.
    Write,
    /// Member heartbeats.
    Member,
    /// Reads of record payloads (the message browser, Grafana's message rows): DATA_READ or ADMIN.
    DataRead,
    /// Any authenticated caller, whatever its roles (token revocation).
    Authenticated,
}

/// The matched route's metadata, available to layers and handlers as a request extension.
#[derive(Debug, Clone, Copy)]
pub struct MatchedRoute {
    pub operation_id: &'static str,
    pub access: Access,
    pub audit_action: Option<&'static str>,
    pub path: &'static str,
    /// The largest body this route accepts ([`BodyLimit::for_route`]).
    pub body_limit: BodyLimit,
}

/// Largest accepted request body on every route but the heartbeat (the router's limit, and the guard's when
/// it buffers an audited body).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The operation id of the member heartbeat, the one route whose body grows with the group: a member reports
/// each shard it owns, and progress for each.
pub const HEARTBEAT_OPERATION: &str = "sendConsumerHeartbeat";

/// The setting that overrides the heartbeat's body limit.
pub const HEARTBEAT_LIMIT_SETTING: &str = "coordinator.http.heartbeat-max-body-bytes";

/// Worst-case bytes of one shard's `shardProgress` entry as a client sends it: `{"shard":{"shardIndex":16383},
/// "streamKey":…,"lastDeliveredId":…,"lastAckedId":…,"pendingCount":…,"updatedAt":…}` with a stream key of the
/// longest stream prefix (200 bytes) and its shard index, two stream ids of two 20-digit numbers, a 19-digit
/// count, and an ISO-8601 instant with nanoseconds and an offset, in compact JSON as clients send it (457
/// bytes with its comma; a unit test builds it).
pub const HEARTBEAT_PROGRESS_ENTRY_BYTES: usize = 512;

/// Worst-case bytes of one shard's `ownedShards` or `revokingShards` entry (`{"shard":{"shardIndex":16383},
/// "state":"REVOKING","inFlight":…,"ackedAt":…}`, the larger: 130 bytes), with room to spare.
pub const HEARTBEAT_SHARD_ENTRY_BYTES: usize = 160;

/// The rest of a heartbeat body: ids, names, capacity, static identity (each at most a few hundred bytes).
pub const HEARTBEAT_FIXED_BYTES: usize = 64 * 1024;

/// The heartbeat's default body limit: a member of a group at the largest shard count
/// (`rsc_protocol::validate::MAX_SHARD_COUNT`, 16,384; no setting lowers it) owning every shard and reporting
/// progress for each — 16,384 × (512 + 160) bytes plus 64 KiB, 10.6 MiB. One limit of 1 MiB refused a member
/// owning about 3,000 shards that reported progress for all of them.
pub const DEFAULT_HEARTBEAT_MAX_BODY_BYTES: usize = rsc_protocol::validate::MAX_SHARD_COUNT
    as usize
    * (HEARTBEAT_PROGRESS_ENTRY_BYTES + HEARTBEAT_SHARD_ENTRY_BYTES)
    + HEARTBEAT_FIXED_BYTES;

/// The largest body a route accepts, and the setting that changes it (None: fixed at [`MAX_BODY_BYTES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimit {
    pub max_bytes: usize,
    pub setting: Option<&'static str>,
}

impl Default for BodyLimit {
    fn default() -> Self {
        BodyLimit {
            max_bytes: MAX_BODY_BYTES,
            setting: None,
        }
    }
}

impl BodyLimit {
    /// The limit of the route with `operation_id`: the heartbeat's is `heartbeat_max_body_bytes`
    /// (`coordinator.http.heartbeat-max-body-bytes`, default [`DEFAULT_HEARTBEAT_MAX_BODY_BYTES`]), every
    /// other route's [`MAX_BODY_BYTES`].
    pub fn for_route(operation_id: &str, heartbeat_max_body_bytes: usize) -> Self {
        if operation_id == HEARTBEAT_OPERATION {
            BodyLimit {
                max_bytes: heartbeat_max_body_bytes,
                setting: Some(HEARTBEAT_LIMIT_SETTING),
            }
        } else {
            BodyLimit::default()
        }
    }

    /// The answer to a body over the limit: 413 `PAYLOAD_TOO_LARGE` naming the limit (and its setting).
    pub fn too_large(&self) -> ApiError {
        let message = match self.setting {
            Some(setting) => format!(
                "request body exceeds {} bytes, this route's limit ({setting}; the default fits a member \
                 owning every shard of a group at the largest shard count and reporting progress for each)",
                self.max_bytes
            ),
            None => format!("request body exceeds {} bytes", self.max_bytes),
        };
        ApiError::new(ErrorCode::PayloadTooLarge, message)
    }
}

/// Reading a request body failed because it had not arrived whole by its deadline
/// (`coordinator.http.body-read-timeout`, counted from the request head; the listener enforces it).
#[derive(Debug, Clone, Copy)]
pub struct BodyDeadlineExceeded;

impl std::fmt::Display for BodyDeadlineExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive within coordinator.http.body-read-timeout")
    }
}

impl std::error::Error for BodyDeadlineExceeded {}

/// Whether a body error is the body-read timeout (so the answer is 408, not 400 or 413).
pub fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.is::<BodyDeadlineExceeded>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// The answer to a body that did not arrive within `coordinator.http.body-read-timeout`.
pub fn body_timeout() -> ApiError {
    ApiError::new(
        ErrorCode::RequestTimeout,
        "the request body did not arrive within coordinator.http.body-read-timeout; send it whole and promptly",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsc_protocol::validate::{MAX_ID_LEN, MAX_SHARD_COUNT};
    use serde_json::json;

    const INSTANT: &str = "2026-12-04T19:32:52.123456789+00:00";
    const ID: &str = "18446744073709551615-18446744073709551615";

    #[test]
    fn the_heartbeat_limit_fits_every_shard_of_the_largest_group_at_its_worst() {
        let last = MAX_SHARD_COUNT - 1;
        let prefix = "p".repeat(MAX_ID_LEN);
        let progress = json!({"shard": {"shardIndex": last},
            "streamKey": crate::runtime::shown_keys::shard_stream(&rsc_store::Shard::new(prefix.as_str(), last)),
            "lastDeliveredId": ID, "lastAckedId": ID, "pendingCount": i64::MAX, "updatedAt": INSTANT});
        let revoking = json!({"shard": {"shardIndex": last}, "state": "REVOKING", "inFlight": i64::MAX,
            "ackedAt": INSTANT});
        let owned = json!({"shardIndex": last});
        let with_comma = |v: &serde_json::Value| v.to_string().len() + 1;
        assert_eq!(with_comma(&progress), 457);
        assert!(with_comma(&progress) <= HEARTBEAT_PROGRESS_ENTRY_BYTES);
        assert!(with_comma(&revoking).max(with_comma(&owned)) <= HEARTBEAT_SHARD_ENTRY_BYTES);
        assert_eq!(DEFAULT_HEARTBEAT_MAX_BODY_BYTES, 11_075_584);
    }

    #[test]
    fn only_the_heartbeat_route_has_the_larger_limit() {
        let hb = BodyLimit::for_route(HEARTBEAT_OPERATION, 5_000);
        assert_eq!(hb.max_bytes, 5_000);
        assert_eq!(hb.setting, Some(HEARTBEAT_LIMIT_SETTING));
        assert_eq!(
            BodyLimit::for_route("createStream", 5_000),
            BodyLimit::default()
        );
    }
}
