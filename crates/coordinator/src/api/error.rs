//! Where the domain meets the wire: each kind of [`CoordError`] becomes the contract's error code (and so
//! its HTTP status) here, and nowhere else. The message is sent as the operation wrote it.

use crate::domain_error::CoordError;
use crate::error::ApiError;
use rsc_group::migration::MigrationError;
use rsc_group::model::EpochOverflow;
use rsc_protocol::errors::ErrorCode;

impl From<CoordError> for ApiError {
    fn from(e: CoordError) -> Self {
        let code = match &e {
            CoordError::Invalid(_) => ErrorCode::InvalidRequest,
            CoordError::GroupNotFound(_) => ErrorCode::GroupNotFound,
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
            CoordError::Terminating(_) => ErrorCode::CoordinatorTerminating,
            CoordError::Internal(_) => ErrorCode::Internal,
        };
        ApiError::new(code, e.message())
    }
}

/// For the core (heartbeat, batch), which answers in the HTTP shape.
impl From<EpochOverflow> for ApiError {
    fn from(e: EpochOverflow) -> Self {
        CoordError::from(e).into()
    }
}

/// For the core, which answers in the HTTP shape.
impl From<MigrationError> for ApiError {
    fn from(e: MigrationError) -> Self {
        CoordError::from(e).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_as_the_code_it_is_answered_with() {
        let all = [
            CoordError::Invalid(String::new()),
            CoordError::GroupNotFound(String::new()),
            CoordError::StreamNotFound(String::new()),
            CoordError::MigrationNotFound(String::new()),
            CoordError::GroupAlreadyExists(String::new()),
            CoordError::StreamExists(String::new()),
            CoordError::GroupHasActiveMembers(String::new()),
            CoordError::MigrationInProgress(String::new()),
            CoordError::MigrationAlreadyEnded(String::new()),
            CoordError::RollbackNotAllowed(String::new()),
            CoordError::CorrectionInProgress(String::new()),
            CoordError::Conflict(String::new()),
            CoordError::RollbackSuspected(String::new()),
            CoordError::MetadataCorrupt(String::new()),
            CoordError::MetadataMissing(String::new()),
            CoordError::EpochsExhausted(String::new()),
            CoordError::MemberOwnedByAnotherPrincipal(String::new()),
            CoordError::TooManyMembers(String::new()),
            CoordError::InstanceOwnedByAnotherPrincipal(String::new()),
            CoordError::Forbidden(String::new()),
            CoordError::RedisUnavailable(String::new()),
            CoordError::ProvisioningFailed(String::new()),
            CoordError::Terminating(String::new()),
            CoordError::Internal(String::new()),
        ];
        for e in all {
            let api = ApiError::from(e.clone());
            assert_eq!(api.code.as_str(), e.kind(), "{e:?}");
        }
    }
}
