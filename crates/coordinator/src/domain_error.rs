//! `CoordError`: what an operation of the coordinator (admin, resharding, monitoring, inspection,
//! durability) can fail with, in the domain's words. Each kind is answered with one of the contract's error
//! codes, decided in one place ([`CoordError::code`]; the HTTP status follows from the code), and control
//! flow outside the API branches on these kinds, never on wire error codes.
//!
//! A kind carries the facts of the failure (ids, counts, limits, states), never its text: the caller's
//! message is written from them in one place, [`CoordError::message`], by the `Display` of each kind's
//! detail (`domain_error/`, one file per family of kinds). The API sends the message unchanged.

mod access;
mod bad_config;
mod bad_query;
mod bad_request;
mod bad_reset;
mod bad_reshard;
mod busy;
mod conflict;
mod exists;
mod metadata;
mod not_found;
mod reset_incomplete;
mod unavailable;

#[cfg(test)]
mod tests;

pub use access::{Forbidden, MemberCap};
pub use bad_config::BadConfig;
pub use bad_query::BadQuery;
pub use bad_request::BadRequest;
pub use bad_reset::BadReset;
pub use bad_reshard::BadReshard;
pub use busy::{ActiveMembers, CorrectionOpen, MigrationBusy};
pub use conflict::Conflict;
pub use exists::StreamExists;
pub use metadata::{Corrupt, Exhausted, ObservationNote, Suspected, Unrecorded};
pub use not_found::StreamNotFound;
pub use reset_incomplete::ResetIncomplete;
pub use unavailable::{Internal, Provisioning, Unavailable, store_error_text};

use rsc_group::migration::MigrationError;
use rsc_group::model::{EpochOverflow, MigrationState};
use rsc_group::reshard::end::EndRefusal;
use rsc_protocol::errors::ErrorCode;
use rsc_protocol::validate::ValidationError;
use rsc_store::StoreError;
use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordError {
    /// The request is not acceptable as written (a field, a body, a query, a name).
    Invalid(Invalid),
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
    StreamNotFound(StreamNotFound),
    /// The group has no migration of that id.
    MigrationNotFound {
        /// The resharding id asked for.
        id: String,
    },
    /// The group exists already.
    GroupAlreadyExists {
        /// The stream prefix.
        stream: String,
        /// The consumer group.
        group: String,
    },
    /// The stream exists already, or Redis keys of its shards do.
    StreamExists(StreamExists),
    /// The group still has active members (or shards held for a stopped one).
    GroupHasActiveMembers(ActiveMembers),
    /// Another migration is in progress.
    MigrationInProgress(MigrationBusy),
    /// The migration already ended on its own.
    MigrationAlreadyEnded {
        /// The resharding id.
        id: String,
        /// How it ended.
        state: MigrationState,
    },
    /// The migration cannot be rolled back (or force-completed) now: the core's refusal.
    RollbackNotAllowed(EndRefusal),
    /// The group is in a metadata-correction round.
    CorrectionInProgress(CorrectionOpen),
    /// The group kept changing (compare-and-set lost every attempt), or what was reviewed changed.
    Conflict(Conflict),
    /// The group's metadata is suspected of a rollback: mutations fail closed.
    RollbackSuspected(Suspected),
    /// The group's metadata (or its stream's record) is unreadable (fail closed).
    MetadataCorrupt(Corrupt),
    /// The index lists the group as live but its metadata key is gone (fail closed).
    MetadataMissing {
        /// The missing metadata key.
        key: String,
    },
    /// An epoch or version cannot grow any further.
    EpochsExhausted(Exhausted),
    /// A member incarnation belongs to another principal.
    MemberOwnedByAnotherPrincipal {
        /// The member id.
        member: String,
        /// The stream prefix.
        stream: String,
        /// The consumer group.
        group: String,
        /// The principal that joined the member.
        owner: String,
        /// The principal that sent the heartbeat.
        caller: String,
    },
    /// A join beyond the group's member cap, or beyond what one principal may hold in it.
    TooManyMembers(MemberCap),
    /// A static member's instance id belongs to another principal.
    InstanceOwnedByAnotherPrincipal {
        /// The `groupInstanceId`.
        instance: String,
        /// The stream prefix.
        stream: String,
        /// The consumer group.
        group: String,
        /// The principal the instance id belongs to.
        owner: String,
    },
    /// The caller may not do this.
    Forbidden(Forbidden),
    /// Redis did not answer, or refused.
    RedisUnavailable(Unavailable),
    /// Shard streams or their consumer groups could not be provisioned.
    ProvisioningFailed(Provisioning),
    /// An offset reset stopped after moving some of its shards (boxed: the rows of every shard).
    ResetIncomplete(Box<ResetIncomplete>),
    /// This replica is shutting down.
    Terminating,
    /// A failure that is nobody's input (a bug).
    Internal(Internal),
}

