//! Every shape of key the coordinator writes under its key prefix, in one list.
//!
//! `rsc doctor` tells the coordinator's keys from application keys sharing the prefix with this list, so a
//! key shape added to the coordinator and not here makes doctor raise a false alarm on a healthy deployment.
//! The list is built from `rsc_protocol::names` (where every key name is made) and the store's own layout
//! ([`crate::aggregate_key`], [`crate::aggregate_staging_key`]); a test runs every feature of a live coordinator
//! and checks that each key it finds under the prefix has a shape of this list
//! (`crates/cli/tests/backup.rs`, `doctor_knows_every_key_a_coordinator_writes`).

use rsc_protocol::names;

/// One kind of key: its name for people, and its shape with `MARKER` where a name part goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyShape {
    /// What the key holds, e.g. `group metadata`.
    pub what: &'static str,
    /// The key name with every variable part replaced by `MARKER` (no marker: the name is fixed).
    pub shape: String,
}

/// Stands for a non-empty variable part (a stream prefix, a group, a digest…) in [`KeyShape::shape`].
pub const MARKER: &str = "\u{1}";

/// Every key shape the coordinator writes under `key_prefix`.
pub fn coordinator_key_shapes(key_prefix: &str) -> Vec<KeyShape> {
    let kp = key_prefix;
    let m = MARKER;
    let metadata = names::group_metadata_key(kp, m, m);
    let (throttle_pair, throttle_addr, throttle_user) = names::login_throttle_keys(kp, m, m, m);
    let shape = |what, shape| KeyShape { what, shape };
    vec![
        shape("group index", names::group_index_key(kp)),
        shape("replica registry", names::replica_registry_key(kp)),
        shape("cluster id", names::cluster_id_key(kp)),
        shape("change feed", names::change_feed_key(kp)),
        shape("audit stream", names::audit_stream_key(kp)),
        shape(
            "rejected-request audit stream",
            names::audit_rejected_stream_key(kp),
        ),
        shape("sign-in audit stream", names::audit_signins_stream_key(kp)),
        shape("bootstrap admin", names::bootstrap_admin_key(kp)),
        shape(
            "group aggregate (large groups)",
            crate::aggregate_key(&metadata),
        ),
        shape(
            "group aggregate being written",
            crate::aggregate_staging_key(&metadata),
        ),
        shape("group metadata", metadata),
        shape("member leases", names::group_leases_key(kp, m, m)),
        shape("member progress", names::group_progress_key(kp, m, m)),
        shape("stream record", names::stream_record_key(kp, m)),
        shape("producers seen", names::producers_seen_key(kp, m)),
        shape("producers quiesced", names::producers_quiesced_key(kp, m)),
        shape(
            "producers first seen",
            names::producers_first_seen_key(kp, m),
        ),
        shape(
            "rate limit (principal)",
            names::ratelimit_principal_key(kp, m),
        ),
        shape("rate limit (group)", names::ratelimit_group_key(kp, m)),
        shape("sign-in rate limit", names::ratelimit_login_key(kp, m)),
        shape("suspicion report limit", names::suspicion_limit_key(kp, m)),
        shape("bearer token", names::token_key(kp, m)),
        shape("tokens of a user", names::user_tokens_key(kp, m)),
        shape("sign-in throttle (user and address)", throttle_pair),
        shape("sign-in throttle (address)", throttle_addr),
        shape("sign-in throttle (user)", throttle_user),
    ]
}

/// What `key` holds if the coordinator writes it (its shape's [`KeyShape::what`]), or `None` for a key of
/// another application.
pub fn coordinator_key_kind(key_prefix: &str, key: &str) -> Option<&'static str> {
    coordinator_key_shapes(key_prefix)
        .into_iter()
        .find(|s| fits(&s.shape, key))
        .map(|s| s.what)
}

/// Whether `key` is `shape` with every [`MARKER`] replaced by some non-empty text.
fn fits(shape: &str, key: &str) -> bool {
    let pieces: Vec<&str> = shape.split(MARKER).collect();
    if pieces.len() == 1 {
        return shape == key;
    }
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    if !key.starts_with(first) || !key.ends_with(last) || key.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &key[first.len()..key.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
        // At least one character for the marker before this piece.
        match rest.get(1..).and_then(|r| r.find(piece)) {
            Some(i) => rest = &rest[1 + i + piece.len()..],
            None => return false,
        }
    }
    !rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KP: &str = "redis-stream:coord";

    #[test]
    fn keys_of_every_shape_are_recognised() {
        for (key, what) in [
            (
                "redis-stream:coord:{orders:billing}:metadata",
                "group metadata",
            ),
            (
                "redis-stream:coord:{orders:billing}:leases",
                "member leases",
            ),
            (
                "redis-stream:coord:{orders:billing}:metadata:aggregate",
                "group aggregate (large groups)",
            ),
            (
                "redis-stream:coord:{orders:billing}:metadata:aggregate-staging",
                "group aggregate being written",
            ),
            ("redis-stream:coord:{orders}:stream", "stream record"),
            (
                "redis-stream:coord:{orders}:producers:seen",
                "producers seen",
            ),
            (
                "redis-stream:coord:{orders}:producers:quiesced",
                "producers quiesced",
            ),
            (
                "redis-stream:coord:{orders}:producers:first-seen",
                "producers first seen",
            ),
            ("redis-stream:coord:group-index", "group index"),
            ("redis-stream:coord:audit", "audit stream"),
            (
                "redis-stream:coord:audit:rejected",
                "rejected-request audit stream",
            ),
            ("redis-stream:coord:audit:signins", "sign-in audit stream"),
            (
                "redis-stream:coord:ratelimit:{login:reader}",
                "sign-in rate limit",
            ),
            ("redis-stream:coord:auth:token:{ab12}", "bearer token"),
            (
                "redis-stream:coord:login-throttle:{login-throttle}:addr:127.0.0.1",
                "sign-in throttle (address)",
            ),
            (
                "redis-stream:coord:ratelimit:{group:orders:*}",
                "rate limit (group)",
            ),
        ] {
            assert_eq!(coordinator_key_kind(KP, key), Some(what), "{key}");
        }
    }

    #[test]
    fn application_keys_are_not_the_coordinators() {
        for key in [
            "redis-stream:coord:session:42",
            "redis-stream:coord:{}:metadata",
            "redis-stream:coord:cache",
            "redis-stream:coord:{orders}:stream:x",
            "redis-stream:coord:audit:x",
            "other:{orders}:stream",
        ] {
            assert_eq!(coordinator_key_kind(KP, key), None, "{key}");
        }
    }

    #[test]
    fn every_shape_lies_under_the_prefix_and_is_named_once() {
        let shapes = coordinator_key_shapes(KP);
        let mut whats: Vec<&str> = shapes.iter().map(|s| s.what).collect();
        whats.sort_unstable();
        whats.dedup();
        assert_eq!(whats.len(), shapes.len());
        for s in &shapes {
            assert!(s.shape.starts_with("redis-stream:coord:"), "{s:?}");
        }
    }
}
