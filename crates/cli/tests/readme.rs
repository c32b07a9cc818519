//! Walks the documentation as a new user would: every `sh` block of the README's "A walk through the API with
//! curl", then of "Scaling a stream's shard count" (docs/api.md), "Operations runbook" (docs/operations.md),
//! "Operating with the `rsc` CLI" (docs/cli.md) and "A first Rust consumer and producer" (docs/sdk.md), in
//! that order (`SECTIONS`), against a fresh `rsc serve` with its own redis-server.
//!
//! - The block that starts the coordinator (`… rsc serve`) runs in the background with `RSC_LISTEN` and
//!   `RSC_REDIS_URL` pointing at this test's port and Redis (the README says those variables do that).
//! - Every other block runs in one bash process, in order, so variables (`RSC_TOKEN`, `AUTH`, `ID`) carry over
//!   as they do in a terminal; `set -euo pipefail` makes any failing command fail the walk. Each `read`
//!   prompt is answered with the password. `rsc` is on `PATH`; `RSC_COORDINATOR` and `RSC_REDIS_URL` are
//!   set, as the README tells users with another coordinator or Redis to do.
//! - Substituted in the text: the password (`pick-a-long-password`) and `localhost:8080` (this test's port).
//!   docs/sdk.md runs the example programs with `cargo run -q -p rsc-examples --bin NAME -- …`; the walk runs
//!   the binary that command runs, `target/<profile>/NAME` next to `rsc` (built by `cargo test --workspace`
//!   through the examples' own test; built here with `cargo build -p rsc-examples` when missing or older than
//!   the sources it is built from), so the walk's bound counts no compilation.
//! - A command followed by a `# →` line must print output with every key, and every string value, that line
//!   shows (`…` = anything; a value `"reshard-…"` must start with `reshard-`; `k=v` words need `k=`); and no
//!   output may carry an `errorCode` unless the `# →` line shows one.
//!
//! The "Backup and restore" rehearsal of docs/operations.md runs apart (it starts its own Redis and
//! coordinator): every `sh` block of that section and of "Doctor" (which goes on with the rehearsal's Redis),
//! in one `set -euo pipefail` shell, with its ports (6380, 8081, 6399) swapped for free ones; it must print
//! "routing identical", so a rehearsal that compares two error pages cannot pass.
//!
//! And every relative link of the documentation (README.md, docs/*.md, ARCHITECTURE.md, TESTING.md,
//! BENCHMARKS.md, CONTRIBUTING.md) leads to a file that exists and, for an `#anchor` into a markdown file, to
//! one of its headings.
//!
//! Needs `bash`, `curl` and `jq` (`.ci/run` installs them).

use rsc_testkit::RedisServer;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The sections the walk runs, in the order it runs them: (file from the repository root, `## ` heading).
/// Each section's blocks include those of its `###` subsections.
const SECTIONS: [(&str, &str); 5] = [
    ("README.md", "A walk through the API with curl"),
    ("docs/api.md", "Scaling a stream's shard count"),
    ("docs/operations.md", "Operations runbook"),
    ("docs/cli.md", "Operating with the `rsc` CLI"),
    ("docs/sdk.md", "A first Rust consumer and producer"),
];
/// The file that holds the backup rehearsal's sections ("Backup and restore", then "Doctor").
const REHEARSAL_FILE: &str = "docs/operations.md";
/// The README's example password, replaced by the test's.
const README_PASSWORD: &str = "pick-a-long-password";
/// The whole walk (it includes a 10-second `rsc demo`) must finish within this.
const WALK_BOUND: Duration = Duration::from_secs(240);

/// One command (one or more lines) of a block, and the output shape the documentation shows after it.
#[derive(Debug, Clone)]
struct Step {
    section: String,
    text: String,
    expect: Option<String>,
}

/// The text of a documentation file, by its path from the repository root.
fn doc(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The `sh` blocks of the walked sections, in walk order, each with its section's name (`file "heading"`).
fn blocks() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (file, heading) in SECTIONS {
        let found = section_blocks(&doc(file), heading);
        assert!(
            !found.is_empty(),
            "{file} has no `sh` block under \"## {heading}\""
        );
        out.extend(
            found
                .into_iter()
                .map(|b| (format!("{file} \"{heading}\""), b)),
        );
    }
    out
}

