//! The backup file: two lines. The first is a JSON header — `format` ("rsc-backup"), `version`, the key
//! prefix, when it was taken, the SHA-256 (hex) and length of the second line; the second is the content
//! (JSON: stream records, group metadata, index entries) exactly as hashed. Reading checks the format, the
//! version, the length and the checksum before parsing the content, so a truncated or edited file is refused
//! as a whole. SHA-256 comes from `sha2`, already in the tree for the coordinator's token digests.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Failure;

pub const FORMAT: &str = "rsc-backup";
/// The only file version this build writes and reads.
pub const VERSION: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Header {
    pub format: String,
    pub version: u32,
    pub key_prefix: String,
    pub created_at: String,
    pub content_sha256: String,
    pub content_bytes: usize,
}

/// What a backup holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Content {
    pub streams: Vec<SavedHash>,
    pub groups: Vec<SavedGroup>,
    pub index: Vec<SavedIndexEntry>,
}

/// A stream record as it was in Redis.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SavedHash {
    pub key: String,
    pub stream_prefix: String,
    pub revision: u64,
    pub updated_at: String,
    /// The record's JSON document, byte for byte.
    pub document: String,
}

/// A group's metadata as it was in Redis.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SavedGroup {
    pub key: String,
    pub stream_prefix: String,
    pub consumer_group: String,
    pub revision: u64,
    pub updated_at: String,
    /// The aggregate's JSON document, byte for byte.
    pub document: String,
}

/// An entry of the group index, byte for byte.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SavedIndexEntry {
    pub key: String,
    pub value: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The file's text for `content`.
pub fn encode(key_prefix: &str, created_at: &str, content: &Content) -> String {
    let body = serde_json::to_string(content).unwrap_or_default();
    let header = Header {
        format: FORMAT.to_owned(),
        version: VERSION,
        key_prefix: key_prefix.to_owned(),
        created_at: created_at.to_owned(),
        content_sha256: hex(&Sha256::digest(body.as_bytes())),
        content_bytes: body.len(),
    };
    format!(
        "{}\n{body}\n",
        serde_json::to_string(&header).unwrap_or_default()
    )
}

/// Reads a file's text: format, version, length and checksum checked before the content is parsed.
pub fn decode(text: &str) -> Result<(Header, Content), Failure> {
    let bad = |why: &str| Failure::new(format!("not a usable rsc backup: {why}"));
    let (first, rest) = text
        .split_once('\n')
        .ok_or_else(|| bad("no content line (truncated?)"))?;
    let header: Header =
        serde_json::from_str(first).map_err(|e| bad(&format!("unreadable header ({e})")))?;
    if header.format != FORMAT {
        return Err(bad(&format!("format is {:?}", header.format)));
    }
    if header.version != VERSION {
        return Err(bad(&format!(
            "file version {} (this rsc reads version {VERSION})",
            header.version
        )));
    }
    let body = rest.strip_suffix('\n').unwrap_or(rest);
    if body.len() != header.content_bytes {
        return Err(bad(&format!(
            "content is {} bytes, the header says {} (truncated or edited)",
            body.len(),
            header.content_bytes
        )));
    }
    if hex(&Sha256::digest(body.as_bytes())) != header.content_sha256 {
        return Err(bad("checksum mismatch (corrupted or edited)"));
    }
    let content: Content =
        serde_json::from_str(body).map_err(|e| bad(&format!("unreadable content ({e})")))?;
    Ok((header, content))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Content {
        Content {
            streams: vec![SavedHash {
                key: "kp:{s}:stream".into(),
                stream_prefix: "s".into(),
                revision: 3,
                updated_at: "t".into(),
                document: "{\"a\":1}".into(),
            }],
            groups: vec![],
            index: vec![SavedIndexEntry {
                key: "k".into(),
                value: "v".into(),
            }],
        }
    }

    #[test]
    fn round_trips_and_refuses_damage() {
        let text = encode("kp", "2026-12-01T00:00:00Z", &sample());
        let (header, content) = decode(&text).expect("round trip");
        assert_eq!(header.key_prefix, "kp");
        assert_eq!(content, sample());
        let truncated = &text[..text.len() - 10];
        assert!(decode(truncated).unwrap_err().message.contains("truncated"));
        let edited = text.replace("\\\"a\\\":1", "\\\"a\\\":2");
        assert_ne!(edited, text);
        assert!(decode(&edited).unwrap_err().message.contains("checksum"));
        assert!(decode("").is_err());
        assert!(
            decode(&text.replace("\"version\":1", "\"version\":2"))
                .unwrap_err()
                .message
                .contains("version 2")
        );
    }
}
