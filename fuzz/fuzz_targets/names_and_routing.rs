//! Fuzz target: name validation, key naming, Redis slots and the routing hash
//! (checks in `crates/protocol/tests/fuzz_checks/mod.rs`).
#![no_main]

#[path = "../../crates/protocol/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_checks::names_and_routing(data);
});