fn is_comment(line: &str) -> bool {
    line.trim_start().starts_with('#')
}

/// Splits a block into steps: runs of consecutive lines that are neither blank nor comments, each with the
/// `# →` text that follows it (continued by comment lines indented after the `#`).
fn steps(section: &str, block: &str) -> Vec<Step> {
    let lines: Vec<&str> = block.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim().is_empty() || is_comment(lines[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && !lines[i].trim().is_empty() && !is_comment(lines[i]) {
            i += 1;
        }
        let text = lines[start..i].join("\n");
        let mut expect = None;
        if let Some(first) = lines
            .get(i)
            .and_then(|l| l.trim_start().strip_prefix("# →"))
        {
            let mut e = first.trim().to_owned();
            i += 1;
            while let Some(more) = lines
                .get(i)
                .and_then(|l| l.trim_start().strip_prefix("#  "))
            {
                e.push(' ');
                e.push_str(more.trim());
                i += 1;
            }
            expect = Some(e);
        }
        out.push(Step {
            section: section.to_owned(),
            text,
            expect,
        });
    }
    out
}

/// What the expected text shows: keys, (key, string value) pairs, and `k=` words.
fn shape(expect: &str) -> (Vec<String>, Vec<(String, String)>, Vec<String>) {
    let mut keys = Vec::new();
    let mut pairs = Vec::new();
    let chars: Vec<char> = expect.chars().collect();
    let mut i = 0;
    let string_at = |from: usize| -> Option<(String, usize)> {
        let end = (from + 1..chars.len()).find(|&j| chars[j] == '"')?;
        Some((chars[from + 1..end].iter().collect(), end + 1))
    };
    while i < chars.len() {
        if chars[i] != '"' {
            i += 1;
            continue;
        }
        let Some((token, after)) = string_at(i) else {
            break;
        };
        i = after;
        if chars.get(i) == Some(&':') {
            keys.push(token.clone());
            if chars.get(i + 1) == Some(&'"')
                && let Some((value, after_value)) = string_at(i + 1)
            {
                pairs.push((token, value));
                i = after_value;
            }
        }
    }
    let words = expect
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .filter(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(|(k, _)| k.to_owned())
        .collect();
    (keys, pairs, words)
}

/// Whether `output` has the shape `expect` shows; the error says what is missing.
fn check_shape(expect: &str, output: &str) -> Result<(), String> {
    if output.contains("\"errorCode\":\"") && !expect.contains("errorCode") {
        return Err("answered an error".into());
    }
    if output.trim().is_empty() && !expect.is_empty() {
        return Err("printed nothing".into());
    }
    let (keys, pairs, words) = shape(expect);
    for k in keys {
        if !output.contains(&format!("\"{k}\":")) {
            return Err(format!("no key \"{k}\""));
        }
    }
    for (k, v) in pairs {
        let wanted = match v.split_once('…') {
            Some((prefix, _)) => format!("\"{k}\":\"{prefix}"),
            None => format!("\"{k}\":\"{v}\""),
        };
        if !output.contains(&wanted) {
            return Err(format!("no {wanted}"));
        }
    }
    for w in words {
        if !output.contains(&format!("{w}=")) {
            return Err(format!("no {w}="));
        }
    }
    Ok(())
}

/// A process group started by the walk (bash and what it runs), ended as a whole.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let pgid = self.0.id();
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{pgid}")])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.0.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .stderr(Stdio::null())
            .status();
        let _ = self.0.wait();
    }
}

