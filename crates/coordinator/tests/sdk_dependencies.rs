//! The SDK does not depend on the server's store crate (issue #34): `rsc-client` and everything it
//! depends on, among the workspace's crates, never name `rsc-store` (nor its LZ4 codec) as a normal
//! dependency. The Lua scripts both need are in `rsc-scripts` (crates/scripts). This test reads the
//! `[dependencies]` of every crate's Cargo.toml under `crates/` and follows them from `rsc-client`; a
//! dev-dependency (the SDK's own tests may raise a boundary through the store) does not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The names of a manifest's `[package]` and normal `[dependencies]` (plain `name = …` or `name.x = …`
/// lines; `[dev-dependencies]`, `[build-dependencies]` and other tables are left out).
fn package_and_dependencies(manifest: &str) -> (Option<String>, BTreeSet<String>) {
    let (mut section, mut package, mut deps) = (String::new(), None, BTreeSet::new());
    for line in manifest
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
    {
        if let Some(header) = line.strip_prefix('[') {
            section = header.trim_end_matches(']').trim().to_owned();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if section == "package" && key == "name" {
            package = Some(value.trim().trim_matches('"').to_owned());
        } else if section == "dependencies" {
            let name = key
                .split('.')
                .next()
                .unwrap_or(key)
                .trim()
                .trim_matches('"');
            deps.insert(name.to_owned());
        }
    }
    (package, deps)
}

/// Package name → its normal dependencies, for every crate under `crates/`.
fn workspace_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/");
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(crates).expect("read crates/") {
        let manifest = entry.expect("dir entry").path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let (package, deps) = package_and_dependencies(&text);
        graph.insert(package.expect("a [package] name"), deps);
    }
    graph
}

/// Everything `from` depends on, directly or through other workspace crates.
fn reachable(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let (mut seen, mut todo) = (BTreeSet::new(), vec![from.to_owned()]);
    while let Some(name) = todo.pop() {
        for dep in graph.get(&name).into_iter().flatten() {
            if seen.insert(dep.clone()) {
                todo.push(dep.clone());
            }
        }
    }
    seen
}

#[test]
fn the_sdk_does_not_depend_on_the_store() {
    let graph = workspace_dependencies();
    assert!(
        graph.contains_key("rsc-store") && graph.contains_key("rsc-scripts"),
        "the walk found too few crates: {:?}",
        graph.keys()
    );
    let sdk = reachable(&graph, "rsc-client");
    assert!(
        sdk.contains("rsc-scripts") && sdk.contains("redis"),
        "the walk misread rsc-client's dependencies: {sdk:?}"
    );
    for server_only in ["rsc-store", "lz4_flex"] {
        assert!(
            !sdk.contains(server_only),
            "rsc-client depends on {server_only} (its dependencies, through the workspace: {sdk:?}); \
             a script the SDK needs belongs in rsc-scripts (crates/scripts)"
        );
    }
}

#[test]
fn the_manifest_reader_sees_normal_dependencies_only() {
    let manifest = "[package]\nname = \"a\"\n\n[dependencies]\nb.workspace = true\nc = { version = \"1\" } # x\n\n\
                    [dev-dependencies]\nd.workspace = true\n";
    let (package, deps) = package_and_dependencies(manifest);
    assert_eq!(package.as_deref(), Some("a"));
    assert_eq!(deps, ["b", "c"].into_iter().map(String::from).collect());
    let graph: BTreeMap<String, BTreeSet<String>> = [("a", vec!["b"]), ("b", vec!["e"])]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into_iter().map(String::from).collect()))
        .collect();
    assert_eq!(
        reachable(&graph, "a"),
        ["b", "e"].into_iter().map(String::from).collect()
    );
}
