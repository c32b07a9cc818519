//! A Redis consumer group's position on one shard stream, for an operator's offset reset: setting its
//! last-delivered id (`XGROUP SETID`), counting the records between two ids and finding the record `n` away
//! from a position (a bounded walk over ids), and acknowledging the pending entries up to an id
//! (`XPENDING` then `XACK`, page by page).
//!
//! Counting and walking cost O(records walked) inside Redis: Redis has no command that counts a range of a
//! stream or returns ids without their fields, so a script (`lua/walk_ids.lua`) runs `XRANGE`/`XREVRANGE`
//! one page of 1,000 at a time and returns only the count and the page's last id — the payloads never
//! cross the network, and no script call holds Redis for more than one page. The caller bounds the walk
//! (the reset's 10,000-record cap).
//!
//! Shard streams carry no hash tag, so every call here touches one key; the caller (the coordinator's
//! `offset_reset.rs`) decides what to move and checks that nobody reads meanwhile.

use crate::shard::Shard;
use std::sync::LazyLock;

use redis::{Script, Value};

use crate::error::StoreError;
use crate::store::Store;

/// Records are counted (and pending entries acknowledged) in pages of this many.
const PAGE: usize = 1_000;

static WALK_IDS: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/walk_ids.lua")));

/// Which way [`Store::shard_walk`] goes from its position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// Towards newer records: those after the position (exclusive).
    Forward,
    /// Towards older records: those at or before the position (inclusive).
    Back,
}

/// Where a walk over ids ended ([`Store::shard_walk`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walked {
    /// Records walked over (at most the number asked for; fewer when the stream ended first).
    pub count: usize,
    /// The id of the last record walked over (None when none was).
    pub last_id: Option<String>,
}

impl Store {
    /// `XGROUP SETID key group id [ENTRIESREAD n]`: the group's next read returns the records after `id`.
    /// `entries_read`, when known, keeps the group's lag exact (Redis estimates it otherwise).
    pub async fn shard_group_set_id(
        &self,
        shard: &Shard,
        group: &str,
        id: &str,
        entries_read: Option<i64>,
    ) -> Result<(), StoreError> {
        let key = &shard.stream_key();
        let mut cmd = redis::cmd("XGROUP");
        cmd.arg("SETID").arg(key).arg(group).arg(id);
        if let Some(n) = entries_read {
            cmd.arg("ENTRIESREAD").arg(n);
        }
        let _: Value = cmd.query_async(&mut self.connection()).await?;
        Ok(())
    }

    /// How many records of `key` lie after `after` (exclusive) up to `until` (inclusive), counting at most
    /// `cap`: (count, whether the cap stopped the count). Walked in pages of 1,000 ids inside Redis.
    pub async fn shard_count_between(
        &self,
        shard: &Shard,
        after: &str,
        until: &str,
        cap: usize,
    ) -> Result<(i64, bool), StoreError> {
        let key = &shard.stream_key();
        let mut counted = 0usize;
        let mut cursor = format!("({after}");
        loop {
            let want = PAGE.min(cap.saturating_sub(counted) + 1);
            let (n, last) = self.walk_page(key, "XRANGE", &cursor, until, want).await?;
            counted += n;
            if counted > cap {
                return Ok((cap as i64, true));
            }
            match last {
                Some(last) if n == want => cursor = format!("({last}"),
                _ => return Ok((counted as i64, false)),
            }
        }
    }

    /// Walks over at most `n` records of `key` from the position `from` (`Forward`: the records after it;
    /// `Back`: those at or before it, newest first) and says how many it passed and the last one's id.
    pub async fn shard_walk(
        &self,
        shard: &Shard,
        from: &str,
        walk: Walk,
        n: usize,
    ) -> Result<Walked, StoreError> {
        let key = &shard.stream_key();
        let (command, mut cursor, end) = match walk {
            Walk::Forward => ("XRANGE", format!("({from}"), "+"),
            Walk::Back => ("XREVRANGE", from.to_owned(), "-"),
        };
        let mut walked = Walked {
            count: 0,
            last_id: None,
        };
        while walked.count < n {
            let want = PAGE.min(n - walked.count);
            let (got, last) = self.walk_page(key, command, &cursor, end, want).await?;
            walked.count += got;
            if let Some(last) = last {
                cursor = format!("({last}");
                walked.last_id = Some(last);
            }
            if got < want {
                break;
            }
        }
        Ok(walked)
    }

    /// One page of a walk (`lua/walk_ids.lua`): how many entries `command` returns from `start` to `end`
    /// with `COUNT count`, and the last one's id.
    async fn walk_page(
        &self,
        key: &str,
        command: &str,
        start: &str,
        end: &str,
        count: usize,
    ) -> Result<(usize, Option<String>), StoreError> {
        let reply: (usize, Option<String>) = WALK_IDS
            .key(key)
            .arg(command)
            .arg(start)
            .arg(end)
            .arg(count)
            .invoke_async(&mut self.connection())
            .await?;
        Ok(reply)
    }

    /// Acknowledges (`XACK`) every entry the Redis consumer group `group` has pending on `key` at or before
    /// `until`, whoever it is pending for; returns how many were acknowledged. At most `limit` entries (the
    /// pending count read before, so a reader adding entries meanwhile cannot keep it going).
    pub async fn shard_ack_pending_up_to(
        &self,
        shard: &Shard,
        group: &str,
        until: &str,
        limit: usize,
    ) -> Result<i64, StoreError> {
        let key = &shard.stream_key();
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
