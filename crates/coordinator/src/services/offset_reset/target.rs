//! The pure part of an offset reset: the request's `to`/`value`/`shift`/`shards` checked into a [`Target`]
//! and a shard list, and the last-delivered id each target sets on a shard stream (a shift's depends on the
//! records around the position, found by `offset_reset.rs` through the store). No I/O; unit-tested here.

use crate::domain_error::{BadReset, CoordError};
use rsc_protocol::stream_id::{StreamId, parse_stream_id};
use rsc_protocol::wire::offsets::{OffsetResetRequest, ResetDirection, ResetTo};
use std::collections::BTreeSet;

/// Where a reset moves the position, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Earliest,
    Latest,
    /// Before the first record appended at or after this time (Unix ms).
    Before(u64),
    /// At this stream id.
    At(StreamId),
    /// This many records from the current position (negative: back, read again; positive: skipped).
    Shift(i64),
}

/// The largest shift, either way: a shift walks the records it moves over (the same bound as the counts).
pub const MAX_SHIFT: i64 = super::COUNT_CAP as i64;

impl Target {
    /// The wire name of the target.
    pub fn to(self) -> ResetTo {
        match self {
            Target::Earliest => ResetTo::Earliest,
            Target::Latest => ResetTo::Latest,
            Target::Before(_) => ResetTo::Datetime,
            Target::At(_) => ResetTo::Id,
            Target::Shift(_) => ResetTo::Shift,
        }
    }
}

/// Checks `to` and `value` against each other and against Redis time `now_ms` (no time or id in the future).
pub fn target(req: &OffsetResetRequest, now_ms: i64) -> Result<Target, CoordError> {
    let Some(to) = req.to else {
        return Err(BadReset::ToRequired.into());
    };
    if to == ResetTo::Shift {
        return shift(req);
    }
    if req.shift.is_some() {
        return Err(BadReset::ShiftNotTaken { to }.into());
    }
    let value = req.value.as_deref().map(str::trim);
    let now = u64::try_from(now_ms).unwrap_or(0);
    match (to, value) {
        (ResetTo::Earliest | ResetTo::Latest, None) => Ok(if to == ResetTo::Earliest {
            Target::Earliest
        } else {
            Target::Latest
        }),
        (ResetTo::Earliest | ResetTo::Latest, Some(_)) => {
            Err(BadReset::ValueNotTaken { to }.into())
        }
        (ResetTo::Datetime | ResetTo::Id, None | Some("")) => {
            Err(BadReset::ValueRequired { to }.into())
        }
        (ResetTo::Datetime, Some(v)) => {
            let ms = time::OffsetDateTime::parse(v, &time::format_description::well_known::Rfc3339)
                .ok()
                .map(|t| t.unix_timestamp_nanos() / 1_000_000)
                .ok_or_else(|| BadReset::Time {
                    given: v.to_owned(),
                })?;
            let ms = u64::try_from(ms).map_err(|_| BadReset::TimeBefore1970 {
                given: v.to_owned(),
            })?;
            if ms > now {
                return Err(BadReset::TimeInFuture {
                    given: v.to_owned(),
                    now_ms,
                }
                .into());
            }
            Ok(Target::Before(ms))
        }
        (ResetTo::Id, Some(v)) => {
            let id = parse_stream_id(v)
                .or_else(|| v.parse::<u64>().ok().map(|ms| (ms, 0)))
                .ok_or_else(|| BadReset::Id {
                    given: v.to_owned(),
                })?;
            if id.0 > now {
                return Err(BadReset::IdInFuture {
                    given: v.to_owned(),
                    now_ms,
                }
                .into());
            }
            Ok(Target::At(id))
        }
        (ResetTo::Shift, _) => shift(req),
    }
}

/// `to: SHIFT`: `shift` required, not 0, within ±[`MAX_SHIFT`]; no `value`.
fn shift(req: &OffsetResetRequest) -> Result<Target, CoordError> {
    if req.value.is_some() {
        return Err(BadReset::ShiftValue.into());
    }
    match req.shift {
        None => Err(BadReset::ShiftRequired.into()),
        Some(0) => Err(BadReset::ShiftZero.into()),
        Some(n) if n.abs() > MAX_SHIFT => Err(BadReset::ShiftTooFar {
            shift: n,
            max: MAX_SHIFT,
        }
        .into()),
        Some(n) => Ok(Target::Shift(n)),
    }
}

/// The shards to reset: `requested` checked against the group's `shard_count` (each once), or every shard.
pub fn shards(requested: Option<&[i64]>, shard_count: u32) -> Result<Vec<u32>, CoordError> {
    let Some(requested) = requested else {
        return Ok((0..shard_count).collect());
    };
    if requested.is_empty() {
        return Err(BadReset::NoShards.into());
    }
    let mut seen = BTreeSet::new();
    for &s in requested {
        let Some(shard) = u32::try_from(s).ok().filter(|s| *s < shard_count) else {
            return Err(BadReset::NotAShard {
                shard: s,
                shard_count,
            }
            .into());
        };
        if !seen.insert(shard) {
            return Err(BadReset::ShardTwice { shard }.into());
        }
    }
    Ok(seen.into_iter().collect())
}

