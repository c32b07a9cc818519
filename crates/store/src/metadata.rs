//! Validating a group's metadata hash as read from Redis.
//!
//! The store is the source of truth, and rsc fails closed on damaged metadata (invariant 7): a
//! hash without a usable revision or aggregate is reported as [`StoreError::Corrupt`], and data
//! written by a newer schema or key layout is refused rather than misread. Pure function, so every
//! rule is unit-tested without Redis.

use std::collections::HashMap;

use crate::aggregate_codec::{self, LAYOUT_LZ4, LAYOUT_LZ4_OUT_OF_LINE, LAYOUT_PLAIN};
use crate::error::StoreError;
use crate::outcome::StoredGroup;
use crate::split_layout::{self, LAYOUT_SPLIT};

/// The only `schemaVersion` this build reads and writes.
pub const SCHEMA_VERSION: &str = "1";
/// The `layoutVersion` of a hash whose aggregate is plain JSON, as creates and restores write it; a
/// compare-and-set of a large aggregate writes `"3"` (LZ4-compressed JSON in the aggregate key,
/// `aggregate_codec.rs`), and one in the split layout `"4"` (`split_layout.rs`). This build reads those and `"2"`.
pub const LAYOUT_VERSION: &str = LAYOUT_PLAIN;

/// Turns the fields of `HGETALL <key>`, and the value of its aggregate key read in the same transaction
/// (`out_of_line`), into a [`StoredGroup`]; no fields means no group.
pub(crate) fn parse(
    key: &str,
    mut fields: HashMap<Vec<u8>, Vec<u8>>,
    out_of_line: Option<Vec<u8>>,
) -> Result<Option<StoredGroup>, StoreError> {
    if fields.is_empty() {
        return Ok(None);
    }
    let field = |name: &str| -> Result<String, StoreError> {
        let raw = fields
            .get(name.as_bytes())
            .ok_or_else(|| StoreError::Corrupt {
                key: key.to_string(),
                detail: format!("the {name} field is missing"),
            })?;
        String::from_utf8(raw.clone()).map_err(|_| StoreError::Corrupt {
            key: key.to_string(),
            detail: format!("the {name} field is not UTF-8"),
        })
    };

    let schema = field("schemaVersion")?;
    if schema != SCHEMA_VERSION {
        return Err(StoreError::UnknownSchema {
            key: key.to_string(),
            found: schema,
        });
    }
    let layout = field("layoutVersion")?;
    if ![
        LAYOUT_PLAIN,
        LAYOUT_LZ4,
        LAYOUT_LZ4_OUT_OF_LINE,
        LAYOUT_SPLIT,
    ]
    .contains(&layout.as_str())
    {
        return Err(StoreError::UnknownLayout {
            key: key.to_string(),
            found: layout,
        });
    }
    let revision = revision_of(key, &field("revision")?)?;
    let updated_at = field("updatedAt")?;
    if layout == LAYOUT_SPLIT {
        let aggregate = split_layout::assemble(key, &mut fields)?;
        return Ok(Some(StoredGroup {
            aggregate,
            revision,
            updated_at,
            layout,
        }));
    }
    // Taken, not copied: a large group's aggregate is megabytes.
    let raw = if layout == LAYOUT_LZ4_OUT_OF_LINE {
        out_of_line.ok_or_else(|| StoreError::Corrupt {
            key: key.to_string(),
            detail: format!(
                "layoutVersion {layout:?} says the aggregate is in {}, which is missing",
                crate::keys::aggregate_key(key)
            ),
        })?
    } else {
        fields
            .remove("aggregate".as_bytes())
            .ok_or_else(|| StoreError::Corrupt {
                key: key.to_string(),
                detail: "the aggregate field is missing".into(),
            })?
    };
    let aggregate = aggregate_codec::decode(key, &layout, raw)?;
    Ok(Some(StoredGroup {
        aggregate,
        revision,
        updated_at,
        layout,
    }))
}

/// The revision field alone (`HGET … revision`): `Ok(None)` if the group does not exist, an error if the
/// field is not what the scripts write.
pub fn parse_revision_field(key: &str, field: Option<String>) -> Result<Option<u64>, StoreError> {
    field.map(|text| revision_of(key, &text)).transpose()
}

/// The revision field's value, or the error that says it is damaged.
fn revision_of(key: &str, text: &str) -> Result<u64, StoreError> {
    parse_revision(text).ok_or_else(|| StoreError::Corrupt {
        key: key.to_string(),
        detail: format!("the revision field is not a positive decimal integer: {text:?}"),
    })
}

