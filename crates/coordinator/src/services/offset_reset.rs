//! Resetting a consumer group's position on its shard streams (`POST …/groups/{g}/offsets/reset`): the
//! plan per shard (current and new last-delivered id, records skipped or read again, pending entries), and
//! applying it with `XGROUP SETID` through `rsc-store`.
//!
//! Safety (ARCHITECTURE.md, "Resetting a group's position"): the reset is refused while any process may
//! read for the group — a live member (ACTIVE or LEAVING) or a hold on a fenced incarnation's shards — and
//! while a migration is active (resharding moves positions itself). `force` waives only members whose
//! lease has already lapsed in Redis (stopped processes the reconciler has not expired yet); it never
//! overrides a live lease or a hold. Pending entries: moving forward acknowledges every pending entry up to
//! the new id (they lie in the skipped range); moving back keeps them all (they are read again, as
//! unacknowledged entries always are).

pub mod target;

use crate::domain_error::{ActiveMembers, Conflict, CoordError, MigrationBusy};
use crate::runtime::cache::GroupName;
use crate::runtime::coordinator::Admin;
use rsc_group::model::Group;
use rsc_protocol::stream_id::parse_stream_id;
use rsc_protocol::validate;
use rsc_protocol::wire::offsets::{
    OffsetResetRequest, OffsetResetResponse, ResetDirection, ResetTo, ShardReset,
};
use std::collections::BTreeSet;
use target::Target;

/// Records skipped or read again are counted up to this many per shard (a bounded `XRANGE`).
pub const COUNT_CAP: usize = 10_000;

/// One shard's plan with what applying it needs.
struct Planned {
    row: ShardReset,
    entries_read: Option<i64>,
}

