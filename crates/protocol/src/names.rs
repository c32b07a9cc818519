//! Redis key names used by producers, consumers and the coordinator's store.
//!
//! Every key name is built here and nowhere else, so the layout is defined in one place.
//!
//! * Shard streams are `<streamPrefix>:<shardIndex>` with a plain decimal index and no hash tag
//!   (coord/v1 contract): clients build and read these names, so they must not change.
//! * Coordinator-owned keys of one group share the hash tag `{<streamPrefix>:<consumerGroup>}`,
//!   so the metadata hash, the leases and the progress of a group live in one Redis Cluster slot
//!   and a single Lua script may touch all of them.
//!
//! Inputs are expected to have passed [`crate::validate`] (no `{`/`}` in names, no `:` in the
//! consumer group), which keeps the tag unambiguous.

/// Stream key of one shard: `<streamPrefix>:<shard>`.
pub fn shard_stream_key(stream_prefix: &str, shard: u32) -> String {
    format!("{stream_prefix}:{shard}")
}

/// The routing boundary of one shard stream (guarded publish): a hash beside the stream,
/// `<streamKey>:{<streamKey>}:routing`, holding the lowest routing version an SDK producer may append with
/// (`floor`) and the stream's last id when the boundary was raised (`switchId`). Its hash tag is the whole
/// stream key, which carries no braces, so it lies in the stream's own Redis Cluster slot and one script may
/// touch both. It starts with the stream key so that a Redis ACL key pattern `<streamPrefix>:*` covers it.
pub fn shard_routing_key(stream_key: &str) -> String {
    format!("{stream_key}:{{{stream_key}}}:routing")
}

/// The `streamKeyPattern` of the routing response: `<streamPrefix>:{shardIndex}`, where
/// `{shardIndex}` is literal placeholder text, not a substituted value.
pub fn stream_key_pattern(stream_prefix: &str) -> String {
    format!("{stream_prefix}:{{shardIndex}}")
}

/// Redis Cluster hash tag shared by all coordinator keys of one group:
/// `{<streamPrefix>:<consumerGroup>}`.
pub fn group_tag(stream_prefix: &str, consumer_group: &str) -> String {
    format!("{{{stream_prefix}:{consumer_group}}}")
}

/// The group's metadata hash: `<keyPrefix>:{<streamPrefix>:<consumerGroup>}:metadata`.
pub fn group_metadata_key(key_prefix: &str, stream_prefix: &str, consumer_group: &str) -> String {
    group_scoped_key(key_prefix, stream_prefix, consumer_group, "metadata")
}

/// The group's member leases: `<keyPrefix>:{<streamPrefix>:<consumerGroup>}:leases`.
pub fn group_leases_key(key_prefix: &str, stream_prefix: &str, consumer_group: &str) -> String {
    group_scoped_key(key_prefix, stream_prefix, consumer_group, "leases")
}

/// The group's reported consumption progress:
/// `<keyPrefix>:{<streamPrefix>:<consumerGroup>}:progress`.
pub fn group_progress_key(key_prefix: &str, stream_prefix: &str, consumer_group: &str) -> String {
    group_scoped_key(key_prefix, stream_prefix, consumer_group, "progress")
}

/// The index of all groups: `<keyPrefix>:group-index`.
pub fn group_index_key(key_prefix: &str) -> String {
    format!("{key_prefix}:group-index")
}

/// The deployment's cluster id (a string, set once by the first replica to start): `<keyPrefix>:cluster-id`.
/// Every replica of a deployment reads the same one, so clients can tell replicas of one deployment apart
/// from another deployment's (the CLI keys its stored logins by it).
pub fn cluster_id_key(key_prefix: &str) -> String {
    format!("{key_prefix}:cluster-id")
}

/// The registry of live coordinator replicas (a sorted set: replica id → lease end): `<keyPrefix>:replicas`.
pub fn replica_registry_key(key_prefix: &str) -> String {
    format!("{key_prefix}:replicas")
}

/// The change feed (a capped stream of written groups and streams) by which the replica that owns a group
/// hears of a write on another: `<keyPrefix>:changes`.
pub fn change_feed_key(key_prefix: &str) -> String {
    format!("{key_prefix}:changes")
}

/// Admin-mutation rate limit of one principal: `<keyPrefix>:ratelimit:{principal:<part>}`, where `part` is
/// the principal made key-safe by the caller.
pub fn ratelimit_principal_key(key_prefix: &str, principal_part: &str) -> String {
    format!("{key_prefix}:ratelimit:{{principal:{principal_part}}}")
}

/// Admin-mutation rate limit of one target (`<streamPrefix>:<group or *>`, made key-safe by the caller):
/// `<keyPrefix>:ratelimit:{group:<part>}`.
pub fn ratelimit_group_key(key_prefix: &str, target_part: &str) -> String {
    format!("{key_prefix}:ratelimit:{{group:{target_part}}}")
}

