//! The message browser: one page of a shard stream's records, newest first by default, walked with an
//! exclusive cursor (`GET …/shards/{i}/messages?direction=&cursor=&limit=`). Query values are checked here
//! (bad direction, cursor or limit → `CoordError::Invalid`); records are read through `rsc_store`
//! (`XRANGE` / `XREVRANGE`). A page holds at most `limit` records and, past its first record, at most
//! `coordinator.http.message-page-max-bytes` of ids, field names and values ([`read_page`]): records are read
//! in chunks sized from what was seen so far, so a page of huge records is not read whole before it is cut.
//! Each record's `payload` field is sent once, as `payload` (not again among `fields`). Jumps (`fromId`,
//! `fromTime`) and the bounded search (`field`, `search`) are in [`find`]; the merged view of every shard,
//! and its search, in [`merged`].

pub mod find;
pub mod merged;
pub mod pending;

use crate::domain_error::{BadQuery, CoordError};
use crate::runtime::cache::GroupName;
use crate::runtime::clock::iso_ms;
use crate::runtime::coordinator::Monitoring;
use crate::runtime::shown_keys;
use find::{Filter, FindQuery, scan};
use rsc_protocol::wire::ShardId;
use rsc_protocol::wire::browse::{
    MergedMessagesPageResponse, MessageSearchSummary, StreamMessageRecord,
    StreamMessagesPageResponse,
};
use rsc_store::{PageDirection, Shard, Store, StoreError, StreamRecord, parse_stream_id};
use std::collections::BTreeMap;

/// Records per page when `limit` is not given, and the largest `limit` (shared with the OpenAPI document).
pub use rsc_protocol::bounds::{DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT};

/// A checked page request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageQuery {
    pub direction: PageDirection,
    pub cursor: Option<(u64, u64)>,
    pub limit: u32,
    /// The jump and search parameters.
    pub find: FindQuery,
}

impl PageQuery {
    /// Reads `direction`, `cursor` and `limit` from a query string's parameters (other keys are ignored).
    pub fn parse(params: &BTreeMap<String, String>) -> Result<PageQuery, CoordError> {
        let direction = match params.get("direction").map(|d| d.trim()) {
            None | Some("") => PageDirection::Backward,
            Some(d) if d.eq_ignore_ascii_case("BACKWARD") => PageDirection::Backward,
            Some(d) if d.eq_ignore_ascii_case("FORWARD") => PageDirection::Forward,
            Some(d) => {
                return Err(BadQuery::Direction {
                    given: d.to_owned(),
                }
                .into());
            }
        };
        let cursor = match params.get("cursor").map(|c| c.trim()) {
            None | Some("") => None,
            Some(c) => Some(parse_cursor(c)?),
        };
        let limit = match params.get("limit").map(|l| l.trim()) {
            None | Some("") => DEFAULT_PAGE_LIMIT,
            Some(l) => match l.parse::<u32>() {
                Ok(n) if (1..=MAX_PAGE_LIMIT).contains(&n) => n,
                _ => {
                    return Err(BadQuery::Limit {
                        given: l.to_owned(),
                        max: MAX_PAGE_LIMIT,
                        default: DEFAULT_PAGE_LIMIT,
                    }
                    .into());
                }
            },
        };
        let find = FindQuery::parse(params)?;
        let cursor = match find.from {
            Some(_) => find.start_cursor(direction),
            None => cursor,
        };
        Ok(PageQuery {
            direction,
            cursor,
            limit,
            find,
        })
    }
}

/// A cursor is a stream record id `<ms>-<seq>` (the `nextCursor` of the previous page).
pub fn parse_cursor(raw: &str) -> Result<(u64, u64), CoordError> {
    parse_stream_id(raw).ok_or_else(|| {
        BadQuery::Cursor {
            given: raw.to_owned(),
        }
        .into()
    })
}

/// The wire name of a direction.
pub fn direction_name(d: PageDirection) -> &'static str {
    match d {
        PageDirection::Forward => "FORWARD",
        PageDirection::Backward => "BACKWARD",
    }
}

/// One page as [`read_page`] read it.
#[derive(Debug, Default)]
pub struct Page {
    pub records: Vec<StreamRecord>,
    /// Whether records follow the last one (another page).
    pub more: bool,
}

/// The size a record counts for against a page's byte budget: its id, field names and values.
pub fn record_bytes(r: &StreamRecord) -> usize {
    r.id.len()
        + r.fields
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>()
}

/// The first records of at most this many are read in one chunk, before their sizes are known.
const FIRST_CHUNK: usize = 10;

