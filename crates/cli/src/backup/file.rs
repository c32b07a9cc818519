//! The backup file: two lines. The first is a JSON header — `format` ("rsc-backup"), `version`, the key
//! prefix, when it was taken, the SHA-256 (hex) and length of the second line; the second is the content
//! (JSON: stream records, group metadata, index entries) exactly as hashed. Reading checks the format, the
//! version, the length and the checksum before parsing the content, so a truncated or edited file is refused
//! as a whole. SHA-256 comes from `sha2`, already in the tree for the coordinator's token digests.
//!
//! The checksum proves only that the file is whole: anyone who edits it can compute a new one. A backup
//! taken with `--key-file` also carries `contentHmacSha256`, an HMAC-SHA256 of the content under that key
//! (RFC 2104, built here on `sha2`); a restore with the same key refuses a file whose HMAC does not match, or
//! that has none, so an edit by someone without the key is detected. A file that carries an HMAC is
//! restored only with a key.

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
    /// HMAC-SHA256 (hex) of the content under the `--key-file` key, when the backup was taken with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hmac_sha256: Option<String>,
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

/// HMAC-SHA256 of `message` under `key` (RFC 2104 with a 64-byte block).
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// Whether two strings are equal, in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The file's text for `content`, with an HMAC of it when a `key` is given.
pub fn encode(key_prefix: &str, created_at: &str, content: &Content, key: Option<&[u8]>) -> String {
    let body = serde_json::to_string(content).unwrap_or_default();
    let header = Header {
        format: FORMAT.to_owned(),
        version: VERSION,
        key_prefix: key_prefix.to_owned(),
        created_at: created_at.to_owned(),
        content_sha256: hex(&Sha256::digest(body.as_bytes())),
        content_bytes: body.len(),
        content_hmac_sha256: key.map(|k| hex(&hmac_sha256(k, body.as_bytes()))),
    };
    format!(
        "{}\n{body}\n",
        serde_json::to_string(&header).unwrap_or_default()
    )
}

/// Reads a file's text: format, version, length, checksum and (with a `key`) HMAC checked before the
/// content is parsed.
pub fn decode(text: &str, key: Option<&[u8]>) -> Result<(Header, Content), Failure> {
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
    match (key, &header.content_hmac_sha256) {
        (Some(k), Some(mac)) => {
            if !same(&hex(&hmac_sha256(k, body.as_bytes())), mac) {
                return Err(bad(
                    "HMAC mismatch: the file was edited, or taken with another key (--key-file)",
                ));
            }
        }
        (Some(_), None) => {
            return Err(bad(
                "it carries no HMAC, so it cannot be shown to be unedited: it was taken without \
                 --key-file (restore it without --key-file only if you trust where it has been)",
            ));
        }
        (None, Some(_)) => {
            return Err(bad(
                "it carries an HMAC: pass the --key-file it was taken with, so that an edit is detected",
            ));
        }
        (None, None) => {}
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
        let text = encode("kp", "2026-12-01T00:00:00Z", &sample(), None);
        let (header, content) = decode(&text, None).expect("round trip");
        assert_eq!(header.key_prefix, "kp");
        assert_eq!(content, sample());
        let truncated = &text[..text.len() - 10];
        assert!(
            decode(truncated, None)
                .unwrap_err()
                .message
                .contains("truncated")
        );
        let edited = text.replace("\\\"a\\\":1", "\\\"a\\\":2");
        assert_ne!(edited, text);
        assert!(
            decode(&edited, None)
                .unwrap_err()
                .message
                .contains("checksum")
        );
        assert!(decode("", None).is_err());
        assert!(
            decode(&text.replace("\"version\":1", "\"version\":2"), None)
                .unwrap_err()
                .message
                .contains("version 2")
        );
    }

    #[test]
    fn hmac_matches_rfc_4231_and_detects_a_re_checksummed_edit() {
        // RFC 4231, test case 2.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // RFC 4231, test case 6: a key longer than the block.
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
        let key = b"0123456789abcdef0123456789abcdef";
        let text = encode("kp", "t", &sample(), Some(key));
        assert!(decode(&text, Some(key)).is_ok());
        assert!(
            decode(&text, None)
                .unwrap_err()
                .message
                .contains("--key-file")
        );
        assert!(
            decode(&text, Some(b"another key of thirty-two bytes!"))
                .unwrap_err()
                .message
                .contains("HMAC mismatch")
        );
        // An edit with a fresh checksum and length, as an attacker without the key would make it.
        let (header_line, body) = text.trim_end().split_once('\n').unwrap();
        let edited_body = body.replace("\\\"a\\\":1", "\\\"a\\\":7");
        assert_ne!(edited_body, body);
        let mut header: Header = serde_json::from_str(header_line).unwrap();
        header.content_sha256 = hex(&Sha256::digest(edited_body.as_bytes()));
        header.content_bytes = edited_body.len();
        let forged = format!(
            "{}\n{edited_body}\n",
            serde_json::to_string(&header).unwrap()
        );
        assert!(
            decode(&forged, None)
                .unwrap_err()
                .message
                .contains("--key-file")
        );
        assert!(
            decode(&forged, Some(key))
                .unwrap_err()
                .message
                .contains("HMAC mismatch")
        );
        let unsigned = encode("kp", "t", &sample(), None);
        assert!(
            decode(&unsigned, Some(key))
                .unwrap_err()
                .message
                .contains("no HMAC")
        );
    }
}
