//! Key names shown to an operator: the one place the coordinator asks the store's keyspace
//! (`rsc_store::Keyspace`) for a key name, and only to name a key in an error, a log line or an API
//! response's `streamKey`/`streamKeyPattern`. Every store
//! operation takes ids (a group's name, a stream prefix, a user …) and names its keys itself; a string
//! from here is never passed back to the store (`tests/key_names.rs` holds both rules).

use rsc_store::{GroupName, Keyspace, Shard, Store};

/// Group `name`'s metadata key.
pub fn group(store: &Store, name: &GroupName) -> String {
    store.keyspace().group_metadata(name)
}

/// The key of stream `prefix`'s record.
pub fn stream_record(store: &Store, prefix: &str) -> String {
    store.keyspace().stream_record(prefix)
}

/// The key of the generated bootstrap admin's hash.
pub fn bootstrap_admin(store: &Store) -> String {
    store.keyspace().bootstrap_admin()
}

/// The data plane's stream key of shard `shard` (`<streamPrefix>:<shard>`), as the API and messages show it.
pub fn shard_stream(shard: &Shard) -> String {
    Keyspace::shard_stream(&shard.stream_prefix, shard.index)
}

/// The `streamKeyPattern` of stream `prefix`'s shard streams (`<streamPrefix>:{shardIndex}`), as producer
/// routing shows it.
pub fn shard_stream_pattern(prefix: &str) -> String {
    Keyspace::shard_stream_pattern(prefix)
}
