//! Ordered streams in the coordinator: the ordering option on the stream record, when a switch needs switch
//! points before groups adopt it, the per-group drain evidence that opens a child shard's gate, and the gates
//! as the migration view shows them.
//!
//! The rule and the gates themselves are pure (`rsc_protocol::ordering`, `rsc_group::ordering`); here they
//! meet Redis. Every scale of an ordered stream is accepted: new children are withheld, surviving children
//! are granted with a read fence at their switch point (recorded on the migration right after the switch,
//! `boundary.rs`). A parent's evidence is read for one group only (its Redis consumer group on the parent)
//! and counts only the parent's records up to its switch point — nothing pending up to it, everything up to
//! it delivered — so a slow group never holds up a fast one, and records routed to a surviving parent after
//! the switch do not hold up its children. No drain grace applies: guarded publish refuses old-routing
//! appends after the switch point, so none can arrive later.

use super::*;
use rsc_protocol::ordering::{Ordering, is_child};
use rsc_protocol::wire::{OrderingRequest, OrderingResponse};
use serde::Serialize;

/// One gated child shard of a group, and what each parent it waits for still holds for that group.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderingGate {
    pub child_shard: u32,
    pub stream_key: String,
    /// A child that survived the scale is read up to this switch point meanwhile (its read fence); a child
    /// without one (a new shard) is granted to no member until the gate opens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_fence: Option<String>,
    pub waiting_for: Vec<ParentProgress>,
}

/// A parent shard a gate waits for: what this group still has to consume of it from before the switch.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentProgress {
    pub shard_index: u32,
    pub stream_key: String,
    /// The parent's last id at the switch: its records up to here must be consumed first.
    pub switch_point: Option<String>,
    /// This group's last-delivered id on the parent.
    pub last_delivered_id: Option<String>,
    /// Entries up to the switch point delivered and not acknowledged by this group (counted up to 10,000).
    pub pending_before_switch: Option<i64>,
    /// Whether everything up to the switch point has been delivered to this group.
    pub delivered_to_switch_point: Option<bool>,
    /// This group's pending entries and lag on the whole parent (including records after the switch).
    pub pending: Option<i64>,
    pub lag: Option<i64>,
}

/// At most this many pending entries are counted per parent for the migration view.
const PENDING_COUNT_CAP: usize = 10_000;

/// Whether the stream's active migration must record its old shards' switch points before groups adopt it:
/// an ordered stream whose scale has a child (a shard whose keys can come from another old shard).
pub(super) fn needs_switch_points(record: &StreamRecord) -> bool {
    record.ordering == Ordering::Key
        && record.active_migration.as_ref().is_some_and(|m| {
            (0..m.to_shard_count).any(|j| is_child(m.from_shard_count, m.to_shard_count, j))
        })
}

/// Whether a group may adopt the stream's active migration now: always on an unordered stream or for a scale
/// without children; on an ordered one with children once every old shard's switch point is recorded.
pub(super) fn may_adopt(record: &StreamRecord) -> bool {
    !needs_switch_points(record)
        || record
            .active_migration
            .as_ref()
            .is_some_and(|m| (0..m.from_shard_count).all(|s| m.switch_points.contains_key(&s)))
}

