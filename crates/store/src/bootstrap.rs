//! The bootstrap admin's password hash: one STRING key written once, with `SET NX`, so that
//! replicas starting together agree on one generated password. The store names the key
//! (`Keyspace::bootstrap_admin`); the store does not look at the hash.

use crate::error::StoreError;
use crate::store::Store;

impl Store {
    /// The stored admin hash, if any.
    pub async fn bootstrap_admin_get(&self) -> Result<Option<String>, StoreError> {
        let key = &self.keyspace().bootstrap_admin();
        Ok(redis::cmd("GET")
            .arg(key)
            .query_async(&mut self.connection())
            .await?)
    }

    /// Stores `hash` unless a hash is already stored; returns whether this call stored it.
    pub async fn bootstrap_admin_claim(&self, hash: &str) -> Result<bool, StoreError> {
        let key = &self.keyspace().bootstrap_admin();
        let won: Option<String> = redis::cmd("SET")
            .arg(key)
            .arg(hash)
            .arg("NX")
            .query_async(&mut self.connection())
            .await?;
        Ok(won.is_some())
    }
}
