//! `CoordError`: what an operation of the coordinator (admin, resharding, monitoring, inspection,
//! durability) can fail with, in the domain's words. It knows nothing of HTTP: the API maps each kind to
//! the contract's error code and status in one place (`api/error.rs`), and control flow outside the API
//! branches on these kinds, never on wire error codes. Every variant carries the message the caller
//! reads; the API sends it unchanged.

use rsc_protocol::validate::ValidationError;
use rsc_store::StoreError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordError {
    /// The request is not acceptable as written (a field, a body, a query, a name).
    Invalid(String),
    /// The group does not exist (the message says whether its stream does, and how to create it).
    GroupNotFound(String),
    /// No group of the stream exists.
    StreamNotFound(String),
    /// The group has no migration of that id.
    MigrationNotFound(String),
    /// The group exists already.
    GroupAlreadyExists(String),
    /// The stream exists already, or Redis keys of its shards do.
    StreamExists(String),
    /// The group still has active members.
    GroupHasActiveMembers(String),
    /// Another migration is in progress.
    MigrationInProgress(String),
    /// The migration already ended on its own.
    MigrationAlreadyEnded(String),
    /// The migration cannot be rolled back now.
    RollbackNotAllowed(String),
    /// The group is in a metadata-correction round.
    CorrectionInProgress(String),
    /// The group kept changing (compare-and-set lost every attempt), or what was reviewed changed.
    Conflict(String),
    /// The group's metadata is suspected of a rollback: mutations fail closed.
    RollbackSuspected(String),
    /// The group's metadata key is unreadable (fail closed).
    MetadataCorrupt(String),
    /// The index lists the group as live but its metadata key is gone (fail closed).
    MetadataMissing(String),
    /// An epoch or version cannot grow any further.
    EpochsExhausted(String),
    /// A member incarnation belongs to another principal.
    MemberOwnedByAnotherPrincipal(String),
    /// A join beyond the group's member cap, or beyond what one principal may hold in it.
    TooManyMembers(String),
    /// A static member's instance id belongs to another principal.
    InstanceOwnedByAnotherPrincipal(String),
    /// The caller may not do this.
    Forbidden(String),
    /// Redis did not answer, or refused.
    RedisUnavailable(String),
    /// Shard streams or their consumer groups could not be provisioned.
    ProvisioningFailed(String),
    /// This replica is shutting down.
    Terminating(String),
    /// A failure that is nobody's input (a bug).
    Internal(String),
}

impl CoordError {
    pub fn invalid(message: impl Into<String>) -> Self {
        CoordError::Invalid(message.into())
    }

    /// 404 for a group that does not exist, saying how to create it: `stream_groups` are the live groups of
    /// its stream (empty: the stream does not exist either).
    pub fn group_not_found(p: &str, g: &str, stream_groups: &[String]) -> Self {
        let hint = if !stream_groups.is_empty() {
            format!(
                "stream {p:?} exists (groups: {}); add this group with POST /coord/v1/streams/{p}/groups/{g}",
                stream_groups.join(", ")
            )
        } else if p == g {
            format!(
                "stream {p:?} does not exist either; create it with POST /coord/v1/streams/{p} (its first consumer \
                 group is named after it)"
            )
        } else {
            format!(
                "stream {p:?} does not exist either; create both with POST /coord/v1/streams/{p}/groups/{g} \
                 (POST /coord/v1/streams/{p} would name the stream's first group {p:?})"
            )
        };
        CoordError::GroupNotFound(format!(
            "consumer group {g:?} of stream {p:?} does not exist; {hint}"
        ))
    }

