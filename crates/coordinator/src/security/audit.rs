//! Audit records: one per admin mutation that passed authentication and authorisation (whatever its
//! outcome: 2xx, 400, 404, 409, 413, 422, 503 …) and one per successful sign-in, each in the structured log
//! (target `rsc::audit`) and in a capped Redis stream.
//!
//! Three streams keep apart what could otherwise push each other out (issue #32, finding 4):
//! - `<key-prefix>:audit`: admin mutations only, so no amount of sign-ins or refusals erases one;
//! - `<key-prefix>:audit:signins`: successful sign-ins, *folded* per (client address, principal) and window
//!   like refusals (the first one of a window at once, the rest counted into one summary when it ends); a
//!   sign-in that revoked older tokens is always written on its own;
//! - `<key-prefix>:audit:rejected`: requests refused before a handler ran (no or bad credentials, a missing
//!   role or scope, a rate limit, a bad request id) and failed sign-ins, folded per client address,
//!   principal, action and status ([`RejectionFolder`]); at most
//!   `coordinator.audit.max-rejection-records-per-window` distinct ones are kept per window, the others
//!   share one overflow summary.
//!
//! The window is `coordinator.audit.rejection-window` (1 minute). `GET /coord/v1/monitoring/audit` reads
//! all three, newest first. The guard writes a request's record before it sends the response, so a
//! successful mutation's record is in Redis when the caller sees success.

use super::tokens::store_error;
use crate::domain_error::CoordError;
use rsc_store::{AuditStream, Store};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
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
    /// `initialShardCount`, `targetShardCount`, `force` and `existingRecords` when present in the body.
    #[schema(value_type = Object)]
    pub request_summary: Map<String, Value>,
    /// What the operation did that its status does not say, when its handler reports it ([`AuditResult`]):
    /// an applied offset reset's `shardsMoved` (each `{shard, from, to}`), and for one that stopped partway
    /// also `shardInDoubt` and `shardsNotMoved`. Empty for everything else.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[schema(value_type = Object)]
    pub result: Map<String, Value>,
    /// The username a failed sign-in named (never its password); None for everything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempted_username: Option<String>,
    /// On a summary of folded rejections: how many requests like this one (the first of which has its own
    /// record) arrived in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Repeats>,
}

/// How many refused requests one summary record stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Repeats {
    /// Requests in the window, the first included.
    pub count: u64,
    pub first_at: String,
    pub last_at: String,
    /// True on the overflow summary, which stands for requests of many addresses or principals.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub overflow: bool,
}

/// Query parameters some route of the API reads. An audit record keeps only these (anything else in a
/// query string, such as a `?password=` added by mistake, is dropped).
pub const KNOWN_QUERY_PARAMS: &[&str] = &[
    "observedMetadataVersion",
    "producerId",
    "streamPrefix",
    "consumerGroup",
    "principal",
    "action",
    "outcome",
    "since",
    "until",
    "limit",
    "force",
    "requestId",
];

/// The query string reduced to the parameters the API knows, in their order; None when nothing is left.
pub fn known_query(query: Option<&str>) -> Option<String> {
    let kept: Vec<&str> = query?
        .split('&')
        .filter(|pair| {
            let name = pair.split('=').next().unwrap_or("");
            KNOWN_QUERY_PARAMS.contains(&name)
        })
        .collect();
    (!kept.is_empty()).then(|| kept.join("&"))
}

/// A response extension a handler sets when its request is better audited under another action than its
/// route's (a group create that created its stream is `CREATE_STREAM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditAction(pub &'static str);

/// A response extension a handler sets to record what its operation did beyond its status (an offset
/// reset's shards moved, also when it stopped partway): the audit record's `result`.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditResult(pub Map<String, Value>);

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
        let mut summary: Map<String, Value> = ["initialShardCount", "targetShardCount", "force"]
            .iter()
            .filter_map(|k| {
                map.get(*k)
                    .filter(|v| v.is_number() || v.is_boolean())
                    .map(|v| ((*k).to_owned(), v.clone()))
            })
            .collect();
        // A stream create's choice for an earlier stream's records (only a known choice: never free text).
        if let Some(choice) = map.get("existingRecords").and_then(|v| {
            serde_json::from_value::<rsc_protocol::existing_records::ExistingRecords>(v.clone())
                .ok()
        }) {
            summary.insert("existingRecords".to_owned(), choice.as_str().into());
        }
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
    pub request_id: Option<String>,
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
            && self
                .request_id
                .as_ref()
                .is_none_or(|id| *id == r.request_id)
    }
}

