//! Producer routing hash: which shard a partition key is published to.
//!
//! Producers compute the shard locally from the routing response, so every client language must
//! get the same answer for the same key (coord/v1 contract). The rule is:
//!
//! 1. hash the key bytes with MurmurHash3 x86 32-bit, seed 0, and read the result as **unsigned**;
//! 2. to remove modulo bias, accept the hash only if it is below
//!    `limit = 2^32 - (2^32 mod shard_count)`; then the shard is `hash mod shard_count`;
//! 3. otherwise retry with attempt `k = 1, 2, …`, rehashing the same key bytes with
//!    `seed_k = murmur3(k as 4 little-endian bytes, seed 0)`.
//!
//! A signed `%` or `abs()` would put keys on different shards than the other clients do.

use std::io::Cursor;

/// MurmurHash3, x86 32-bit variant, over `bytes` with `seed`.
///
/// Wraps the `murmur3` crate, whose API reads from an `io::Read`.
pub fn murmur3_x86_32(bytes: &[u8], seed: u32) -> u32 {
    // The error case is unreachable: reading from a `Cursor` over an in-memory slice never
    // fails. Falling back to 0 keeps this function total without a panic path.
    murmur3::murmur3_32(&mut Cursor::new(bytes), seed).unwrap_or_default()
}

/// The seed used by rejection attempt `attempt` (1-based): MurmurHash3 of the attempt number
/// encoded as 4 little-endian bytes, with seed 0.
pub fn rejection_seed(attempt: u32) -> u32 {
    murmur3_x86_32(&attempt.to_le_bytes(), 0)
}

