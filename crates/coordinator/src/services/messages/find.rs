//! Finding a record in a shard (issue #37, point 2): jump to a record id or a time (`fromId`, `fromTime`,
//! inclusive starts), and a bounded search (`field=name=value`, `search=<payload substring>`) that scans at
//! most `scanLimit` records and about `scanMaxBytes` bytes from the start, keeps the matching ones (up to the
//! page's `limit` and byte budget), and says how many it scanned, whether it stopped at a bound, and the
//! cursor to continue from (the last record scanned), given only when a record follows it: a scan that stops
//! at a bound on the last record of a full chunk reads one record more (`COUNT 1`) to know.

use crate::domain_error::{BadQuery, CoordError};
use crate::services::messages::{PageQuery, record_bytes};
use rsc_store::{PageDirection, Shard, Store, StoreError, StreamRecord, parse_stream_id};
use std::collections::BTreeMap;

/// Records a search scans when `scanLimit` is not given.
pub const DEFAULT_SCAN_LIMIT: u32 = 1000;
/// The largest `scanLimit`, and the smallest and largest `scanMaxBytes` (shared with the OpenAPI document).
pub use rsc_protocol::bounds::{MAX_SCAN_LIMIT, SCAN_MAX_BYTES_RANGE};
/// Bytes a search scans when `scanMaxBytes` is not given.
pub const DEFAULT_SCAN_MAX_BYTES: u64 = 4 * 1024 * 1024;

/// What a search keeps: every condition given must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filter {
    /// `field=<name>=<value>`: the record has the field `name` with exactly `value`.
    pub field: Option<(String, String)>,
    /// `search=<text>`: the record's `payload` field contains `text`.
    pub payload_contains: Option<String>,
}

impl Filter {
    /// Whether `r` matches.
    pub fn matches(&self, r: &StreamRecord) -> bool {
        let field_ok = self.field.as_ref().is_none_or(|(name, value)| {
            r.fields
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .is_some_and(|(_, v)| v == value)
        });
        let payload_ok = self.payload_contains.as_ref().is_none_or(|text| {
            r.fields
                .iter()
                .rev()
                .find(|(k, _)| k == "payload")
                .is_some_and(|(_, v)| v.contains(text.as_str()))
        });
        field_ok && payload_ok
    }
}

/// The jump and search parameters of a page request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FindQuery {
    /// Where the page starts, inclusive (`fromId`, or `fromTime` as `<ms>-0`).
    pub from: Option<(u64, u64)>,
    /// The search, if `field` or `search` was given.
    pub filter: Option<Filter>,
    /// At most this many records scanned.
    pub scan_limit: u32,
    /// About at most this many bytes scanned (ids, field names and values).
    pub scan_max_bytes: u64,
}

fn text<'a>(params: &'a BTreeMap<String, String>, key: &str) -> Option<&'a str> {
    params.get(key).map(|v| v.trim()).filter(|v| !v.is_empty())
}

/// `fromId`: a record id `<ms>-<seq>`, or `<ms>` (read as `<ms>-0`).
pub fn parse_from_id(raw: &str) -> Result<(u64, u64), CoordError> {
    let id = if raw.contains('-') {
        parse_stream_id(raw)
    } else {
        raw.parse::<u64>().ok().map(|ms| (ms, 0))
    };
    id.ok_or_else(|| {
        BadQuery::FromId {
            given: raw.to_owned(),
        }
        .into()
    })
}

/// `fromTime`: an RFC 3339 time, read as the id `<ms>-0`.
pub fn parse_from_time(raw: &str) -> Result<(u64, u64), CoordError> {
    let ms = time::OffsetDateTime::parse(raw, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp_nanos() / 1_000_000)
        .ok_or_else(|| BadQuery::FromTime {
            given: raw.to_owned(),
        })?;
    let ms = u64::try_from(ms).map_err(|_| BadQuery::FromTimeBefore1970 {
        given: raw.to_owned(),
    })?;
    Ok((ms, 0))
}

fn bounded(
    params: &BTreeMap<String, String>,
    key: &str,
    default: u64,
    (lo, hi): (u64, u64),
) -> Result<u64, CoordError> {
    match text(params, key) {
        None => Ok(default),
        Some(raw) => match raw.parse::<u64>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(n),
            _ => Err(BadQuery::Number {
                key: key.to_owned(),
                given: raw.to_owned(),
                lo,
                hi,
                default,
            }
            .into()),
        },
    }
}