/// Up to `limit` records of the shard's stream from `cursor` on, of at most `max_bytes` together (the first
/// record whatever its size, so a walk always moves on), and whether more follow. Read in chunks: after the
/// first, each chunk asks for as many records as the budget left holds at the largest size seen so far, so
/// at most one chunk beyond the budget is read.
pub async fn read_page(
    store: &Store,
    shard: &Shard,
    direction: PageDirection,
    cursor: Option<(u64, u64)>,
    limit: usize,
    max_bytes: usize,
) -> Result<Page, StoreError> {
    let mut page = Page::default();
    let (mut bytes, mut largest, mut from) = (0usize, 1usize, cursor);
    loop {
        let wanted = limit - page.records.len() + 1;
        let chunk = if page.records.is_empty() {
            wanted.min(FIRST_CHUNK)
        } else {
            wanted.min((max_bytes.saturating_sub(bytes) / largest).max(1))
        };
        let records = store.shard_records(shard, direction, from, chunk).await?;
        let got = records.len();
        for r in records {
            let size = record_bytes(&r);
            if page.records.len() == limit || (!page.records.is_empty() && bytes + size > max_bytes)
            {
                page.more = true;
                return Ok(page);
            }
            bytes += size;
            largest = largest.max(size);
            from = parse_stream_id(&r.id);
            page.records.push(r);
        }
        if got < chunk {
            return Ok(page);
        }
    }
}

/// One record as the contract shows it.
pub fn record_view(
    stream_prefix: &str,
    consumer_group: &str,
    shard: u32,
    stream_key: &str,
    r: StreamRecord,
) -> StreamMessageRecord {
    let ms = parse_stream_id(&r.id).map_or(0, |(ms, _)| i64::try_from(ms).unwrap_or(i64::MAX));
    let mut fields: BTreeMap<String, String> = r.fields.into_iter().collect();
    // The payload is sent once (issue #32, finding 13): as `payload`, not again among the fields.
    let payload = fields.remove("payload");
    StreamMessageRecord {
        stream_prefix: stream_prefix.to_owned(),
        consumer_group: consumer_group.to_owned(),
        shard: ShardId::new(shard),
        stream_key: stream_key.to_owned(),
        payload,
        fields,
        record_timestamp_ms: ms,
        record_time: iso_ms(ms),
        record_id: r.id,
    }
}

/// What a search scanned, as the answer says it.
fn search_summary(
    query: &PageQuery,
    filter: &Filter,
    scanned: u64,
    scanned_bytes: u64,
    stopped_at_bound: bool,
) -> MessageSearchSummary {
    MessageSearchSummary {
        scanned,
        scanned_bytes,
        stopped_at_bound,
        scan_limit: query.find.scan_limit,
        scan_max_bytes: query.find.scan_max_bytes,
        field: filter.field.as_ref().map(|(n, v)| format!("{n}={v}")),
        payload_contains: filter.payload_contains.clone(),
    }
}

impl Monitoring<'_> {
    /// `GET …/shards/{i}/messages`: one page of the shard stream's records. The shard must be one of the
    /// group's (`0..shardCount`, or a shard a scale-in still drains), else `Invalid`.
    pub async fn shard_messages(
        &self,
        name: &GroupName,
        shard: u32,
        query: &PageQuery,
    ) -> Result<StreamMessagesPageResponse, CoordError> {
        let c = self.require_group(name).await?;
        let g = &c.group;
        if !g.assignable_shards().contains(&shard) {
            return Err(BadQuery::ShardOutOfRange {
                shard,
                shard_count: g.shard_count,
            }
            .into());
        }
        let id = Shard::new(g.stream_prefix.as_str(), shard);
        let key = shown_keys::shard_stream(&id);
        let max_bytes = self.config().http.message_page_max_bytes;
        let (records, next_cursor, search) = match &query.find.filter {
            Some(filter) => {
                let found = self
                    .metrics()
                    .time_store("xrange", scan(self.store(), &id, query, max_bytes, filter))
                    .await
                    .map_err(CoordError::from)?;
                let summary = search_summary(
                    query,
                    filter,
                    found.scanned,
                    found.scanned_bytes,
                    found.stopped_at_bound,
                );
                (found.records, found.next_cursor, Some(summary))
            }
            None => {
                let page = self
                    .metrics()
                    .time_store(
                        "xrange",
                        read_page(
                            self.store(),
                            &id,
                            query.direction,
                            query.cursor,
                            query.limit as usize,
                            max_bytes,
                        ),
                    )
                    .await
                    .map_err(CoordError::from)?;
                let next = if page.more {
                    page.records.last().map(|r| r.id.clone())
                } else {
                    None
                };
                (page.records, next, None)
            }
        };
        Ok(StreamMessagesPageResponse {
            stream_prefix: g.stream_prefix.clone(),
            consumer_group: g.consumer_group.clone(),
            shard: ShardId::new(shard),
            stream_key: key.clone(),
            direction: direction_name(query.direction).to_owned(),
            limit: query.limit,
            records: records
                .into_iter()
                .map(|r| record_view(&g.stream_prefix, &g.consumer_group, shard, &key, r))
                .collect(),
            next_cursor,
            from_id: query.find.from.map(|(ms, seq)| format!("{ms}-{seq}")),
            search,
        })
    }
}

