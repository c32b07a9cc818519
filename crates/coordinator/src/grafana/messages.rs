//! `grafana/messages`: records of one shard, or of every shard merged by record id, as flat rows. Cursors:
//! a plain record id for one shard, `all:<i>=<id>,<j>=<id>` for the merged view (each shard's position),
//! both exclusive as in the message browser. `recordId=<id>` finds that exact record on the selected shards.
//! The reference's `__rsc_last__` / `__rsc_tail__:<n>` cursors are refused with 400 (walk with
//! `direction=BACKWARD` instead: its first page is the last one).

use super::{Params, one_group, param};
use crate::clock::iso_ms;
use crate::coordinator::Coordinator;
use crate::domain_error::CoordError;
use crate::messages::{PageQuery, direction_name, parse_cursor};
use rsc_protocol::names::shard_stream_key;
use rsc_store::{PageDirection, StreamRecord, parse_stream_id};
use serde_json::{Value, json};
use std::collections::BTreeMap;

const ALL_SELECTORS: [&str; 4] = ["all", ".*", "__all", "$__all"];

/// Per selected shard, where its next page starts.
type Cursors = BTreeMap<u32, Option<(u64, u64)>>;

fn parse_all_cursor(raw: &str, shards: &[u32]) -> Result<Cursors, CoordError> {
    let mut out: Cursors = shards.iter().map(|s| (*s, None)).collect();
    let bad = || {
        CoordError::Invalid(format!(
            "cursor: {raw:?} is not all:<shard>=<record id>,…; pass the pageNextCursor of the previous page"
        ))
    };
    for part in raw
        .strip_prefix("all:")
        .ok_or_else(bad)?
        .split(',')
        .filter(|p| !p.is_empty())
    {
        let (i, id) = part.split_once('=').ok_or_else(bad)?;
        let i: u32 = i.parse().map_err(|_| bad())?;
        let slot = out.get_mut(&i).ok_or_else(bad)?;
        *slot = Some(parse_cursor(id)?);
    }
    Ok(out)
}

/// The id just before `id` (so an exclusive cursor there reads `id` first), if any.
fn before(id: (u64, u64)) -> Option<(u64, u64)> {
    match id {
        (0, 0) => None,
        (ms, 0) => Some((ms - 1, u64::MAX)),
        (ms, seq) => Some((ms, seq - 1)),
    }
}

/// `grafana/messages?streamPrefix&consumerGroup&shardIndex&direction&cursor&recordId&limit`.
pub async fn message_rows(c: &Coordinator, params: &Params) -> Result<Vec<Value>, CoordError> {
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
        let i: u32 = selector.parse().map_err(|_| {
            CoordError::Invalid(format!(
                "shardIndex: {selector:?} is not a shard index or one of all, .*, __all, $__all"
            ))
        })?;
        if !g.assignable_shards().contains(&i) {
            return Err(CoordError::Invalid(format!(
                "shardIndex: {i} is out of range; the group has shards 0..{}",
                g.shard_count.saturating_sub(1)
            )));
        }
        vec![i]
    };
    let raw_cursor = raw_cursor
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty());
    let mut cursors: Cursors = match raw_cursor.as_deref() {
        None => shards.iter().map(|s| (*s, None)).collect(),
        Some(c) if c.starts_with("__rsc_") => {
            return Err(CoordError::Invalid(format!(
                "cursor: {c:?} is not supported; to see the last page ask with direction=BACKWARD"
            )));
        }
        Some(c) if all => parse_all_cursor(c, &shards)?,
        Some(c) => shards
            .iter()
            .map(|s| Ok((*s, Some(parse_cursor(c)?))))
            .collect::<Result<_, CoordError>>()?,
    };
    let (direction, limit) = (page.direction, page.limit as usize);
    let exact = match param(params, "recordId") {
        Some(id) => Some(parse_cursor(id)?),
        None => None,
    };
    let mut found: Vec<(u32, StreamRecord)> = Vec::new();
    let mut more = false;
    let mut total = 0i64;
    for s in &shards {
        let key = shard_stream_key(&g.stream_prefix, *s);
        total += c.store.shard_length(&key).await?;
        let records = match exact {
            Some(id) => c
                .store
                .shard_records(&key, PageDirection::Forward, before(id), 1)
                .await?
                .into_iter()
                .filter(|r| parse_stream_id(&r.id) == Some(id))
                .collect(),
            None => {
                let r = c
                    .store
                    .shard_records(&key, direction, cursors[s], limit + 1)
                    .await?;
                more |= r.len() > limit;
                r
            }
        };
        found.extend(records.into_iter().map(|r| (*s, r)));
    }
    let id_of = |r: &StreamRecord| parse_stream_id(&r.id).unwrap_or_default();
    found.sort_by(|(sa, a), (sb, b)| match direction {
        PageDirection::Forward => (id_of(a), sa).cmp(&(id_of(b), sb)),
        PageDirection::Backward => (id_of(b), sb).cmp(&(id_of(a), sa)),
    });
    more |= found.len() > limit;
    found.truncate(limit);
    for (s, r) in &found {
        cursors.insert(*s, parse_stream_id(&r.id));
    }
    let next = (more && exact.is_none()).then(|| {
        if all {
            let parts: Vec<String> = cursors
                .iter()
                .filter_map(|(s, c)| c.map(|(ms, seq)| format!("{s}={ms}-{seq}")))
                .collect();
            format!("all:{}", parts.join(","))
        } else {
            found.last().map(|(_, r)| r.id.clone()).unwrap_or_default()
        }
    });
    Ok(found
        .into_iter()
        .map(|(s, r)| {
            let ms = id_of(&r).0 as i64;
            let fields: BTreeMap<&str, &str> = r
                .fields
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            json!({
                "streamPrefix": g.stream_prefix, "consumerGroup": g.consumer_group,
                "shardIndex": s, "shardSelector": selector, "shardLabel": format!(":{s}"),
                "streamKey": shard_stream_key(&g.stream_prefix, s), "recordId": r.id,
                "payload": fields.get("payload"),
                "fieldsJson": serde_json::to_string(&fields).unwrap_or_default(),
                "pageDirection": direction_name(direction), "pageLimit": limit,
                "pageNextCursor": next, "pageTotalMessages": total,
                "recordTimestampMs": ms, "recordTime": iso_ms(ms),
            })
        })
        .collect())
}
