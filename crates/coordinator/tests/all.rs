//! The coordinator over HTTP against real Redis, and workspace-wide source checks: every integration test of this crate in one test binary (`integration`), so the
//! workspace links one binary per crate instead of one per file. Each file of `tests/` is a module
//! here (`cargo test --workspace --test integration -- <file>::` runs one file's tests); a file left out
//! of this list would silently stop running, so `test_binaries` (crates/coordinator/tests) fails on it.

// Helpers shared by several files (one copy in this binary).
mod support;

// One module per test file.
mod acknowledge;
mod api;
mod browse;
mod connections;
mod console;
mod dashboards;
mod describe;
mod durability;
mod failover;
mod find;
mod grafana;
mod invariant_facts;
mod key_names;
mod merged_search;
mod module_graph;
mod observability;
mod offset_reset;
mod openapi;
mod openapi_ranges;
mod openapi_required;
mod openapi_schemas;
mod pending;
mod readme_routes;
mod release_forecast;
mod report_fence;
mod reset_cluster;
mod reset_interrupted;
mod reshard;
mod robustness;
mod sdk_dependencies;
mod search_cursor;
mod security;
mod security_auth;
mod security_domain;
mod security_limits;
mod security_ownership;
mod static_members;
mod test_binaries;