fn bash(script: &str, env: &[(&str, String)], dir: &Path) -> Command {
    let mut c = Command::new("bash");
    c.arg("-c")
        .arg(script)
        .current_dir(dir)
        .process_group(0)
        .env_remove("RSC_USERNAME")
        .env_remove("RSC_PASSWORD")
        .env_remove("RSC_TOKEN");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn every_command_of_the_readme_walk_and_runbook_works_as_written() {
    for tool in ["bash", "curl", "jq"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(found, "the README walk needs {tool} (.ci/run installs it)");
    }
    let walked: String = SECTIONS.iter().map(|(file, _)| doc(file)).collect();
    let all: Vec<Step> = blocks()
        .iter()
        .flat_map(|(section, block)| steps(section, block))
        .collect();
    let (servers, walk): (Vec<Step>, Vec<Step>) =
        all.into_iter().partition(|s| s.text.contains("rsc serve"));
    assert_eq!(
        servers.len(),
        1,
        "exactly one command starts the coordinator: {servers:#?}"
    );
    assert!(
        walk.len() >= 15,
        "the walk found only {} commands",
        walk.len()
    );

    let bin_dir = Path::new(env!("CARGO_BIN_EXE_rsc")).parent().unwrap();
    let examples = example_binaries(bin_dir);

    let redis = RedisServer::start();
    let port = rsc_testkit::free_port();
    let password = format!("walk-{}", std::process::id());
    let substitute = |text: &str| {
        let text = text
            .replace(README_PASSWORD, &password)
            .replace("localhost:8080", &format!("127.0.0.1:{port}"));
        examples.iter().fold(text, |t, (command, binary)| {
            t.replace(command.as_str(), &binary.display().to_string())
        })
    };
    for (command, _) in &examples {
        assert!(
            walked.contains(command.as_str()),
            "the walked documentation no longer runs `{command}`: update EXAMPLES"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let env = vec![
        (
            "PATH",
            format!(
                "{}:{}",
                bin_dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        ),
        ("RSC_LISTEN", format!("127.0.0.1:{port}")),
        ("RSC_REDIS_URL", redis.url()),
        ("RSC_COORDINATOR", format!("http://127.0.0.1:{port}")),
        ("RSC_LOG", "warn".to_owned()),
        // `rsc login` stores its token here, not in the home directory of whoever runs the tests.
        (
            "RSC_CONFIG_DIR",
            dir.path().join("rsc-config").display().to_string(),
        ),
    ];

    // The coordinator, as the README starts it.
    let server_log = std::fs::File::create(dir.path().join("server.log")).unwrap();
    let _server = Group(
        bash(&substitute(&servers[0].text), &env, dir.path())
            .stdin(Stdio::null())
            .stdout(server_log.try_clone().unwrap())
            .stderr(server_log)
            .spawn()
            .expect("bash starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !rsc_testkit::healthy(port) {
        assert!(
            Instant::now() < deadline,
            "`{}` did not become ready:\n{}",
            servers[0].text,
            read(dir.path().join("server.log"))
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Every other command, in order, in one shell.
    let mut script = String::from("set -euo pipefail\n");
    for (n, step) in walk.iter().enumerate() {
        script.push_str(&format!(
            "echo {n} > current\n{{\n{}\n}} > out.{n} 2> err.{n}\n",
            substitute(&step.text)
        ));
    }
    script.push_str("echo done > current\n");
    let mut shell = Group(
        bash(&script, &env, dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("bash starts"),
    );
    {
        let mut stdin = shell.0.stdin.take().unwrap();
        let _ = stdin.write_all(format!("{password}\n").repeat(20).as_bytes());
    }
    let deadline = Instant::now() + WALK_BOUND;
    let status = loop {
        if let Some(status) = shell.0.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let current = read(dir.path().join("current")).trim().to_owned();
    let report = |n: usize, why: &str| -> String {
        format!(
            "{}: this command {why}:\n{}\n--- expected: {}\n--- stdout:\n{}\n--- stderr:\n{}\n--- server log (tail):\n{}",
            walk[n].section,
            walk[n].text,
            walk[n].expect.as_deref().unwrap_or("(nothing shown)"),
            read(dir.path().join(format!("out.{n}"))),
            read(dir.path().join(format!("err.{n}"))),
            read(dir.path().join("server.log"))
                .lines()
                .rev()
                .take(20)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n"),
        )
    };
    match status {
        Some(s) if s.success() && current == "done" => {}
        Some(s) => {
            let n: usize = current.parse().unwrap_or(0);
            panic!("{}", report(n, &format!("failed ({s})")));
        }
        None => {
            let n: usize = current.parse().unwrap_or(0);
            panic!(
                "{}",
                report(n, &format!("did not finish within {WALK_BOUND:?}"))
            );
        }
    }

    // Every answer has the shape the documentation shows.
    let mut failures = Vec::new();
    for (n, step) in walk.iter().enumerate() {
        let output = read(dir.path().join(format!("out.{n}")));
        let result = match &step.expect {
            Some(e) => check_shape(e, &output),
            None if output.contains("\"errorCode\":\"") => Err("answered an error".into()),
            None => Ok(()),
        };
        if let Err(why) = result {
            failures.push(report(
                n,
                &format!("printed output of another shape ({why})"),
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The example programs the walked documentation runs with `cargo run -q -p rsc-examples --bin NAME --`.
const EXAMPLES: [&str; 2] = ["orders-producer", "orders-consumer"];

/// Each documented command that runs an example, with the binary it runs: `target/<profile>/NAME` beside `rsc`,
/// built first when missing or older than the sources of the crates it is built from.
fn example_binaries(bin_dir: &Path) -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let binaries: Vec<PathBuf> = EXAMPLES.iter().map(|n| bin_dir.join(n)).collect();
    let sources = [
        "examples/rust/src",
        "examples/rust/Cargo.toml",
        "crates/client/src",
        "crates/member/src",
        "crates/protocol/src",
        "crates/redis-connect/src",
        "crates/store/src",
    ];
    let stale = binaries.iter().any(|b| {
        let Ok(built) = std::fs::metadata(b).and_then(|m| m.modified()) else {
            return true;
        };
        sources.iter().any(|s| newer_than(&root.join(s), built))
    });
    if stale {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args([
            "build",
            "-q",
            "-p",
            "rsc-examples",
            "--bins",
            "--target-dir",
        ])
        .arg(bin_dir.parent().expect("target/<profile>"))
        .current_dir(&root);
        if bin_dir.file_name().is_some_and(|n| n != "debug") {
            cmd.arg("--profile").arg(bin_dir.file_name().unwrap());
        }
        let status = cmd.status().expect("run cargo to build the examples");
        assert!(
            status.success(),
            "cargo build -p rsc-examples failed: {status}"
        );
    }
    EXAMPLES
        .iter()
        .zip(binaries)
        .map(|(name, b)| (format!("cargo run -q -p rsc-examples --bin {name} --"), b))
        .collect()
}

/// Whether `path` (a file, or any file under a directory) was modified after `than`.
fn newer_than(path: &Path, than: std::time::SystemTime) -> bool {
    if path.is_dir() {
        std::fs::read_dir(path)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| newer_than(&e.path(), than))
    } else {
        std::fs::metadata(path)
            .and_then(|m| m.modified())
            .is_ok_and(|m| m > than)
    }
}

/// The `sh` blocks under the heading `## <heading>` of a markdown text (its `###` subsections included), in
/// order.
fn section_blocks(readme: &str, heading: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    let mut block: Option<String> = None;
    for line in readme.lines() {
        if let Some(b) = block.as_mut() {
            if line.trim_end() == "```" {
                if inside {
                    out.push(b.clone());
                }
                block = None;
            } else {
                b.push_str(line);
                b.push('\n');
            }
        } else if let Some(h) = line.strip_prefix("## ") {
            inside = h.trim() == heading;
        } else if line.trim_end() == "```sh" {
            block = Some(String::new());
        }
    }
    out
}

/// Stops the rehearsal's daemonized redis-server (it leaves the shell's process group).
struct RedisShutdown(u16);

impl Drop for RedisShutdown {
    fn drop(&mut self) {
        let _ = Command::new("redis-cli")
            .args(["-p", &self.0.to_string(), "shutdown", "nosave"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

#[test]
fn the_backup_rehearsal_of_the_readme_proves_the_restore() {
    let rehearsal = doc(REHEARSAL_FILE);
    let mut blocks = section_blocks(&rehearsal, "Backup and restore");
    blocks.extend(section_blocks(&rehearsal, "Doctor"));
    assert!(
        blocks.len() >= 6,
        "the backup rehearsal of {REHEARSAL_FILE} has {} sh blocks",
        blocks.len()
    );
    let redis_port = rsc_testkit::free_port();
    let rsc_port = rsc_testkit::free_port();
    let closed_port = rsc_testkit::free_port();
    let _redis = RedisShutdown(redis_port);
    let script = format!("set -euo pipefail\n{}", blocks.join("\n"))
        .replace("6380", &redis_port.to_string())
        .replace("8081", &rsc_port.to_string())
        .replace("6399", &closed_port.to_string());
    let dir = tempfile::tempdir().unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_rsc")).parent().unwrap();
    let env = vec![
        (
            "PATH",
            format!(
                "{}:{}",
                bin_dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        ),
        ("RSC_LOG", "warn".to_owned()),
    ];
    let stdout = std::fs::File::create(dir.path().join("out")).unwrap();
    let stderr = std::fs::File::create(dir.path().join("err")).unwrap();
    let mut shell = Group(
        bash(&script, &env, dir.path())
            .env_remove("RSC_REDIS_URL")
            .env_remove("RSC_COORDINATOR")
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .expect("bash starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = shell.0.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = read(dir.path().join("out"));
    let err = read(dir.path().join("err"));
    let log = read(dir.path().join("rsc.log"));
    let context = format!("--- stdout:\n{out}\n--- stderr:\n{err}\n--- rsc.log:\n{log}");
    assert!(
        status.is_some_and(|s| s.success()),
        "the rehearsal failed ({status:?}):\n{context}"
    );
    assert!(out.contains("routing identical"), "{context}");
    let routing = read(dir.path().join("routing.before"));
    assert!(
        routing.contains("\"shards\"") && !routing.contains("errorCode"),
        "routing.before is not a routing answer: {routing}"
    );
    // The refused restore, the damaged file, the unreachable Redis and doctor on a spoilt Redis each said
    // exit 1; the forced restore and doctor on the healthy deployment (every key the coordinator's) exit 0.
    assert_eq!(out.matches("exit 1").count(), 4, "{context}");
    assert_eq!(out.matches("exit 0").count(), 2, "{context}");
}

#[test]
fn shapes_are_checked_by_keys_and_string_values() {
    let expect = r#"200 {"status":"OK","memberEpoch":2,…,"assignment":{"assignedShards":[…]},"id":"reshard-…"}"#;
    let ok =
        r#"{"status":"OK","memberEpoch":5,"assignment":{"assignedShards":[]},"id":"reshard-1"}"#;
    assert_eq!(check_shape(expect, ok), Ok(()));
    let fenced = r#"{"status":"FENCED_MEMBER_EPOCH","memberEpoch":5,"assignment":{"assignedShards":[]},"id":"reshard-1"}"#;
    assert!(
        check_shape(expect, fenced)
            .unwrap_err()
            .contains("\"status\":\"OK\"")
    );
    let missing = r#"{"status":"OK","memberEpoch":5,"id":"reshard-1"}"#;
    assert!(
        check_shape(expect, missing)
            .unwrap_err()
            .contains("assignment")
    );
    let error = r#"{"status":"NOT_FOUND","errorCode":"GROUP_NOT_FOUND","message":"…"}"#;
    assert!(check_shape("{…}", error).is_err());
    assert_eq!(
        check_shape(
            "published=5000 acked=5000 duplicates=0 lost=0",
            "… live view …\npublished=10 acked=10 duplicates=0 lost=0\n"
        ),
        Ok(())
    );
    assert!(check_shape("published=1 lost=0", "").is_err());

    let block =
        "# comment\ncurl a \\\n  b\n# → 201 {\"a\":1,\n#    \"b\":\"x\"}\n# next\ncurl c\ncurl d\n";
    let s = steps("S", block);
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].text, "curl a \\\n  b");
    assert_eq!(s[0].expect.as_deref(), Some("201 {\"a\":1, \"b\":\"x\"}"));
    assert_eq!(s[1].text, "curl c\ncurl d");
    assert_eq!(s[1].expect, None);
}

/// The markdown files whose relative links must resolve: README.md, ARCHITECTURE.md, TESTING.md,
/// BENCHMARKS.md, CONTRIBUTING.md and every `docs/*.md`, as paths from the repository root.
fn linked_documents(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [
        "README.md",
        "ARCHITECTURE.md",
        "TESTING.md",
        "BENCHMARKS.md",
        "CONTRIBUTING.md",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| p.strip_prefix(root).expect("under the root").to_path_buf())
        .collect();
    pages.sort();
    files.extend(pages);
    files
}

/// The lines of a markdown text outside fenced code blocks (``` fences, indented or not).
fn prose_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push(line);
        }
    }
    out
}

/// GitHub's anchor of a heading: lowercase, punctuation dropped except `-` and `_`, spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a markdown text's headings, with GitHub's `-1`, `-2`, … for repeated ones.
fn anchors(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut anchor = base.clone();
        let mut n = 0;
        while out.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        out.push(anchor);
    }
    out
}

/// The targets of a markdown text's links and images (`[text](target)`, `![alt](target)`) outside code.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_lines(text) {
        // Drop inline code spans: what is between a pair of backticks is not a link.
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            let target = rest[..end].trim();
            if !target.is_empty() && !target.contains(' ') {
                out.push(target.to_owned());
            }
            rest = &rest[end..];
        }
    }
    out
}

/// What is wrong with one link of `file` (a path from the repository root), if anything.
fn broken(root: &Path, file: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let resolved = if path.is_empty() {
        root.join(file)
    } else if let Some(from_root) = path.strip_prefix('/') {
        root.join(from_root)
    } else {
        root.join(file.parent().unwrap_or(Path::new(""))).join(path)
    };
    if !resolved.exists() {
        return Some(format!("{} does not exist", resolved.display()));
    }
    if anchor.is_empty() || resolved.extension().is_none_or(|x| x != "md") {
        return None;
    }
    let text = std::fs::read_to_string(&resolved).ok()?;
    if anchors(&text).iter().any(|a| a == anchor) {
        None
    } else {
        Some(format!("{} has no heading #{anchor}", resolved.display()))
    }
}

#[test]
fn every_relative_link_of_the_documentation_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root");
    let mut failures = Vec::new();
    let mut checked = 0;
    for file in linked_documents(&root) {
        let text = std::fs::read_to_string(root.join(&file))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for target in link_targets(&text) {
            checked += 1;
            if let Some(why) = broken(&root, &file, &target) {
                failures.push(format!("{}: ({target}): {why}", file.display()));
            }
        }
    }
    assert!(
        checked >= 50,
        "only {checked} links found: is the parser blind?"
    );
    assert!(
        failures.is_empty(),
        "broken links:\n{}",
        failures.join("\n")
    );
}

#[test]
fn links_are_read_as_github_reads_them() {
    assert_eq!(
        slug("Operating with the `rsc` CLI"),
        "operating-with-the-rsc-cli"
    );
    assert_eq!(
        slug("Replicas: one, two and three side by side (2026-12-01 09:03–09:11, shared machine)"),
        "replicas-one-two-and-three-side-by-side-2026-12-01-09030911-shared-machine"
    );
    assert_eq!(
        slug("Scaling a stream's shard_count"),
        "scaling-a-streams-shard_count"
    );
    let text = "# Top\n\n## Same\n\n```sh\n# not a heading\n[not](a-link.md)\n```\n\n### Same\n\
                See [the top](#top), `[code](no.md)`, ![an image](docs/x.png) and [a page](a.md#same-1).\n";
    assert_eq!(anchors(text), ["top", "same", "same-1"]);
    assert_eq!(link_targets(text), ["#top", "docs/x.png", "a.md#same-1"]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = Path::new("README.md");
    assert_eq!(broken(&root, readme, "docs/api.md#routes"), None);
    assert_eq!(broken(&root, readme, "https://example.invalid/x"), None);
    assert!(
        broken(&root, readme, "docs/api.md#no-such-heading")
            .unwrap()
            .contains("no heading #no-such-heading")
    );
    assert!(
        broken(&root, readme, "docs/no-such-page.md")
            .unwrap()
            .contains("does not exist")
    );
    assert!(broken(&root, Path::new("docs/api.md"), "api.md#routes").is_none());
    assert!(broken(&root, Path::new("docs/api.md"), "docs/api.md").is_some());
}