pub struct AuditLog {
    store: Store,
    max_entries: u32,
    folder: RejectionFolder,
    signin_folder: RejectionFolder,
}

impl AuditLog {
    pub fn new(store: Store, config: &super::config::AuditConfig) -> Self {
        let window_ms = i64::try_from(config.rejection_window.0.as_millis()).unwrap_or(60_000);
        AuditLog {
            store,
            max_entries: config.redis_max_entries,
            folder: RejectionFolder::new(window_ms, config.max_rejection_records_per_window),
            signin_folder: RejectionFolder::new(window_ms, config.max_rejection_records_per_window),
        }
    }

    /// Records a request that was refused before its handler ran, or a failed sign-in: written at once when
    /// it is the first of its kind in this window, otherwise only counted (see [`RejectionFolder`]).
    pub async fn rejected(&self, record: AuditRecord) {
        let now = record.timestamp_ms;
        let (write_now, summaries) = self.folder.fold(record, now);
        for r in summaries.iter().chain(write_now.iter()) {
            self.append(AuditStream::Rejected, r).await;
        }
    }

    /// Records a successful sign-in: written at once when it is the first of its (client address,
    /// principal) in this window, otherwise only counted into the window's summary; `always` (a sign-in
    /// that revoked older tokens) writes it on its own whatever the window holds.
    pub async fn signed_in(&self, record: AuditRecord, always: bool) {
        if always {
            self.append(AuditStream::Signins, &record).await;
            return;
        }
        let now = record.timestamp_ms;
        let (write_now, summaries) = self.signin_folder.fold(record, now);
        for r in summaries.iter().chain(write_now.iter()) {
            self.append(AuditStream::Signins, r).await;
        }
    }

    /// Writes the summaries of windows that have ended (called now and then by a background task, so a
    /// burst that stopped still gets its count recorded).
    pub async fn flush_ended(&self, now_ms: i64) {
        for r in self.folder.take_ended(now_ms) {
            self.append(AuditStream::Rejected, &r).await;
        }
        for r in self.signin_folder.take_ended(now_ms) {
            self.append(AuditStream::Signins, &r).await;
        }
    }

    /// Logs the record and appends it to the audit stream (retried a few times). Returns the entry id, or
    /// None when Redis did not take it (the log line then says so at error level).
    pub async fn write(&self, record: &AuditRecord) -> Option<String> {
        self.append(AuditStream::Mutations, record).await
    }

