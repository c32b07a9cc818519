//! The coordinator's key names under its key prefix, owned by the store.
//!
//! A [`Keyspace`] is built from the deployment's key prefix and held by the [`crate::Store`]
//! ([`crate::Store::keyspace`]); the store's methods name their keys with it from the ids they are given
//! (the coordinator asks it only to show a key in a message, and never spells a key name itself). The names are spelled once, in `rsc_protocol::names`
//! (the SDK needs the shard stream names too); only this crate and the SDK call it.

use std::sync::Arc;

use rsc_protocol::names;

use crate::group_name::GroupName;
use crate::keys::{AuditStream, GroupKeys, LimitWindow, LoginAttempt, ProducerKeys, ThrottleKeys};

/// The key prefix the coordinator writes under unless configured otherwise (`coordinator.store.key-prefix`).
pub const DEFAULT_KEY_PREFIX: &str = "redis-stream:coord";

/// Every key name under one key prefix. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyspace {
    prefix: Arc<str>,
}

impl Default for Keyspace {
    fn default() -> Self {
        Keyspace::new(DEFAULT_KEY_PREFIX)
    }
}

impl Keyspace {
    /// The key names under `key_prefix`.
    pub fn new(key_prefix: &str) -> Keyspace {
        Keyspace {
            prefix: Arc::from(key_prefix),
        }
    }

    /// The key prefix itself (for messages and for `rsc doctor`'s scan).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The three keys of group `consumer_group` of stream `stream_prefix` (one hash tag).
    pub fn group(&self, stream_prefix: &str, consumer_group: &str) -> GroupKeys {
        let kp = self.prefix();
        GroupKeys {
            metadata: names::group_metadata_key(kp, stream_prefix, consumer_group),
            leases: names::group_leases_key(kp, stream_prefix, consumer_group),
            progress: names::group_progress_key(kp, stream_prefix, consumer_group),
        }
    }

    /// The three keys of group `group` ([`Keyspace::group`]).
    pub fn group_of(&self, group: &GroupName) -> GroupKeys {
        self.group(&group.stream_prefix, &group.consumer_group)
    }

    /// The metadata key of group `group` alone (for the index, and for messages naming the group's key).
    pub fn group_metadata(&self, group: &GroupName) -> String {
        names::group_metadata_key(self.prefix(), &group.stream_prefix, &group.consumer_group)
    }

    /// The index of all groups.
    pub fn group_index(&self) -> String {
        names::group_index_key(self.prefix())
    }

    /// The deployment's cluster id.
    pub fn cluster_id(&self) -> String {
        names::cluster_id_key(self.prefix())
    }

    /// The registry of live coordinator replicas.
    pub fn replicas(&self) -> String {
        names::replica_registry_key(self.prefix())
    }

    /// The change feed of written groups and streams.
    pub fn changes(&self) -> String {
        names::change_feed_key(self.prefix())
    }

    /// The record of stream `stream_prefix`.
    pub fn stream_record(&self, stream_prefix: &str) -> String {
        names::stream_record_key(self.prefix(), stream_prefix)
    }

    /// The keys of stream `stream_prefix`'s producer sightings and of its record.
    pub fn producers(&self, stream_prefix: &str) -> ProducerKeys {
        let kp = self.prefix();
        ProducerKeys {
            record: names::stream_record_key(kp, stream_prefix),
            seen: names::producers_seen_key(kp, stream_prefix),
            first_seen: names::producers_first_seen_key(kp, stream_prefix),
            quiesced: names::producers_quiesced_key(kp, stream_prefix),
        }
    }

    /// Shard `shard`'s stream of stream `stream_prefix` (the coord/v1 contract's `<streamPrefix>:<shard>`).
    /// Shard streams and their routing keys are the data plane's, not under the key prefix: these four names
    /// need no keyspace.
    pub fn shard_stream(stream_prefix: &str, shard: u32) -> String {
        names::shard_stream_key(stream_prefix, shard)
    }

    /// The routing boundary key beside shard `shard`'s stream of stream `stream_prefix`.
    pub fn shard_routing(stream_prefix: &str, shard: u32) -> String {
        names::shard_routing_key(&names::shard_stream_key(stream_prefix, shard))
    }

    /// The routing boundary key beside the shard stream `stream_key` (as [`Keyspace::shard_stream`] names it).
    pub fn routing_of(stream_key: &str) -> String {
        names::shard_routing_key(stream_key)
    }

    /// The `streamKeyPattern` of stream `stream_prefix`'s routing (`<streamPrefix>:{shardIndex}`).
    pub fn shard_stream_pattern(stream_prefix: &str) -> String {
        names::stream_key_pattern(stream_prefix)
    }

