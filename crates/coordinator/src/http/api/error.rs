//! Where the domain meets the wire: a [`CoordError`] becomes an [`ApiError`] with the code its kind is
//! answered with ([`CoordError::code`], the one table of it) and the message the operation wrote, unchanged.

use crate::domain_error::CoordError;
use crate::http::error::ApiError;
use rsc_group::migration::MigrationError;
use rsc_group::model::EpochOverflow;

impl From<CoordError> for ApiError {
    fn from(e: CoordError) -> Self {
        let mut api = ApiError::new(e.code(), e.message());
        if let CoordError::ResetIncomplete(r) = e {
            api.incomplete_reset = Some(Box::new(r.done));
        }
        api
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
    use crate::domain_error::Conflict;
    use rsc_protocol::errors::ErrorCode;

    /// The structured kinds write the messages their string forms carried, word for word.
    #[test]
    fn a_kind_is_answered_with_its_code_status_and_message() {
        let cases = [
            (
                CoordError::group_not_found("s", "g", &["a".to_owned(), "b".to_owned()]),
                ErrorCode::GroupNotFound,
                404,
                "consumer group \"g\" of stream \"s\" does not exist; stream \"s\" exists (groups: a, b); add this \
                 group with POST /coord/v1/streams/s/groups/g",
            ),
            (
                CoordError::group_not_found("s", "s", &[]),
                ErrorCode::GroupNotFound,
                404,
                "consumer group \"s\" of stream \"s\" does not exist; stream \"s\" does not exist either; create it \
                 with POST /coord/v1/streams/s (its first consumer group is named after it)",
            ),
            (
                CoordError::group_not_found("s", "g", &[]),
                ErrorCode::GroupNotFound,
                404,
                "consumer group \"g\" of stream \"s\" does not exist; stream \"s\" does not exist either; create \
                 both with POST /coord/v1/streams/s/groups/g (POST /coord/v1/streams/s would name the stream's \
                 first group \"s\")",
            ),
            (
                CoordError::Terminating,
                ErrorCode::CoordinatorTerminating,
                503,
                "this coordinator is shutting down; retry against another replica",
            ),
            (
                CoordError::from(Conflict::StreamKeptChanging),
                ErrorCode::StateVersionConflict,
                409,
                "stream record kept changing; retry",
            ),
        ];
        for (e, code, status, message) in cases {
            let api = ApiError::from(e.clone());
            assert_eq!(api.code, code, "{e:?}");
            assert_eq!(e.status(), status, "{e:?}");
            assert_eq!(api.status().as_u16(), status, "{e:?}");
            assert_eq!(api.message, message, "{e:?}");
            assert_eq!(e.to_string(), format!("{}: {message}", code.as_str()));
        }
    }
}
