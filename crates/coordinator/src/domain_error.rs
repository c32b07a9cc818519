//! `CoordError`: what an operation of the coordinator (admin, resharding, monitoring, inspection,
//! durability) can fail with, in the domain's words. Each kind is answered with one of the contract's error
//! codes, decided in one place ([`CoordError::code`]; the HTTP status follows from the code), and control
//! flow outside the API branches on these kinds, never on wire error codes. A variant carries the facts its
//! message is made of ([`CoordError::message`] writes it), or the message its operation wrote; the API sends
//! the message unchanged.

use rsc_protocol::errors::ErrorCode;
use rsc_protocol::validate::ValidationError;
use rsc_store::StoreError;
use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordError {
    /// The request is not acceptable as written (a field, a body, a query, a name).
    Invalid(String),
    /// The group does not exist (the message says whether its stream does, and how to create it).
    GroupNotFound {
        /// The stream prefix.
        stream: String,
        /// The consumer group.
        group: String,
        /// The live groups of the stream (empty: the stream does not exist either).
        stream_groups: Vec<String>,
    },
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
    Terminating,
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
        CoordError::GroupNotFound {
            stream: p.to_owned(),
            group: g.to_owned(),
            stream_groups: stream_groups.to_vec(),
        }
    }

    /// The contract's error code each kind is answered with — the one table of it. Logs and messages show it
    /// as the kind's name (`METADATA_CORRUPT: …`).
    pub fn code(&self) -> ErrorCode {
        match self {
            CoordError::Invalid(_) => ErrorCode::InvalidRequest,
            CoordError::GroupNotFound { .. } => ErrorCode::GroupNotFound,
            CoordError::StreamNotFound(_) => ErrorCode::StreamNotFound,
            CoordError::MigrationNotFound(_) => ErrorCode::MigrationNotFound,
            CoordError::GroupAlreadyExists(_) => ErrorCode::GroupAlreadyExists,
            CoordError::StreamExists(_) => ErrorCode::StreamPrefixAlreadyExists,
            CoordError::GroupHasActiveMembers(_) => ErrorCode::GroupHasActiveMembers,
            CoordError::MigrationInProgress(_) => ErrorCode::ActiveMigrationExists,
            CoordError::MigrationAlreadyEnded(_) => ErrorCode::MigrationAlreadyEnded,
            CoordError::RollbackNotAllowed(_) => ErrorCode::RollbackNotAllowed,
            CoordError::CorrectionInProgress(_) => ErrorCode::MetadataSyncInProgress,
            CoordError::Conflict(_) => ErrorCode::StateVersionConflict,
            CoordError::RollbackSuspected(_) => ErrorCode::MetadataRollbackSuspected,
            CoordError::MetadataCorrupt(_) => ErrorCode::MetadataCorrupt,
            CoordError::MetadataMissing(_) => ErrorCode::MetadataMissing,
            CoordError::EpochsExhausted(_) => ErrorCode::EpochsExhausted,
            CoordError::MemberOwnedByAnotherPrincipal(_) => {
                ErrorCode::MemberOwnedByAnotherPrincipal
            }
            CoordError::TooManyMembers(_) => ErrorCode::TooManyMembers,
            CoordError::InstanceOwnedByAnotherPrincipal(_) => {
                ErrorCode::InstanceOwnedByAnotherPrincipal
            }
            CoordError::Forbidden(_) => ErrorCode::Forbidden,
            CoordError::RedisUnavailable(_) => ErrorCode::RedisUnavailable,
            CoordError::ProvisioningFailed(_) => ErrorCode::RedisStreamProvisioningFailed,
            CoordError::Terminating => ErrorCode::CoordinatorTerminating,
            CoordError::Internal(_) => ErrorCode::Internal,
        }
    }

    /// The HTTP status the kind is answered with (the code's).
    pub fn status(&self) -> u16 {
        self.code().http_status()
    }

    /// The message the caller reads.
    pub fn message(&self) -> Cow<'_, str> {
        match self {
            CoordError::GroupNotFound {
                stream,
                group,
                stream_groups,
            } => Cow::Owned(group_not_found_message(stream, group, stream_groups)),
            CoordError::Terminating => {
                Cow::Borrowed("this coordinator is shutting down; retry against another replica")
            }
            CoordError::Invalid(m)
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
            | CoordError::Internal(m) => Cow::Borrowed(m),
        }
    }
}

impl std::fmt::Display for CoordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code().as_str(), self.message())
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

/// The message of [`CoordError::GroupNotFound`]: whether the stream exists, and how to create the group.
fn group_not_found_message(p: &str, g: &str, stream_groups: &[String]) -> String {
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
    format!("consumer group {g:?} of stream {p:?} does not exist; {hint}")
}
