//! Fuzz target: a group driven through a script of heartbeats, ticks, time advances and resharding; the
//! invariants hold after every step (checks in `crates/group/tests/fuzz_checks/mod.rs`).
#![no_main]

#[path = "../../crates/group/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_checks::heartbeat_transition(data);
});
