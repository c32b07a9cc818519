//! The bodies of the `decode_requests` and `names_and_routing` fuzz targets, shared with the stable replay
//! test (`tests/fuzz_corpus.rs`) through `#[path]`, so `cargo test` runs exactly what the fuzzer runs.
//!
//! - `decode_requests`: any bytes, decoded as every request body the API reads, the way the coordinator
//!   decodes them (`serde_json` from bytes, trailing characters refused; the coordinator only adds the
//!   failing field's path to the error with `serde_path_to_error`), then validated
//!   with the API's rules. Neither may panic, and whatever is accepted must re-serialise, decode to the same
//!   value and pass validation again.
//! - `names_and_routing`: any bytes, split into a stream prefix, a consumer group, a member id and numbers.
//!   Validation never panics; the keys built from accepted names keep their promises (one slot per group,
//!   an unambiguous group tag, shard keys ending in the index); slots and routed shards are always in range.
#![allow(dead_code)]

use rsc_protocol::names;
use rsc_protocol::routing::{murmur3_x86_32, shard_for_key};
use rsc_protocol::slot::{SLOT_COUNT, redis_slot};
use rsc_protocol::validate::{
    self, MAX_SHARD_COUNT, validate_consumer_group, validate_heartbeat_request, validate_member_id,
    validate_shard_count, validate_stream_prefix, validate_text,
};
use rsc_protocol::wire::{
    CreateStreamRequest, DeleteGroupRequest, HeartbeatRequest, MigrationActionRequest,
    ScaleRequest, ShardId,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// Decodes like the coordinator's `api::extract::decode`: the whole input must be one JSON value.
fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let value = T::deserialize(&mut *de).ok()?;
    de.end().ok()?;
    Some(value)
}

/// Decodes `bytes` as `T`; if accepted, checks `valid` and the round trip. Returns whether it was
/// decoded and valid.
fn accepted<T>(bytes: &[u8], valid: impl Fn(&T) -> bool) -> bool
where
    T: DeserializeOwned + Serialize + PartialEq + Debug,
{
    let Some(value) = decode::<T>(bytes) else {
        return false;
    };
    let ok = valid(&value);
    let json = serde_json::to_vec(&value).expect("an accepted request re-serialises");
    let back: T = decode(&json).expect("a re-serialised request decodes");
    assert_eq!(back, value, "the round trip changes the request");
    assert_eq!(valid(&back), ok, "validation differs after the round trip");
    ok
}

fn text_ok(field: &'static str, v: &Option<String>, required: bool) -> bool {
    validate_text(field, v.as_deref().unwrap_or(""), required).is_ok()
}

fn count_ok(field: &'static str, v: Option<i64>, min: i64) -> bool {
    match v {
        None => true,
        Some(n) => match validate_shard_count(field, n, min) {
            Ok(c) => i64::from(c) >= min && c <= MAX_SHARD_COUNT && i64::from(c) == n,
            Err(_) => true,
        },
    }
}

/// Returns how many request types accepted `data` as a valid request.
pub fn decode_requests(data: &[u8]) -> usize {
    let heartbeat = accepted::<HeartbeatRequest>(data, |r| {
        let ok = validate_heartbeat_request(r).is_ok();
        // Fields the API relies on once validation passed.
        if ok {
            assert!(r.protocol_version >= 1 && r.metadata_version >= 0);
            assert!(!r.request_id.trim().is_empty());
            assert!(r.owned_shards.len() <= MAX_SHARD_COUNT as usize);
        }
        let _ = validate_member_id(&r.member_id);
        ok
    });
    let create = accepted::<CreateStreamRequest>(data, |r| {
        count_ok("initialShardCount", r.initial_shard_count, 1)
            & text_ok("requestedBy", &r.requested_by, false)
            & text_ok("reason", &r.reason, false)
    });
    let scale = accepted::<ScaleRequest>(data, |r| {
        count_ok("targetShardCount", r.target_shard_count, 0)
            & text_ok("requestedBy", &r.requested_by, true)
            & text_ok("reason", &r.reason, true)
    });
    let delete = accepted::<DeleteGroupRequest>(data, |r| {
        text_ok("requestedBy", &r.requested_by, false) & text_ok("reason", &r.reason, false)
    });
    let action = accepted::<MigrationActionRequest>(data, |r| {
        text_ok("requestedBy", &r.requested_by, true) & text_ok("reason", &r.reason, true)
    });
    let shard = accepted::<ShardId>(data, |_| true);
    let shards = accepted::<Vec<ShardId>>(data, |_| true);
    // Whatever nesting the input has, the generic decoder answers (serde_json's recursion limit).
    let _ = decode::<serde_json::Value>(data);
    [heartbeat, create, scale, delete, action, shard, shards]
        .iter()
        .filter(|ok| **ok)
        .count()
}