impl FindQuery {
    /// Reads `fromId`, `fromTime`, `field`, `search`, `scanLimit` and `scanMaxBytes` (other keys are ignored).
    /// `fromId` and `fromTime` exclude each other and `cursor`.
    pub fn parse(params: &BTreeMap<String, String>) -> Result<FindQuery, CoordError> {
        let from_id = text(params, "fromId").map(parse_from_id).transpose()?;
        let from_time = text(params, "fromTime").map(parse_from_time).transpose()?;
        if from_id.is_some() && from_time.is_some() {
            return Err(BadQuery::TwoStarts.into());
        }
        let from = from_id.or(from_time);
        if from.is_some() && text(params, "cursor").is_some() {
            return Err(BadQuery::CursorWithStart.into());
        }
        let field = match params.get("field") {
            None => None,
            Some(raw) => match raw.split_once('=') {
                Some((name, value)) if !name.trim().is_empty() => {
                    Some((name.trim().to_owned(), value.to_owned()))
                }
                _ => {
                    return Err(BadQuery::Field { given: raw.clone() }.into());
                }
            },
        };
        let payload_contains = match params.get("search") {
            None => None,
            Some(s) if s.is_empty() => {
                return Err(BadQuery::EmptySearch.into());
            }
            Some(s) => Some(s.clone()),
        };
        let filter = (field.is_some() || payload_contains.is_some()).then_some(Filter {
            field,
            payload_contains,
        });
        let scan_limit = bounded(
            params,
            "scanLimit",
            u64::from(DEFAULT_SCAN_LIMIT),
            (1, u64::from(MAX_SCAN_LIMIT)),
        )?;
        let scan_max_bytes = bounded(
            params,
            "scanMaxBytes",
            DEFAULT_SCAN_MAX_BYTES,
            SCAN_MAX_BYTES_RANGE,
        )?;
        Ok(FindQuery {
            from,
            filter,
            scan_limit: u32::try_from(scan_limit).unwrap_or(MAX_SCAN_LIMIT),
            scan_max_bytes,
        })
    }

    /// The exclusive cursor that reads `from` first in `direction`.
    pub fn start_cursor(&self, direction: PageDirection) -> Option<(u64, u64)> {
        let (ms, seq) = self.from?;
        match direction {
            PageDirection::Forward => match (ms, seq) {
                (0, 0) => None,
                (ms, 0) => Some((ms - 1, u64::MAX)),
                (ms, seq) => Some((ms, seq - 1)),
            },
            PageDirection::Backward => Some(match (ms, seq) {
                (ms, u64::MAX) => (ms.saturating_add(1), 0),
                (ms, seq) => (ms, seq + 1),
            }),
        }
    }
}

/// What a search found.
#[derive(Debug, Default)]
pub struct Found {
    /// The matching records, in walk order.
    pub records: Vec<StreamRecord>,
    /// Records scanned.
    pub scanned: u64,
    /// Bytes scanned.
    pub scanned_bytes: u64,
    /// Whether the scan stopped at `scanLimit` or `scanMaxBytes` (not at the page's `limit`, its byte budget
    /// or the end of the stream).
    pub stopped_at_bound: bool,
    /// The last record scanned, when at least one record follows it: where to continue.
    pub next_cursor: Option<String>,
}

/// Whether the shard's stream holds a record after `after` (exclusive) in `direction`: one read of one record.
pub async fn record_follows(
    store: &Store,
    shard: &Shard,
    direction: PageDirection,
    after: Option<(u64, u64)>,
) -> Result<bool, StoreError> {
    Ok(!store
        .shard_records(shard, direction, after, 1)
        .await?
        .is_empty())
}

/// The first records of at most this many are scanned in one chunk, before their sizes are known.
const FIRST_CHUNK: usize = 10;
/// No chunk is larger than this.
const MAX_CHUNK: usize = 500;

