//! No crate's modules import each other in a circle: within each crate of the workspace, no circle larger
//! than one top-level module and its submodules (ARCHITECTURE.md, "Inside the coordinator crate"; the group
//! crate's layering in "Crates"). A layer — a top-level module that only groups others, like the
//! coordinator's `services/` — is a folder: its modules (`services::admin`) are the graph's nodes. This test
//! reads every source file of every crate under `crates/`, collects the `crate::<module>` paths it names
//! (comments left out), and fails naming the crate and the circle when two modules reach each other. A crate's binaries under `src/bin/` are crate roots of their own
//! and left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "bin") && path.parent() == Some(dir) {
                continue;
            }
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The layers of a crate: top-level modules that only group others (`services.rs` holds nothing but doc
/// comments and `pub mod x;` lines, its modules are in `services/`). Inside a layer the unit of the graph is
/// the layer's module (`services::admin`), so layers are folders, not one merged node.
fn layers(src: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(src).expect("read src dir") {
        let path = entry.expect("dir entry").path();
        let Some(name) = path.file_stem().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        if path.extension().is_none_or(|e| e != "rs") || !src.join(&name).is_dir() {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read source");
        let only_modules = text.lines().map(str::trim).all(|l| {
            l.is_empty()
                || l.starts_with("//")
                || (l.starts_with("pub mod ") || l.starts_with("mod ")) && l.ends_with(';')
        });
        if only_modules {
            found.insert(name);
        }
    }
    found
}

/// The module a file belongs to (`heartbeat/batch.rs` → `heartbeat`; in a layer, `services/reshard/ops.rs` →
/// `services::reshard`), None for the crate root (`lib.rs`, `main.rs` of a binary crate) and a layer's file.
fn top_module(src: &Path, file: &Path, layers: &BTreeSet<String>) -> Option<String> {
    let rel = file.strip_prefix(src).expect("file under src");
    let mut parts = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned());
    let first = parts.next()?;
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
    if layers.contains(&name) {
        let inner = parts.next()?;
        let inner = inner.strip_suffix(".rs").unwrap_or(&inner);
        return Some(format!("{name}::{inner}"));
    }
    (name != "lib" && name != "main").then_some(name)
}

/// The end of the `{…}` group that `text` starts inside (after its `{`).
fn group_end(text: &str) -> usize {
    let mut depth = 1;
    text.char_indices()
        .find(|(_, c)| {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            depth == 0
        })
        .map_or(text.len(), |(i, _)| i)
}

/// The modules named by the path `text` that follows `crate::` (or a layer's `crate::layer::`): its head, or
/// the heads of every item of a `{…}` group.
fn path_modules(
    text: &str,
    layer: Option<&str>,
    layers: &BTreeSet<String>,
    found: &mut BTreeSet<String>,
) {
    if let Some(group) = text.strip_prefix('{') {
        let group = &group[..group_end(group)];
        let mut depth = 0;
        let mut item = String::new();
        for c in group.chars().chain([',']) {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    path_modules(item.trim(), layer, layers, found);
                    item.clear();
                    continue;
                }
                _ => {}
            }
            item.push(c);
        }
        return;
    }
    let head: String = text
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    if head.is_empty() {
        return;
    }
    match layer {
        Some(layer) => {
            found.insert(format!("{layer}::{head}"));
        }
        None => match text[head.len()..].strip_prefix("::") {
            Some(rest) if layers.contains(&head) => path_modules(rest, Some(&head), layers, found),
            _ => {
                found.insert(head);
            }
        },
    }
}

/// Modules named by `crate::x`, `crate::{x, y::…}` or, in a layer, `crate::layer::x` in code (not comments).
fn imported_modules(text: &str, layers: &BTreeSet<String>) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        path_modules(rest, None, layers, &mut found);
    }
    found
}