    async fn append(&self, stream: AuditStream, record: &AuditRecord) -> Option<String> {
        let json = match rsc_store::to_json("audit record", record) {
            Ok(json) => json,
            Err(e) => {
                // Nothing is appended: an empty entry in the audit stream would be worse than none.
                tracing::error!(target: "rsc::audit", action = %record.action, error = %e, "audit record not written");
                return None;
            }
        };
        tracing::info!(
            target: "rsc::audit",
            action = %record.action,
            outcome = %record.outcome,
            status = record.status,
            principal = ?record.principal.as_deref().unwrap_or("-"),
            request_id = ?record.request_id,
            stream_prefix = ?record.stream_prefix.as_deref().unwrap_or("-"),
            consumer_group = ?record.consumer_group.as_deref().unwrap_or("-"),
            repeats = record.repeats.as_ref().map_or(1, |r| r.count),
            record = %json,
            "audit"
        );
        let mut delay = Duration::from_millis(25);
        for attempt in 1..=3 {
            let r = self
                .store
                .audit_append(stream, self.max_entries, &json)
                .await;
            match r {
                Ok(id) => return Some(id),
                Err(e) if attempt == 3 => {
                    // The Redis error itself, as logged before the store had a typed error.
                    tracing::error!(target: "rsc::audit", error = %e.cause_text(), request_id = ?record.request_id,
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

    /// Newest-first records matching `filter`, of those the caller may see (`visible`), from the three
    /// streams.
    pub async fn read(
        &self,
        filter: &AuditFilter,
        visible: impl Fn(&AuditRecord) -> bool,
    ) -> Result<Vec<AuditRecord>, CoordError> {
        // Each list holds the newest `limit` matches of its stream, so the newest `limit` of their union
        // are among them.
        let mut out = self
            .read_stream(AuditStream::Mutations, filter, &visible)
            .await?;
        for stream in [AuditStream::Signins, AuditStream::Rejected] {
            out.extend(self.read_stream(stream, filter, &visible).await?);
        }
        out.sort_by(|a, b| stream_id_order(b.id.as_deref(), a.id.as_deref()));
        out.truncate(filter.limit);
        Ok(out)
    }

    async fn read_stream(
        &self,
        stream: AuditStream,
        filter: &AuditFilter,
        visible: &impl Fn(&AuditRecord) -> bool,
    ) -> Result<Vec<AuditRecord>, CoordError> {
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
            let page = self
                .store
                .audit_page(stream, &end, &start, PAGE)
                .await
                .map_err(store_error)?;
            let n = page.len();
            for entry in page {
                let id = entry.id;
                scanned += 1;
                end = format!("({id}");
                let Some(json) = entry.record else {
                    continue;
                };
                let Ok(mut r) = serde_json::from_str::<AuditRecord>(&json) else {
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

/// Orders Redis stream ids (`<ms>-<seq>`) by time, then sequence.
fn stream_id_order(a: Option<&str>, b: Option<&str>) -> std::cmp::Ordering {
    let parse = |id: Option<&str>| {
        let (ms, seq) = id.unwrap_or("0-0").split_once('-').unwrap_or(("0", "0"));
        (
            ms.parse::<u64>().unwrap_or(0),
            seq.parse::<u64>().unwrap_or(0),
        )
    };
    parse(a).cmp(&parse(b))
}

/// What makes two refused requests "the same" for folding.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FoldKey {
    client: String,
    principal: Option<String>,
    action: String,
    status: u16,
}

#[derive(Debug)]
struct Folded {
    /// The first record of the window (already written); the summary is built from it.
    first: AuditRecord,
    count: u64,
    last_ms: i64,
}

#[derive(Debug, Default)]
struct FoldWindow {
    start_ms: i64,
    entries: HashMap<FoldKey, Folded>,
    /// Requests past the per-window budget of distinct keys.
    overflow: Option<Folded>,
}

/// Folds refused requests (and, in a folder of its own, successful sign-ins) per (client address, principal,
/// action, status) and window, so that a flood of them costs the audit stream a bounded number of records: per window at most `max_keys` first records,
/// as many summaries, and one overflow summary. Pure bookkeeping (no I/O); the caller writes what it returns.
#[derive(Debug)]
pub struct RejectionFolder {
    window_ms: i64,
    max_keys: usize,
    window: Mutex<FoldWindow>,
}

impl RejectionFolder {
    pub fn new(window_ms: i64, max_keys: u32) -> Self {
        RejectionFolder {
            window_ms: window_ms.max(1),
            max_keys: max_keys as usize,
            window: Mutex::new(FoldWindow::default()),
        }
    }

    /// Counts `record` (a refused request at `now_ms`). Returns the record to write now (when it is the first
    /// of its kind in the window) and the summaries of a window that has just ended.
    pub fn fold(
        &self,
        record: AuditRecord,
        now_ms: i64,
    ) -> (Option<AuditRecord>, Vec<AuditRecord>) {
        let mut w = self
            .window
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let ended = self.roll(&mut w, now_ms);
        let key = FoldKey {
            client: record.client_address.clone(),
            principal: record.principal.clone(),
            action: record.action.clone(),
            status: record.status,
        };
        if let Some(f) = w.entries.get_mut(&key) {
            f.count += 1;
            f.last_ms = now_ms;
            return (None, ended);
        }
        if w.entries.len() >= self.max_keys {
            match &mut w.overflow {
                Some(f) => {
                    f.count += 1;
                    f.last_ms = now_ms;
                }
                None => {
                    w.overflow = Some(Folded {
                        first: record,
                        count: 1,
                        last_ms: now_ms,
                    });
                }
            }
            return (None, ended);
        }
        w.entries.insert(
            key,
            Folded {
                first: record.clone(),
                count: 1,
                last_ms: now_ms,
            },
        );
        (Some(record), ended)
    }

    /// The summaries of the window if it has ended by `now_ms`.
    pub fn take_ended(&self, now_ms: i64) -> Vec<AuditRecord> {
        let mut w = self
            .window
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.roll(&mut w, now_ms)
    }

    /// Starts a new window when the current one has ended, returning its summaries.
    fn roll(&self, w: &mut FoldWindow, now_ms: i64) -> Vec<AuditRecord> {
        if now_ms < w.start_ms.saturating_add(self.window_ms) {
            return Vec::new();
        }
        let old = std::mem::take(w);
        w.start_ms = now_ms;
        let mut out: Vec<AuditRecord> = old
            .entries
            .into_values()
            .filter(|f| f.count > 1)
            .map(|f| summary(f, false))
            .collect();
        out.extend(old.overflow.map(|f| summary(f, true)));
        out.sort_by_key(|r| r.timestamp_ms);
        out
    }
}

fn summary(f: Folded, overflow: bool) -> AuditRecord {
    let mut r = f.first;
    let first_at = r.timestamp.clone();
    r.timestamp = crate::runtime::clock::iso_ms(f.last_ms);
    r.timestamp_ms = f.last_ms;
    r.repeats = Some(Repeats {
        count: f.count,
        first_at,
        last_at: r.timestamp.clone(),
        overflow,
    });
    if overflow {
        // It stands for many addresses and principals: name none of them.
        r.client_address = "*".to_owned();
        r.principal = None;
        r.attempted_username = None;
    }
    r
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

    fn refused(client: &str, at_ms: i64) -> AuditRecord {
        AuditRecord {
            id: None,
            timestamp: crate::runtime::clock::iso_ms(at_ms),
            timestamp_ms: at_ms,
            coordinator_id: "c".into(),
            action: "CREATE_STREAM".into(),
            outcome: "UNAUTHORIZED".into(),
            status: 401,
            error_code: Some("UNAUTHORIZED".into()),
            principal: None,
            roles: vec![],
            auth_method: None,
            method: "POST".into(),
            route: "/coord/v1/streams/{stream_prefix}".into(),
            path: "/coord/v1/streams/x".into(),
            query_string: None,
            request_id: format!("r-{client}-{at_ms}"),
            request_body_sha256: None,
            client_address: client.into(),
            user_agent: None,
            duration_ms: 0,
            stream_prefix: Some("x".into()),
            consumer_group: None,
            resharding_id: None,
            requested_by: None,
            reason: None,
            request_summary: Map::new(),
            result: Default::default(),
            attempted_username: None,
            repeats: None,
        }
    }

    #[test]
    fn a_flood_of_refusals_costs_a_bounded_number_of_records_per_window() {
        let folder = RejectionFolder::new(60_000, 3);
        let mut written = 0;
        // 1,000 refusals from one address, then one each from five more, inside one window.
        for i in 0..1000 {
            let (now, ended) = folder.fold(refused("10.0.0.1", 1_000 + i), 1_000 + i);
            written += usize::from(now.is_some()) + ended.len();
        }
        for c in ["a", "b", "c", "d", "e"] {
            let (now, _) = folder.fold(refused(c, 5_000), 5_000);
            written += usize::from(now.is_some());
        }
        // The first of 10.0.0.1, a and b (the budget of three keys); c, d, e only counted.
        assert_eq!(written, 3);
        let summaries = folder.take_ended(61_000);
        assert!(folder.take_ended(61_001).is_empty(), "a window ends once");
        let counts: Vec<(String, u64, bool)> = summaries
            .iter()
            .map(|r| {
                let rep = r.repeats.as_ref().unwrap();
                (r.client_address.clone(), rep.count, rep.overflow)
            })
            .collect();
        assert_eq!(
            counts,
            vec![("10.0.0.1".into(), 1000, false), ("*".into(), 3, true)],
            "one summary for the repeated address, one overflow for the rest; a and b came once"
        );
        assert_eq!(
            summaries[0].repeats.as_ref().unwrap().last_at,
            crate::runtime::clock::iso_ms(1_999)
        );
    }

    #[test]
    fn only_known_query_parameters_are_recorded() {
        assert_eq!(known_query(None), None);
        assert_eq!(known_query(Some("password=hunter2")), None);
        assert_eq!(
            known_query(Some("force=true&password=hunter2&limit=5")).as_deref(),
            Some("force=true&limit=5")
        );
    }
}
