//! The group state machine: simulation, rule examples, properties and targeted tests: every integration test of this crate in one test binary (`integration`), so the
//! workspace links one binary per crate instead of one per file. Each file of `tests/` is a module
//! here (`cargo test --workspace --test integration -- <file>::` runs one file's tests); a file left out
//! of this list would silently stop running, so `test_binaries` (crates/coordinator/tests) fails on it.

// Helpers shared by several files (one copy in this binary).
mod context;
mod fuzz_checks;
mod sim;

// One module per test file.
mod acknowledge;
mod assign_props;
mod deadline_props;
mod epoch_overflow;
mod fuzz_corpus;
mod rebalance_timeout;
mod rejoin_same_id;
mod release_forecast;
mod reshard_flows;
mod rules;
mod self_fence;
mod simulation;
mod static_members;