impl Monitoring<'_> {
    /// `GET …/groups/{g}/messages`: one page of every shard's records merged by time. `cursor` is the
    /// merged form (`<shard>=<id>,…`); with `field`/`search`, a bounded search over every shard
    /// ([`merged::search`]: one budget shared in time order).
    pub async fn merged_messages(
        &self,
        name: &GroupName,
        params: &BTreeMap<String, String>,
    ) -> Result<MergedMessagesPageResponse, CoordError> {
        let mut page_params = params.clone();
        let raw_cursor = page_params
            .remove("cursor")
            .filter(|c| !c.trim().is_empty());
        let query = PageQuery::parse(&page_params)?;
        if query.find.from.is_some() && raw_cursor.is_some() {
            return Err(BadQuery::CursorWithStart.into());
        }
        let c = self.require_group(name).await?;
        let g = &c.group;
        let shards: Vec<u32> = g.assignable_shards().into_iter().collect();
        let start = match &raw_cursor {
            Some(raw) => merged::parse_positions(raw, &shards)?,
            None => shards.iter().map(|s| (*s, query.cursor)).collect(),
        };
        let keys: BTreeMap<u32, Shard> = shards
            .iter()
            .map(|s| (*s, Shard::new(g.stream_prefix.as_str(), *s)))
            .collect();
        let max_bytes = self.config().http.message_page_max_bytes;
        let (records, next_cursor, search) = match &query.find.filter {
            Some(filter) => {
                let found = self
                    .metrics()
                    .time_store(
                        "xrange",
                        merged::search::scan_merged(
                            self.store(),
                            &keys,
                            &start,
                            &query,
                            max_bytes,
                            filter,
                        ),
                    )
                    .await
                    .map_err(CoordError::from)?;
                let summary = search_summary(
                    &query,
                    filter,
                    found.scanned,
                    found.scanned_bytes,
                    found.stopped_at_bound,
                );
                (found.records, found.next_cursor, Some(summary))
            }
            None => {
                let page = self
                    .metrics()
                    .time_store(
                        "xrange",
                        merged::read_merged(self.store(), &keys, &start, &query, max_bytes),
                    )
                    .await
                    .map_err(CoordError::from)?;
                (page.records, page.next_cursor, None)
            }
        };
        Ok(MergedMessagesPageResponse {
            stream_prefix: g.stream_prefix.clone(),
            consumer_group: g.consumer_group.clone(),
            shards: shards.iter().map(|s| ShardId::new(*s)).collect(),
            direction: direction_name(query.direction).to_owned(),
            limit: query.limit,
            records: records
                .into_iter()
                .map(|(s, r)| {
                    let key = keys
                        .get(&s)
                        .map(shown_keys::shard_stream)
                        .unwrap_or_default();
                    record_view(&g.stream_prefix, &g.consumer_group, s, &key, r)
                })
                .collect(),
            next_cursor,
            from_id: query.find.from.map(|(ms, seq)| format!("{ms}-{seq}")),
            search,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Result<PageQuery, CoordError> {
        PageQuery::parse(
            &pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn defaults_are_backward_and_25() {
        let p = q(&[]).unwrap();
        assert_eq!(p.direction, PageDirection::Backward);
        assert_eq!(p.limit, 25);
        assert_eq!(p.cursor, None);
    }

    #[test]
    fn bad_values_are_refused() {
        for bad in [
            ("direction", "SIDEWAYS"),
            ("cursor", "abc"),
            ("cursor", "1-"),
            ("limit", "0"),
            ("limit", "1001"),
            ("limit", "ten"),
        ] {
            assert!(matches!(q(&[bad]), Err(CoordError::Invalid(_))), "{bad:?}");
        }
        let p = q(&[
            ("direction", "forward"),
            ("cursor", "5-1"),
            ("limit", "1000"),
        ])
        .unwrap();
        assert_eq!(
            (p.direction, p.cursor, p.limit),
            (PageDirection::Forward, Some((5, 1)), 1000)
        );
    }
}