/// Scans the shard's stream from the page's cursor (exclusive) in its direction, keeping the records `filter` matches: at
/// most the page's `limit` of them and `page_max_bytes` together (the first whatever its size), scanning at
/// most `scanLimit` records and, after the first, `scanMaxBytes` bytes. Chunks after the first are sized
/// by the largest record seen, so at most one chunk beyond the byte bound is read. The cursor is given only
/// when a record follows the last one scanned: known from the chunk, or from one probe of one record when the
/// bound falls on the last record of a full chunk.
pub async fn scan(
    store: &Store,
    shard: &Shard,
    page: &PageQuery,
    page_max_bytes: usize,
    filter: &Filter,
) -> Result<Found, StoreError> {
    let (q, direction, limit) = (&page.find, page.direction, page.limit as usize);
    let cursor = page.cursor;
    let mut found = Found::default();
    let (mut from, mut largest, mut kept_bytes) = (cursor, 1u64, 0usize);
    let scan_limit = u64::from(q.scan_limit);
    loop {
        let records_left = scan_limit - found.scanned;
        let bytes_left = q.scan_max_bytes.saturating_sub(found.scanned_bytes);
        let chunk = if found.scanned == 0 {
            records_left.min(FIRST_CHUNK as u64)
        } else {
            records_left.min((bytes_left / largest).max(1))
        };
        let chunk = usize::try_from(chunk).unwrap_or(MAX_CHUNK).min(MAX_CHUNK);
        let records = store.shard_records(shard, direction, from, chunk).await?;
        let got = records.len();
        for (i, r) in records.into_iter().enumerate() {
            let size = record_bytes(&r);
            if filter.matches(&r) {
                if found.records.len() == limit
                    || (!found.records.is_empty() && kept_bytes + size > page_max_bytes)
                {
                    // The page is full: continue from the last record scanned, before this one.
                    found.next_cursor = last_id(from);
                    return Ok(found);
                }
                kept_bytes += size;
                found.records.push(r.clone());
            }
            found.scanned += 1;
            found.scanned_bytes += size as u64;
            largest = largest.max(size as u64);
            from = parse_stream_id(&r.id);
            if found.scanned >= scan_limit || found.scanned_bytes >= q.scan_max_bytes {
                found.stopped_at_bound = true;
                let follows = if i + 1 < got {
                    true
                } else if got < chunk {
                    // A short chunk: the stream ended with this record.
                    false
                } else {
                    record_follows(store, shard, direction, from).await?
                };
                found.next_cursor = follows.then_some(r.id);
                return Ok(found);
            }
        }
        if got < chunk {
            return Ok(found);
        }
    }
}

fn last_id(id: Option<(u64, u64)>) -> Option<String> {
    id.map(|(ms, seq)| format!("{ms}-{seq}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Result<FindQuery, CoordError> {
        FindQuery::parse(
            &pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn starts_and_bounds_are_read() {
        let f = q(&[("fromTime", "1970-01-01T00:00:01.5Z")]).unwrap();
        assert_eq!(f.from, Some((1500, 0)));
        assert_eq!(
            f.start_cursor(PageDirection::Forward),
            Some((1499, u64::MAX))
        );
        assert_eq!(f.start_cursor(PageDirection::Backward), Some((1500, 1)));
        let f = q(&[("fromId", "7-3"), ("field", "k=a=b"), ("scanLimit", "5")]).unwrap();
        assert_eq!(f.from, Some((7, 3)));
        assert_eq!(f.start_cursor(PageDirection::Forward), Some((7, 2)));
        assert_eq!(
            f.filter.unwrap().field,
            Some(("k".to_owned(), "a=b".to_owned()))
        );
        assert_eq!(
            (f.scan_limit, f.scan_max_bytes),
            (5, DEFAULT_SCAN_MAX_BYTES)
        );
        let f = q(&[("fromId", "0")]).unwrap();
        assert_eq!(f.start_cursor(PageDirection::Forward), None);
        assert_eq!(q(&[]).unwrap().filter, None);
    }

    #[test]
    fn bad_values_are_refused() {
        for bad in [
            &[("fromId", "x-1")][..],
            &[("fromId", "-1")],
            &[("fromTime", "yesterday")],
            &[("fromTime", "1969-12-31T23:59:59Z")],
            &[("fromId", "1-0"), ("fromTime", "2026-12-03T10:00:00Z")],
            &[("fromId", "1-0"), ("cursor", "1-0")],
            &[("field", "novalue")],
            &[("field", "=v")],
            &[("search", "")],
            &[("scanLimit", "0")],
            &[("scanLimit", "100001")],
            &[("scanMaxBytes", "10")],
            &[("scanMaxBytes", "lots")],
        ] {
            assert!(matches!(q(bad), Err(CoordError::Invalid(_))), "{bad:?}");
        }
    }
}
