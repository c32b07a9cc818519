//! `grafana/messages`: records of one shard, or of every shard merged by record id, as flat rows, paged with
//! the cursors of `cursor.rs` (record ids, merged positions, `__rsc_last__`, `__rsc_tail__:<n>`).
//! `recordId=<id>` finds that exact record on the selected shards. Pages are bounded by
//! `coordinator.http.message-page-max-bytes` as well as by `limit` (the browser's [`read_page`]): each shard
//! reads at most one page, and the merged rows are cut at the budget; the payload is sent once (`payload`,
//! not again in `fieldsJson`).

use super::cursor::{self, Id, Start};
use super::{Params, one_group, param};
use crate::domain_error::{BadQuery, CoordError};
use crate::runtime::clock::iso_ms;
use crate::runtime::coordinator::Coordinator;
use crate::runtime::shown_keys;
use crate::services::messages::{PageQuery, direction_name, parse_cursor, read_page, record_bytes};
use rsc_protocol::wire::grafana::GrafanaMessageRow;
use rsc_store::{PageDirection, Shard, StreamRecord, parse_stream_id};
use std::collections::BTreeMap;

const ALL_SELECTORS: [&str; 4] = ["all", ".*", "__all", "$__all"];

/// `grafana/messages?streamPrefix&consumerGroup&shardIndex&direction&cursor&recordId&limit`.
pub async fn message_rows(
    c: &Coordinator,
    params: &Params,
) -> Result<Vec<GrafanaMessageRow>, CoordError> {
    let Some(name) = one_group(params)? else {
        return Ok(Vec::new());
    };
    let mut page_params = params.clone();
    let raw_cursor = page_params.remove("cursor");
    let page = PageQuery::parse(&page_params)?;
    let cached = c.require_group(&name).await?;
    let g = &cached.group;
    let selector = param(params, "shardIndex").unwrap_or("0").to_owned();
    let all = ALL_SELECTORS.contains(&selector.as_str());
    let shards: Vec<u32> = if all {
        g.assignable_shards().into_iter().collect()
    } else {
        let i: u32 = selector.parse().map_err(|_| BadQuery::ShardSelector {
            given: selector.clone(),
        })?;
        if !g.assignable_shards().contains(&i) {
            return Err(BadQuery::GrafanaShardOutOfRange {
                shard: i,
                shard_count: g.shard_count,
            }
            .into());
        }
        vec![i]
    };
    let (direction, limit) = (page.direction, page.limit as usize);
    let exact = match param(params, "recordId") {
        Some(id) => Some(parse_cursor(id)?),
        None => None,
    };
    // An exact search ignores the cursor.
    let start = match exact {
        Some(_) => Start::At(shards.iter().map(|s| (*s, None)).collect()),
        None => cursor::parse(raw_cursor.as_deref(), &shards, all, page.limit)?,
    };
    // A tail page is read from the other end: `(n + 1) × limit` records per shard, of which the last
    // `limit` (merged) are the page.
    let (read_direction, read_count) = match &start {
        Start::Tail(n) => (reversed(direction), (*n as usize + 1) * limit),
        Start::At(_) => (direction, limit + 1),
    };
    let max_bytes = c.config().http.message_page_max_bytes;
    let mut found: Vec<(u32, StreamRecord)> = Vec::new();
    let mut more = false;
    // The last record read of each shard whose page was cut (by count or bytes): records of other shards
    // beyond the earliest of them may not be shown yet, since that shard's unread ones come first.
    let mut cut_at: Vec<(Id, u32)> = Vec::new();
    let mut total = 0i64;
    for s in &shards {
        let shard = Shard::new(g.stream_prefix.as_str(), *s);
        total += c.store().shard_length(&shard).await?;
        let records = match (exact, &start) {
            (Some(id), _) => c
                .store()
                .shard_records(&shard, PageDirection::Forward, cursor::before(id), 1)
                .await?
                .into_iter()
                .filter(|r| parse_stream_id(&r.id) == Some(id))
                .collect(),
            (None, Start::Tail(_)) => {
                c.store()
                    .shard_records(&shard, read_direction, None, read_count)
                    .await?
            }
            (None, Start::At(positions)) => {
                let page =
                    read_page(c.store(), &shard, direction, positions[s], limit, max_bytes).await?;
                if page.more
                    && let Some(last) = page.records.last()
                {
                    cut_at.push((parse_stream_id(&last.id).unwrap_or_default(), *s));
                }
                more |= page.more;
                page.records
            }
        };
        found.extend(records.into_iter().map(|r| (*s, r)));
    }
    let key = |(s, r): &(u32, StreamRecord)| (parse_stream_id(&r.id).unwrap_or_default(), *s);
    found.sort_by(|a, b| match read_direction {
        PageDirection::Forward => key(a).cmp(&key(b)),
        PageDirection::Backward => key(b).cmp(&key(a)),
    });
    let horizon = match read_direction {
        PageDirection::Forward => cut_at.iter().min().copied(),
        PageDirection::Backward => cut_at.iter().max().copied(),
    };
    if let Some(h) = horizon {
        let before = found.len();
        found.retain(|r| match read_direction {
            PageDirection::Forward => key(r) <= h,
            PageDirection::Backward => key(r) >= h,
        });
        more |= found.len() < before;
    }
    if let Start::Tail(n) = start {
        found.truncate(read_count);
        found.drain(..found.len().min(n as usize * limit));
        found.reverse();
        // The pages after a tail page are the `n` skipped ones.
        more = n > 0 && !found.is_empty();
    }
    more |= found.len() > limit;
    found.truncate(limit);
    // The merged page within the byte budget too (its first row whatever its size).
    let mut bytes = 0usize;
    let within = found
        .iter()
        .position(|(_, r)| {
            bytes += record_bytes(r);
            bytes > max_bytes
        })
        .map_or(found.len(), |i| i.max(1));
    more |= within < found.len();
    found.truncate(within);
    let next = match (found.last(), exact) {
        (Some(last), None) if more => {
            let (last_id, last_shard) = key(last);
            Some(if all {
                let positions = match &start {
                    Start::At(positions) => {
                        let mut positions = positions.clone();
                        for (s, r) in &found {
                            positions.insert(*s, parse_stream_id(&r.id));
                        }
                        positions
                    }
                    Start::Tail(_) => cursor::beyond(&shards, last_id, last_shard, direction),
                };
                cursor::format_all(&positions)
            } else {
                last.1.id.clone()
            })
        }
        _ => None,
    };
    let id_of = |r: &StreamRecord| -> Id { parse_stream_id(&r.id).unwrap_or_default() };
    Ok(found
        .into_iter()
        .map(|(s, r)| {
            let ms = id_of(&r).0 as i64;
            let mut fields: BTreeMap<&str, &str> = r
                .fields
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let payload = fields.remove("payload").map(str::to_owned);
            GrafanaMessageRow {
                stream_prefix: g.stream_prefix.clone(),
                consumer_group: g.consumer_group.clone(),
                shard_index: s,
                shard_selector: selector.clone(),
                shard_label: format!(":{s}"),
                stream_key: shown_keys::shard_stream(&Shard::new(g.stream_prefix.as_str(), s)),
                payload,
                fields_json: serde_json::to_string(&fields).unwrap_or_default(),
                record_id: r.id.clone(),
                page_direction: direction_name(direction).to_owned(),
                page_limit: limit,
                page_next_cursor: next.clone(),
                page_total_messages: total,
                record_timestamp_ms: ms,
                record_time: iso_ms(ms),
            }
        })
        .collect())
}

fn reversed(d: PageDirection) -> PageDirection {
    match d {
        PageDirection::Forward => PageDirection::Backward,
        PageDirection::Backward => PageDirection::Forward,
    }
}
