//! Audit records of admin mutations: one per request, whether it succeeded or was rejected (400, 401, 403,
//! 404, 409, 413, 422, 429, 503 …). Each record goes to the structured log (target `rsc::audit`) and to a
//! capped Redis stream `<key-prefix>:audit` (`XADD … MAXLEN ~ coordinator.audit.redis-max-entries`), and
//! can be read back, filtered, through `GET /coord/v1/monitoring/audit`. The guard writes the record before
//! it sends the response, so a successful mutation's record is in Redis when the caller sees success.

use super::tokens::redis_error;
use crate::error::ApiError;
use rsc_store::RedisConn;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// The Redis stream entry id (set when read back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub timestamp: String,
    pub timestamp_ms: i64,
    pub coordinator_id: String,
    pub action: String,
    /// SUCCESS (2xx), UNAUTHORIZED (401), FORBIDDEN (403) or FAILED (anything else).
    pub outcome: String,
    pub status: u16,
    pub error_code: Option<String>,
    pub principal: Option<String>,
    pub roles: Vec<String>,
    pub auth_method: Option<String>,
    pub method: String,
    pub route: String,
    pub path: String,
    pub query_string: Option<String>,
    pub request_id: String,
    /// Hex SHA-256 of the raw request body (None when the body could not be read, e.g. too large).
    pub request_body_sha256: Option<String>,
    pub client_address: String,
    pub user_agent: Option<String>,
    pub duration_ms: u64,
    pub stream_prefix: Option<String>,
    pub consumer_group: Option<String>,
    pub resharding_id: Option<String>,
    pub requested_by: Option<String>,
    pub reason: Option<String>,
    /// `initialShardCount`, `targetShardCount`, `force` when present in the body.
    pub request_summary: Map<String, Value>,
}

pub fn outcome(status: u16) -> &'static str {
    match status {
        200..=399 => "SUCCESS",
        401 => "UNAUTHORIZED",
        403 => "FORBIDDEN",
        _ => "FAILED",
    }
}

/// What the audit record takes from a request body (never the body itself: only its SHA-256).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BodyMeta {
    pub requested_by: Option<String>,
    pub reason: Option<String>,
    pub summary: Map<String, Value>,
}

impl BodyMeta {
    pub fn parse(body: &[u8]) -> BodyMeta {
        let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
            return BodyMeta::default();
        };
        let text = |k: &str| {
            map.get(k).and_then(Value::as_str).map(|s| {
                s.chars()
                    .take(rsc_protocol::validate::MAX_TEXT_LEN)
                    .collect()
            })
        };
        let summary = ["initialShardCount", "targetShardCount", "force"]
            .iter()
            .filter_map(|k| {
                map.get(*k)
                    .filter(|v| v.is_number() || v.is_boolean())
                    .map(|v| ((*k).to_owned(), v.clone()))
            })
            .collect();
        BodyMeta {
            requested_by: text("requestedBy"),
            reason: text("reason"),
            summary,
        }
    }
}

/// Filters of the audit read endpoint.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub stream_prefix: Option<String>,
    pub consumer_group: Option<String>,
    pub principal: Option<String>,
    pub action: Option<String>,
    pub outcome: Option<String>,
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    pub limit: usize,
}

impl AuditFilter {
    fn matches(&self, r: &AuditRecord) -> bool {
        let eq = |want: &Option<String>, have: &Option<String>| {
            want.as_ref().is_none_or(|w| have.as_ref() == Some(w))
        };
        eq(&self.stream_prefix, &r.stream_prefix)
            && eq(&self.consumer_group, &r.consumer_group)
            && eq(&self.principal, &r.principal)
            && self.action.as_ref().is_none_or(|a| *a == r.action)
            && self.outcome.as_ref().is_none_or(|o| *o == r.outcome)
    }
}

pub struct AuditLog {
    conn: RedisConn,
    key: String,
    max_entries: u32,
}

