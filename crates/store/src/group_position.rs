//! A Redis consumer group's position on one shard stream, for an operator's offset reset: setting its
//! last-delivered id (`XGROUP SETID`), counting the records between two ids (bounded `XRANGE`), and
//! acknowledging the pending entries up to an id (`XPENDING` then `XACK`, page by page).
//!
//! Shard streams carry no hash tag, so every call here touches one key; the caller (the coordinator's
//! `offset_reset.rs`) decides what to move and checks that nobody reads meanwhile.

use redis::Value;

use crate::error::StoreError;
use crate::store::Store;

/// Records are counted (and pending entries acknowledged) in pages of this many.
const PAGE: usize = 1_000;

impl Store {
    /// `XGROUP SETID key group id [ENTRIESREAD n]`: the group's next read returns the records after `id`.
    /// `entries_read`, when known, keeps the group's lag exact (Redis estimates it otherwise).
    pub async fn shard_group_set_id(
        &self,
        key: &str,
        group: &str,
        id: &str,
        entries_read: Option<i64>,
    ) -> Result<(), StoreError> {
        let mut cmd = redis::cmd("XGROUP");
        cmd.arg("SETID").arg(key).arg(group).arg(id);
        if let Some(n) = entries_read {
            cmd.arg("ENTRIESREAD").arg(n);
        }
        let _: Value = cmd.query_async(&mut self.connection()).await?;
        Ok(())
    }

    /// How many records of `key` lie after `after` (exclusive) up to `until` (inclusive), counting at most
    /// `cap`: (count, whether the cap stopped the count). Read in pages of 1,000 ids (`XRANGE … COUNT`).
    pub async fn shard_count_between(
        &self,
        key: &str,
        after: &str,
        until: &str,
        cap: usize,
    ) -> Result<(i64, bool), StoreError> {
        let mut counted = 0usize;
        let mut cursor = after.to_owned();
        loop {
            let want = PAGE.min(cap.saturating_sub(counted) + 1);
            let page: Vec<(String, Value)> = redis::cmd("XRANGE")
                .arg(key)
                .arg(format!("({cursor}"))
                .arg(until)
                .arg("COUNT")
                .arg(want)
                .query_async(&mut self.connection())
                .await?;
            counted += page.len();
            if counted > cap {
                return Ok((cap as i64, true));
            }
            match page.last() {
                Some((last, _)) if page.len() == want => cursor = last.clone(),
                _ => return Ok((counted as i64, false)),
            }
        }
    }

    /// Acknowledges (`XACK`) every entry the Redis consumer group `group` has pending on `key` at or before
    /// `until`, whoever it is pending for; returns how many were acknowledged. At most `limit` entries (the
    /// pending count read before, so a reader adding entries meanwhile cannot keep it going).
    pub async fn shard_ack_pending_up_to(
        &self,
        key: &str,
        group: &str,
        until: &str,
        limit: usize,
    ) -> Result<i64, StoreError> {
        let mut acked = 0i64;
        let mut seen = 0usize;
        while seen < limit {
            let entries: Vec<(String, String, i64, i64)> = redis::cmd("XPENDING")
                .arg(key)
                .arg(group)
                .arg("-")
                .arg(until)
                .arg(PAGE.min(limit - seen))
                .query_async(&mut self.connection())
                .await?;
            if entries.is_empty() {
                break;
            }
            seen += entries.len();
            let n: i64 = redis::cmd("XACK")
                .arg(key)
                .arg(group)
                .arg(
                    entries
                        .iter()
                        .map(|(id, ..)| id.as_str())
                        .collect::<Vec<_>>(),
                )
                .query_async(&mut self.connection())
                .await?;
            acked += n;
        }
        Ok(acked)
    }
}
