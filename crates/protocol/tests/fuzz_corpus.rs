//! Runs the `decode_requests` and `names_and_routing` fuzz targets' checks on stable: every committed seed
//! of `fuzz/corpus/<target>` (including any crash a fuzz run found and someone committed there), then
//! hostile hand-written inputs and deterministic pseudo-random ones. `scripts/fuzz-smoke` runs the same
//! checks under libFuzzer.

use crate::fuzz_checks;

use std::path::PathBuf;

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} has no seeds", dir.display());
    files
        .iter()
        .map(|f| std::fs::read(f).expect("corpus file"))
        .collect()
}

/// Inputs a fuzzer takes a while to build: deep nesting, huge numbers, escapes, odd unicode.
fn hostile() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = [
        "",
        "null",
        "{}",
        "[]",
        r#"{"protocolVersion":1e400}"#,
        r#"{"initialShardCount":-9223372036854775809}"#,
        r#"{"targetShardCount":9223372036854775807,"requestedBy":"a","reason":"b"}"#,
        r#"{"requestedBy":"\ud800","reason":"\u0000"}"#,
        r#"{"requestedBy":"\u202e\ud83d\ude00"}"#,
        r#"{"shardIndex":4294967296}"#,
        r#"[{"shardIndex":1},2,-1]"#,
        r#"{"protocolVersion":1,"requestId":"r","memberId":"m","memberEpoch":0,"metadataVersion":0,
            "runtimeConsumerCapacity":{"runtimeMaxConcurrency":1,"availableConcurrency":0},
            "ownedShards":null,"revokingShards":[{"shard":1,"state":"REVOKED","inFlight":null}]} trailing"#,
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    v.push("[".repeat(100_000).into_bytes());
    v.push(format!("{}1{}", "[".repeat(200), "]".repeat(200)).into_bytes());
    v.push(format!(r#"{{"requestedBy":"{}"}}"#, "x".repeat(10_000)).into_bytes());
    v.push(vec![0xff, 0xfe, b'{', 0]);
    v.push(b"orders\0billing\0m-1\0\xff\xff\xff\xff\0\x01".to_vec());
    v.push(b"{a}\0b:c\0 m\0\0".to_vec());
    v
}

fn pseudo_random(count: usize) -> impl Iterator<Item = Vec<u8>> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let alphabet = br#"{}[]":,0123456789-.eE nultrfasbcdhkmpvwxyz\ufd800"#;
    (0..count).map(move |_| {
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let len = (next() % 200) as usize;
        (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect()
    })
}

#[test]
fn decode_requests_checks_pass() {
    // The seeds are valid requests: the fuzzer starts from bodies that get past decoding.
    for bytes in corpus("decode_requests") {
        let accepted = fuzz_checks::decode_requests(&bytes);
        assert!(
            accepted > 0,
            "seed {:?} is not a valid request",
            String::from_utf8_lossy(&bytes)
        );
    }
    for bytes in hostile().into_iter().chain(pseudo_random(2_000)) {
        fuzz_checks::decode_requests(&bytes);
    }
}

#[test]
fn names_and_routing_checks_pass() {
    let inputs = corpus("names_and_routing");
    for bytes in inputs
        .into_iter()
        .chain(hostile())
        .chain(pseudo_random(2_000))
    {
        fuzz_checks::names_and_routing(&bytes);
    }
}