impl AuditLog {
    pub fn new(conn: RedisConn, key_prefix: &str, max_entries: u32) -> Self {
        AuditLog {
            conn,
            key: format!("{key_prefix}:audit"),
            max_entries,
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// Logs the record and appends it to the Redis stream (retried a few times). Returns the entry id, or
    /// None when Redis did not take it (the log line then says so at error level).
    pub async fn write(&self, record: &AuditRecord) -> Option<String> {
        let json = serde_json::to_string(record).unwrap_or_default();
        tracing::info!(
            target: "rsc::audit",
            action = %record.action,
            outcome = %record.outcome,
            status = record.status,
            principal = record.principal.as_deref().unwrap_or("-"),
            request_id = %record.request_id,
            stream_prefix = record.stream_prefix.as_deref().unwrap_or("-"),
            consumer_group = record.consumer_group.as_deref().unwrap_or("-"),
            record = %json,
            "audit"
        );
        let mut delay = Duration::from_millis(25);
        for attempt in 1..=3 {
            let r: Result<String, _> = redis::cmd("XADD")
                .arg(&self.key)
                .arg("MAXLEN")
                .arg("~")
                .arg(self.max_entries)
                .arg("*")
                .arg("record")
                .arg(&json)
                .query_async(&mut self.conn.clone())
                .await;
            match r {
                Ok(id) => return Some(id),
                Err(e) if attempt == 3 => {
                    tracing::error!(target: "rsc::audit", error = %e, request_id = %record.request_id,
                        "audit record could not be written to Redis; it exists only in this log");
                }
                Err(_) => {
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
            }
        }
        None
    }

    /// Newest-first records matching `filter`, of those the caller may see (`visible`).
    pub async fn read(
        &self,
        filter: &AuditFilter,
        visible: impl Fn(&AuditRecord) -> bool,
    ) -> Result<Vec<AuditRecord>, ApiError> {
        const PAGE: usize = 500;
        let mut end = filter
            .until_ms
            .map_or_else(|| "+".to_owned(), |t| format!("{t}-18446744073709551615"));
        let start = filter
            .since_ms
            .map_or_else(|| "-".to_owned(), |t| format!("{t}-0"));
        let mut out = Vec::new();
        let mut scanned = 0usize;
        while out.len() < filter.limit && scanned <= self.max_entries as usize * 2 {
            let page: Vec<(String, Vec<String>)> = redis::cmd("XREVRANGE")
                .arg(&self.key)
                .arg(&end)
                .arg(&start)
                .arg("COUNT")
                .arg(PAGE)
                .query_async(&mut self.conn.clone())
                .await
                .map_err(redis_error)?;
            let n = page.len();
            for (id, fields) in page {
                scanned += 1;
                end = format!("({id}");
                let Some(json) = fields
                    .chunks(2)
                    .find(|kv| kv.first().map(String::as_str) == Some("record"))
                    .and_then(|kv| kv.get(1))
                else {
                    continue;
                };
                let Ok(mut r) = serde_json::from_str::<AuditRecord>(json) else {
                    continue;
                };
                r.id = Some(id);
                if filter.matches(&r) && visible(&r) {
                    out.push(r);
                    if out.len() == filter.limit {
                        break;
                    }
                }
            }
            if n < PAGE {
                break;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_meta_takes_the_fields_and_never_the_body() {
        let m = BodyMeta::parse(
            br#"{"requestedBy":"ci","reason":"scale","targetShardCount":8,"force":true,"secret":"x"}"#,
        );
        assert_eq!(m.requested_by.as_deref(), Some("ci"));
        assert_eq!(m.reason.as_deref(), Some("scale"));
        assert_eq!(m.summary.len(), 2);
        assert_eq!(BodyMeta::parse(b"not json"), BodyMeta::default());
        assert_eq!(outcome(201), "SUCCESS");
        assert_eq!(outcome(401), "UNAUTHORIZED");
        assert_eq!(outcome(403), "FORBIDDEN");
        assert_eq!(outcome(429), "FAILED");
    }
}
