//! The store owns every Redis key name (issue #34): no file of the coordinator's `src/` calls
//! `rsc_protocol::names` or spells a key itself. The coordinator names a group, a stream or a shard by its ids
//! (`rsc_store::GroupName`, a stream prefix, a `rsc_store::Shard` for the data plane's shard streams). This test reads every source
//! file of crates/coordinator/src and fails naming the file and line when code (not a comment) names the
//! `names` module, or when a string literal holds a fixed part of a key name the coordinator writes (taken
//! from `rsc_store::coordinator_key_shapes`, plus the shard routing key and hash-tag formatting such as
//! `":{{"`). A file's unit tests, at its end, may spell the keys they expect. The operator CLI
//! (crates/cli/src: backup, restore, doctor, bench) is held to the first rule too.
//!
//! Nor does the coordinator hold the store's key names to pass them back: store methods take ids (a
//! `GroupName`, a stream prefix, a user …) and name their keys themselves. No coordinator file asks the store's
//! keyspace for a name, nor names a shard stream or routing boundary with `Keyspace::shard_stream` and its
//! kin, except the display helper `runtime/shown_keys.rs` (a key named in a message or an API response's
//! `streamKey`), and no public store method takes a key name except the listed ones (`rsc doctor`'s looks at
//! keys it found).

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
        "the coordinator builds Redis key names itself; pass the store ids instead (a key named in a \
         message comes from runtime/shown_keys.rs):\n{}",
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

/// The one coordinator file that may ask the store's keyspace for a key name, to show it in a message.
const DISPLAY_HELPER: &str = "runtime/shown_keys.rs";

/// The keyspace's names of the data plane's keys, which need no key prefix (`Keyspace::shard_stream(…)` …).
const SHARD_KEY_NAMERS: &[&str] = &[
    "Keyspace::shard_stream",
    "Keyspace::shard_routing",
    "Keyspace::routing_of",
];

/// Code that holds a key name of the store's to pass it back: the keyspace asked outside the display helper
/// (for a key under the prefix or for a shard stream's), or one of the store's sets of key names.
fn holds_key_strings(file: &str, code: &str) -> Option<&'static str> {
    let compact: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if file != DISPLAY_HELPER && compact.contains(".keyspace()") {
        return Some("asks the store's keyspace for a key name");
    }
    if file != DISPLAY_HELPER && SHARD_KEY_NAMERS.iter().any(|n| compact.contains(n)) {
        return Some(
            "names a shard stream's key with the store's keyspace (pass a rsc_store::Shard)",
        );
    }
    ["GroupKeys", "ProducerKeys", "ThrottleKeys", "Keyspace::new"]
        .into_iter()
        .find(|t| compact.contains(t))
        .map(|_| "holds the store's key names")
}

