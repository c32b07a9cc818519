//! The coord/v1 error catalogue and the JSON error body every 4xx/5xx carries.
//!
//! Codes and their HTTP statuses are part of the wire contract (coord/v1 contract); a few codes are our own
//! additions for conditions the reference did not detect (corrupt or missing metadata, rollback suspicion).

use serde::{Deserialize, Serialize};

/// Every `errorCode` rsc can answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// 409: the compatibility create of a `(streamPrefix, consumerGroup)` pair that already exists.
    GroupAlreadyExists,
    /// 409: a stream create for a prefix some group already uses, or whose shard streams an earlier stream
    /// left in Redis (the message names the keys; see `existingRecords`).
    StreamPrefixAlreadyExists,
    /// 404: a group-scoped read or mutation names an unknown `(streamPrefix, consumerGroup)` (heartbeats
    /// answer `UNKNOWN_MEMBER_ID` instead).
    GroupNotFound,
    /// 404: a stream-level request (scale, ordering, …) for a prefix no group uses.
    StreamNotFound,
    /// 409: a delete without `force` while the group has an active member.
    GroupHasActiveMembers,
    /// 409: a scale while another migration of the stream is still active.
    ActiveMigrationExists,
    /// 409: a scale or rollback while a metadata-correction round of the group is open.
    MetadataSyncInProgress,
    /// 404: an unknown `reshardingId`.
    MigrationNotFound,
    /// 422: a rollback or force-complete of a migration that is not the stream's active one or not in a state
    /// that allows it (the message says why).
    RollbackNotAllowed,
    /// 409: the compare-and-set write of the group's metadata lost to concurrent writers every time it was
    /// retried; nothing was changed, the request may be sent again.
    StateVersionConflict,
    /// 503: the request needs Redis but the coordinator has no Redis connection configured.
    RedisNotConfigured,
    /// 503: creating a shard stream's Redis consumer group (`XGROUP CREATE`) failed with anything but
    /// `BUSYGROUP`.
    RedisStreamProvisioningFailed,
    /// 503: the coordinator is shutting down and refuses mutations and heartbeats; send them to another
    /// replica.
    CoordinatorTerminating,
    /// 429: the admin-mutation rate limit was hit; the `Retry-After` header says when to try again.
    RateLimitExceeded,
    /// 400: the request failed validation (the message names the field and the rule).
    InvalidRequest,
    /// Not in the reference: the group's metadata key is unreadable (corrupt, unknown schema or layout).
    MetadataCorrupt,
    /// Not in the reference: the group index lists the group but its metadata key is gone.
    MetadataMissing,
    /// Not in the reference: the group's metadata is suspected of having rolled back; admin mutations fail
    /// closed until an operator restores it from backup or recreates the group as a new lifecycle.
    MetadataRollbackSuspected,
    /// Not in the reference: force-complete of a migration that already ended on its own (completed or
    /// rolled back), so there is nothing left to force. (The reference has no force-complete.)
    MigrationAlreadyEnded,
    /// Not in the reference: Redis did not answer in time or refused the connection.
    RedisUnavailable,
    /// Not in the reference: an epoch or version of the group cannot grow any further (they stay within
    /// 2^53 - 1, the JSON-safe integer range); the transition is refused, nothing is written.
    EpochsExhausted,
    /// Not in the reference: a heartbeat for a member incarnation that another principal joined (only that
    /// principal, or an ADMIN, may send its heartbeats and leave).
    MemberOwnedByAnotherPrincipal,
    /// Not in the reference: a join beyond `coordinator.group.max-members`, or beyond what one principal may
    /// hold in one group (`max-members-per-principal`); nothing is written.
    TooManyMembers,
    /// Not in the reference: a join with a `groupInstanceId` that another principal's member holds or had
    /// reserved (only that principal, or an ADMIN, may use it).
    InstanceOwnedByAnotherPrincipal,
    /// Not in the reference: route exists but the method or path is unknown.
    NotFound,
    /// 401: no credentials, wrong credentials, or an invalid or expired token.
    Unauthorized,
    /// 403: authenticated, but the principal's roles or scope do not allow this request.
    Forbidden,
    /// 413: the request body is larger than the coordinator accepts.
    PayloadTooLarge,
    /// 415: a request body not declared as `Content-Type: application/json` (UTF-8).
    UnsupportedMediaType,
    /// 405: the path exists but not with this HTTP method.
    MethodNotAllowed,
    /// Not in the reference: the request body did not arrive within `coordinator.http.body-read-timeout`.
    RequestTimeout,
    /// Not in the reference: the listener already serves `coordinator.http.max-connections` connections.
    TooManyConnections,
    /// Not in the reference: an offset reset stopped after it had moved some of its shards (its hold on
    /// them vanished, or Redis failed midway). Nothing is rolled back: the body's `incompleteReset` lists the
    /// shards moved (from which id to which), the one in doubt and those not moved; verify them, then reset
    /// the rest with `shards`.
    OffsetResetIncomplete,
    /// 500: an unexpected failure inside the coordinator (a bug); the message says what failed.
    Internal,
}

