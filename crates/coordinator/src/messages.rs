//! The message browser: one page of a shard stream's records, newest first by default, walked with an
//! exclusive cursor (`GET …/shards/{i}/messages?direction=&cursor=&limit=`). Query values are checked here
//! (bad direction, cursor or limit → `CoordError::Invalid`); records are read through `rsc_store`
//! (`XRANGE` / `XREVRANGE`), one page per request.

use crate::cache::GroupName;
use crate::clock::iso_ms;
use crate::coordinator::Monitoring;
use crate::domain_error::CoordError;
use rsc_protocol::names::shard_stream_key;
use rsc_protocol::wire::ShardId;
use rsc_protocol::wire::browse::{StreamMessageRecord, StreamMessagesPageResponse};
use rsc_store::{PageDirection, StreamRecord, parse_stream_id};
use std::collections::BTreeMap;

/// Records per page when `limit` is not given.
pub const DEFAULT_PAGE_LIMIT: u32 = 25;
/// The largest `limit`.
pub const MAX_PAGE_LIMIT: u32 = 1000;

/// A checked page request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageQuery {
    pub direction: PageDirection,
    pub cursor: Option<(u64, u64)>,
    pub limit: u32,
}

impl PageQuery {
    /// Reads `direction`, `cursor` and `limit` from a query string's parameters (other keys are ignored).
    pub fn parse(params: &BTreeMap<String, String>) -> Result<PageQuery, CoordError> {
        let direction = match params.get("direction").map(|d| d.trim()) {
            None | Some("") => PageDirection::Backward,
            Some(d) if d.eq_ignore_ascii_case("BACKWARD") => PageDirection::Backward,
            Some(d) if d.eq_ignore_ascii_case("FORWARD") => PageDirection::Forward,
            Some(d) => {
                return Err(CoordError::Invalid(format!(
                    "direction: {d:?} is not FORWARD (oldest first) or BACKWARD (newest first, the default)"
                )));
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
                    return Err(CoordError::Invalid(format!(
                        "limit: {l:?} is not a number of records from 1 to {MAX_PAGE_LIMIT} (default \
                         {DEFAULT_PAGE_LIMIT})"
                    )));
                }
            },
        };
        Ok(PageQuery {
            direction,
            cursor,
            limit,
        })
    }
}

/// A cursor is a stream record id `<ms>-<seq>` (the `nextCursor` of the previous page).
pub fn parse_cursor(raw: &str) -> Result<(u64, u64), CoordError> {
    parse_stream_id(raw).ok_or_else(|| {
        CoordError::Invalid(format!(
            "cursor: {raw:?} is not a stream record id <ms>-<seq>; pass the nextCursor of the previous page"
        ))
    })
}

/// The wire name of a direction.
pub fn direction_name(d: PageDirection) -> &'static str {
    match d {
        PageDirection::Forward => "FORWARD",
        PageDirection::Backward => "BACKWARD",
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
    let fields: BTreeMap<String, String> = r.fields.into_iter().collect();
    StreamMessageRecord {
        stream_prefix: stream_prefix.to_owned(),
        consumer_group: consumer_group.to_owned(),
        shard: ShardId::new(shard),
        stream_key: stream_key.to_owned(),
        payload: fields.get("payload").cloned(),
        fields,
        record_timestamp_ms: ms,
        record_time: iso_ms(ms),
        record_id: r.id,
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
            return Err(CoordError::Invalid(format!(
                "shardIndex: {shard} is out of range; the group has shards 0..{} (shardCount {})",
                g.shard_count.saturating_sub(1),
                g.shard_count
            )));
        }
        let key = shard_stream_key(&g.stream_prefix, shard);
        // One record more than asked tells whether another page follows.
        let mut records = self
            .metrics()
            .time_store(
                "xrange",
                self.store().shard_records(
                    &key,
                    query.direction,
                    query.cursor,
                    query.limit as usize + 1,
                ),
            )
            .await
            .map_err(CoordError::from)?;
        let more = records.len() > query.limit as usize;
        records.truncate(query.limit as usize);
        let next_cursor = if more {
            records.last().map(|r| r.id.clone())
        } else {
            None
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
