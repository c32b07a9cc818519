//! The bounded search of the merged view (`GET …/groups/{g}/messages` with `field` or `search`, issue #37
//! point 2). Every shard's records are scanned in the merged walk's order — record id, then shard index,
//! reversed when `BACKWARD` — so the budget (`scanLimit` records, `scanMaxBytes` bytes) is **shared** by the
//! shards, not split among them: the records one answer scans are always the first ones of the merged walk
//! from its start, however they fall on the shards. The matches come out in that order (time order). The
//! continue cursor holds each shard's last record scanned (a shard the scan did not reach keeps its start),
//! so the next answer scans exactly the records after those: no record is scanned twice and none is skipped.
//! The cursor is given only when a record follows: one is read ahead on some shard, or a shard whose last
//! chunk was full (the one just scanned) has one more (`COUNT 1`).
//! A full page (`limit` matches, or the page's byte budget) stops before the match that does not fit, which
//! the next answer finds first.
//!
//! Records are read per shard in chunks (`XRANGE`/`XREVRANGE`) as the walk reaches them: a shard's first
//! chunk holds at most 10 records, each later one at most twice its previous one, 500 and what the budget
//! left holds at the largest record size seen so far; so what is read ahead of the walk is at most one
//! chunk per shard.

use super::{Positions, format_positions};
use crate::services::messages::find::{Filter, record_follows};
use crate::services::messages::{PageQuery, record_bytes};
use rsc_store::{PageDirection, Shard, Store, StoreError, StreamRecord, parse_stream_id};
use std::collections::{BTreeMap, VecDeque};

/// A shard's first chunk.
const FIRST_CHUNK: usize = 10;
/// No chunk is larger than this.
const MAX_CHUNK: usize = 500;

/// What a merged search found.
#[derive(Debug, Default)]
pub struct MergedFound {
    /// The matching records with their shard, in walk order.
    pub records: Vec<(u32, StreamRecord)>,
    /// Records scanned, over every shard.
    pub scanned: u64,
    /// Bytes scanned (ids, field names and values), over every shard.
    pub scanned_bytes: u64,
    /// Whether the scan stopped at `scanLimit` or `scanMaxBytes`.
    pub stopped_at_bound: bool,
    /// Each shard's last record scanned (`<shard>=<id>,…`), when at least one record follows: where to
    /// continue.
    pub next_cursor: Option<String>,
}

/// One shard's part of the walk: the records read and not yet scanned, and where reading goes on.
struct Lane<'a> {
    shard: u32,
    id: &'a Shard,
    /// Read, not yet scanned, in walk order.
    buffered: VecDeque<((u64, u64), StreamRecord)>,
    /// The last record read (the exclusive cursor of the next read).
    read_from: Option<(u64, u64)>,
    /// The shard has no record past `read_from`.
    exhausted: bool,
    /// The size of the next chunk before the budget caps it.
    next_chunk: usize,
}

/// Scans the shard streams `keys` (shard index → shard) from `start` in merged order, keeping the records
/// `filter` matches: at most the page's `limit` of them and `page_max_bytes` together (the first whatever its
/// size), scanning at most `scanLimit` records and, after the first, `scanMaxBytes` bytes in total.
pub async fn scan_merged(
    store: &Store,
    keys: &BTreeMap<u32, Shard>,
    start: &Positions,
    page: &PageQuery,
    page_max_bytes: usize,
    filter: &Filter,
) -> Result<MergedFound, StoreError> {
    let (direction, limit) = (page.direction, page.limit as usize);
    let (scan_limit, scan_max_bytes) = (u64::from(page.find.scan_limit), page.find.scan_max_bytes);
    let mut lanes: Vec<Lane> = keys
        .iter()
        .map(|(s, id)| Lane {
            shard: *s,
            id,
            buffered: VecDeque::new(),
            read_from: start.get(s).copied().flatten(),
            exhausted: false,
            next_chunk: FIRST_CHUNK,
        })
        .collect();
    let mut positions = start.clone();
    let mut found = MergedFound::default();
    let (mut largest, mut kept_bytes) = (1u64, 0usize);
    loop {
        // Every shard that may hold a next record has its head read before the walk picks one.
        for lane in lanes.iter_mut() {
            if !lane.buffered.is_empty() || lane.exhausted {
                continue;
            }
            let records_left = scan_limit.saturating_sub(found.scanned);
            let by_bytes = (scan_max_bytes.saturating_sub(found.scanned_bytes) / largest).max(1);
            let chunk = usize::try_from(records_left.min(by_bytes))
                .unwrap_or(MAX_CHUNK)
                .min(lane.next_chunk)
                .max(1);
            lane.next_chunk = (lane.next_chunk * 2).min(MAX_CHUNK);
            let records = store
                .shard_records(lane.id, direction, lane.read_from, chunk)
                .await?;
            lane.exhausted = records.len() < chunk;
            for r in records {
                let id = parse_stream_id(&r.id).unwrap_or_default();
                lane.read_from = Some(id);
                lane.buffered.push_back((id, r));
            }
        }
        let head = lanes
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.buffered.front().map(|(id, _)| (i, (*id, l.shard))))
            .reduce(|a, b| {
                let b_first = match direction {
                    PageDirection::Forward => b.1 < a.1,
                    PageDirection::Backward => b.1 > a.1,
                };
                if b_first { b } else { a }
            });
        let Some((i, _)) = head else {
            // Every shard is read to its end.
            return Ok(found);
        };
        let lane = &mut lanes[i];
        let Some((id, r)) = lane.buffered.pop_front() else {
            return Ok(found);
        };
        let size = record_bytes(&r);
        if filter.matches(&r) {
            if found.records.len() == limit
                || (!found.records.is_empty() && kept_bytes + size > page_max_bytes)
            {
                // The page is full: this match is not scanned; the next answer starts with it.
                found.next_cursor = Some(format_positions(&positions));
                return Ok(found);
            }
            kept_bytes += size;
            found.records.push((lane.shard, r));
        }
        positions.insert(lane.shard, Some(id));
        found.scanned += 1;
        found.scanned_bytes += size as u64;
        largest = largest.max(size as u64);
        if found.scanned >= scan_limit || found.scanned_bytes >= scan_max_bytes {
            found.stopped_at_bound = true;
            let follows = follows(store, &lanes, direction).await?;
            found.next_cursor = follows.then(|| format_positions(&positions));
            return Ok(found);
        }
    }
}

/// Whether any shard has a record the walk has not scanned: one read ahead, or, on a shard read ahead to
/// nothing whose last chunk was full (only the shard just scanned can be), one more in Redis (one read of one
/// record).
async fn follows(
    store: &Store,
    lanes: &[Lane<'_>],
    direction: PageDirection,
) -> Result<bool, StoreError> {
    if lanes.iter().any(|l| !l.buffered.is_empty()) {
        return Ok(true);
    }
    for lane in lanes.iter().filter(|l| !l.exhausted) {
        if record_follows(store, lane.id, direction, lane.read_from).await? {
            return Ok(true);
        }
    }
    Ok(false)
}