/// Rollback suspicions raised by one principal: `<keyPrefix>:suspicion-limit:{principal:<part>}`.
pub fn suspicion_limit_key(key_prefix: &str, principal_part: &str) -> String {
    format!("{key_prefix}:suspicion-limit:{{principal:{principal_part}}}")
}

/// The sign-in throttle's counters of one attempt, all under the hash tag `{login-throttle}`:
/// `<keyPrefix>:login-throttle:{login-throttle}:pair:<part>`, `…:addr:<part>`, `…:user:<part>`, the parts
/// made key-safe by the caller. Returns (pair, address, username).
pub fn login_throttle_keys(
    key_prefix: &str,
    pair_part: &str,
    address_part: &str,
    username_part: &str,
) -> (String, String, String) {
    let base = format!("{key_prefix}:login-throttle:{{login-throttle}}");
    (
        format!("{base}:pair:{pair_part}"),
        format!("{base}:addr:{address_part}"),
        format!("{base}:user:{username_part}"),
    )
}

/// A bearer token's record, named after its SHA-256 (hex) in a hash tag of its own:
/// `<keyPrefix>:auth:token:{<digest>}`.
pub fn token_key(key_prefix: &str, digest_hex: &str) -> String {
    format!("{key_prefix}:auth:token:{{{digest_hex}}}")
}

/// A user's token index (the user's name made key-safe by the caller):
/// `<keyPrefix>:auth:user-tokens:{user:<part>}`.
pub fn user_tokens_key(key_prefix: &str, user_part: &str) -> String {
    format!("{key_prefix}:auth:user-tokens:{{user:{user_part}}}")
}

/// The audit stream of admin mutations and sign-ins: `<keyPrefix>:audit`.
pub fn audit_stream_key(key_prefix: &str) -> String {
    format!("{key_prefix}:audit")
}

/// The audit stream of successful sign-ins (folded per principal and address): `<keyPrefix>:audit:signins`.
pub fn audit_signins_stream_key(key_prefix: &str) -> String {
    format!("{key_prefix}:audit:signins")
}

/// A principal's count of sign-ins in the current minute (the login rate limit):
/// `<keyPrefix>:ratelimit:{login:<principalPart>}`.
pub fn ratelimit_login_key(key_prefix: &str, principal_part: &str) -> String {
    format!("{key_prefix}:ratelimit:{{login:{principal_part}}}")
}

/// The audit stream of refused requests and failed sign-ins: `<keyPrefix>:audit:rejected`.
pub fn audit_rejected_stream_key(key_prefix: &str) -> String {
    format!("{key_prefix}:audit:rejected")
}

/// The generated bootstrap admin's Argon2id hash: `<keyPrefix>:auth:bootstrap-admin`.
pub fn bootstrap_admin_key(key_prefix: &str) -> String {
    format!("{key_prefix}:auth:bootstrap-admin")
}

/// The coordinator's record of one stream (shard count, active migration), in the stream's own hash
/// tag: `<keyPrefix>:{<streamPrefix>}:stream`.
pub fn stream_record_key(key_prefix: &str, stream_prefix: &str) -> String {
    format!("{key_prefix}:{{{stream_prefix}}}:stream")
}

/// When each producer of a stream last fetched routing (hash: producer id → epoch ms), in the stream's hash
/// tag: `<keyPrefix>:{<streamPrefix>}:producers:seen`.
pub fn producers_seen_key(key_prefix: &str, stream_prefix: &str) -> String {
    format!("{key_prefix}:{{{stream_prefix}}}:producers:seen")
}

/// When each producer of a stream was first seen fetching routing (hash: producer id → epoch ms, kept across
/// later sightings while the producer stays in [`producers_seen_key`]), beside it:
/// `<keyPrefix>:{<streamPrefix>}:producers:first-seen`. Only a producer first seen before a group's routing
/// last changed may raise a rollback suspicion on it (issue #32, finding 12).
pub fn producers_first_seen_key(key_prefix: &str, stream_prefix: &str) -> String {
    format!("{key_prefix}:{{{stream_prefix}}}:producers:first-seen")
}

/// The quiesce each producer of a stream last reported (hash: producer id → report), beside
/// [`producers_seen_key`]: `<keyPrefix>:{<streamPrefix>}:producers:quiesced`.
pub fn producers_quiesced_key(key_prefix: &str, stream_prefix: &str) -> String {
    format!("{key_prefix}:{{{stream_prefix}}}:producers:quiesced")
}