/// What is wrong with a request, by the part of the API it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// A field failed the contract's validation (`rsc_protocol::validate`).
    Field(ValidationError),
    /// A query parameter of the message browser or the Grafana routes.
    Query(BadQuery),
    /// An offset reset's target or shards.
    Reset(BadReset),
    /// A scale, ordering or quiesce request.
    Reshard(BadReshard),
    /// Any other request (create, heartbeat progress, durability repair, inspection).
    Request(BadRequest),
    /// The coordinator's own configuration or bootstrap state, at start.
    Config(BadConfig),
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Invalid::Field(e) => e.fmt(f),
            Invalid::Query(e) => e.fmt(f),
            Invalid::Reset(e) => e.fmt(f),
            Invalid::Reshard(e) => e.fmt(f),
            Invalid::Request(e) => e.fmt(f),
            Invalid::Config(e) => e.fmt(f),
        }
    }
}

impl CoordError {
    /// 404 for a group that does not exist, saying how to create it: `stream_groups` are the live groups of
    /// its stream (empty: the stream does not exist either).
    pub fn group_not_found(p: &str, g: &str, stream_groups: &[String]) -> Self {
        CoordError::GroupNotFound {
            stream: p.to_owned(),
            group: g.to_owned(),
            stream_groups: stream_groups.to_vec(),
        }
    }

    /// 409 for a group that exists already.
    pub fn group_exists(stream: &str, group: &str) -> Self {
        CoordError::GroupAlreadyExists {
            stream: stream.to_owned(),
            group: group.to_owned(),
        }
    }

    /// The contract's error code each kind is answered with — the one table of it. Logs and messages show it
    /// as the kind's name (`METADATA_CORRUPT: …`).
    pub fn code(&self) -> ErrorCode {
        match self {
            CoordError::Invalid(_) => ErrorCode::InvalidRequest,
            CoordError::GroupNotFound { .. } => ErrorCode::GroupNotFound,
            CoordError::StreamNotFound(_) => ErrorCode::StreamNotFound,
            CoordError::MigrationNotFound { .. } => ErrorCode::MigrationNotFound,
            CoordError::GroupAlreadyExists { .. } => ErrorCode::GroupAlreadyExists,
            CoordError::StreamExists(_) => ErrorCode::StreamPrefixAlreadyExists,
            CoordError::GroupHasActiveMembers(_) => ErrorCode::GroupHasActiveMembers,
            CoordError::MigrationInProgress(_) => ErrorCode::ActiveMigrationExists,
            CoordError::MigrationAlreadyEnded { .. } => ErrorCode::MigrationAlreadyEnded,
            CoordError::RollbackNotAllowed(_) => ErrorCode::RollbackNotAllowed,
            CoordError::CorrectionInProgress(_) => ErrorCode::MetadataSyncInProgress,
            CoordError::Conflict(_) => ErrorCode::StateVersionConflict,
            CoordError::RollbackSuspected(_) => ErrorCode::MetadataRollbackSuspected,
            CoordError::MetadataCorrupt(_) => ErrorCode::MetadataCorrupt,
            CoordError::MetadataMissing { .. } => ErrorCode::MetadataMissing,
            CoordError::EpochsExhausted(_) => ErrorCode::EpochsExhausted,
            CoordError::MemberOwnedByAnotherPrincipal { .. } => {
                ErrorCode::MemberOwnedByAnotherPrincipal
            }
            CoordError::TooManyMembers(_) => ErrorCode::TooManyMembers,
            CoordError::InstanceOwnedByAnotherPrincipal { .. } => {
                ErrorCode::InstanceOwnedByAnotherPrincipal
            }
            CoordError::Forbidden(_) => ErrorCode::Forbidden,
            CoordError::RedisUnavailable(_) => ErrorCode::RedisUnavailable,
            CoordError::ProvisioningFailed(_) => ErrorCode::RedisStreamProvisioningFailed,
            CoordError::ResetIncomplete(_) => ErrorCode::OffsetResetIncomplete,
            CoordError::Terminating => ErrorCode::CoordinatorTerminating,
            CoordError::Internal(_) => ErrorCode::Internal,
        }
    }