/// A positive decimal integer without sign or leading zeros, as the scripts write it (the same
/// rule the scripts apply before comparing revisions).
fn parse_revision(text: &str) -> Option<u64> {
    let canonical =
        !text.is_empty() && !text.starts_with('0') && text.bytes().all(|b| b.is_ascii_digit());
    if canonical { text.parse().ok() } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(pairs: &[(&str, &str)]) -> HashMap<Vec<u8>, Vec<u8>> {
        pairs
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    fn valid() -> Vec<(&'static str, &'static str)> {
        vec![
            ("aggregate", "{\"a\":1}"),
            ("revision", "12"),
            ("schemaVersion", "1"),
            ("layoutVersion", "1"),
            ("updatedAt", "2026-01-01T00:00:00.000Z"),
        ]
    }

    fn without(name: &str) -> HashMap<Vec<u8>, Vec<u8>> {
        hash(
            &valid()
                .into_iter()
                .filter(|(k, _)| *k != name)
                .collect::<Vec<_>>(),
        )
    }

    fn with(name: &str, value: &'static str) -> HashMap<Vec<u8>, Vec<u8>> {
        let mut fields = without(name);
        fields.insert(name.as_bytes().to_vec(), value.as_bytes().to_vec());
        fields
    }

    #[test]
    fn empty_hash_is_no_group() {
        assert_eq!(parse("k", HashMap::new(), None).expect("ok"), None);
    }

    #[test]
    fn valid_hash_is_read() {
        let group = parse("k", hash(&valid()), None)
            .expect("ok")
            .expect("present");
        assert_eq!(group.aggregate, "{\"a\":1}");
        assert_eq!(group.revision, 12);
        assert_eq!(group.updated_at, "2026-01-01T00:00:00.000Z");
    }

    #[test]
    fn missing_or_bad_fields_are_corrupt() {
        for fields in [
            without("aggregate"),
            without("revision"),
            without("updatedAt"),
            without("schemaVersion"),
            without("layoutVersion"),
            with("revision", "abc"),
            with("revision", "0"),
            with("revision", "-3"),
            with("revision", "+3"),
            with("revision", "03"),
            with("revision", "1e3"),
            with("revision", ""),
            with("revision", "99999999999999999999999"),
        ] {
            match parse("k", fields, None) {
                Err(StoreError::Corrupt { key, .. }) => assert_eq!(key, "k"),
                other => panic!("expected Corrupt, got {other:?}"),
            }
        }
        let mut not_utf8 = hash(&valid());
        not_utf8.insert(b"aggregate".to_vec(), vec![0xff, 0xfe]);
        assert!(matches!(
            parse("k", not_utf8, None),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn unknown_versions_are_refused() {
        match parse("k", with("schemaVersion", "2"), None) {
            Err(StoreError::UnknownSchema { key, found }) => {
                assert_eq!((key.as_str(), found.as_str()), ("k", "2"));
            }
            other => panic!("expected UnknownSchema, got {other:?}"),
        }
        match parse("k", with("layoutVersion", "7"), None) {
            Err(StoreError::UnknownLayout { key, found }) => {
                assert_eq!((key.as_str(), found.as_str()), ("k", "7"));
            }
            other => panic!("expected UnknownLayout, got {other:?}"),
        }
    }

    #[test]
    fn an_out_of_line_aggregate_is_read_from_its_key_and_its_absence_is_corrupt() {
        let json = format!("{{\"m\":\"{}\"}}", "x".repeat(100_000));
        let (stored, layout) =
            aggregate_codec::encode(&json, aggregate_codec::AggregateCompression::Lz4);
        assert_eq!(layout, LAYOUT_LZ4_OUT_OF_LINE);
        let header = without("aggregate");
        let mut header3 = header.clone();
        header3.insert(b"layoutVersion".to_vec(), b"3".to_vec());
        let group = parse("k", header3.clone(), Some(stored.into_owned()))
            .expect("ok")
            .expect("present");
        assert_eq!(group.aggregate, json);
        match parse("k", header3, None) {
            Err(StoreError::Corrupt { key, detail }) => {
                assert_eq!(key, "k");
                assert!(detail.contains("k:aggregate"), "{detail}");
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
        // A stray aggregate key beside a layout "1" hash is not read: the field is.
        let group = parse("k", hash(&valid()), Some(b"{\"stray\":1}".to_vec()))
            .expect("ok")
            .expect("present");
        assert_eq!(group.aggregate, "{\"a\":1}");
    }
}
