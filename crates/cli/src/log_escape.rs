//! The JSON log's writer: serde_json leaves U+2028, U+2029 and NEL (U+0085) raw inside strings, which is
//! valid JSON but breaks JavaScript-based log viewers and line-oriented tools that treat them as line
//! breaks, so a caller could still forge or split a log line with them (issue #32, finding 5). This writer
//! replaces them with their JSON escapes (`\u2028`, `\u2029`, `\u0085`) as each formatted line is written;
//! every other byte passes unchanged.

use std::io::{self, Write};

/// Writes to stderr with the three separators escaped.
pub struct EscapingStderr;

const SEPARATORS: [(&[u8], &[u8]); 3] = [
    ("\u{2028}".as_bytes(), b"\\u2028"),
    ("\u{2029}".as_bytes(), b"\\u2029"),
    ("\u{85}".as_bytes(), b"\\u0085"),
];

/// `bytes` with the separators escaped (borrowed when there are none).
pub fn escape_separators(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    // Each separator starts with 0xE2 or 0xC2; most lines hold neither.
    if !bytes.iter().any(|b| *b == 0xE2 || *b == 0xC2) {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + 8);
    let mut i = 0;
    'outer: while i < bytes.len() {
        for (raw, escaped) in SEPARATORS {
            if bytes[i..].starts_with(raw) {
                out.extend_from_slice(escaped);
                i += raw.len();
                continue 'outer;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    std::borrow::Cow::Owned(out)
}

impl Write for EscapingStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        io::stderr().lock().write_all(&escape_separators(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_paragraph_separators_and_nel_are_escaped() {
        let line = "{\"reason\":\"a\u{2028}b\u{2029}c\u{85}d é\"}\n";
        let out = String::from_utf8(escape_separators(line.as_bytes()).into_owned()).unwrap();
        assert_eq!(out, "{\"reason\":\"a\\u2028b\\u2029c\\u0085d é\"}\n");
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["reason"], "a\u{2028}b\u{2029}c\u{85}d é");
    }
}