/// The id `target` sets on a shard stream whose last generated id is `last_generated` (a shift's is found
/// by walking the stream; here it stays at `current`).
pub fn new_id(target: Target, current: StreamId, last_generated: StreamId) -> StreamId {
    match target {
        Target::Shift(_) => current,
        Target::Earliest => (0, 0),
        Target::Latest => last_generated,
        Target::Before(0) => (0, 0),
        Target::Before(ms) => (ms - 1, u64::MAX),
        Target::At(id) => id,
    }
}

/// Which way a shard's position moves from `current` to `new`.
pub fn direction(current: StreamId, new: StreamId) -> ResetDirection {
    match new.cmp(&current) {
        std::cmp::Ordering::Greater => ResetDirection::Skip,
        std::cmp::Ordering::Less => ResetDirection::Reread,
        std::cmp::Ordering::Equal => ResetDirection::Unchanged,
    }
}

/// A stream id as Redis writes it.
pub fn format_id(id: StreamId) -> String {
    format!("{}-{}", id.0, id.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(to: ResetTo, value: Option<&str>) -> OffsetResetRequest {
        OffsetResetRequest {
            to: Some(to),
            value: value.map(str::to_owned),
            ..Default::default()
        }
    }

    fn shifted(to: ResetTo, n: i64) -> OffsetResetRequest {
        OffsetResetRequest {
            to: Some(to),
            shift: Some(n),
            ..Default::default()
        }
    }

    const NOW: i64 = 1_764_756_000_000; // 2025-12-03T10:00:00Z

    #[test]
    fn targets_are_checked_against_their_values_and_redis_time() {
        assert_eq!(
            target(&req(ResetTo::Earliest, None), NOW),
            Ok(Target::Earliest)
        );
        assert_eq!(target(&req(ResetTo::Latest, None), NOW), Ok(Target::Latest));
        assert_eq!(
            target(&req(ResetTo::Datetime, Some("2025-12-03T09:00:00Z")), NOW),
            Ok(Target::Before(1_764_752_400_000))
        );
        assert_eq!(
            target(
                &req(ResetTo::Datetime, Some("2025-12-03T10:00:00+01:00")),
                NOW
            ),
            Ok(Target::Before(1_764_752_400_000))
        );
        assert_eq!(
            target(&req(ResetTo::Id, Some("1764752400000-7")), NOW),
            Ok(Target::At((1_764_752_400_000, 7)))
        );
        assert_eq!(
            target(&req(ResetTo::Id, Some("5")), NOW),
            Ok(Target::At((5, 0)))
        );
        assert_eq!(
            target(&shifted(ResetTo::Shift, -100), NOW),
            Ok(Target::Shift(-100))
        );
        assert_eq!(
            target(&shifted(ResetTo::Shift, 10_000), NOW),
            Ok(Target::Shift(10_000))
        );
        for (r, needle) in [
            (OffsetResetRequest::default(), "to: required"),
            (req(ResetTo::Latest, Some("x")), "takes no value"),
            (req(ResetTo::Datetime, None), "value: required"),
            (req(ResetTo::Id, Some(" ")), "value: required"),
            (
                req(ResetTo::Datetime, Some("yesterday")),
                "not an RFC 3339 time",
            ),
            (
                req(ResetTo::Datetime, Some("2025-12-03T11:00:00Z")),
                "in the future",
            ),
            (
                req(ResetTo::Datetime, Some("1960-01-01T00:00:00Z")),
                "before 1970",
            ),
            (req(ResetTo::Id, Some("1-2-3")), "not a stream id"),
            (req(ResetTo::Id, Some("99999999999999-0")), "in the future"),
            (req(ResetTo::Shift, None), "shift: required"),
            (req(ResetTo::Shift, Some("5")), "takes no value"),
            (shifted(ResetTo::Shift, 0), "moves nothing"),
            (shifted(ResetTo::Shift, -10_001), "beyond"),
            (shifted(ResetTo::Latest, 5), "only with"),
        ] {
            let e = target(&r, NOW).expect_err(needle);
            assert!(e.message().contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn shards_are_each_listed_once_and_below_the_count() {
        assert_eq!(shards(None, 3), Ok(vec![0, 1, 2]));
        assert_eq!(shards(Some(&[2, 0]), 3), Ok(vec![0, 2]));
        for (list, needle) in [
            (vec![], "empty list"),
            (vec![3], "not a shard"),
            (vec![-1], "not a shard"),
            (vec![1, 1], "twice"),
        ] {
            let e = shards(Some(&list), 3).expect_err(needle);
            assert!(e.message().contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn new_ids_and_directions() {
        let last = (100, 4);
        let cur = (60, 0);
        assert_eq!(new_id(Target::Earliest, cur, last), (0, 0));
        assert_eq!(new_id(Target::Latest, cur, last), last);
        assert_eq!(new_id(Target::Before(50), cur, last), (49, u64::MAX));
        assert_eq!(new_id(Target::Before(0), cur, last), (0, 0));
        assert_eq!(new_id(Target::At((7, 1)), cur, last), (7, 1));
        assert_eq!(new_id(Target::Shift(-3), cur, last), cur);
        assert_eq!(direction((5, 0), (6, 0)), ResetDirection::Skip);
        assert_eq!(direction((5, 1), (5, 0)), ResetDirection::Reread);
        assert_eq!(direction((5, 1), (5, 1)), ResetDirection::Unchanged);
        assert_eq!(format_id((49, u64::MAX)), "49-18446744073709551615");
    }
}