impl Resharding<'_> {
    /// `POST /coord/v1/streams/{p}/ordering`: validates the body, then sets the option.
    pub async fn change_stream_ordering(
        &self,
        prefix: &str,
        req: &OrderingRequest,
    ) -> Result<OrderingResponse, CoordError> {
        validate::validate_text(
            "requestedBy",
            req.requested_by.as_deref().unwrap_or(""),
            true,
        )?;
        validate::validate_text("reason", req.reason.as_deref().unwrap_or(""), true)?;
        let Some(ordering) = req.ordering else {
            return Err(CoordError::invalid(
                "ordering: is required (\"KEY\" or \"NONE\")",
            ));
        };
        let s = self.set_stream_ordering(prefix, ordering).await?;
        Ok(OrderingResponse {
            stream_prefix: prefix.to_owned(),
            ordering: s.record.ordering,
        })
    }

    /// Sets the stream's ordering option (compare-and-set on the stream record). Refused while a migration
    /// is active: its gates were decided with the option it started with.
    pub async fn set_stream_ordering(
        &self,
        prefix: &str,
        ordering: Ordering,
    ) -> Result<CachedStream, CoordError> {
        for _ in 0..MAX_CAS_ATTEMPTS {
            let Some(base) = self.load_stream(prefix).await? else {
                return Err(CoordError::StreamNotFound(format!(
                    "stream {prefix:?} does not exist; create it with POST /coord/v1/streams/{{p}}"
                )));
            };
            if base.record.ordering == ordering {
                return Ok(base);
            }
            if let Some(m) = &base.record.active_migration {
                return Err(CoordError::MigrationInProgress(format!(
                    "migration {} is active; change the ordering once it has finished",
                    m.resharding_id
                )));
            }
            let mut next = base.record.clone();
            next.ordering = ordering;
            next.updated_at_ms = self.clock().now_ms();
            if let Some(s) = self.write_stream(prefix, &base, next).await? {
                return Ok(s);
            }
        }
        Err(CoordError::Conflict(
            "stream record kept changing; retry".into(),
        ))
    }

    /// Parents some gate of `g` waits for whose pre-switch records `g`'s Redis consumer group has consumed.
    /// With the parent's switch point (every ordered switch records them): nothing pending up to it and
    /// last-delivered at or past it. Without one (a group adopted before switch points were kept): nothing
    /// pending and nothing left to deliver at all, once the drain grace has passed. A shard whose stream is
    /// gone holds nothing.
    pub(super) async fn parents_drained_for(&self, g: &Group) -> ShardSet {
        let mut drained = ShardSet::new();
        if g.ordering_gates.is_empty() {
            return drained;
        }
        let grace_passed = self.clock().now_ms() >= self.drain_evidence_from_ms(g);
        for p in g.waited_parents() {
            let key = shard_stream_key(&g.stream_prefix, p);
            let point = g.ordering_switch_points.get(&p);
            if point.is_none() && !grace_passed {
                continue;
            }
            match self.store().shard_groups(&key).await {
                Ok(Some(groups)) => {
                    let Some(mine) = groups
                        .iter()
                        .find(|x| x.name.as_deref() == Some(g.consumer_group.as_str()))
                    else {
                        continue;
                    };
                    if let Some(point) = point {
                        if delivered_to(mine, point)
                            && self.pending_up_to(&key, &g.consumer_group, point, 1).await
                                == Some(0)
                        {
                            drained.insert(p);
                        }
                        continue;
                    }
                    if mine.pending != Some(0) {
                        continue;
                    }
                    let delivered = mine.lag == Some(0) || {
                        let last = self.last_generated_id(&key).await;
                        last.is_some()
                            && mine.last_delivered_id.as_deref().and_then(parse_stream_id) >= last
                    };
                    if delivered {
                        drained.insert(p);
                    }
                }
                Ok(None) => {
                    drained.insert(p);
                }
                Err(e) => tracing::warn!(
                    key,
                    error = %store_error_text(&e),
                    "ordering evidence unavailable"
                ),
            }
        }
        drained
    }

    /// How many entries `group` has pending on `key` up to `point`, counting at most `cap` (None: unknown,
    /// or no such group).
    async fn pending_up_to(&self, key: &str, group: &str, point: &str, cap: usize) -> Option<i64> {
        match self
            .store()
            .shard_pending_up_to(key, group, point, cap)
            .await
        {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(key, error = %store_error_text(&e), "ordering evidence unavailable");
                None
            }
        }
    }

    /// Reconciler step: opens the gates of `name` whose parents drained for it.
    pub(super) async fn open_drained_gates(&self, name: &GroupName, c: Cached) -> Cached {
        let drained = self.parents_drained_for(&c.group).await;
        if drained.is_empty() {
            return c;
        }
        let timing = self.timing();
        self.update_group(name, |g, now| {
            Ok(rsc_group::ordering::open_gates(g, &drained, now, timing)?)
        })
        .await
        .unwrap_or(c)
    }

    /// The gates of `g` with what each parent still holds for it (the migration view).
    pub(super) async fn ordering_gates_view(&self, g: &Group) -> Vec<OrderingGate> {
        let mut out = Vec::new();
        for (child, parents) in &g.ordering_gates {
            let mut waiting_for = Vec::new();
            for &p in parents {
                let key = shard_stream_key(&g.stream_prefix, p);
                let point = g.ordering_switch_points.get(&p).cloned();
                let mine = match self.store().shard_groups(&key).await {
                    Ok(Some(groups)) => groups
                        .into_iter()
                        .find(|x| x.name.as_deref() == Some(g.consumer_group.as_str())),
                    _ => None,
                };
                let pending_before_switch = match &point {
                    Some(point) => {
                        self.pending_up_to(&key, &g.consumer_group, point, PENDING_COUNT_CAP)
                            .await
                    }
                    None => None,
                };
                waiting_for.push(ParentProgress {
                    shard_index: p,
                    stream_key: key,
                    delivered_to_switch_point: point
                        .as_deref()
                        .zip(mine.as_ref())
                        .map(|(point, mine)| delivered_to(mine, point)),
                    switch_point: point,
                    last_delivered_id: mine.as_ref().and_then(|m| m.last_delivered_id.clone()),
                    pending_before_switch,
                    pending: mine.as_ref().and_then(|m| m.pending),
                    lag: mine.as_ref().and_then(|m| m.lag),
                });
            }
            out.push(OrderingGate {
                child_shard: *child,
                stream_key: shard_stream_key(&g.stream_prefix, *child),
                read_fence: g.ordering_switch_points.get(child).cloned(),
                waiting_for,
            });
        }
        out
    }
}

/// Whether `group`'s last-delivered id on a parent is at or past the parent's switch point `point`.
fn delivered_to(group: &rsc_store::ConsumerGroupInfo, point: &str) -> bool {
    let last = group.last_delivered_id.as_deref().and_then(parse_stream_id);
    parse_stream_id(point).is_some_and(|sp| last.is_some_and(|d| d >= sp))
}