    /// The kind's name, as logs and messages show it (`METADATA_CORRUPT: …`); it reads as the contract's
    /// error code the API answers the kind with (a test in `api/error.rs` keeps the two equal).
    pub fn kind(&self) -> &'static str {
        match self {
            CoordError::Invalid(_) => "INVALID_REQUEST",
            CoordError::GroupNotFound(_) => "GROUP_NOT_FOUND",
            CoordError::StreamNotFound(_) => "STREAM_NOT_FOUND",
            CoordError::MigrationNotFound(_) => "MIGRATION_NOT_FOUND",
            CoordError::GroupAlreadyExists(_) => "GROUP_ALREADY_EXISTS",
            CoordError::StreamExists(_) => "STREAM_PREFIX_ALREADY_EXISTS",
            CoordError::GroupHasActiveMembers(_) => "GROUP_HAS_ACTIVE_MEMBERS",
            CoordError::MigrationInProgress(_) => "ACTIVE_MIGRATION_EXISTS",
            CoordError::MigrationAlreadyEnded(_) => "MIGRATION_ALREADY_ENDED",
            CoordError::RollbackNotAllowed(_) => "ROLLBACK_NOT_ALLOWED",
            CoordError::CorrectionInProgress(_) => "METADATA_SYNC_IN_PROGRESS",
            CoordError::Conflict(_) => "STATE_VERSION_CONFLICT",
            CoordError::RollbackSuspected(_) => "METADATA_ROLLBACK_SUSPECTED",
            CoordError::MetadataCorrupt(_) => "METADATA_CORRUPT",
            CoordError::MetadataMissing(_) => "METADATA_MISSING",
            CoordError::EpochsExhausted(_) => "EPOCHS_EXHAUSTED",
            CoordError::MemberOwnedByAnotherPrincipal(_) => "MEMBER_OWNED_BY_ANOTHER_PRINCIPAL",
            CoordError::TooManyMembers(_) => "TOO_MANY_MEMBERS",
            CoordError::InstanceOwnedByAnotherPrincipal(_) => "INSTANCE_OWNED_BY_ANOTHER_PRINCIPAL",
            CoordError::Forbidden(_) => "FORBIDDEN",
            CoordError::RedisUnavailable(_) => "REDIS_UNAVAILABLE",
            CoordError::ProvisioningFailed(_) => "REDIS_STREAM_PROVISIONING_FAILED",
            CoordError::Terminating(_) => "COORDINATOR_TERMINATING",
            CoordError::Internal(_) => "INTERNAL",
        }
    }

    /// The message the caller reads.
    pub fn message(&self) -> &str {
        match self {
            CoordError::Invalid(m)
            | CoordError::GroupNotFound(m)
            | CoordError::StreamNotFound(m)
            | CoordError::MigrationNotFound(m)
            | CoordError::GroupAlreadyExists(m)
            | CoordError::StreamExists(m)
            | CoordError::GroupHasActiveMembers(m)
            | CoordError::MigrationInProgress(m)
            | CoordError::MigrationAlreadyEnded(m)
            | CoordError::RollbackNotAllowed(m)
            | CoordError::CorrectionInProgress(m)
            | CoordError::Conflict(m)
            | CoordError::RollbackSuspected(m)
            | CoordError::MetadataCorrupt(m)
            | CoordError::MetadataMissing(m)
            | CoordError::EpochsExhausted(m)
            | CoordError::MemberOwnedByAnotherPrincipal(m)
            | CoordError::TooManyMembers(m)
            | CoordError::InstanceOwnedByAnotherPrincipal(m)
            | CoordError::Forbidden(m)
            | CoordError::RedisUnavailable(m)
            | CoordError::ProvisioningFailed(m)
            | CoordError::Terminating(m)
            | CoordError::Internal(m) => m,
        }
    }
}

impl std::fmt::Display for CoordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind(), self.message())
    }
}

impl std::error::Error for CoordError {}

impl From<ValidationError> for CoordError {
    fn from(e: ValidationError) -> Self {
        CoordError::Invalid(e.to_string())
    }
}

impl From<StoreError> for CoordError {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::Corrupt { .. }
            | StoreError::UnknownSchema { .. }
            | StoreError::UnknownLayout { .. } => CoordError::MetadataCorrupt(format!(
                "{e}; the group fails closed until its metadata key is restored from backup"
            )),
            _ => CoordError::RedisUnavailable(format!("Redis is unavailable: {e}; retry later")),
        }
    }
}