impl ErrorCode {
    /// Every code (the OpenAPI document lists them as the error body's `errorCode` values).
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::GroupAlreadyExists,
        ErrorCode::StreamPrefixAlreadyExists,
        ErrorCode::GroupNotFound,
        ErrorCode::StreamNotFound,
        ErrorCode::GroupHasActiveMembers,
        ErrorCode::ActiveMigrationExists,
        ErrorCode::MetadataSyncInProgress,
        ErrorCode::MigrationNotFound,
        ErrorCode::RollbackNotAllowed,
        ErrorCode::StateVersionConflict,
        ErrorCode::RedisNotConfigured,
        ErrorCode::RedisStreamProvisioningFailed,
        ErrorCode::CoordinatorTerminating,
        ErrorCode::RateLimitExceeded,
        ErrorCode::InvalidRequest,
        ErrorCode::MetadataCorrupt,
        ErrorCode::MetadataMissing,
        ErrorCode::MetadataRollbackSuspected,
        ErrorCode::MigrationAlreadyEnded,
        ErrorCode::RedisUnavailable,
        ErrorCode::EpochsExhausted,
        ErrorCode::MemberOwnedByAnotherPrincipal,
        ErrorCode::TooManyMembers,
        ErrorCode::InstanceOwnedByAnotherPrincipal,
        ErrorCode::NotFound,
        ErrorCode::Unauthorized,
        ErrorCode::Forbidden,
        ErrorCode::PayloadTooLarge,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::MethodNotAllowed,
        ErrorCode::RequestTimeout,
        ErrorCode::TooManyConnections,
        ErrorCode::OffsetResetIncomplete,
        ErrorCode::Internal,
    ];

    /// The HTTP status this code is answered with.
    pub fn http_status(self) -> u16 {
        use ErrorCode::*;
        match self {
            InvalidRequest => 400,
            Unauthorized => 401,
            Forbidden | MemberOwnedByAnotherPrincipal | InstanceOwnedByAnotherPrincipal => 403,
            GroupNotFound | StreamNotFound | MigrationNotFound | NotFound => 404,
            MethodNotAllowed => 405,
            RequestTimeout => 408,
            GroupAlreadyExists
            | StreamPrefixAlreadyExists
            | GroupHasActiveMembers
            | ActiveMigrationExists
            | MetadataSyncInProgress
            | StateVersionConflict
            | MetadataCorrupt
            | MetadataMissing
            | MetadataRollbackSuspected
            | EpochsExhausted
            | TooManyMembers => 409,
            MigrationAlreadyEnded | OffsetResetIncomplete => 409,
            PayloadTooLarge => 413,
            UnsupportedMediaType => 415,
            RollbackNotAllowed => 422,
            RateLimitExceeded => 429,
            Internal => 500,
            RedisNotConfigured
            | RedisStreamProvisioningFailed
            | CoordinatorTerminating
            | TooManyConnections
            | RedisUnavailable => 503,
        }
    }

    /// The wire spelling, e.g. `GROUP_NOT_FOUND`.
    pub fn as_str(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "INTERNAL".to_owned())
    }
}

/// The HTTP status enum name the contract puts in the `status` field (`"NOT_FOUND"`, …).
pub fn http_status_name(code: u16) -> &'static str {
    match code {
        400 => "BAD_REQUEST",
        401 => "UNAUTHORIZED",
        403 => "FORBIDDEN",
        404 => "NOT_FOUND",
        405 => "METHOD_NOT_ALLOWED",
        408 => "REQUEST_TIMEOUT",
        409 => "CONFLICT",
        413 => "PAYLOAD_TOO_LARGE",
        415 => "UNSUPPORTED_MEDIA_TYPE",
        422 => "UNPROCESSABLE_ENTITY",
        429 => "TOO_MANY_REQUESTS",
        503 => "SERVICE_UNAVAILABLE",
        _ => "INTERNAL_SERVER_ERROR",
    }
}

/// The coordinator error body: `{status, errorCode, message}` (and `incompleteReset` with
/// `OFFSET_RESET_INCOMPLETE`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    /// The HTTP status as its enum name: `"NOT_FOUND"`, `"CONFLICT"`, ….
    pub status: String,
    /// What went wrong, as a stable code a client can branch on.
    pub error_code: ErrorCode,
    /// What went wrong and what to do about it, in words; for people, not for parsing.
    pub message: String,
    /// Only with `OFFSET_RESET_INCOMPLETE`: what the interrupted offset reset had done, shard by shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete_reset: Option<crate::wire::offsets::IncompleteReset>,
}

impl ErrorBody {
    /// The body of `code` with `message`; `status` follows from the code's HTTP status.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody {
            status: http_status_name(code.http_status()).to_owned(),
            error_code: code,
            message: message.into(),
            incomplete_reset: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialize_in_screaming_snake_case_with_their_status() {
        let body = ErrorBody::new(ErrorCode::GroupNotFound, "no such group");
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(json["status"], "NOT_FOUND");
        assert_eq!(json["errorCode"], "GROUP_NOT_FOUND");
        assert_eq!(ErrorCode::RateLimitExceeded.as_str(), "RATE_LIMIT_EXCEEDED");
        assert_eq!(ErrorCode::RollbackNotAllowed.http_status(), 422);
        assert_eq!(
            ErrorCode::MemberOwnedByAnotherPrincipal.as_str(),
            "MEMBER_OWNED_BY_ANOTHER_PRINCIPAL"
        );
        assert_eq!(ErrorCode::MemberOwnedByAnotherPrincipal.http_status(), 403);
    }
}
