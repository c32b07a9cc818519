//! Cursors of `grafana/messages` (contract §3.9): where a page starts, and the `pageNextCursor` it hands on.
//!
//! Forms: a plain record id (one shard), `all:<i>=<id>,<j>=<id>` (every shard merged: each shard's
//! position), both exclusive; `__rsc_last__`, the last page of the walk in the asked direction (with
//! `FORWARD` the newest `limit` records, with `BACKWARD` the oldest), and `__rsc_tail__:<n>`, the page `n`
//! pages before that one (`__rsc_tail__:0` is the last page). A tail page's `pageNextCursor` continues the
//! walk in the asked direction, so following it from `__rsc_tail__:<n>` reaches the last page in `n` steps.

use crate::domain_error::{BadQuery, CoordError};
use crate::services::messages::parse_cursor;
use rsc_store::PageDirection;
use std::collections::BTreeMap;

/// The most records a tail page may skip and read on each shard: `(n + 1) × limit`.
pub const MAX_TAIL_RECORDS: u64 = 10_000;

/// A parsed stream record id `(ms, seq)`.
pub type Id = (u64, u64);

/// Per selected shard, where its next page starts (`None`: at the start of the walk).
pub type Positions = BTreeMap<u32, Option<Id>>;

/// Where a page starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// Each shard from its position (exclusive).
    At(Positions),
    /// `n` pages before the last page of the walk.
    Tail(u64),
}

/// Parses the `cursor` parameter for the selected `shards` (`all`: the merged view was asked for).
pub fn parse(
    raw: Option<&str>,
    shards: &[u32],
    all: bool,
    limit: u32,
) -> Result<Start, CoordError> {
    let Some(raw) = raw.map(str::trim).filter(|c| !c.is_empty()) else {
        return Ok(Start::At(shards.iter().map(|s| (*s, None)).collect()));
    };
    if raw == "__rsc_last__" {
        return Ok(Start::Tail(0));
    }
    if let Some(n) = raw.strip_prefix("__rsc_tail__") {
        return tail(raw, n, limit);
    }
    if raw.starts_with("__rsc_") {
        return Err(BadQuery::UnknownCursor {
            given: raw.to_owned(),
        }
        .into());
    }
    if all {
        return parse_all(raw, shards).map(Start::At);
    }
    let id = parse_cursor(raw)?;
    Ok(Start::At(shards.iter().map(|s| (*s, Some(id))).collect()))
}

fn tail(raw: &str, rest: &str, limit: u32) -> Result<Start, CoordError> {
    let pages = rest
        .strip_prefix(':')
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| BadQuery::TailCursor {
            given: raw.to_owned(),
        })?;
    let most = MAX_TAIL_RECORDS / u64::from(limit.max(1)) - 1;
    if pages > most {
        return Err(BadQuery::TailTooFar {
            given: raw.to_owned(),
            max_records: MAX_TAIL_RECORDS,
            limit,
            most,
        }
        .into());
    }
    Ok(Start::Tail(pages))
}

fn parse_all(raw: &str, shards: &[u32]) -> Result<Positions, CoordError> {
    let mut out: Positions = shards.iter().map(|s| (*s, None)).collect();
    let bad = || {
        CoordError::from(BadQuery::AllCursor {
            given: raw.to_owned(),
        })
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
pub fn before(id: Id) -> Option<Id> {
    match id {
        (0, 0) => None,
        (ms, 0) => Some((ms - 1, u64::MAX)),
        (ms, seq) => Some((ms, seq - 1)),
    }
}

/// The id just after `id` (so a backward exclusive cursor there reads `id` first).
fn after(id: Id) -> Id {
    match id {
        (ms, u64::MAX) => (ms.saturating_add(1), 0),
        (ms, seq) => (ms, seq + 1),
    }
}

/// The merged view's cursor as text.
pub fn format_all(positions: &Positions) -> String {
    let parts: Vec<String> = positions
        .iter()
        .filter_map(|(s, c)| c.map(|(ms, seq)| format!("{s}={ms}-{seq}")))
        .collect();
    format!("all:{}", parts.join(","))
}

/// Positions that continue a merged walk in `direction` right after the record `(last, shard)`: every shard
/// reads what lies beyond it in the walk's order (record id, then shard index), ties between shards included.
pub fn beyond(shards: &[u32], last: Id, shard: u32, direction: PageDirection) -> Positions {
    shards
        .iter()
        .map(|s| {
            let at = match direction {
                PageDirection::Forward if *s > shard => before(last),
                PageDirection::Backward if *s < shard => Some(after(last)),
                _ => Some(last),
            };
            (*s, at)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_forms_and_their_bounds() {
        assert_eq!(
            parse(Some("__rsc_last__"), &[0], false, 25).unwrap(),
            Start::Tail(0)
        );
        assert_eq!(
            parse(Some("__rsc_tail__:3"), &[0], true, 25).unwrap(),
            Start::Tail(3)
        );
        assert_eq!(
            parse(Some("__rsc_tail__:399"), &[0], false, 25).unwrap(),
            Start::Tail(399)
        );
        for bad in [
            "__rsc_tail__",
            "__rsc_tail__:",
            "__rsc_tail__:-1",
            "__rsc_tail__:x",
            "__rsc_tail__:400",
            "__rsc_first__",
        ] {
            assert!(parse(Some(bad), &[0], false, 25).is_err(), "{bad}");
        }
    }

    #[test]
    fn beyond_breaks_ties_by_shard_in_walk_order() {
        let p = beyond(&[0, 1, 2], (5, 0), 1, PageDirection::Forward);
        assert_eq!(p[&0], Some((5, 0)));
        assert_eq!(p[&1], Some((5, 0)));
        assert_eq!(p[&2], Some((4, u64::MAX)));
        let p = beyond(&[0, 1, 2], (5, 0), 1, PageDirection::Backward);
        assert_eq!(p[&0], Some((5, 1)));
        assert_eq!(p[&1], Some((5, 0)));
        assert_eq!(p[&2], Some((5, 0)));
    }
}
