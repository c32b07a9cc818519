//! Bearer tokens: one key per token and one index per user.
//!
//! A token key (a STRING, named after the token's digest, its own hash tag) holds the caller's JSON
//! record and expires with the session (`SET … PXAT`). A user's index (a ZSET of digests scored by
//! their end, its own hash tag) is the authority on which tokens are live: listing with the cap
//! (`lua/token_index_add.lua`) and emptying (`lua/token_index_take_all.lua`) are each one script on
//! that one key. Token keys and index keys live in different slots, so no script spans both; the
//! coordinator orders the calls (write the token, then list it; unlist, then delete). The caller names a
//! token by its digest (hex) and an index by the user's key-safe name; the store names the keys (`Keyspace`). The
//! record's format is the caller's (the coordinator's `StoredToken`).

use std::sync::LazyLock;

use redis::Script;

use crate::error::StoreError;
use crate::store::Store;

static INDEX_ADD: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/token_index_add.lua")));
static INDEX_TAKE_ALL: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/token_index_take_all.lua")));

impl Store {
    /// Writes the record of the token whose SHA-256 is `digest_hex`, expiring at `expires_ms` (epoch ms).
    pub async fn token_put(
        &self,
        digest_hex: &str,
        record_json: &str,
        expires_ms: i64,
    ) -> Result<(), StoreError> {
        let token_key = &self.keyspace().token(digest_hex);
        let () = redis::cmd("SET")
            .arg(token_key)
            .arg(record_json)
            .arg("PXAT")
            .arg(expires_ms)
            .query_async(&mut self.connection())
            .await?;
        Ok(())
    }

    /// A token's record, if its key exists.
    pub async fn token_get(&self, digest_hex: &str) -> Result<Option<String>, StoreError> {
        let token_key = &self.keyspace().token(digest_hex);
        Ok(redis::cmd("GET")
            .arg(token_key)
            .query_async(&mut self.connection())
            .await?)
    }

    /// Deletes a token's key; returns whether it existed.
    pub async fn token_delete(&self, digest_hex: &str) -> Result<bool, StoreError> {
        let token_key = &self.keyspace().token(digest_hex);
        let n: i64 = redis::cmd("DEL")
            .arg(token_key)
            .query_async(&mut self.connection())
            .await?;
        Ok(n > 0)
    }

    /// Lists `digest` (ending at `expires_ms`) in the user's index at `now_ms`, after dropping ended
    /// entries; removes and returns the oldest digests beyond `cap`. The index expires with its last
    /// token.
    pub async fn token_index_add(
        &self,
        user_part: &str,
        now_ms: i64,
        expires_ms: i64,
        digest: &str,
        cap: u32,
    ) -> Result<Vec<String>, StoreError> {
        let index_key = &self.keyspace().user_tokens(user_part);
        Ok(INDEX_ADD
            .key(index_key)
            .arg(now_ms)
            .arg(expires_ms)
            .arg(digest)
            .arg(cap)
            .invoke_async(&mut self.connection())
            .await?)
    }

    /// Whether `digest` is listed in the index.
    pub async fn token_index_contains(
        &self,
        user_part: &str,
        digest: &str,
    ) -> Result<bool, StoreError> {
        let index_key = &self.keyspace().user_tokens(user_part);
        let score: Option<f64> = redis::cmd("ZSCORE")
            .arg(index_key)
            .arg(digest)
            .query_async(&mut self.connection())
            .await?;
        Ok(score.is_some())
    }

    /// Unlists `digest`; returns whether it was listed.
    pub async fn token_index_remove(
        &self,
        user_part: &str,
        digest: &str,
    ) -> Result<bool, StoreError> {
        let index_key = &self.keyspace().user_tokens(user_part);
        let n: i64 = redis::cmd("ZREM")
            .arg(index_key)
            .arg(digest)
            .query_async(&mut self.connection())
            .await?;
        Ok(n > 0)
    }

    /// Empties the index in one step and returns the digests it listed.
    pub async fn token_index_take_all(&self, user_part: &str) -> Result<Vec<String>, StoreError> {
        let index_key = &self.keyspace().user_tokens(user_part);
        Ok(INDEX_TAKE_ALL
            .key(index_key)
            .invoke_async(&mut self.connection())
            .await?)
    }

    /// The listed digests, earliest end first.
    pub async fn token_index_list(&self, user_part: &str) -> Result<Vec<String>, StoreError> {
        let index_key = &self.keyspace().user_tokens(user_part);
        Ok(redis::cmd("ZRANGE")
            .arg(index_key)
            .arg(0)
            .arg(-1)
            .query_async(&mut self.connection())
            .await?)
    }
}
