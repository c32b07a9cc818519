//! The audit streams: capped Redis streams of JSON records, one field (`record`) per entry.
//!
//! [`Store::audit_append`] adds a record and trims the stream to about `max_len` entries (`XADD MAXLEN
//! ~`); [`Store::audit_page`] reads one page newest first, between two stream ids. The record's JSON is
//! the caller's (the coordinator's `AuditRecord`); the stream names the store's ([`AuditStream`]).

use crate::error::StoreError;
use crate::keys::AuditStream;
use crate::store::Store;

/// The stream field that holds an entry's record.
const RECORD_FIELD: &str = "record";

/// One stream entry as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// The stream entry id (`<ms>-<seq>`).
    pub id: String,
    /// The entry's `record` field; None when the entry has none (not written by rsc).
    pub record: Option<String>,
}

impl Store {
    /// Appends `record_json` to the audit stream `stream`, trimmed to about `max_len` entries; returns the
    /// entry id.
    pub async fn audit_append(
        &self,
        stream: AuditStream,
        max_len: u32,
        record_json: &str,
    ) -> Result<String, StoreError> {
        let key = &self.keyspace().audit_stream(stream);
        Ok(redis::cmd("XADD")
            .arg(key)
            .arg("MAXLEN")
            .arg("~")
            .arg(max_len)
            .arg("*")
            .arg(RECORD_FIELD)
            .arg(record_json)
            .query_async(&mut self.connection())
            .await?)
    }

    /// Up to `count` entries of the audit stream `stream`, newest first, from `end` down to `start` (stream
    /// ids as `XREVRANGE` takes them: `+`, `-`, `<ms>-<seq>`, or `(<id>` for exclusive).
    pub async fn audit_page(
        &self,
        stream: AuditStream,
        end: &str,
        start: &str,
        count: usize,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        let key = &self.keyspace().audit_stream(stream);
        let page: Vec<(String, Vec<String>)> = redis::cmd("XREVRANGE")
            .arg(key)
            .arg(end)
            .arg(start)
            .arg("COUNT")
            .arg(count)
            .query_async(&mut self.connection())
            .await?;
        Ok(page
            .into_iter()
            .map(|(id, fields)| AuditEntry {
                id,
                record: fields
                    .chunks(2)
                    .find(|kv| kv.first().map(String::as_str) == Some(RECORD_FIELD))
                    .and_then(|kv| kv.get(1))
                    .cloned(),
            })
            .collect())
    }
}
