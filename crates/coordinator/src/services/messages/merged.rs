//! The merged view of a group's shards (`GET …/groups/{g}/messages`): every shard's records in one walk
//! ordered by time (ids compare by milliseconds, then sequence, then shard index), paged with a cursor that
//! holds each shard's position (`<shard>=<id>,…`). Each shard reads at most one page (`limit` records and
//! `message-page-max-bytes`); the merged page keeps only records no unread record of a cut shard precedes,
//! then at most `limit` of them and the byte budget. `fromId`/`fromTime` start every shard there. The
//! bounded search (`field`, `search`) over every shard is in [`search`].

pub mod search;

use crate::domain_error::{BadQuery, CoordError};
use crate::services::messages::{PageQuery, read_page, record_bytes};
use rsc_store::{PageDirection, Shard, Store, StoreError, StreamRecord, parse_stream_id};
use std::collections::BTreeMap;

/// Per shard, where its next page starts (exclusive; `None`: at the start of the walk).
pub type Positions = BTreeMap<u32, Option<(u64, u64)>>;

/// Parses a merged cursor `<shard>=<ms>-<seq>,…` for `shards` (a shard not named starts at the beginning).
pub fn parse_positions(raw: &str, shards: &[u32]) -> Result<Positions, CoordError> {
    let mut out: Positions = shards.iter().map(|s| (*s, None)).collect();
    let bad = |why: &'static str| {
        CoordError::from(BadQuery::MergedCursor {
            given: raw.to_owned(),
            why,
        })
    };
    for part in raw.split(',').filter(|p| !p.trim().is_empty()) {
        let (i, id) = part.split_once('=').ok_or_else(|| bad("no ="))?;
        let i: u32 = i.trim().parse().map_err(|_| bad("not a shard index"))?;
        let slot = out
            .get_mut(&i)
            .ok_or_else(|| bad("a shard the group does not have"))?;
        *slot = Some(parse_stream_id(id.trim()).ok_or_else(|| bad("not a record id"))?);
    }
    Ok(out)
}

/// The cursor text of `positions`.
pub fn format_positions(positions: &Positions) -> String {
    positions
        .iter()
        .filter_map(|(s, p)| p.map(|(ms, seq)| format!("{s}={ms}-{seq}")))
        .collect::<Vec<_>>()
        .join(",")
}

/// One merged page: `(shard, record)` in walk order, and the cursor when more follow.
#[derive(Debug, Default)]
pub struct MergedPage {
    pub records: Vec<(u32, StreamRecord)>,
    pub next_cursor: Option<String>,
}

/// Reads one merged page of the shard streams `keys` (shard index → shard) from `start`.
pub async fn read_merged(
    store: &Store,
    keys: &BTreeMap<u32, Shard>,
    start: &Positions,
    query: &PageQuery,
    max_bytes: usize,
) -> Result<MergedPage, StoreError> {
    let (direction, limit) = (query.direction, query.limit as usize);
    let order = |id: (u64, u64), s: u32| (id, s);
    let mut found: Vec<((u64, u64), u32, StreamRecord)> = Vec::new();
    let mut cut_at: Vec<((u64, u64), u32)> = Vec::new();
    let mut more = false;
    for (s, id) in keys {
        let from = start.get(s).copied().flatten();
        let page = read_page(store, id, direction, from, limit, max_bytes).await?;
        if page.more
            && let Some(last) = page.records.last()
        {
            cut_at.push(order(parse_stream_id(&last.id).unwrap_or_default(), *s));
        }
        more |= page.more;
        found.extend(
            page.records
                .into_iter()
                .map(|r| (parse_stream_id(&r.id).unwrap_or_default(), *s, r)),
        );
    }
    found.sort_by(|a, b| match direction {
        PageDirection::Forward => (a.0, a.1).cmp(&(b.0, b.1)),
        PageDirection::Backward => (b.0, b.1).cmp(&(a.0, a.1)),
    });
    // A cut shard's unread records may come before other shards' later ones: stop at the earliest cut.
    let horizon = match direction {
        PageDirection::Forward => cut_at.iter().min().copied(),
        PageDirection::Backward => cut_at.iter().max().copied(),
    };
    if let Some(h) = horizon {
        found.retain(|(id, s, _)| match direction {
            PageDirection::Forward => (*id, *s) <= h,
            PageDirection::Backward => (*id, *s) >= h,
        });
    }
    let before = found.len();
    found.truncate(limit);
    let mut bytes = 0usize;
    let within = found
        .iter()
        .position(|(_, _, r)| {
            bytes += record_bytes(r);
            bytes > max_bytes
        })
        .map_or(found.len(), |i| i.max(1));
    found.truncate(within);
    more |= found.len() < before;
    let mut positions = start.clone();
    for (id, s, _) in &found {
        positions.insert(*s, Some(*id));
    }
    Ok(MergedPage {
        next_cursor: (more && !found.is_empty()).then(|| format_positions(&positions)),
        records: found.into_iter().map(|(_, s, r)| (s, r)).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_bad_ones_are_refused() {
        let p = parse_positions("0=5-1, 2=7-0", &[0, 1, 2]).unwrap();
        assert_eq!(p[&0], Some((5, 1)));
        assert_eq!(p[&1], None);
        assert_eq!(format_positions(&p), "0=5-1,2=7-0");
        for bad in ["x", "0", "3=1-0", "a=1-0", "0=abc"] {
            assert!(
                matches!(
                    parse_positions(bad, &[0, 1, 2]),
                    Err(CoordError::Invalid(_))
                ),
                "{bad}"
            );
        }
    }
}
