//! The "Routes" table of docs/api.md and the route table (`api/routes.rs`) list the same routes, with the same
//! access and audit action, so the documentation cannot drift from what the server serves.

use rsc_coordinator::http::api::routes::{self, Access};
use std::collections::BTreeSet;

/// (method, path as docs/api.md writes it, access, audit action)
type Row = (String, String, String, String);

fn readme() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/api.md");
    std::fs::read_to_string(path).expect("docs/api.md is readable")
}

/// The rows of the table under `## Routes`.
fn documented() -> BTreeSet<Row> {
    let text = readme();
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Routes\n"))
        .expect("docs/api.md has a \"## Routes\" section");
    let mut rows = BTreeSet::new();
    for line in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 4 || cells[0] == "method" || cells[0].starts_with("---") {
            continue;
        }
        let unquote = |c: &str| c.trim_matches('`').to_owned();
        let row = (
            cells[0].to_owned(),
            unquote(cells[1]),
            cells[2].to_owned(),
            unquote(cells[3]),
        );
        assert!(rows.insert(row.clone()), "docs/api.md lists {row:?} twice");
    }
    rows
}

/// The route table in the notation of docs/api.md: `{p}`, `{g}`, `{memberId}`, `{reshardingId}`.
fn served() -> BTreeSet<Row> {
    routes::table()
        .iter()
        .map(|spec| {
            let path = spec
                .path
                .replace("{stream_prefix}", "{p}")
                .replace("{consumer_group}", "{g}")
                .replace("{member_id}", "{memberId}")
                .replace("{resharding_id}", "{reshardingId}")
                .replace("{shard_index}", "{shardIndex}");
            let access = match spec.access {
                Access::Public => "public",
                Access::Read => "READ",
                Access::Write => "WRITE",
                Access::Member => "MEMBER",
                Access::DataRead => "DATA_READ",
                Access::Authenticated => "authenticated",
            };
            (
                spec.method.to_string(),
                path,
                access.to_owned(),
                spec.audit_action.unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_readme_routes_table_lists_exactly_the_served_routes() {
    let documented = documented();
    let served = served();
    let missing: Vec<&Row> = served.difference(&documented).collect();
    let extra: Vec<&Row> = documented.difference(&served).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/api.md \"Routes\" disagrees with api/routes.rs.\n  served but not documented (add these rows): \
         {missing:#?}\n  documented but not served (remove or fix these rows): {extra:#?}"
    );
}
