//! The group's pending entries on one shard, entry by entry (`GET …/shards/{i}/pending?consumer=&count=
//! &cursor=`): `XPENDING`'s extended form through `rsc_store`, oldest first, a page at a time (the cursor
//! is the last id of the previous page, exclusive). READ suffices: an entry is an id, a consumer name, an
//! idle time and a delivery count — no payload; each entry names the message-browser page that starts at its
//! record, which itself needs DATA_READ.

use crate::domain_error::{BadQuery, CoordError};
use crate::runtime::cache::GroupName;
use crate::runtime::clock::iso_ms;
use crate::runtime::coordinator::Monitoring;
use rsc_protocol::wire::ShardId;
use rsc_protocol::wire::pending::{PendingEntriesResponse, PendingEntryView};
use rsc_store::{Keyspace, parse_stream_id};
use std::collections::BTreeMap;

/// Entries per page when `count` is not given.
pub const DEFAULT_COUNT: u32 = 100;
/// The largest `count`.
pub const MAX_COUNT: u32 = 1000;

/// A checked pending-list request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingQuery {
    pub consumer: Option<String>,
    pub count: u32,
    pub cursor: Option<String>,
}

impl PendingQuery {
    /// Reads `consumer`, `count` and `cursor` (other keys are refused: a typo would silently list
    /// everything).
    pub fn parse(params: &BTreeMap<String, String>) -> Result<PendingQuery, CoordError> {
        if let Some(k) = params
            .keys()
            .find(|k| !["consumer", "count", "cursor"].contains(&k.as_str()))
        {
            return Err(BadQuery::PendingParameter { key: k.clone() }.into());
        }
        let consumer = match params.get("consumer").map(|c| c.trim()) {
            None | Some("") => None,
            Some(c) => {
                rsc_protocol::validate::validate_text("consumer", c, true)?;
                Some(c.to_owned())
            }
        };
        let count = match params.get("count").map(|c| c.trim()) {
            None | Some("") => DEFAULT_COUNT,
            Some(c) => match c.parse::<u32>() {
                Ok(n) if (1..=MAX_COUNT).contains(&n) => n,
                _ => {
                    return Err(BadQuery::PendingCount {
                        given: c.to_owned(),
                        max: MAX_COUNT,
                        default: DEFAULT_COUNT,
                    }
                    .into());
                }
            },
        };
        let cursor = match params.get("cursor").map(|c| c.trim()) {
            None | Some("") => None,
            Some(c) => {
                let (ms, seq) = parse_stream_id(c).ok_or_else(|| BadQuery::Cursor {
                    given: c.to_owned(),
                })?;
                Some(format!("{ms}-{seq}"))
            }
        };
        Ok(PendingQuery {
            consumer,
            count,
            cursor,
        })
    }
}

impl Monitoring<'_> {
    /// `GET …/shards/{i}/pending`: one page of the group's pending entries on the shard. The shard must be
    /// one of the group's (`0..shardCount`, or a shard a scale-in still drains), else `Invalid`.
    pub async fn shard_pending(
        &self,
        name: &GroupName,
        shard: u32,
        query: &PendingQuery,
    ) -> Result<PendingEntriesResponse, CoordError> {
        let c = self.require_group(name).await?;
        let g = &c.group;
        if !g.assignable_shards().contains(&shard) {
            return Err(BadQuery::ShardOutOfRange {
                shard,
                shard_count: g.shard_count,
            }
            .into());
        }
        let key = Keyspace::shard_stream(&g.stream_prefix, shard);
        let want = query.count as usize;
        // One more than the page, to know whether another follows.
        let mut entries = self
            .metrics()
            .time_store(
                "xpending",
                self.store().shard_pending_entries(
                    &key,
                    &g.consumer_group,
                    query.cursor.as_deref(),
                    want + 1,
                    query.consumer.as_deref(),
                ),
            )
            .await
            .map_err(|e| {
                self.note_store_error(&e);
                CoordError::from(e)
            })?
            .unwrap_or_default();
        let more = entries.len() > want;
        entries.truncate(want);
        let next_cursor = if more {
            entries.last().map(|e| e.id.clone())
        } else {
            None
        };
        let messages = format!(
            "/coord/v1/monitoring/streams/{}/groups/{}/shards/{shard}/messages",
            path_segment(&g.stream_prefix),
            path_segment(&g.consumer_group)
        );
        Ok(PendingEntriesResponse {
            stream_prefix: g.stream_prefix.clone(),
            consumer_group: g.consumer_group.clone(),
            shard: ShardId::new(shard),
            stream_key: key,
            consumer: query.consumer.clone(),
            count: query.count,
            entries: entries
                .into_iter()
                .map(|e| {
                    let ms = parse_stream_id(&e.id)
                        .map_or(0, |(ms, _)| i64::try_from(ms).unwrap_or(i64::MAX));
                    PendingEntryView {
                        messages_path: format!(
                            "{messages}?fromId={}&direction=FORWARD&limit=1",
                            e.id
                        ),
                        record_time: iso_ms(ms),
                        record_id: e.id,
                        consumer: e.consumer,
                        idle_ms: e.idle_ms,
                        deliveries: e.deliveries,
                    }
                })
                .collect(),
            next_cursor,
        })
    }
}

/// `value` as one URL path segment (RFC 3986: unreserved characters kept, every other byte %-encoded).
fn path_segment(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Result<PendingQuery, CoordError> {
        PendingQuery::parse(
            &pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn defaults_and_bad_values() {
        assert_eq!(
            q(&[]).unwrap(),
            PendingQuery {
                consumer: None,
                count: 100,
                cursor: None
            }
        );
        let p = q(&[("consumer", "c1"), ("count", "1000"), ("cursor", "5-1")]).unwrap();
        assert_eq!(
            (p.consumer.as_deref(), p.count, p.cursor.as_deref()),
            (Some("c1"), 1000, Some("5-1"))
        );
        for (bad, needle) in [
            (("count", "0"), "count"),
            (("count", "1001"), "count"),
            (("cursor", "x"), "cursor"),
            (("shard", "1"), "shard"),
        ] {
            let e = q(&[bad]).expect_err(needle);
            assert!(e.message().starts_with(needle), "{needle}: {e}");
        }
        assert_eq!(path_segment("a b/c"), "a%20b%2Fc");
    }
}