    /// Audit stream `stream`.
    pub fn audit_stream(&self, stream: AuditStream) -> String {
        match stream {
            AuditStream::Mutations => self.audit(),
            AuditStream::Rejected => self.audit_rejected(),
            AuditStream::Signins => self.audit_signins(),
        }
    }

    /// The audit stream of admin mutations and sign-ins.
    pub fn audit(&self) -> String {
        names::audit_stream_key(self.prefix())
    }

    /// The audit stream of refused requests and failed sign-ins.
    pub fn audit_rejected(&self) -> String {
        names::audit_rejected_stream_key(self.prefix())
    }

    /// The audit stream of successful sign-ins.
    pub fn audit_signins(&self) -> String {
        names::audit_signins_stream_key(self.prefix())
    }

    /// The generated bootstrap admin's hash.
    pub fn bootstrap_admin(&self) -> String {
        names::bootstrap_admin_key(self.prefix())
    }

    /// A bearer token's record, by the token's SHA-256 (hex).
    pub fn token(&self, digest_hex: &str) -> String {
        names::token_key(self.prefix(), digest_hex)
    }

    /// A user's token index (`user_part`: the user's name made key-safe).
    pub fn user_tokens(&self, user_part: &str) -> String {
        names::user_tokens_key(self.prefix(), user_part)
    }

    /// The admin-mutation rate limit of one principal (made key-safe).
    pub fn ratelimit_principal(&self, principal_part: &str) -> String {
        names::ratelimit_principal_key(self.prefix(), principal_part)
    }

    /// The admin-mutation rate limit of one target (`<streamPrefix>:<group or *>`, made key-safe).
    pub fn ratelimit_group(&self, target_part: &str) -> String {
        names::ratelimit_group_key(self.prefix(), target_part)
    }

    /// A principal's sign-ins in the current minute (made key-safe).
    pub fn ratelimit_login(&self, principal_part: &str) -> String {
        names::ratelimit_login_key(self.prefix(), principal_part)
    }

    /// The rollback suspicions raised by one principal (made key-safe).
    pub fn suspicion_limit(&self, principal_part: &str) -> String {
        names::suspicion_limit_key(self.prefix(), principal_part)
    }

    /// The key of rate-limit window `window`.
    pub fn limit_window(&self, window: LimitWindow<'_>) -> String {
        match window {
            LimitWindow::Login(p) => self.ratelimit_login(p),
            LimitWindow::Principal(p) => self.ratelimit_principal(p),
            LimitWindow::Target(t) => self.ratelimit_group(t),
            LimitWindow::Suspicion(p) => self.suspicion_limit(p),
        }
    }

    /// The sign-in throttle's counters of `attempt` ([`Keyspace::login_throttle`]).
    pub fn login_throttle_of(&self, attempt: &LoginAttempt) -> ThrottleKeys {
        self.login_throttle(&attempt.pair, &attempt.address, &attempt.username)
    }

    /// The sign-in throttle's counters of one attempt (each part made key-safe; one hash tag).
    pub fn login_throttle(
        &self,
        pair_part: &str,
        address_part: &str,
        username_part: &str,
    ) -> ThrottleKeys {
        let (pair, address, username) =
            names::login_throttle_keys(self.prefix(), pair_part, address_part, username_part);
        ThrottleKeys {
            pair,
            address,
            username,
        }
    }
}

impl ProducerKeys {
    /// The keys of stream `stream_prefix` under `key_prefix` ([`Keyspace::producers`]).
    pub fn of(key_prefix: &str, stream_prefix: &str) -> Self {
        Keyspace::new(key_prefix).producers(stream_prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keyspace_spells_the_protocols_names_under_its_prefix() {
        let ks = Keyspace::new("kp");
        assert_eq!(
            ks.group("orders", "billing"),
            GroupKeys {
                metadata: "kp:{orders:billing}:metadata".to_owned(),
                leases: "kp:{orders:billing}:leases".to_owned(),
                progress: "kp:{orders:billing}:progress".to_owned(),
            }
        );
        assert_eq!(ks.group_index(), "kp:group-index");
        assert_eq!(ks.stream_record("orders"), "kp:{orders}:stream");
        assert_eq!(ks.producers("orders").record, ks.stream_record("orders"));
        assert_eq!(Keyspace::shard_stream("orders", 3), "orders:3");
        assert_eq!(
            Keyspace::shard_routing("orders", 3),
            "orders:3:{orders:3}:routing"
        );
        assert_eq!(
            Keyspace::routing_of("orders:3"),
            Keyspace::shard_routing("orders", 3)
        );
        assert_eq!(
            ks.login_throttle("p", "a", "u").address,
            "kp:login-throttle:{login-throttle}:addr:a"
        );
        assert_eq!(Keyspace::default().prefix(), DEFAULT_KEY_PREFIX);
    }
}
