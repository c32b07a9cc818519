//! The store owns every Redis key name (issue #34): no file of the coordinator's `src/` calls
//! `rsc_protocol::names` or spells a key itself. The coordinator names a group, a stream or a shard by its ids
//! through the store's `Keyspace` (`store.keyspace()`, `Keyspace::shard_stream`). This test reads every source
//! file of crates/coordinator/src and fails naming the file and line when code (not a comment) names the
//! `names` module, or when a string literal holds a fixed part of a key name the coordinator writes (taken
//! from `rsc_store::coordinator_key_shapes`, plus the shard routing key and hash-tag formatting such as
//! `":{{"`). A file's unit tests, at its end, may spell the keys they expect. The operator CLI
//! (crates/cli/src: backup, restore, doctor, bench) is held to the first rule too.

use std::path::{Path, PathBuf};

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A source file split into its code (comments and literals blanked out) and its string literals, each with
/// the line it starts on.
#[derive(Debug, Default)]
struct Lexed {
    code: Vec<(usize, String)>,
    strings: Vec<(usize, String)>,
}

fn lex(text: &str) -> Lexed {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Lexed::default();
    let (mut i, mut line) = (0, 1);
    let mut code = String::new();
    let flush = |code: &mut String, out: &mut Lexed, line: usize| {
        if !code.trim().is_empty() {
            out.code.push((line, std::mem::take(code)));
        }
        code.clear();
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            flush(&mut code, &mut out, line);
            line += 1;
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                line += usize::from(chars[i] == '\n');
                i += 1;
            }
            i += 2;
        } else if c == '"'
            || (c == 'r' && matches!(next, Some('"' | '#')) && !ident_before(&chars, i))
        {
            // A string literal, raw (`r"…"`, `r#"…"#`) or not.
            let raw = c == 'r';
            let mut hashes = 0;
            if raw {
                i += 1;
                while chars.get(i) == Some(&'#') {
                    hashes += 1;
                    i += 1;
                }
            }
            i += 1;
            let (start, mut s) = (line, String::new());
            while i < chars.len() {
                let d = chars[i];
                if !raw && d == '\\' {
                    s.push(d);
                    if let Some(&e) = chars.get(i + 1) {
                        s.push(e);
                        line += usize::from(e == '\n');
                    }
                    i += 2;
                    continue;
                }
                if d == '"' && (0..hashes).all(|h| chars.get(i + 1 + h) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                line += usize::from(d == '\n');
                s.push(d);
                i += 1;
            }
            out.strings.push((start, s));
            code.push_str("\"\"");
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1}') or a lifetime ('a): only a char literal is skipped.
            let end = (i + 1..chars.len().min(i + 12)).find(|&j| chars[j] == '\'');
            match end {
                Some(j) if chars[i + 1] == '\\' || j == i + 2 => i = j + 1,
                _ => {
                    code.push(c);
                    i += 1;
                }
            }
        } else {
            code.push(c);
            i += 1;
        }
    }
    flush(&mut code, &mut out, line);
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// Code that reaches the key-name module: `names::…`, or `names` in a `rsc_protocol::{…}` group.
fn names_the_names_module(code: &str) -> bool {
    let compact: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.match_indices("names::").any(|(at, _)| {
        !compact[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    }) {
        return true;
    }
    compact.match_indices("rsc_protocol::{").any(|(at, m)| {
        let group = &compact[at + m.len()..];
        let group = &group[..group.find('}').unwrap_or(group.len())];
        group
            .split(',')
            .any(|item| item == "names" || item.starts_with("names::"))
    })
}

/// The fixed parts of every key name the coordinator writes (at least five characters, so that a plain `:`
/// between two names does not count; the part after the key prefix as it follows a formatted `{kp}`), the
/// shard routing key's suffix, and the shapes of hash-tag formatting.
fn key_fragments() -> Vec<String> {
    const PREFIX: &str = "kp";
    let mut fragments: Vec<String> = rsc_store::coordinator_key_shapes(PREFIX)
        .into_iter()
        .flat_map(|s| {
            // The key prefix is a variable where a key is formatted: `{kp}:audit` ends in `}` before the
            // fixed part (and so does not match the tracing target `rsc::audit`).
            s.shape
                .split('\u{1}')
                .map(|piece| match piece.strip_prefix(PREFIX) {
                    Some(rest) => format!("}}{rest}"),
                    None => piece.to_owned(),
                })
                .collect::<Vec<_>>()
        })
        .filter(|piece| piece.len() >= 5)
        .collect();
    fragments.extend(["}:routing", ":{{", "}}:"].map(String::from));
    fragments.sort();
    fragments.dedup();
    fragments
}

fn violations(file: &str, text: &str, fragments: &[String]) -> Vec<String> {
    // A file's unit tests (its `#[cfg(test)] mod …` at the end) may spell the keys they expect.
    let text = text
        .find("#[cfg(test)]\nmod ")
        .map_or(text, |at| &text[..at]);
    let lexed = lex(text);
    let mut found = Vec::new();
    for (line, code) in &lexed.code {
        if names_the_names_module(code) {
            found.push(format!(
                "{file}:{line}: names rsc_protocol::names: {}",
                code.trim()
            ));
        }
    }
    for (line, s) in &lexed.strings {
        // `format!` doubles literal braces; a plain literal holds them once.
        let undoubled = s.replace("{{", "{").replace("}}", "}");
        if let Some(f) = fragments
            .iter()
            .find(|f| s.contains(f.as_str()) || undoubled.contains(f.as_str()))
        {
            found.push(format!("{file}:{line}: spells a key name ({f:?}): {s:?}"));
        }
    }
    found
}

#[test]
fn the_coordinator_never_spells_a_redis_key() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    assert!(
        files.len() > 50 && files.iter().any(|f| f.ends_with("coordinator.rs")),
        "the walk found too few files: {}",
        files.len()
    );
    let fragments = key_fragments();
    assert!(
        fragments.iter().any(|f| f == "}:metadata")
            && fragments.iter().any(|f| f == "}:group-index"),
        "the key shapes gave too few fragments: {fragments:?}"
    );
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read source");
        let name = file
            .strip_prefix(&src)
            .unwrap_or(file)
            .display()
            .to_string();
        found.extend(violations(&name, &text, &fragments));
    }
    assert!(
        found.is_empty(),
        "the coordinator builds Redis key names itself; ask the store's Keyspace instead \
         (rsc_store::Keyspace, `store.keyspace()`):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_operator_cli_asks_the_store_for_key_names_too() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    assert!(
        files.iter().any(|f| f.ends_with("backup/restore.rs")),
        "the walk found too few files of crates/cli/src: {}",
        files.len()
    );
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read source");
        let name = file
            .strip_prefix(&src)
            .unwrap_or(file)
            .display()
            .to_string();
        for (line, code) in lex(&text).code {
            if names_the_names_module(&code) {
                found.push(format!("{name}:{line}: {}", code.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "rsc (backup, restore, doctor, bench) names keys through rsc_protocol::names; use rsc_store::Keyspace:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_sees_the_names_module_and_spelled_keys() {
    let fragments = key_fragments();
    let bad = r#"
use rsc_protocol::{names, slot};
let k = rsc_protocol::names::group_index_key(kp);
let m = format!("{kp}:{{{sp}:{g}}}:metadata");
let r = format!("{key}:{{{key}}}:routing");
let i = format!("{}:group-index", kp);
"#;
    let found = violations("bad.rs", bad, &fragments);
    assert_eq!(found.len(), 5, "{found:#?}");
    let good = r#"
// names::group_index_key(kp) in a comment; "{kp}:group-index" too
tracing::info!(target: "rsc::audit", "audit");
let names = vec!["a"]; let first = names.first();
let key = self.store().keyspace().group_index();
let msg = format!("{p:?} must not contain '{{' or '}}'");
let c = '"'; let lifetime: &'static str = "x:y";
let ordinary = "stream {prefix} of {n} shards; this endpoint takes {{{}}}";
#[cfg(test)]
mod tests {
    const EXPECTED: &str = "o:0:{o:0}:routing";
}
"#;
    assert_eq!(
        violations("good.rs", good, &fragments),
        Vec::<String>::new()
    );
}
