//! The bootstrap admin's password hash: one STRING key written once, with `SET NX`, so that
//! replicas starting together agree on one generated password. The key name is the caller's
//! (`rsc_protocol::names::bootstrap_admin_key`); the store does not look at the hash.

use crate::error::StoreError;
use crate::store::Store;

impl Store {
    /// The stored admin hash, if any.
    pub async fn bootstrap_admin_get(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(redis::cmd("GET")
            .arg(key)
            .query_async(&mut self.connection())
            .await?)
    }

    /// Stores `hash` unless a hash is already stored; returns whether this call stored it.
    pub async fn bootstrap_admin_claim(&self, key: &str, hash: &str) -> Result<bool, StoreError> {
        let won: Option<String> = redis::cmd("SET")
            .arg(key)
            .arg(hash)
            .arg("NX")
            .query_async(&mut self.connection())
            .await?;
        Ok(won.is_some())
    }
}
