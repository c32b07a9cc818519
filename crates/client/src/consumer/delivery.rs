//! `Delivery`: one stream entry handed to the application's handler, and its explicit acknowledgement.
//!
//! The handler decides when (and whether) an entry is done by calling [`Delivery::ack`] (XACK). An entry
//! that is never acknowledged stays pending under this member's Redis consumer name; the next owner of the
//! shard reclaims it (XAUTOCLAIM). Retry, dead-lettering and idempotency stay in the application.

use crate::error::ClientError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Per-shard local progress of one member, reported in heartbeats (`shardProgress`).
#[derive(Debug, Default)]
pub(crate) struct ShardLocal {
    pub in_flight: std::sync::atomic::AtomicI64,
    /// A read loop ended with entries it had read but not handed over (its lease lapsed): the next loop of
    /// this shard in this member reclaims its pending entries first.
    pub left_pending: std::sync::atomic::AtomicBool,
    pub progress: Mutex<Progress>,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct Progress {
    pub last_delivered_id: Option<String>,
    pub last_acked_id: Option<String>,
    /// Entries delivered to this member and not acknowledged by it.
    pub pending: i64,
    pub updated_at: Option<String>,
}

impl ShardLocal {
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One entry delivered to the handler.
pub struct Delivery {
    pub(crate) shard: u32,
    pub(crate) stream_key: String,
    pub(crate) id: String,
    pub(crate) fields: HashMap<String, Vec<u8>>,
    pub(crate) reclaimed: bool,
    pub(crate) member_id: String,
    pub(crate) group: String,
    /// The batch's connection; it reconnects by itself, so a retried ack works after a Redis restart.
    pub(crate) conn: crate::redis_target::DataConn,
    pub(crate) local: Arc<ShardLocal>,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("stream_key", &self.stream_key)
            .field("id", &self.id)
            .field("reclaimed", &self.reclaimed)
            .field("member_id", &self.member_id)
            .finish_non_exhaustive()
    }
}

impl Delivery {
    /// The shard index.
    pub fn shard(&self) -> u32 {
        self.shard
    }

    /// The shard stream key, `<prefix>:<shard>`.
    pub fn stream_key(&self) -> &str {
        &self.stream_key
    }

    /// The stream entry id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// All fields of the entry.
    pub fn fields(&self) -> &HashMap<String, Vec<u8>> {
        &self.fields
    }

    /// One field's raw value.
    pub fn field(&self, name: &str) -> Option<&[u8]> {
        self.fields.get(name).map(Vec::as_slice)
    }

    /// One field as UTF-8 text (None if missing or not UTF-8).
    pub fn field_str(&self, name: &str) -> Option<&str> {
        self.field(name).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// Whether this entry was reclaimed from a previous owner (it may have been handled before).
    pub fn reclaimed(&self) -> bool {
        self.reclaimed
    }

    /// The member (and Redis consumer name) it was delivered to.
    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    /// Acknowledges the entry (XACK). Returns whether Redis still had it pending (false: already acked).
    ///
    /// ```no_run
    /// # async fn handle(d: rsc_client::Delivery) {
    /// println!("{} {:?}", d.id(), d.field_str("payload"));
    /// if let Err(e) = d.ack().await {
    ///     eprintln!("ack failed, the entry stays pending and will be redelivered to the next owner: {e}");
    /// }
    /// # }
    /// ```
    pub async fn ack(&self) -> Result<bool, ClientError> {
        let mut conn = self.conn.clone();
        let n: i64 = redis::cmd("XACK")
            .arg(&self.stream_key)
            .arg(&self.group)
            .arg(&self.id)
            .query_async(&mut conn)
            .await?;
        let mut p = self.local.lock();
        p.last_acked_id = Some(self.id.clone());
        if n > 0 {
            p.pending = (p.pending - 1).max(0);
        }
        Ok(n > 0)
    }
}
