//! What creating a stream does with records an earlier stream of the same prefix left in Redis.
//!
//! Deleting a stream (its last consumer group) removes the coordinator's metadata and keeps the shard
//! streams and their records: deleting data is never a side effect. Creating the prefix again then finds
//! them, and `existingRecords` says what to do: `REFUSE` (the default: 409 `STREAM_PREFIX_ALREADY_EXISTS`
//! naming the keys and these choices), `ADOPT` (keep the shard streams with their records and Redis consumer
//! groups, so what was not read is read) or `PURGE` (delete them, then create the stream empty).

use serde::{Deserialize, Serialize};

/// The `existingRecords` choice of a stream create.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExistingRecords {
    /// Refuse the create with 409 `STREAM_PREFIX_ALREADY_EXISTS`, naming the keys found (the default).
    #[default]
    Refuse,
    /// Keep the shard streams with their records and Redis consumer groups; what was not read is read.
    Adopt,
    /// Delete the shard streams, then create the stream empty.
    Purge,
}

impl ExistingRecords {
    /// The wire name: `REFUSE`, `ADOPT` or `PURGE`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExistingRecords::Refuse => "REFUSE",
            ExistingRecords::Adopt => "ADOPT",
            ExistingRecords::Purge => "PURGE",
        }
    }

    /// Parses the wire name, any case (`rsc` flags and Terraform attributes take `adopt` as well).
    pub fn parse(text: &str) -> Option<ExistingRecords> {
        match text.to_ascii_uppercase().as_str() {
            "REFUSE" => Some(ExistingRecords::Refuse),
            "ADOPT" => Some(ExistingRecords::Adopt),
            "PURGE" => Some(ExistingRecords::Purge),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_parse_in_any_case() {
        for c in [
            ExistingRecords::Refuse,
            ExistingRecords::Adopt,
            ExistingRecords::Purge,
        ] {
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            assert_eq!(serde_json::from_str::<ExistingRecords>(&json).unwrap(), c);
            assert_eq!(ExistingRecords::parse(&c.as_str().to_lowercase()), Some(c));
        }
        assert_eq!(ExistingRecords::parse("keep"), None);
        assert!(serde_json::from_str::<ExistingRecords>("\"adopt\"").is_err());
    }
}
