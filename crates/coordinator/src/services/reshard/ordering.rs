//! Ordered streams in the coordinator: the ordering option on the stream record and the gates as the
//! migration view shows them (what each parent a gate waits for still holds for the group).
//!
//! The rules are pure (`rsc_protocol::ordering` which shards are children, `rsc_group::ordering` the gates,
//! `rsc_group::reshard::sync` when a group may adopt an ordered switch, `rsc_group::reshard::evidence` when a
//! parent counts as consumed); the reconciler's pass (`rsc_group::replica::reshard::pass`) reads the evidence
//! and opens the gates. A parent's evidence is read for one group only (its Redis consumer group on the
//! parent) and counts only the parent's records up to its switch point, so a slow group never holds up a
//! fast one, and records routed to a surviving parent after the switch do not hold up its children.

use super::CachedStream;
use super::perform::evidence_of;
use crate::domain_error::{BadReshard, Conflict, CoordError, MigrationBusy, StreamNotFound};
use crate::runtime::coordinator::{MAX_CAS_ATTEMPTS, Resharding};
use crate::runtime::shown_keys;
use rsc_group::model::Group;
use rsc_group::reshard::evidence::delivered_to;
use rsc_protocol::ordering::Ordering;
use rsc_protocol::validate;
use rsc_protocol::wire::{OrderingRequest, OrderingResponse};
use rsc_store::Shard;
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

impl Resharding<'_> {
    /// `POST /coord/v1/streams/{p}/ordering`: validates the body, then sets the option.
    pub async fn change_stream_ordering(
        &self,
        prefix: &str,
        req: &OrderingRequest,
    ) -> Result<OrderingResponse, CoordError> {
        validate::validate_attribution(
            req.requested_by.as_deref(),
            req.reason.as_deref(),
            validate::Reason::Required,
        )?;
        let Some(ordering) = req.ordering else {
            return Err(BadReshard::OrderingRequired.into());
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
                return Err(StreamNotFound::Ordering {
                    stream: prefix.to_owned(),
                }
                .into());
            };
            if base.record.ordering == ordering {
                return Ok(base);
            }
            if let Some(m) = &base.record.active_migration {
                return Err(MigrationBusy::Ordering {
                    id: m.resharding_id.clone(),
                }
                .into());
            }
            let mut next = base.record.clone();
            next.ordering = ordering;
            next.updated_at_ms = self.clock().now_ms();
            if let Some(s) = self.write_stream(prefix, base.revision, next).await? {
                return Ok(s);
            }
        }
        Err(Conflict::StreamKeptChanging.into())
    }

    /// The gates of `g` with what each parent still holds for it (the migration view).
    pub(super) async fn ordering_gates_view(&self, g: &Group) -> Vec<OrderingGate> {
        let mut out = Vec::new();
        for (child, parents) in &g.ordering_gates {
            let mut waiting_for = Vec::new();
            for &p in parents {
                let shard = Shard::new(g.stream_prefix.as_str(), p);
                let key = shown_keys::shard_stream(&shard);
                let point = g.ordering_switch_points.get(&p).cloned();
                let mine = match self.store().shard_groups(&shard).await {
                    Ok(Some(groups)) => groups
                        .into_iter()
                        .find(|x| x.name.as_deref() == Some(g.consumer_group.as_str())),
                    _ => None,
                };
                let pending_before_switch = match &point {
                    Some(point) => {
                        self.pending_up_to(&shard, &g.consumer_group, point, PENDING_COUNT_CAP)
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
                        .map(|(point, mine)| delivered_to(&evidence_of(mine.clone()), point)),
                    switch_point: point,
                    last_delivered_id: mine.as_ref().and_then(|m| m.last_delivered_id.clone()),
                    pending_before_switch,
                    pending: mine.as_ref().and_then(|m| m.pending),
                    lag: mine.as_ref().and_then(|m| m.lag),
                });
            }
            out.push(OrderingGate {
                child_shard: *child,
                stream_key: shown_keys::shard_stream(&Shard::new(g.stream_prefix.as_str(), *child)),
                read_fence: g.ordering_switch_points.get(child).cloned(),
                waiting_for,
            });
        }
        out
    }
}
