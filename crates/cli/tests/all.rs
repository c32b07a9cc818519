//! The rsc binary end to end: every integration test of this crate in one test binary (`integration`), so the
//! workspace links one binary per crate instead of one per file. Each file of `tests/` is a module
//! here (`cargo test --workspace --test integration -- <file>::` runs one file's tests); a file left out
//! of this list would silently stop running, so `test_binaries` (crates/coordinator/tests) fails on it.

// Helpers shared by several files (one copy in this binary).
#[path = "console/browser.rs"]
mod browser;
#[path = "support/operator_cli.rs"]
mod operator_cli;

// One module per test file.
mod backup;
mod bench;
mod bootstrap;
mod cluster;
mod console;
mod csrf;
mod doctor;
mod durability_cli;
mod e2e;
mod guarded;
mod login_memory;
mod offsets;
mod operator;
mod ordered;
mod packaging;
mod quiesce;
mod readme;
mod redis_down;
mod reference_env;
mod replicas;
mod sdk;
mod sdk_static;
mod security_redis_password;
mod security_terminal;
mod tls;