/// Strongly connected components (Tarjan), each as a sorted list.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let i = w.index.len();
        w.index.insert(v, i);
        w.low.insert(v, i);
        w.stack.push(v);
        w.on_stack.insert(v);
        for u in w.graph.get(v).into_iter().flatten() {
            let u = u.as_str();
            if !w.graph.contains_key(u) {
                continue;
            }
            if !w.index.contains_key(u) {
                visit(w, u);
                let lu = w.low[u];
                let lv = w.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lu);
            } else if w.on_stack.contains(u) {
                let iu = w.index[u];
                let lv = w.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iu);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            while let Some(x) = w.stack.pop() {
                w.on_stack.remove(x);
                component.push(x.to_owned());
                if x == v {
                    break;
                }
            }
            component.sort();
            w.out.push(component);
        }
    }
    let mut w = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.out
}

/// The module graph of the crate whose sources are in `src`: each top-level module and the other top-level
/// modules it names.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    source_files(src, &mut files);
    let layers = layers(src);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(module) = top_module(src, file, &layers) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("read source");
        let edges = graph.entry(module.clone()).or_default();
        edges.extend(
            imported_modules(&text, &layers)
                .into_iter()
                .filter(|m| *m != module),
        );
    }
    graph
}

/// Every crate of the workspace (a directory under `crates/` with a `src/`), by name.
fn workspace_crates() -> BTreeMap<String, PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .to_path_buf();
    std::fs::read_dir(&crates)
        .expect("read crates/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| {
            let name = p
                .file_name()
                .expect("crate dir")
                .to_string_lossy()
                .into_owned();
            (name, p.join("src"))
        })
        .collect()
}

#[test]
fn no_crates_modules_form_an_import_circle() {
    let crates = workspace_crates();
    assert!(
        ["coordinator", "group", "store", "protocol", "client", "cli"]
            .iter()
            .all(|c| crates.contains_key(*c)),
        "the walk found too few crates: {:?}",
        crates.keys()
    );
    let mut found = Vec::new();
    for (name, src) in &crates {
        let graph = module_graph(src);
        if name == "coordinator" {
            let found_layers = layers(src);
            assert!(
                ["http", "services", "background", "runtime", "observability"]
                    .iter()
                    .all(|l| found_layers.contains(*l)),
                "the coordinator's layer folders were not recognised: {found_layers:?}"
            );
            assert!(
                graph.len() > 20
                    && graph.contains_key("runtime::coordinator")
                    && graph.contains_key("services::heartbeat")
                    && graph.contains_key("http::api"),
                "the walk found too few modules: {:?}",
                graph.keys()
            );
        }
        if name == "group" {
            assert!(
                graph.contains_key("model")
                    && graph.contains_key("heartbeat")
                    && graph.contains_key("replica"),
                "the walk found too few modules of rsc-group: {:?}",
                graph.keys()
            );
        }
        for circle in circles(&graph).into_iter().filter(|c| c.len() > 1) {
            found.push(format!("{name}: {circle:?}"));
        }
    }
    assert!(
        found.is_empty(),
        "modules that import each other (each list is one circle): {found:#?}"
    );
}

#[test]
fn the_import_reader_sees_grouped_and_plain_paths() {
    let text =
        "use crate::a::B;\nuse crate::{c, d::{E, F}};\n// use crate::g;\nlet x = crate::h::f();";
    let found = imported_modules(text, &BTreeSet::new());
    assert_eq!(
        found,
        ["a", "c", "d", "h"].into_iter().map(String::from).collect()
    );
    let layered =
        "use crate::svc::a::B;\nuse crate::{svc::{b, c::D}, e};\nlet x = crate::svc::f::g();";
    let layers: BTreeSet<String> = ["svc".to_owned()].into();
    assert_eq!(
        imported_modules(layered, &layers),
        ["svc::a", "svc::b", "svc::c", "e", "svc::f"]
            .into_iter()
            .map(String::from)
            .collect()
    );
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(String::from).collect()))
    .collect();
    let big: Vec<_> = circles(&graph)
        .into_iter()
        .filter(|c| c.len() > 1)
        .collect();
    assert_eq!(
        big,
        vec![vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]
    );
}
