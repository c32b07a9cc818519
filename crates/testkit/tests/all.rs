//! The test kit's own servers: every integration test of this crate in one test binary (`integration`), so the
//! workspace links one binary per crate instead of one per file. Each file of `tests/` is a module
//! here (`cargo test --workspace --test integration -- <file>::` runs one file's tests); a file left out
//! of this list would silently stop running, so `test_binaries` (crates/coordinator/tests) fails on it.

mod servers;
mod watchdog;