/// The shard index in `0..shard_count` that `key` routes to, or `None` when `shard_count` is 0
/// (there is no shard to publish to; callers must fail closed).
pub fn shard_for_key(key: &[u8], shard_count: u32) -> Option<u32> {
    if shard_count == 0 {
        return None;
    }
    let n = u64::from(shard_count);
    let space: u64 = 1 << 32;
    let limit = space - (space % n);

    let mut hash = murmur3_x86_32(key, 0);
    if u64::from(hash) < limit {
        return Some(hash % shard_count);
    }
    // Every attempt is rejected with probability below 1/2, so this loop ends after a handful of
    // attempts in practice. Bounding it by the u32 attempt counter keeps it finite regardless.
    for attempt in 1..=u32::MAX {
        hash = murmur3_x86_32(key, rejection_seed(attempt));
        if u64::from(hash) < limit {
            return Some(hash % shard_count);
        }
    }
    // Unreachable in practice (4 billion consecutive rejections); fall back to the biased
    // reduction rather than looping forever.
    Some(hash % shard_count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn murmur_vectors_from_the_wire_contract() {
        assert_eq!(murmur3_x86_32(b"", 0), 0);
        assert_eq!(murmur3_x86_32(b"hello", 0), 0x248B_FA47);
        assert_eq!(murmur3_x86_32(b"hello", 0), 613_153_351);
        assert_eq!(murmur3_x86_32(b"", 1), 0x514E_28B7);
        assert_eq!(
            murmur3_x86_32(b"The quick brown fox jumps over the lazy dog", 0),
            0x2E4F_F723
        );
    }

    #[test]
    fn classic_murmur_vectors_from_stack_doc() {
        assert_eq!(murmur3_x86_32(b"", 0), 0);
        assert_eq!(murmur3_x86_32(b"", 1), 0x514E_28B7);
        assert_eq!(murmur3_x86_32(b"", 0xFFFF_FFFF), 0x81F1_6F39);
        assert_eq!(murmur3_x86_32(b"test", 0), 0xBA6B_D213);
        assert_eq!(murmur3_x86_32(b"Hello, world!", 1234), 0xFAF6_CDB3);
        assert_eq!(
            murmur3_x86_32(b"The quick brown fox jumps over the lazy dog", 0x9747_B28C),
            0x2FA8_26CD
        );
        assert_eq!(murmur3_x86_32(b"aaaa", 0x9747_B28C), 0x5A97_808A);
    }

    #[test]
    fn worked_example_hashes_signed_and_unsigned() {
        let cases: [(&str, i32, u32); 6] = [
            ("order-123", -1_381_100_355, 2_913_866_941),
            ("a", 1_009_084_850, 1_009_084_850),
            ("", 0, 0),
            ("hello", 613_153_351, 0x248B_FA47),
            ("user-42", -1_183_655_216, 3_111_312_080),
            ("café", 605_818_632, 0x241C_0F08),
        ];
        for (key, signed, unsigned) in cases {
            let hash = murmur3_x86_32(key.as_bytes(), 0);
            assert_eq!(hash, unsigned, "unsigned hash of {key:?}");
            assert_eq!(hash as i32, signed, "signed view of {key:?}");
        }
    }

    #[test]
    fn cafe_is_hashed_as_utf8() {
        assert_eq!("café".as_bytes(), &[0x63, 0x61, 0x66, 0xC3, 0xA9]);
    }

    #[test]
    fn worked_example_shards() {
        // (key, [(shard_count, expected shard)])
        let cases: [(&str, &[(u32, u32)]); 6] = [
            ("order-123", &[(8, 5), (3, 1), (4, 1), (2, 1), (10, 1)]),
            ("a", &[(8, 2), (3, 2), (4, 2), (2, 0)]),
            ("", &[(8, 0), (3, 0), (4, 0), (2, 0), (10, 0)]),
            ("hello", &[(8, 7), (3, 1), (4, 3), (2, 1)]),
            ("user-42", &[(8, 0), (3, 2), (4, 0), (2, 0)]),
            ("café", &[(8, 0), (3, 0), (4, 0), (2, 0)]),
        ];
        for (key, expectations) in cases {
            for &(n, shard) in expectations {
                assert_eq!(
                    shard_for_key(key.as_bytes(), n),
                    Some(shard),
                    "key {key:?} with {n} shards"
                );
            }
        }
    }

    #[test]
    fn signed_modulo_would_be_wrong_for_order_123() {
        let hash = murmur3_x86_32(b"order-123", 0);
        let signed_abs_mod = (hash as i32).unsigned_abs() % 8;
        assert_eq!(signed_abs_mod, 3);
        assert_eq!(shard_for_key(b"order-123", 8), Some(5));
    }

    #[test]
    fn rejection_seeds() {
        assert_eq!(rejection_seed(1), 0xFBF1_402A);
        assert_eq!(rejection_seed(1) as i32, -68_075_478);
        assert_eq!(rejection_seed(2), 0x40B2_3B7F);
        assert_eq!(rejection_seed(3), 847_579_505);
    }

    #[test]
    fn rejection_example_with_one_billion_shards() {
        let n = 1_000_000_000u32;
        let limit = (1u64 << 32) - ((1u64 << 32) % u64::from(n));
        assert_eq!(limit, 4_000_000_000);
        let first = murmur3_x86_32(b"key-2", 0);
        assert_eq!(first, 4_093_138_188);
        assert!(u64::from(first) >= limit, "first attempt must be rejected");
        assert_eq!(murmur3_x86_32(b"key-2", rejection_seed(1)), 215_336_748);
        assert_eq!(shard_for_key(b"key-2", n), Some(215_336_748));
    }

    #[test]
    fn order_1_and_order_2_lists() {
        let counts = [1u32, 2, 3, 4, 5, 7, 8, 12, 20];
        let order_1 = [0u32, 1, 1, 1, 3, 3, 1, 1, 13];
        let order_2 = [0u32, 1, 2, 3, 2, 0, 7, 11, 7];
        for (i, &n) in counts.iter().enumerate() {
            assert_eq!(
                shard_for_key(b"order-1", n),
                Some(order_1[i]),
                "order-1, n={n}"
            );
            assert_eq!(
                shard_for_key(b"order-2", n),
                Some(order_2[i]),
                "order-2, n={n}"
            );
        }
    }

    #[test]
    fn zero_shards_routes_nowhere() {
        assert_eq!(shard_for_key(b"order-123", 0), None);
        assert_eq!(shard_for_key(b"", 0), None);
    }

    #[test]
    fn extreme_shard_counts() {
        assert_eq!(shard_for_key(b"anything", 1), Some(0));
        let max = shard_for_key(b"anything", u32::MAX);
        assert!(matches!(max, Some(s) if s < u32::MAX));
    }

    proptest! {
        #[test]
        fn shard_is_always_in_range(key in proptest::collection::vec(any::<u8>(), 0..64), n in 1u32..) {
            let shard = shard_for_key(&key, n);
            prop_assert!(matches!(shard, Some(s) if s < n));
        }

        #[test]
        fn power_of_two_counts_never_retry(key in proptest::collection::vec(any::<u8>(), 0..64), bits in 0u32..=31) {
            let n = 1u32 << bits;
            prop_assert_eq!(shard_for_key(&key, n), Some(murmur3_x86_32(&key, 0) % n));
        }
    }
}