/// Splits `data` at NUL bytes into up to five fields (the last keeps the rest).
fn fields(data: &[u8]) -> Vec<&[u8]> {
    data.splitn(5, |b| *b == 0).collect()
}

pub fn names_and_routing(data: &[u8]) {
    let parts = fields(data);
    let text = |i: usize| String::from_utf8_lossy(parts.get(i).copied().unwrap_or_default());
    let (prefix, group, member) = (text(0), text(1), text(2));
    let number = |i: usize| {
        let mut b = [0u8; 8];
        let src = parts.get(i).copied().unwrap_or_default();
        let n = src.len().min(8);
        b[..n].copy_from_slice(&src[..n]);
        i64::from_le_bytes(b)
    };
    let (n, min) = (number(3), number(4) % 4);

    let prefix_ok = validate_stream_prefix(&prefix).is_ok();
    let group_ok = validate_consumer_group(&group).is_ok();
    let _ = validate_member_id(&member);
    for (field, value) in [("requestedBy", &prefix), ("reason", &member)] {
        let _ = validate_text(field, value, true);
    }
    for name in [&prefix, &group, &member] {
        if let Err(e) = validate_member_id(name) {
            assert!(e.to_string().starts_with(e.field()), "{e}");
        } else {
            assert!(name.len() <= validate::MAX_ID_LEN && !name.contains(['{', '}']));
            assert_eq!(name.trim(), &**name);
        }
    }

    match validate_shard_count("shardCount", n, min) {
        Ok(c) => assert!(i64::from(c) >= min && c <= MAX_SHARD_COUNT && i64::from(c) == n),
        Err(e) => assert!(n < min || n > i64::from(MAX_SHARD_COUNT) || n < 0, "{e}"),
    }

    if prefix_ok && group_ok {
        const KP: &str = "redis-stream:coord";
        let tag = names::group_tag(&prefix, &group);
        let inner = &tag[1..tag.len() - 1];
        // The tag names exactly one (prefix, group): the group has no ':' and neither has braces.
        assert_eq!(inner.rsplit_once(':'), Some((&*prefix, &*group)));
        let slot = redis_slot(inner.as_bytes());
        for key in [
            names::group_metadata_key(KP, &prefix, &group),
            names::group_leases_key(KP, &prefix, &group),
            names::group_progress_key(KP, &prefix, &group),
        ] {
            assert_eq!(
                redis_slot(key.as_bytes()),
                slot,
                "{key} leaves its group's slot"
            );
        }
    }
    if prefix_ok {
        let shard = u32::try_from(n.unsigned_abs() % u64::from(MAX_SHARD_COUNT)).unwrap_or(0);
        let key = names::shard_stream_key(&prefix, shard);
        assert!(key.starts_with(&*prefix) && key.ends_with(&format!(":{shard}")));
        assert!(names::stream_key_pattern(&prefix).ends_with(":{shardIndex}"));
    }

    assert!(redis_slot(data) < SLOT_COUNT);
    let _ = murmur3_x86_32(data, n as u32);
    // Any shard count, including the largest: the routed shard is in range, and 0 routes nowhere.
    for count in [n as u32, (n >> 32) as u32, 1, 3, MAX_SHARD_COUNT, u32::MAX] {
        match shard_for_key(data, count) {
            None => assert_eq!(count, 0),
            Some(s) => assert!(s < count),
        }
    }
}