fn group_scoped_key(
    key_prefix: &str,
    stream_prefix: &str,
    consumer_group: &str,
    suffix: &str,
) -> String {
    // Built in one allocation: every heartbeat names three of these keys.
    let mut key = String::with_capacity(
        key_prefix.len() + stream_prefix.len() + consumer_group.len() + suffix.len() + 5,
    );
    for part in [
        key_prefix,
        ":{",
        stream_prefix,
        ":",
        consumer_group,
        "}:",
        suffix,
    ] {
        key.push_str(part);
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slot::redis_slot;

    const KP: &str = "redis-stream:coord";

    #[test]
    fn coordinator_keys_keep_their_names() {
        assert_eq!(
            stream_record_key(KP, "orders"),
            "redis-stream:coord:{orders}:stream"
        );
        assert_eq!(
            token_key(KP, "ab12"),
            "redis-stream:coord:auth:token:{ab12}"
        );
        assert_eq!(
            user_tokens_key(KP, "alice"),
            "redis-stream:coord:auth:user-tokens:{user:alice}"
        );
        assert_eq!(audit_stream_key(KP), "redis-stream:coord:audit");
        assert_eq!(
            audit_rejected_stream_key(KP),
            "redis-stream:coord:audit:rejected"
        );
        assert_eq!(
            audit_signins_stream_key(KP),
            "redis-stream:coord:audit:signins"
        );
        assert_eq!(
            ratelimit_login_key(KP, "reader"),
            "redis-stream:coord:ratelimit:{login:reader}"
        );
        assert_eq!(
            bootstrap_admin_key(KP),
            "redis-stream:coord:auth:bootstrap-admin"
        );
        assert_eq!(
            ratelimit_principal_key(KP, "bob"),
            "redis-stream:coord:ratelimit:{principal:bob}"
        );
        assert_eq!(
            ratelimit_group_key(KP, "orders:*"),
            "redis-stream:coord:ratelimit:{group:orders:*}"
        );
        assert_eq!(
            suspicion_limit_key(KP, "bob"),
            "redis-stream:coord:suspicion-limit:{principal:bob}"
        );
        let (pair, addr, user) = login_throttle_keys(KP, "p", "a", "u");
        assert_eq!(
            pair,
            "redis-stream:coord:login-throttle:{login-throttle}:pair:p"
        );
        assert_eq!(
            addr,
            "redis-stream:coord:login-throttle:{login-throttle}:addr:a"
        );
        assert_eq!(
            user,
            "redis-stream:coord:login-throttle:{login-throttle}:user:u"
        );
    }

    #[test]
    fn shard_stream_keys() {
        assert_eq!(shard_stream_key("orders", 0), "orders:0");
        assert_eq!(shard_stream_key("orders", 12), "orders:12");
        assert_eq!(shard_stream_key("app:orders", 3), "app:orders:3");
    }

    #[test]
    fn shard_stream_keys_carry_no_hash_tag() {
        assert_eq!(redis_slot(shard_stream_key("orders", 0).as_bytes()), 8578);
        assert_eq!(redis_slot(shard_stream_key("orders", 1).as_bytes()), 12707);
    }

    #[test]
    fn a_shard_routing_key_lies_in_its_stream_slot() {
        for key in ["orders:0", "orders:12", "app:orders:3", "café:7"] {
            let routing = shard_routing_key(key);
            assert_eq!(routing, format!("{key}:{{{key}}}:routing"));
            assert_eq!(redis_slot(routing.as_bytes()), redis_slot(key.as_bytes()));
        }
    }

    #[test]
    fn stream_key_pattern_is_literal() {
        assert_eq!(stream_key_pattern("orders"), "orders:{shardIndex}");
    }

    #[test]
    fn group_keys() {
        assert_eq!(group_tag("orders", "billing"), "{orders:billing}");
        assert_eq!(
            group_metadata_key(KP, "orders", "billing"),
            "redis-stream:coord:{orders:billing}:metadata"
        );
        assert_eq!(
            group_leases_key(KP, "orders", "billing"),
            "redis-stream:coord:{orders:billing}:leases"
        );
        assert_eq!(
            group_progress_key(KP, "orders", "billing"),
            "redis-stream:coord:{orders:billing}:progress"
        );
        assert_eq!(group_index_key(KP), "redis-stream:coord:group-index");
    }

    #[test]
    fn keys_of_one_group_share_a_slot() {
        let groups = [
            ("orders", "orders"),
            ("orders", "billing"),
            ("app:orders", "shipping"),
            ("café", "grüße"),
        ];
        for (p, g) in groups {
            let tag_slot = redis_slot(format!("{p}:{g}").as_bytes());
            for key in [
                group_metadata_key(KP, p, g),
                group_leases_key(KP, p, g),
                group_progress_key(KP, p, g),
            ] {
                assert_eq!(redis_slot(key.as_bytes()), tag_slot, "{key}");
            }
        }
    }

    #[test]
    fn different_groups_are_tagged_apart() {
        assert_ne!(
            group_metadata_key(KP, "orders", "a"),
            group_metadata_key(KP, "orders", "b")
        );
    }

    #[test]
    fn colon_in_group_would_make_tags_ambiguous() {
        // Why validation forbids ':' in consumer groups (a prefix may contain ':').
        assert_eq!(group_tag("app:orders", "x"), group_tag("app", "orders:x"));
    }
}
