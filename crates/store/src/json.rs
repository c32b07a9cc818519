//! JSON for values the store writes to Redis: a value that cannot be encoded is a typed error, never an
//! empty string written in its place.

use crate::StoreError;
use serde::Serialize;

/// `value` as JSON, or [`StoreError::Encode`] naming `what` (nothing is written then).
pub fn to_json<T: Serialize + ?Sized>(what: &'static str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|source| StoreError::Encode { what, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value whose serialisation always fails, as a map with a non-string key does.
    struct Unencodable;

    impl Serialize for Unencodable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("refused on purpose"))
        }
    }

    #[test]
    fn a_value_that_cannot_be_encoded_is_an_error_not_an_empty_string() {
        let err = to_json("index entry", &Unencodable).unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::Encode {
                    what: "index entry",
                    ..
                }
            ),
            "{err}"
        );
        assert!(!err.is_transient());
        assert_eq!(
            err.to_string(),
            "could not encode the index entry as JSON: refused on purpose"
        );
        assert_eq!(to_json("entry", "a\"b").unwrap(), r#""a\"b""#);
    }
}
