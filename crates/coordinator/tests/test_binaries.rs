//! Every crate of the workspace links at most one integration-test binary, and no test file is left out of
//! it. A crate with several files in `tests/` sets `autotests = false` and names one `[[test]]` whose root
//! (`tests/all.rs`) declares each file as a module; a file missing from that list would compile into nothing
//! and its tests would silently stop running, so this test reads every member's `Cargo.toml` and test root
//! and fails naming the crate and the file. Only the top-level files of `tests/` are checked (those are the
//! ones cargo would otherwise build as binaries of their own).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/coordinator is two levels below the workspace root")
        .to_path_buf()
}

/// The `members = [...]` of the workspace's Cargo.toml (one line there).
fn members(root: &Path) -> Vec<String> {
    let manifest =
        std::fs::read_to_string(root.join("Cargo.toml")).expect("read workspace Cargo.toml");
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("a members line in the workspace Cargo.toml");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// What a member's Cargo.toml says about its test targets: whether cargo discovers them itself, and the
/// paths of its `[[test]]` roots.
struct TestTargets {
    autotests: bool,
    roots: Vec<String>,
}

fn test_targets(manifest: &str) -> TestTargets {
    let mut autotests = true;
    let mut roots = Vec::new();
    let mut in_test = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_test = line == "[[test]]";
        } else if let Some(value) = line.strip_prefix("autotests") {
            autotests = value.trim_start_matches([' ', '=']).trim() != "false";
        } else if in_test && let Some(value) = line.strip_prefix("path") {
            roots.push(
                value
                    .trim_start_matches([' ', '='])
                    .trim()
                    .trim_matches('"')
                    .to_owned(),
            );
        }
    }
    TestTargets { autotests, roots }
}

/// The files (relative to the root's directory) that a test root declares as modules: `mod x;` is `x.rs`,
/// `#[path = "p"] mod x;` is `p`. Only declarations at the start of a line count (not inline modules).
fn declared_files(root: &str) -> BTreeSet<String> {
    let mut declared = BTreeSet::new();
    let mut path_attribute: Option<String> = None;
    for line in root.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("#[path") {
            path_attribute = rest.split('"').nth(1).map(str::to_owned);
            continue;
        }
        if line.starts_with("#[") {
            continue;
        }
        let declaration = line.strip_prefix("pub ").unwrap_or(line);
        if let Some(name) = declaration
            .strip_prefix("mod ")
            .and_then(|r| r.strip_suffix(';'))
        {
            declared.insert(
                path_attribute
                    .take()
                    .unwrap_or_else(|| format!("{}.rs", name.trim())),
            );
        }
        path_attribute = None;
    }
    declared
}

/// The top-level `.rs` files of a `tests/` directory, by file name.
fn test_files(dir: &Path) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeSet::new();
    };
    entries
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "rs"))
        .map(|p| {
            p.file_name()
                .expect("a file name")
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// What is wrong with one member's test layout, one line per problem.
fn problems(
    member: &str,
    manifest: &str,
    files: &BTreeSet<String>,
    read: impl Fn(&str) -> String,
) -> Vec<String> {
    let targets = test_targets(manifest);
    if targets.autotests {
        if files.len() > 1 {
            return vec![format!(
                "{member}: {} files in tests/ build {} test binaries; set `autotests = false` and declare \
                 each file as a module of one [[test]] root (see crates/cli/tests/all.rs)",
                files.len(),
                files.len()
            )];
        }
        return Vec::new();
    }
    let mut declared = BTreeSet::new();
    let mut roots = BTreeSet::new();
    for root in &targets.roots {
        let Some(name) = root.strip_prefix("tests/") else {
            continue;
        };
        roots.insert(name.to_owned());
        declared.extend(declared_files(&read(root)));
    }
    files
        .iter()
        .filter(|f| !roots.contains(*f) && !declared.contains(*f))
        .map(|f| {
            format!(
                "{member}: tests/{f} is not declared in its test binary ({:?}): add `mod {};`",
                targets.roots,
                f.trim_end_matches(".rs")
            )
        })
        .collect()
}

#[test]
fn every_test_file_runs_in_its_crates_single_test_binary() {
    let root = workspace_root();
    let members = members(&root);
    assert!(
        members.len() > 5,
        "members read from Cargo.toml: {members:?}"
    );
    let mut found = Vec::new();
    for member in &members {
        let dir = root.join(member);
        let manifest =
            std::fs::read_to_string(dir.join("Cargo.toml")).expect("read a member's Cargo.toml");
        let files = test_files(&dir.join("tests"));
        found.extend(problems(member, &manifest, &files, |path| {
            std::fs::read_to_string(dir.join(path))
                .unwrap_or_else(|e| panic!("read {member}/{path}: {e}"))
        }));
    }
    assert!(
        found.is_empty(),
        "test files that would not run as declared:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_forgotten_test_file_and_a_crate_of_many_binaries_are_reported() {
    let files: BTreeSet<String> = ["all.rs", "a.rs", "b.rs", "c.rs"].map(str::to_owned).into();
    let merged = "[package]\nautotests = false\n\n[[test]]\nname = \"integration\"\npath = \"tests/all.rs\"\n";
    let root = "//! root\n#[path = \"b.rs\"]\nmod bee;\nmod a;\n";
    assert_eq!(
        problems("x", merged, &files, |_| root.to_owned()),
        vec!["x: tests/c.rs is not declared in its test binary ([\"tests/all.rs\"]): add `mod c;`"]
    );
    let complete = format!("{root}mod c;\n");
    assert!(problems("x", merged, &files, |_| complete.clone()).is_empty());
    let automatic = "[package]\nname = \"x\"\n";
    assert_eq!(problems("x", automatic, &files, |_| String::new()).len(), 1);
    let one: BTreeSet<String> = ["faults.rs"].map(str::to_owned).into();
    assert!(problems("x", automatic, &one, |_| String::new()).is_empty());
}