    /// The HTTP status the kind is answered with (the code's).
    pub fn status(&self) -> u16 {
        self.code().http_status()
    }

    /// The message the caller reads, written from the kind's facts — the one place error text is written.
    pub fn message(&self) -> Cow<'_, str> {
        let text = match self {
            CoordError::Invalid(e) => e.to_string(),
            CoordError::GroupNotFound {
                stream,
                group,
                stream_groups,
            } => not_found::group_not_found_message(stream, group, stream_groups),
            CoordError::StreamNotFound(e) => e.to_string(),
            CoordError::MigrationNotFound { id } => {
                MigrationError::NotFound(id.clone()).to_string()
            }
            CoordError::GroupAlreadyExists { stream, group } => {
                format!("consumer group {group:?} of stream {stream:?} already exists")
            }
            CoordError::StreamExists(e) => e.to_string(),
            CoordError::GroupHasActiveMembers(e) => e.to_string(),
            CoordError::MigrationInProgress(e) => e.to_string(),
            CoordError::MigrationAlreadyEnded { id, state } => EndRefusal::AlreadyEnded {
                id: id.clone(),
                state: *state,
            }
            .to_string(),
            CoordError::RollbackNotAllowed(e) => e.to_string(),
            CoordError::CorrectionInProgress(e) => e.to_string(),
            CoordError::Conflict(e) => e.to_string(),
            CoordError::RollbackSuspected(e) => e.to_string(),
            CoordError::MetadataCorrupt(e) => e.to_string(),
            CoordError::MetadataMissing { key } => format!(
                "metadata key {key} of a live group is missing from Redis; it is never rebuilt from heartbeats — \
                 restore it from backup, or delete and recreate the group as a new lifecycle"
            ),
            CoordError::EpochsExhausted(e) => e.to_string(),
            CoordError::MemberOwnedByAnotherPrincipal {
                member,
                stream,
                group,
                owner,
                caller,
            } => format!(
                "member {member:?} of group {stream}/{group} was joined by principal {owner:?}: only {owner:?} \
                 (or an ADMIN) may send its heartbeats; {caller:?} must use a member id of its own"
            ),
            CoordError::TooManyMembers(e) => e.to_string(),
            CoordError::InstanceOwnedByAnotherPrincipal {
                instance,
                stream,
                group,
                owner,
            } => format!(
                "groupInstanceId {instance:?} of group {stream}/{group} belongs to principal {owner:?}; join \
                 with that principal, or with another groupInstanceId"
            ),
            CoordError::Forbidden(e) => e.to_string(),
            CoordError::RedisUnavailable(e) => e.to_string(),
            CoordError::ProvisioningFailed(e) => e.to_string(),
            CoordError::ResetIncomplete(e) => e.to_string(),
            CoordError::Terminating => {
                return Cow::Borrowed(
                    "this coordinator is shutting down; retry against another replica",
                );
            }
            CoordError::Internal(e) => e.to_string(),
        };
        Cow::Owned(text)
    }
}

