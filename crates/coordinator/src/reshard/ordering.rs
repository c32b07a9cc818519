//! Ordered streams in the coordinator: the ordering option on the stream record, the scales an ordered
//! stream accepts, the per-group drain evidence that opens a child shard's gate, and the gates as the
//! migration view shows them.
//!
//! The rule and the gates themselves are pure (`rsc_protocol::ordering`, `rsc_group::ordering`); here they
//! meet Redis. A parent's evidence is read for one group only (its Redis consumer group on the parent:
//! nothing pending and everything delivered), after the drain grace, when producers' cached routing has
//! certainly expired — so a slow group never holds up a fast one.

use super::*;
use rsc_protocol::ordering::{Ordering, ordered_scale_supported};
use rsc_protocol::wire::{OrderingRequest, OrderingResponse};
use serde::Serialize;

/// One gated child shard of a group, and what each parent it waits for still holds for that group.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderingGate {
    pub child_shard: u32,
    pub stream_key: String,
    pub waiting_for: Vec<ParentProgress>,
}

/// A parent shard a gate waits for: this group's pending entries and lag on it (None when unknown).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentProgress {
    pub shard_index: u32,
    pub stream_key: String,
    pub pending: Option<i64>,
    pub lag: Option<i64>,
}

/// Refuses a scale an ordered stream cannot keep per-key order across (see
/// `rsc_protocol::ordering::ordered_scale_supported`); any scale of an unordered stream passes.
pub(super) fn check_ordered_scale(record: &StreamRecord, target: u32) -> Result<(), CoordError> {
    if record.ordering != Ordering::Key {
        return Ok(());
    }
    ordered_scale_supported(record.shard_count, target)
        .map_err(|why| CoordError::invalid(format!("targetShardCount: {why}")))
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

    /// Parents some gate of `g` waits for whose pre-switch records `g`'s Redis consumer group has consumed:
    /// nothing pending and nothing left to deliver (lag 0, or last-delivered at or past the stream's last id),
    /// once the drain grace has passed; for a parent read-fenced at a switch point, nothing pending up to
    /// it and last-delivered at or past it. A shard whose stream is gone holds nothing.
    pub(super) async fn parents_drained_for(&self, g: &Group) -> ShardSet {
        let mut drained = ShardSet::new();
        if g.ordering_gates.is_empty() || self.clock().now_ms() < self.drain_evidence_from_ms(g) {
            return drained;
        }
        for p in rsc_group::ordering::waited_parents(g) {
            let key = shard_stream_key(&g.stream_prefix, p);
            match self.store().shard_groups(&key).await {
                Ok(Some(groups)) => {
                    let Some(mine) = groups
                        .iter()
                        .find(|x| x.name.as_deref() == Some(g.consumer_group.as_str()))
                    else {
                        continue;
                    };
                    // A fenced parent (a surviving child itself) drains by its pre-switch records only:
                    // its owner holds back what follows its switch point, so a full drain never comes.
                    if let Some(point) = g.ordering_fences.get(&p) {
                        let last = mine.last_delivered_id.as_deref().and_then(parse_stream_id);
                        let delivered =
                            parse_stream_id(point).is_some_and(|sp| last.is_some_and(|d| d >= sp));
                        if delivered
                            && self.pending_up_to(&key, &g.consumer_group, point).await
                                == Some(false)
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

    /// Whether `group` has an entry pending on `key` up to `point` (None: unknown, or no such group).
    async fn pending_up_to(&self, key: &str, group: &str, point: &str) -> Option<bool> {
        match self.store().shard_pending_up_to(key, group, point).await {
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
                let info = self.shard_group_info(&key, &g.consumer_group).await;
                waiting_for.push(ParentProgress {
                    shard_index: p,
                    stream_key: key,
                    pending: info.pending,
                    lag: info.lag,
                });
            }
            out.push(OrderingGate {
                child_shard: *child,
                stream_key: shard_stream_key(&g.stream_prefix, *child),
                waiting_for,
            });
        }
        out
    }
}
