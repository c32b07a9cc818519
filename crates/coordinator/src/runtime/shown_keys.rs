//! Key names shown to an operator: the one place the coordinator asks the store's keyspace
//! (`rsc_store::Keyspace`) for a key name, and only to name a key in an error or a log line. Every store
//! operation takes ids (a group's name, a stream prefix, a user …) and names its keys itself; a string
//! from here is never passed back to the store (`tests/key_names.rs` holds both rules).

use rsc_store::{GroupName, Store};

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
