//! Runs the `heartbeat_transition` fuzz target's checks on stable: every committed seed of
//! `fuzz/corpus/heartbeat_transition` (including any crash a fuzz run found and someone committed there),
//! then a few hundred deterministic pseudo-random scripts. `scripts/fuzz-smoke` runs the same checks under
//! libFuzzer.

use crate::fuzz_checks;

use std::path::PathBuf;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("corpus entry").path();
            let bytes = std::fs::read(&path).expect("corpus file");
            (path, bytes)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} has no seeds", dir.display());
    files
}

#[test]
fn committed_corpus_passes_the_heartbeat_transition_checks() {
    let mut writes = 0;
    let mut most_granted = 0;
    for (path, bytes) in corpus("heartbeat_transition") {
        let s = fuzz_checks::heartbeat_transition_verbose(&bytes);
        eprintln!("{}: {s:?}", path.display());
        writes += s.writes;
        most_granted = most_granted.max(s.most_granted);
    }
    // The seeds must reach groups where members hold shards, or the fuzzer starts from nothing.
    assert!(
        writes > 10 && most_granted >= 3,
        "{writes} writes, {most_granted} granted"
    );
}

#[test]
fn pseudo_random_scripts_pass_the_heartbeat_transition_checks() {
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..200 {
        let len = (next() % 600) as usize;
        let script: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        fuzz_checks::heartbeat_transition(&script);
    }
}
