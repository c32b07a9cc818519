//! What the operator verbs print reaches a terminal, and much of it is caller text (a `reason`, a
//! `requestedBy`, a member's `clientName`). Escape sequences in it could clear the screen, retitle the
//! window, move the cursor over a row, or reorder text with bidi overrides (issue #32, finding 5). So every
//! line the verbs print passes [`escape`]: control characters (C0 but the line breaks the CLI writes itself,
//! DEL, C1), U+2028/U+2029 and the bidi overrides U+202A–U+202E, U+2066–U+2069 are shown as `\uXXXX`
//! (which is also how JSON writes them, so `--output json` stays valid JSON). A table cell escapes line
//! breaks too ([`escape_cell`]), so no value can start a row of its own. The `say!`/`sayln!`/`esayln!`
//! macros are `print!`/`println!`/`eprintln!` through [`escape`].

/// Whether `c` must not reach a terminal as it is.
fn dangerous(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn escape_with(text: &str, keep_newlines: bool) -> String {
    if !text.chars().any(dangerous) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if dangerous(c) && !(keep_newlines && c == '\n') {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` with every dangerous character shown as `\uXXXX`, line breaks kept.
pub fn escape(text: &str) -> String {
    escape_with(text, true)
}

/// One table cell: like [`escape`], and line breaks escaped too.
pub fn escape_cell(text: &str) -> String {
    escape_with(text, false)
}

/// `print!` through [`escape`].
macro_rules! say {
    ($($arg:tt)*) => {
        ::std::print!("{}", $crate::operator::terminal::escape(&::std::format!($($arg)*)))
    };
}

/// `println!` through [`escape`].
macro_rules! sayln {
    () => {
        ::std::println!()
    };
    ($($arg:tt)*) => {
        ::std::println!("{}", $crate::operator::terminal::escape(&::std::format!($($arg)*)))
    };
}

/// `eprintln!` through [`escape`].
macro_rules! esayln {
    ($($arg:tt)*) => {
        ::std::eprintln!("{}", $crate::operator::terminal::escape(&::std::format!($($arg)*)))
    };
}

/// `eprint!` through [`escape`].
macro_rules! esay {
    ($($arg:tt)*) => {
        ::std::eprint!("{}", $crate::operator::terminal::escape(&::std::format!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_bidi_overrides_are_shown_not_obeyed() {
        assert_eq!(escape("plain text\nnext"), "plain text\nnext");
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\u001b[2Jb");
        assert_eq!(escape("row\rFORGED"), "row\\u000dFORGED");
        assert_eq!(escape("\u{1b}]0;title\u{7}"), "\\u001b]0;title\\u0007");
        assert_eq!(escape("x\u{85}\u{7f}\u{9b}"), "x\\u0085\\u007f\\u009b");
        assert_eq!(escape("abc\u{202e}cba\u{2066}"), "abc\\u202ecba\\u2066");
        assert_eq!(escape_cell("one\ntwo"), "one\\u000atwo");
        // JSON stays JSON.
        let v: serde_json::Value =
            serde_json::from_str(&escape("{\"r\":\"a\u{202e}b\u{85}\"}")).unwrap();
        assert_eq!(v["r"], "a\u{202e}b\u{85}");
    }
}