#[test]
fn the_coordinator_passes_ids_not_key_strings() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    assert!(
        files.iter().any(|f| f.ends_with(DISPLAY_HELPER)),
        "the display helper {DISPLAY_HELPER} is gone: update this test"
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
            if let Some(why) = holds_key_strings(&name, &code) {
                found.push(format!("{name}:{line}: {why}: {}", code.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "store methods take ids (a GroupName, a stream prefix, a Shard, a user …) and name their keys \
         themselves; a key name for a message or an API response comes from {DISPLAY_HELPER}:\n{}",
        found.join("\n")
    );
}

/// The store's methods that still take a key name, and why: `rsc doctor`'s looks at keys it found in Redis
/// (the data plane's shard streams and routing boundaries are named by a `Shard` or a `DataKey`).
const KEYED_STORE_METHODS: &[&str] = &[
    // rsc doctor: keys found by its scan.
    "layout_version",
    "acl_may_delete",
];

/// Every `pub async fn` of `text` as (name, line, parameter list).
fn public_async_fns(text: &str) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("pub async fn ") {
        let rest = &text[at + "pub async fn ".len()..];
        let Some(open) = rest.find('(') else { continue };
        let name = rest[..open].trim().to_owned();
        let mut depth = 0usize;
        let mut params = String::new();
        for c in rest[open..].chars() {
            match c {
                '(' | '[' | '<' => depth += 1,
                ')' | ']' | '>' => depth = depth.saturating_sub(1),
                _ => {}
            }
            params.push(c);
            if depth == 0 {
                break;
            }
        }
        out.push((name, text[..at].lines().count() + 1, params));
    }
    out
}

/// A parameter that carries key names: named like one (`key`, `keys`, `index_key` …) or typed as one of the
/// store's sets of key names.
fn keyed_parameter(params: &str) -> Option<String> {
    params
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .filter_map(|p| p.split_once(':'))
        .find(|(name, ty)| name.trim().contains("key") || ty.contains("Keys"))
        .map(|(name, ty)| format!("{}:{}", name.trim(), ty))
}

#[test]
fn store_methods_take_ids_not_key_strings() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    let mut methods = 0;
    let mut found = Vec::new();
    let mut listed_but_clean = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read source");
        let name = file
            .strip_prefix(&src)
            .unwrap_or(file)
            .display()
            .to_string();
        for (method, line, params) in public_async_fns(&text) {
            methods += 1;
            let keyed = keyed_parameter(&params);
            let listed = KEYED_STORE_METHODS.contains(&method.as_str());
            match keyed {
                Some(p) if !listed => {
                    found.push(format!("{name}:{line}: Store::{method} takes {p}"))
                }
                None if listed => listed_but_clean.push(method),
                _ => {}
            }
        }
    }
    assert!(
        methods > 60,
        "the walk found too few store methods: {methods}"
    );
    assert!(
        found.is_empty(),
        "a store method takes a key name: take the ids (a GroupName, a stream prefix, a user …) and name \
         the key with the store's Keyspace:\n{}",
        found.join("\n")
    );
    assert!(
        listed_but_clean.is_empty(),
        "these store methods no longer take a key name: drop them from KEYED_STORE_METHODS: {listed_but_clean:?}"
    );
}

#[test]
fn the_signature_scan_sees_key_parameters() {
    let text = "impl Store {\n    pub async fn a(&self, key: &str) {}\n    pub async fn b(\n        &self,\n        \
                keys: &GroupKeys,\n    ) {}\n    pub async fn c(&self, group: &GroupName, m: &[&str]) {}\n    \
                pub async fn d(&self, p: &ProducerKeys) {}\n}";
    let fns = public_async_fns(text);
    let keyed: Vec<(String, Option<String>)> = fns
        .into_iter()
        .map(|(name, _, params)| (name, keyed_parameter(&params)))
        .collect();
    assert_eq!(
        keyed,
        vec![
            ("a".to_owned(), Some("key: &str".to_owned())),
            ("b".to_owned(), Some("keys: &GroupKeys".to_owned())),
            ("c".to_owned(), None),
            ("d".to_owned(), Some("p: &ProducerKeys".to_owned())),
        ]
    );
    assert_eq!(
        holds_key_strings("services/x.rs", "let k = self.store().keyspace().audit();"),
        Some("asks the store's keyspace for a key name")
    );
    assert_eq!(
        holds_key_strings(DISPLAY_HELPER, "store.keyspace().group_metadata(name)"),
        None
    );
    assert!(holds_key_strings("a.rs", "fn f(k: &GroupKeys)").is_some());
    for code in [
        "let k = Keyspace::shard_stream(prefix, 0);",
        "let k = rsc_store::Keyspace :: shard_stream_pattern(prefix);",
        "keys.push(Keyspace::shard_routing(p, i));",
        "let r = rsc_store::Keyspace::routing_of(&k);",
    ] {
        assert_eq!(
            holds_key_strings("services/x.rs", code),
            Some("names a shard stream's key with the store's keyspace (pass a rsc_store::Shard)"),
            "{code}"
        );
        assert_eq!(holds_key_strings(DISPLAY_HELPER, code), None, "{code}");
    }
    assert_eq!(
        holds_key_strings("services/x.rs", "store.shards_exist(&[Shard::new(p, 0)])"),
        None
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