impl Admin<'_> {
    /// `POST …/offsets/reset`: checks the request and the group, computes the plan per shard, and applies it
    /// unless `dryRun`.
    pub async fn reset_offsets(
        &self,
        name: &GroupName,
        req: &OffsetResetRequest,
    ) -> Result<OffsetResetResponse, CoordError> {
        validate::validate_text(
            "requestedBy",
            req.requested_by.as_deref().unwrap_or(""),
            true,
        )?;
        validate::validate_text("reason", req.reason.as_deref().unwrap_or(""), false)?;
        validate::validate_text("value", req.value.as_deref().unwrap_or(""), false)?;
        let now_ms = self.store().server_time_ms().await.map_err(|e| {
            self.note_store_error(&e);
            CoordError::from(e)
        })?;
        let target = target::target(req, now_ms)?;
        let base = self.require_group(name).await?;
        let group = &base.group;
        self.durability().ensure_mutable(group)?;
        let shards = target::shards(req.shards.as_deref(), group.shard_count)?;
        self.refuse_while_migrating(name, group).await?;
        let before_live = self
            .refuse_while_read(name, group, req.force.unwrap_or(false), now_ms)
            .await?;
        let mut planned = Vec::with_capacity(shards.len());
        for shard in shards {
            planned.push(self.plan_shard(name, shard, target).await?);
        }
        let dry_run = req.dry_run.unwrap_or(false);
        let mut notes = Vec::new();
        if !dry_run {
            for p in &mut planned {
                self.apply_shard(name, p).await?;
            }
            notes.extend(
                self.joined_meanwhile(name, base.revision, &before_live)
                    .await,
            );
            tracing::warn!(
                stream = ?name.stream_prefix, group = ?name.consumer_group, to = target_name(req),
                value = ?req.value, shards = ?planned.iter().map(|p| p.row.shard_index).collect::<Vec<_>>(),
                requested_by = ?req.requested_by, reason = ?req.reason,
                "consumer group position reset by an operator"
            );
        }
        Ok(OffsetResetResponse {
            stream_prefix: name.stream_prefix.clone(),
            consumer_group: name.consumer_group.clone(),
            to: target.to(),
            value: req.value.clone(),
            dry_run,
            applied: !dry_run,
            count_cap: COUNT_CAP as i64,
            shards: planned.into_iter().map(|p| p.row).collect(),
            notes,
        })
    }

    /// 409 while the group or its stream has a migration in flight: resharding moves positions itself.
    async fn refuse_while_migrating(
        &self,
        name: &GroupName,
        group: &Group,
    ) -> Result<(), CoordError> {
        let stream_active = self
            .resharding()
            .load_stream(&name.stream_prefix)
            .await?
            .and_then(|s| s.record.active_migration.map(|m| m.resharding_id));
        if let Some(id) = group.active_migration_id.clone().or(stream_active) {
            return Err(MigrationBusy::Reset {
                stream: name.stream_prefix.clone(),
                id,
            }
            .into());
        }
        Ok(())
    }

    /// 409 while any process may read for the group: a live member (unless `force` and its lease lapsed in
    /// Redis) or a hold. Returns the live members the group lists (those `force` waived).
    async fn refuse_while_read(
        &self,
        name: &GroupName,
        group: &Group,
        force: bool,
        now_ms: i64,
    ) -> Result<BTreeSet<String>, CoordError> {
        if let Some(h) = group.holds.iter().find(|h| h.until_ms > now_ms) {
            return Err(ActiveMembers::Held {
                shards: h.shards.clone(),
                member: h.member_id.clone(),
                until_ms: h.until_ms,
            }
            .into());
        }
        let live: BTreeSet<String> = group
            .members
            .values()
            .filter(|m| m.state.is_live())
            .map(|m| m.member_id.clone())
            .collect();
        if live.is_empty() {
            return Ok(live);
        }
        if !force {
            return Err(ActiveMembers::Live {
                members: live.iter().cloned().collect(),
            }
            .into());
        }
        let leases = self.store().leases(&self.keys(name)).await.map_err(|e| {
            self.note_store_error(&e);
            CoordError::from(e)
        })?;
        let leased: Vec<(String, i64)> = leases
            .iter()
            .filter(|(m, until)| live.contains(m) && *until > now_ms)
            .map(|(m, until)| (m.clone(), *until))
            .collect();
        if !leased.is_empty() {
            return Err(ActiveMembers::Leased { leases: leased }.into());
        }
        Ok(live)
    }

    /// One shard's plan, read from Redis (`XINFO STREAM`, `XINFO GROUPS`, a bounded `XRANGE` count).
    async fn plan_shard(
        &self,
        name: &GroupName,
        shard: u32,
        target: Target,
    ) -> Result<Planned, CoordError> {
        let key = rsc_store::Keyspace::shard_stream(&name.stream_prefix, shard);
        let store_err = |e: rsc_store::StoreError| {
            self.note_store_error(&e);
            CoordError::from(e)
        };
        let missing = || {
            CoordError::from(Conflict::ShardMissing {
                key: key.clone(),
                group: name.consumer_group.clone(),
            })
        };
        let info = self
            .store()
            .shard_stream_info(&key)
            .await
            .map_err(store_err)?
            .ok_or_else(missing)?;
        let consumer_group = self
            .store()
            .shard_groups(&key)
            .await
            .map_err(store_err)?
            .unwrap_or_default()
            .into_iter()
            .find(|g| g.name.as_deref() == Some(name.consumer_group.as_str()))
            .ok_or_else(missing)?;
        let id_of = |id: Option<&String>| id.and_then(|s| parse_stream_id(s)).unwrap_or((0, 0));
        let current = id_of(consumer_group.last_delivered_id.as_ref());
        let last = id_of(info.last_generated_id.as_ref());
        let new = target::new_id(target, last);
        let direction = target::direction(current, new);
        let (low, high) = if new > current {
            (current, new)
        } else {
            (new, current)
        };
        let (count, capped) = if direction == ResetDirection::Unchanged {
            (0, false)
        } else {
            self.store()
                .shard_count_between(
                    &key,
                    &target::format_id(low),
                    &target::format_id(high),
                    COUNT_CAP,
                )
                .await
                .map_err(store_err)?
        };
        let pending_before = consumer_group.pending.unwrap_or(0);
        // Every pending entry is at or before the last-delivered id, so moving forward passes them all.
        let pending_acknowledged = if direction == ResetDirection::Skip {
            pending_before
        } else {
            0
        };
        let entries_read = info.entries_added.and_then(|added| match target {
            Target::Earliest => Some(added - info.length),
            Target::Latest => Some(added),
            _ => None,
        });
        Ok(Planned {
            row: ShardReset {
                shard_index: shard,
                stream_key: key.clone(),
                current_id: target::format_id(current),
                new_id: target::format_id(new),
                direction,
                records_skipped: if direction == ResetDirection::Skip {
                    count
                } else {
                    0
                },
                records_reread: if direction == ResetDirection::Reread {
                    count
                } else {
                    0
                },
                count_capped: capped,
                pending_before,
                pending_acknowledged,
                pending_after: pending_before - pending_acknowledged,
            },
            entries_read,
        })
    }

    /// Sets the shard's last-delivered id, acknowledges the pending entries a forward move passes, and
    /// reads the pending count back into the row.
    async fn apply_shard(&self, name: &GroupName, p: &mut Planned) -> Result<(), CoordError> {
        let row = &mut p.row;
        let store_err = |e: rsc_store::StoreError| {
            self.note_store_error(&e);
            CoordError::from(e)
        };
        let group = name.consumer_group.as_str();
        if row.direction != ResetDirection::Unchanged {
            self.store()
                .shard_group_set_id(&row.stream_key, group, &row.new_id, p.entries_read)
                .await
                .map_err(store_err)?;
        }
        if row.direction == ResetDirection::Skip && row.pending_before > 0 {
            let limit = usize::try_from(row.pending_before).unwrap_or(usize::MAX);
            row.pending_acknowledged = self
                .store()
                .shard_ack_pending_up_to(&row.stream_key, group, &row.new_id, limit)
                .await
                .map_err(store_err)?;
        }
        let after = self
            .store()
            .shard_groups(&row.stream_key)
            .await
            .map_err(store_err)?
            .unwrap_or_default()
            .into_iter()
            .find(|g| g.name.as_deref() == Some(group))
            .and_then(|g| g.pending);
        row.pending_after = after.unwrap_or(row.pending_before - row.pending_acknowledged);
        Ok(())
    }

    /// A note for each live member that the group did not list when the reset was checked: a member that
    /// joined while the positions moved may have been handed records from either side of the new position.
    async fn joined_meanwhile(
        &self,
        name: &GroupName,
        revision: u64,
        before: &BTreeSet<String>,
    ) -> Vec<String> {
        match self.store().revision(&self.keys(name)).await {
            Ok(Some(r)) if r == revision => return Vec::new(),
            _ => {}
        }
        let Ok(Some(now)) = self.load(name).await else {
            return vec![
                "the group could not be read back after the reset; check its members".to_owned(),
            ];
        };
        now.group
            .members
            .values()
            .filter(|m| m.state.is_live() && !before.contains(&m.member_id))
            .map(|m| {
                format!(
                    "member {:?} joined while the reset ran: it may have been handed records on the other side \
                     of the new position once (at-least-once; nothing is lost)",
                    m.member_id
                )
            })
            .collect()
    }
}

fn target_name(req: &OffsetResetRequest) -> &'static str {
    req.to.map_or("", ResetTo::as_str)
}
