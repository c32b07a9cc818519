//! How a group's aggregate JSON is stored: in its metadata hash's `aggregate` field, or out of line.
//!
//! Redis's time per compare-and-set grows with the bytes a write carries, and far more when they pass through
//! a Lua script: Redis 7.0 spends ~1.2 µs per KB turning a script argument into a Lua string, against ~0.1 µs
//! per KB for a plain `SET` (BENCHMARKS.md, "Performance, second step"). So a large aggregate (at least
//! [`COMPRESS_FROM_BYTES`] of JSON) is LZ4-compressed (about a tenth of its size; ~1.5 ms for 3 MB) and stored
//! out of line under `layoutVersion` "3": in the string key [`crate::aggregate_key`] of the hash, written by a
//! plain `SET` of a staging key and renamed into place by the compare-and-set script after its checks, in one
//! MULTI/EXEC (`store.rs`). Smaller ones stay plain JSON in the field under "1", readable with `redis-cli`,
//! exactly as earlier versions wrote every aggregate. Layout "2" (compressed, in the field) was written by the
//! version before this one and is still read. The layout is recorded with every write, so a reader knows
//! which it holds, and a build that does not know a layout refuses it instead of misreading it.
//!
//! Compressed form (layouts "2" and "3"): [`LZ4_MAGIC`], then an LZ4 block with its decompressed size
//! prepended (4 bytes, little-endian). A value that does not decode, decodes to more than
//! [`MAX_DECODED_BYTES`] or is not UTF-8 is corrupt metadata: the group fails closed, as for any other
//! damage; so is a layout "3" hash whose aggregate key is missing.

use std::borrow::Cow;

use crate::error::StoreError;

/// `layoutVersion` of a hash whose aggregate is plain JSON.
pub const LAYOUT_PLAIN: &str = "1";
/// `layoutVersion` of a hash whose aggregate field is LZ4-compressed JSON (read, no longer written).
pub const LAYOUT_LZ4: &str = "2";
/// `layoutVersion` of a hash whose aggregate is LZ4-compressed JSON in its aggregate key.
pub const LAYOUT_LZ4_OUT_OF_LINE: &str = "3";
/// Aggregates at least this long are compressed (when compression is on).
pub const COMPRESS_FROM_BYTES: usize = 64 * 1024;
/// Marks a compressed value (JSON never starts with a NUL byte).
pub const LZ4_MAGIC: &[u8] = b"\0rsc-lz4\0";
/// The largest aggregate a compressed value may decode to.
pub const MAX_DECODED_BYTES: usize = 512 * 1024 * 1024;

/// Whether large aggregates are written compressed (`coordinator.store.aggregate-compression`). Reading
/// understands both layouts either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AggregateCompression {
    /// Every aggregate is written as plain JSON (layout "1"), as versions before this one did.
    Off,
    /// Aggregates of at least [`COMPRESS_FROM_BYTES`] are written LZ4-compressed, out of line (layout "3").
    #[default]
    Lz4,
}

/// The bytes to store for `json` and the `layoutVersion` they are written under.
pub(crate) fn encode(
    json: &str,
    compression: AggregateCompression,
) -> (Cow<'_, [u8]>, &'static str) {
    if compression == AggregateCompression::Lz4 && json.len() >= COMPRESS_FROM_BYTES {
        let mut out = Vec::with_capacity(LZ4_MAGIC.len() + json.len() / 4);
        out.extend_from_slice(LZ4_MAGIC);
        out.extend_from_slice(&lz4_flex::block::compress_prepend_size(json.as_bytes()));
        (Cow::Owned(out), LAYOUT_LZ4_OUT_OF_LINE)
    } else {
        (Cow::Borrowed(json.as_bytes()), LAYOUT_PLAIN)
    }
}

