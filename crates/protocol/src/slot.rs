//! Redis Cluster hash slot of a key.
//!
//! The producer-routing response carries a `redisSlot` for every shard stream, and the store keeps
//! all keys of one group in one slot (via a `{…}` hash tag) so a single Lua script may touch them
//! in cluster mode. Both need the exact slot function Redis Cluster uses:
//! `CRC16/XMODEM(key) mod 16384`, where only the hash-tag content is hashed when the key has one.
//!
//! The CRC is implemented here rather than taken from a crate: it is about fifteen lines, the
//! specification is fixed (polynomial 0x1021, initial value 0, no reflection, no final xor), and
//! the tests below pin it to values Redis itself reports.

/// Number of hash slots in a Redis Cluster.
pub const SLOT_COUNT: u16 = 16384;

/// The Redis Cluster hash slot (`0..16384`) of `key`.
///
/// Hash tags: if the key contains a `{`, and a `}` appears after that first `{`, and the text
/// between them is not empty, only that text is hashed. Otherwise the whole key is hashed.
pub fn redis_slot(key: &[u8]) -> u16 {
    crc16_xmodem(hash_tag(key).unwrap_or(key)) & (SLOT_COUNT - 1)
}

/// The non-empty content of the key's hash tag, if it has one.
fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let after_open = key.get(open + 1..)?;
    let close = after_open.iter().position(|&b| b == b'}')?;
    let content = after_open.get(..close)?;
    if content.is_empty() {
        None
    } else {
        Some(content)
    }
}

/// CRC-16/XMODEM: polynomial 0x1021, initial value 0, most significant bit first.
fn crc16_xmodem(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_xmodem_check_value() {
        // The standard check value of CRC-16/XMODEM over "123456789".
        assert_eq!(crc16_xmodem(b"123456789"), 0x31C3);
        assert_eq!(crc16_xmodem(b""), 0);
    }

    #[test]
    fn known_slots() {
        assert_eq!(redis_slot(b"foo"), 12182);
        assert_eq!(redis_slot(b"orders:0"), 8578);
        assert_eq!(redis_slot(b"orders:1"), 12707);
        assert_eq!(redis_slot(b"create-order:0"), 9192);
        assert_eq!(redis_slot(b"create-order:3"), 5003);
    }

    #[test]
    fn hash_tag_groups_keys_into_one_slot() {
        let following = redis_slot(b"{user1000}.following");
        let followers = redis_slot(b"{user1000}.followers");
        assert_eq!(following, followers);
        assert_eq!(following, redis_slot(b"user1000"));
    }

    #[test]
    fn empty_hash_tag_hashes_the_whole_key() {
        assert_eq!(hash_tag(b"foo{}{bar}"), None);
        assert_eq!(
            redis_slot(b"foo{}{bar}"),
            crc16_xmodem(b"foo{}{bar}") & 16383
        );
        assert_ne!(redis_slot(b"foo{}{bar}"), redis_slot(b"bar"));
    }

    #[test]
    fn tag_ends_at_first_closing_brace_after_first_opening_brace() {
        assert_eq!(hash_tag(b"foo{{bar}}zap"), Some(&b"{bar"[..]));
        assert_eq!(redis_slot(b"foo{{bar}}zap"), redis_slot(b"{bar"));
        assert_eq!(redis_slot(b"foo{{bar}}zap"), crc16_xmodem(b"{bar") & 16383);
    }

    #[test]
    fn unbalanced_braces_hash_the_whole_key() {
        assert_eq!(hash_tag(b"foo{bar"), None);
        assert_eq!(hash_tag(b"foo}bar{"), None);
        assert_eq!(hash_tag(b"{"), None);
        assert_eq!(redis_slot(b"foo{bar"), crc16_xmodem(b"foo{bar") & 16383);
    }

    #[test]
    fn empty_key_is_slot_zero() {
        assert_eq!(redis_slot(b""), 0);
    }

    #[test]
    fn slot_is_always_in_range() {
        for i in 0u32..2000 {
            assert!(redis_slot(format!("key:{i}").as_bytes()) < SLOT_COUNT);
        }
    }
}
