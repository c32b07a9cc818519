//! Fuzz target: any bytes decoded and validated as every request body the API reads
//! (checks in `crates/protocol/tests/fuzz_checks/mod.rs`).
#![no_main]

#[path = "../../crates/protocol/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_checks::decode_requests(data);
});