/// The aggregate JSON held by a hash of `layout` whose aggregate is `raw` (its `aggregate` field, or for layout
/// "3" its aggregate key).
pub(crate) fn decode(key: &str, layout: &str, raw: Vec<u8>) -> Result<String, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        key: key.to_string(),
        detail,
    };
    let bytes = match layout {
        LAYOUT_PLAIN => raw,
        LAYOUT_LZ4 | LAYOUT_LZ4_OUT_OF_LINE => {
            let Some(block) = raw.strip_prefix(LZ4_MAGIC) else {
                return Err(corrupt(format!(
                    "the aggregate of a layoutVersion {layout:?} hash does not start with the LZ4 marker"
                )));
            };
            let declared = block
                .get(..4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
            match declared {
                Some(n) if n <= MAX_DECODED_BYTES => {}
                _ => {
                    return Err(corrupt(format!(
                        "the compressed aggregate declares no size or more than {MAX_DECODED_BYTES} bytes"
                    )));
                }
            }
            lz4_flex::block::decompress_size_prepended(block)
                .map_err(|e| corrupt(format!("the compressed aggregate does not decode: {e}")))?
        }
        other => {
            return Err(StoreError::UnknownLayout {
                key: key.to_string(),
                found: other.to_string(),
            });
        }
    };
    String::from_utf8(bytes).map_err(|_| corrupt("the aggregate field is not UTF-8".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big_json() -> String {
        let members: Vec<String> = (0..5_000)
            .map(|i| format!(r#"{{"memberId":"m-{i:06}","state":"ACTIVE","memberEpoch":7}}"#))
            .collect();
        format!(r#"{{"members":[{}]}}"#, members.join(","))
    }

    #[test]
    fn a_large_aggregate_is_compressed_and_decodes_to_the_same_json() {
        let json = big_json();
        assert!(json.len() >= COMPRESS_FROM_BYTES);
        let (stored, layout) = encode(&json, AggregateCompression::Lz4);
        assert_eq!(layout, LAYOUT_LZ4_OUT_OF_LINE);
        assert!(stored.starts_with(LZ4_MAGIC));
        assert!(
            stored.len() * 4 < json.len(),
            "{} bytes stored for {}",
            stored.len(),
            json.len()
        );
        assert_eq!(decode("k", layout, stored.into_owned()).unwrap(), json);
    }

    #[test]
    fn small_aggregates_and_compression_off_stay_plain_json() {
        let (stored, layout) = encode(r#"{"a":1}"#, AggregateCompression::Lz4);
        assert_eq!((&*stored, layout), (&br#"{"a":1}"#[..], LAYOUT_PLAIN));
        let json = big_json();
        let (stored, layout) = encode(&json, AggregateCompression::Off);
        assert_eq!((&*stored, layout), (json.as_bytes(), LAYOUT_PLAIN));
        assert_eq!(decode("k", layout, stored.into_owned()).unwrap(), json);
    }

    #[test]
    fn damaged_compressed_values_and_unknown_layouts_are_refused() {
        let json = big_json();
        let (stored, _) = encode(&json, AggregateCompression::Lz4);
        let corrupt = |raw: Vec<u8>| {
            matches!(
                decode("k", LAYOUT_LZ4, raw),
                Err(StoreError::Corrupt { .. })
            )
        };
        assert!(corrupt(b"{\"a\":1}".to_vec()), "no marker");
        assert!(corrupt(stored[..stored.len() / 2].to_vec()), "truncated");
        let mut huge = LZ4_MAGIC.to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(corrupt(huge), "declares more than the cap");
        assert!(matches!(
            decode("k", "4", stored.clone().into_owned()),
            Err(StoreError::UnknownLayout { .. })
        ));
        // What the previous version wrote (compressed, in the field) still decodes.
        assert_eq!(decode("k", LAYOUT_LZ4, stored.into_owned()).unwrap(), json);
        assert!(matches!(
            decode("k", LAYOUT_PLAIN, vec![0xff, 0xfe]),
            Err(StoreError::Corrupt { .. })
        ));
    }
}