impl std::fmt::Display for CoordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code().as_str(), self.message())
    }
}

impl std::error::Error for CoordError {}

impl From<Invalid> for CoordError {
    fn from(e: Invalid) -> Self {
        CoordError::Invalid(e)
    }
}

impl From<ValidationError> for CoordError {
    fn from(e: ValidationError) -> Self {
        CoordError::Invalid(Invalid::Field(e))
    }
}

impl From<StoreError> for CoordError {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::Corrupt { .. }
            | StoreError::UnknownSchema { .. }
            | StoreError::UnknownLayout { .. } => CoordError::MetadataCorrupt(Corrupt::Store {
                cause: e.to_string(),
            }),
            _ => CoordError::RedisUnavailable(Unavailable::Store {
                cause: e.to_string(),
            }),
        }
    }
}

impl From<EpochOverflow> for CoordError {
    fn from(e: EpochOverflow) -> Self {
        CoordError::EpochsExhausted(Exhausted::Overflow(e))
    }
}

impl From<MigrationError> for CoordError {
    fn from(e: MigrationError) -> Self {
        match e {
            MigrationError::NotFound(id) => CoordError::MigrationNotFound { id },
            MigrationError::NotAllowed(_) => {
                CoordError::RollbackNotAllowed(EndRefusal::Migration(e))
            }
            MigrationError::EpochOverflow(e) => e.into(),
        }
    }
}

impl From<EndRefusal> for CoordError {
    fn from(e: EndRefusal) -> Self {
        match e {
            EndRefusal::Migration(e) => e.into(),
            EndRefusal::NotTheStreamsActive { .. } | EndRefusal::NotSwitched(_) => {
                CoordError::RollbackNotAllowed(e)
            }
            EndRefusal::AlreadyEnded { id, state } => {
                CoordError::MigrationAlreadyEnded { id, state }
            }
            EndRefusal::CorrectionOpen => CoordError::CorrectionInProgress(CorrectionOpen::End),
        }
    }
}

/// Each detail turns `.into()` the kind it belongs to: `Conflict::StreamKeptChanging.into()` is a
/// `CoordError::Conflict`, `BadQuery::…` a `CoordError::Invalid`.
macro_rules! into_coord_error {
    (Invalid: $($detail:ident => $part:ident),* $(,)?) => {
        $(impl From<$detail> for CoordError {
            fn from(e: $detail) -> Self {
                CoordError::Invalid(Invalid::$part(e))
            }
        })*
    };
    ($($detail:ident => $kind:ident),* $(,)?) => {
        $(impl From<$detail> for CoordError {
            fn from(e: $detail) -> Self {
                CoordError::$kind(e)
            }
        })*
    };
}

into_coord_error! {
    Invalid:
    BadQuery => Query,
    BadReset => Reset,
    BadReshard => Reshard,
    BadRequest => Request,
    BadConfig => Config,
}

into_coord_error! {
    StreamNotFound => StreamNotFound,
    StreamExists => StreamExists,
    ActiveMembers => GroupHasActiveMembers,
    MigrationBusy => MigrationInProgress,
    CorrectionOpen => CorrectionInProgress,
    Conflict => Conflict,
    Suspected => RollbackSuspected,
    Corrupt => MetadataCorrupt,
    Exhausted => EpochsExhausted,
    MemberCap => TooManyMembers,
    Forbidden => Forbidden,
    Unavailable => RedisUnavailable,
    Provisioning => ProvisioningFailed,
    Internal => Internal,
}
