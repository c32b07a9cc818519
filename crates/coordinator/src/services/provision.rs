//! Redis data-plane provisioning: shard streams and their Redis consumer groups.
//!
//! Clients never run XGROUP CREATE and producers publish with NOMKSTREAM, so the coordinator must create
//! every shard stream and its consumer group before a shard appears in routing or in any assignment
//! (coord/v1 contract). The Redis side is `rsc_store`'s (`Store::shard_provision`, `Store::shards_exist`):
//! a new consumer group starts at the stream's end (`$`) with ENTRIESREAD set to the stream's
//! entries-added, so its lag is known (0) from the start; BUSYGROUP means "already there" and is fine.

use crate::runtime::shown_keys;
use rsc_store::{Shard, Store, StoreError};

#[derive(Debug, thiserror::Error)]
#[error("could not provision {key}: {}", crate::http::error::store_error_text(.source))]
pub struct ProvisionError {
    pub key: String,
    #[source]
    pub source: StoreError,
}

/// Creates (idempotently) the shard streams `prefix:i` for `i` in `shards`, the Redis consumer group
/// `group` on each, and each stream's routing key (guarded publish; see `Store::ensure_routing_key`).
pub async fn provision(
    store: &Store,
    prefix: &str,
    group: &str,
    shards: impl IntoIterator<Item = u32>,
) -> Result<(), ProvisionError> {
    for shard in shards {
        let id = Shard::new(prefix, shard);
        if let Err(source) = store.shard_provision(&id, group).await {
            let key = shown_keys::shard_stream(&id);
            return Err(ProvisionError { key, source });
        }
        if let Err(source) = store.ensure_routing_key(&id).await {
            let key = shown_keys::shard_stream(&id);
            return Err(ProvisionError { key, source });
        }
    }
    Ok(())
}

/// Which shard indexes of `shards` have a stream key in Redis (a scale-out must not adopt foreign data).
pub async fn existing_shards(
    store: &Store,
    prefix: &str,
    shards: std::ops::Range<u32>,
) -> Result<Vec<u32>, StoreError> {
    let ids: Vec<Shard> = shards.clone().map(|i| Shard::new(prefix, i)).collect();
    let exists = store.shards_exist(&ids).await?;
    Ok(shards
        .zip(exists)
        .filter(|(_, e)| *e)
        .map(|(i, _)| i)
        .collect())
}
