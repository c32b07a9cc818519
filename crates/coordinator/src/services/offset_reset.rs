//! Resetting a consumer group's position on its shard streams (`POST …/groups/{g}/offsets/reset`): the
//! plan per shard (current and new last-delivered id, records skipped or read again, pending entries), and
//! applying it with `XGROUP SETID` through `rsc-store`.
//!
//! Safety (ARCHITECTURE.md, "Resetting a group's position"): the reset is refused while any process may
//! read for the group — a live member (ACTIVE or LEAVING) or a hold on a fenced incarnation's shards — and
//! while a migration is active (resharding moves positions itself). `force` waives only members whose
//! lease has already lapsed in Redis (stopped processes the reconciler has not expired yet: they are
//! expired in the same write); it never overrides a live lease or a hold. An applied reset first writes a
//! hold on its shards into the group (`rsc_group::reset_hold`, by the revision compare-and-set that also
//! re-checks the group), plans and moves the positions under it, then lifts it: a member that joins
//! meanwhile is granted those shards only after they moved. Pending entries: moving forward acknowledges
//! every pending entry up to the new id (they lie in the skipped range); moving back keeps them all (they
//! are read again, as unacknowledged entries always are).

pub mod pause;
pub mod target;

use crate::domain_error::{
    ActiveMembers, BadReset, Conflict, CoordError, Corrupt, MigrationBusy, ResetIncomplete,
};
use crate::runtime::cache::GroupName;
use crate::runtime::coordinator::{Admin, Commit, MAX_CAS_ATTEMPTS};
use crate::runtime::shown_keys;
use rsc_group::heartbeat::Transition;
use rsc_group::model::{Group, ShardSet};
use rsc_group::reset_hold::{self, PlaceError};
use rsc_protocol::stream_id::{StreamId, parse_stream_id};
use rsc_protocol::validate;
use rsc_protocol::wire::offsets::{
    IncompleteReset, OffsetResetRequest, OffsetResetResponse, ResetDirection, ResetTo, ShardReset,
};
use rsc_store::{Shard, Walk};
use std::collections::BTreeSet;
use target::Target;

/// Records skipped or read again are counted up to this many per shard (a bounded walk over ids inside
/// Redis, `rsc-store`'s group_position.rs); a shift moves at most this many.
pub const COUNT_CAP: usize = 10_000;

/// How long a reset's hold lasts when written or extended (ms). Before each shard is moved the hold is
/// extended once less than half of it is left, so it never ends while positions move.
pub const HOLD_MS: i64 = 30_000;

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
        let (_, reason) = validate::validate_attribution(
            req.requested_by.as_deref(),
            req.reason.as_deref(),
            validate::Reason::Optional,
        )?;
        if reason.trim().is_empty() {
            return Err(BadReset::ReasonRequired.into());
        }
        validate::validate_text("value", req.value.as_deref().unwrap_or(""), false)?;
        let now_ms = self.server_now().await?;
        let target = target::target(req, now_ms)?;
        let base = self.require_group(name).await?;
        let group = &base.group;
        self.durability().ensure_mutable(group)?;
        let shards = target::shards(req.shards.as_deref(), group.shard_count)?;
        self.refuse_while_migrating(name, group).await?;
        let force = req.force.unwrap_or(false);
        let before_live = self.refuse_while_read(name, group, force, now_ms).await?;
        let dry_run = req.dry_run.unwrap_or(false);
        let mut notes = Vec::new();
        let planned = if dry_run {
            let mut planned = Vec::with_capacity(shards.len());
            for &shard in &shards {
                planned.push(self.plan_shard(name, shard, target).await?);
            }
            planned
        } else {
            // Under a hold: nobody is granted these shards until the positions moved (the join window).
            let mut until = self.place_reset_hold(name, &shards, force).await?;
            pause::reached(name, pause::Stop::Held).await;
            let moved = self.plan_and_apply(name, &shards, target, &mut until).await;
            let lifted = self.lift_reset_hold(name, until).await;
            let planned = moved?;
            match lifted {
                Ok(lifted) => notes.extend(lifted.iter().filter(|m| !before_live.contains(*m)).map(|m| {
                    format!(
                        "member {m:?} joined while the reset ran: it was granted its shards only after their \
                         positions had moved"
                    )
                })),
                Err(e) => notes.push(format!(
                    "the reset's hold could not be lifted ({e}); it ends by itself by {}, and the shards are \
                     granted then",
                    crate::runtime::clock::iso_ms(until)
                )),
            }
            tracing::warn!(
                stream = ?name.stream_prefix, group = ?name.consumer_group, to = target_name(req),
                value = ?req.value, shift = ?req.shift,
                shards = ?planned.iter().map(|p| p.row.shard_index).collect::<Vec<_>>(),
                requested_by = ?req.requested_by, reason = ?req.reason,
                "consumer group position reset by an operator"
            );
            planned
        };
        Ok(OffsetResetResponse {
            stream_prefix: name.stream_prefix.clone(),
            consumer_group: name.consumer_group.clone(),
            to: target.to(),
            value: req.value.clone(),
            shift: req.shift,
            dry_run,
            applied: !dry_run,
            count_cap: COUNT_CAP as i64,
            shards: planned.into_iter().map(|p| p.row).collect(),
            notes,
        })
    }

    /// Redis time (ms).
    async fn server_now(&self) -> Result<i64, CoordError> {
        self.store().server_time_ms().await.map_err(|e| {
            self.note_store_error(&e);
            CoordError::from(e)
        })
    }

    /// Plans every shard under the hold and moves each, checking before each that the hold is still this
    /// reset's (and extending it whenever less than half is left). A failure once a shard has started to
    /// move is [`CoordError::ResetIncomplete`]: which shards moved (from → to), which one is in doubt, which
    /// were not touched — never a bare error over a partial write.
    async fn plan_and_apply(
        &self,
        name: &GroupName,
        shards: &[u32],
        target: Target,
        until: &mut i64,
    ) -> Result<Vec<Planned>, CoordError> {
        let mut planned = Vec::with_capacity(shards.len());
        for &shard in shards {
            planned.push(self.plan_shard(name, shard, target).await?);
        }
        let mut moved: Vec<Planned> = Vec::with_capacity(planned.len());
        let mut left = planned.into_iter();
        while let Some(mut p) = left.next() {
            if let Err(e) = self.keep_reset_hold(name, until).await {
                let not_moved = std::iter::once(p).chain(left).collect();
                return Err(incomplete(name, moved, None, not_moved, e));
            }
            if let Err(e) = self.apply_shard(name, &mut p).await {
                return Err(incomplete(name, moved, Some(p), left.collect(), e));
            }
            tracing::warn!(
                stream = ?name.stream_prefix, group = ?name.consumer_group, shard = p.row.shard_index,
                from = %p.row.current_id, to = %p.row.new_id,
                pending_acknowledged = p.row.pending_acknowledged,
                "offset reset moved a shard's position"
            );
            moved.push(p);
            pause::reached(name, pause::Stop::Moved(moved.len())).await;
        }
        Ok(moved)
    }

    /// Writes the reset's hold on `shards` (compare-and-set on the group's revision, re-checking on the
    /// aggregate it writes that no member is live and no hold lasts; with `force`, the members whose lease
    /// lapsed in Redis are expired in the same write). Returns when the hold ends (Redis time, ms).
    async fn place_reset_hold(
        &self,
        name: &GroupName,
        shards: &[u32],
        force: bool,
    ) -> Result<i64, CoordError> {
        let held: ShardSet = shards.iter().copied().collect();
        for _ in 0..MAX_CAS_ATTEMPTS {
            let base = self.require_group(name).await?;
            let now = self.server_now().await?;
            self.refuse_while_migrating(name, &base.group).await?;
            let waived = self
                .refuse_while_read(name, &base.group, force, now)
                .await?;
            let (mut t, from) = if waived.is_empty() {
                (Transition::default(), base.group.as_ref().clone())
            } else {
                match rsc_group::tick::tick(&base.group, now, &waived, self.timing()) {
                    Ok(Some((mut t, _))) => {
                        let g = t
                            .group
                            .take()
                            .unwrap_or_else(|| base.group.as_ref().clone());
                        (t, g)
                    }
                    Ok(None) => (Transition::default(), base.group.as_ref().clone()),
                    Err(e) => {
                        return Err(Corrupt::ResetExpiryOverflow {
                            stream: name.stream_prefix.clone(),
                            group: name.consumer_group.clone(),
                            overflow: e,
                        }
                        .into());
                    }
                }
            };
            let until = now + HOLD_MS;
            let next = reset_hold::place(&from, &held, now, until).map_err(|e| match e {
                PlaceError::LiveMember(member) => ActiveMembers::LiveAtHold { member },
                PlaceError::Held(h) => ActiveMembers::HeldAtHold {
                    shards: h.shards,
                    member: h.member_id,
                    until_ms: h.until_ms,
                },
            })?;
            t.group = Some(next);
            // Decided on Redis time: the write holds only if Redis has reached it.
            t.not_before_ms = t.not_before_ms.max(now);
            match self.commit(name, &base, t).await? {
                Commit::Written(_) => return Ok(until),
                Commit::Conflict | Commit::ConditionFailed { .. } => continue,
            }
        }
        Err(Conflict::ResetHoldKeptChanging.into())
    }

    /// Before a shard is moved: checks, on the group read from Redis, that this reset's hold is still there
    /// and lasting (the hold it wrote, ending at `until`: a hold another reset placed after this one's
    /// vanished is not this one's), and extends it (to Redis time + [`HOLD_MS`]) once less than half of it
    /// is left. Fails (409, nothing more moved) when the hold is gone — it ended (the reset stalled past
    /// it), the group was deleted or recreated, or Redis lost the write — for then a member may already have
    /// been granted the shards.
    async fn keep_reset_hold(&self, name: &GroupName, until: &mut i64) -> Result<(), CoordError> {
        for _ in 0..MAX_CAS_ATTEMPTS {
            let base = self.require_group(name).await?;
            let now = self.server_now().await?;
            let Some(hold) = reset_hold::reset_hold(&base.group)
                .filter(|h| h.until_ms > now && h.until_ms == *until)
            else {
                return Err(Conflict::ResetHoldEnded {
                    stream: name.stream_prefix.clone(),
                    group: name.consumer_group.clone(),
                }
                .into());
            };
            if now + HOLD_MS / 2 < hold.until_ms {
                return Ok(());
            }
            let Some(next) = reset_hold::extend(&base.group, now + HOLD_MS, now) else {
                return Ok(());
            };
            let mut t = Transition::new(next);
            t.not_before_ms = now;
            match self.commit(name, &base, t).await? {
                Commit::Written(_) => {
                    *until = now + HOLD_MS;
                    return Ok(());
                }
                Commit::Conflict | Commit::ConditionFailed { .. } => continue,
            }
        }
        Err(Conflict::ResetExtendKeptChanging.into())
    }

    /// Removes the reset's hold — the one it wrote, ending at `until`; a hold another reset placed since is
    /// left alone — and settles the group (the members that joined meanwhile are granted the shards now).
    /// Returns the group's live members after it.
    async fn lift_reset_hold(
        &self,
        name: &GroupName,
        until: i64,
    ) -> Result<BTreeSet<String>, CoordError> {
        let live = |g: &Group| {
            g.members
                .values()
                .filter(|m| m.state.is_live())
                .map(|m| m.member_id.clone())
                .collect::<BTreeSet<_>>()
        };
        for _ in 0..MAX_CAS_ATTEMPTS {
            let base = self.require_group(name).await?;
            let now = self.clock().now_ms();
            let ours = reset_hold::reset_hold(&base.group).is_some_and(|h| h.until_ms == until);
            let next = ours
                .then(|| reset_hold::lift(&base.group, now, self.timing()))
                .flatten();
            let Some(next) = next else {
                return Ok(live(&base.group));
            };
            match self.commit(name, &base, Transition::new(next)).await? {
                Commit::Written(c) => return Ok(live(&c.group)),
                Commit::Conflict | Commit::ConditionFailed { .. } => continue,
            }
        }
        Err(Conflict::ResetLiftKeptChanging.into())
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
        if let Some(h) = group.holds.iter().find(|h| h.in_effect_at(now_ms)) {
            if h.member_id == reset_hold::RESET_HOLD_MEMBER {
                return Err(ActiveMembers::ResetRunning {
                    shards: h.shards.clone(),
                    until_ms: h.until_ms,
                }
                .into());
            }
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
                members: live.into_iter().collect(),
            }
            .into());
        }
        let leases = self.store().leases(name).await.map_err(|e| {
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
        let id = Shard::new(name.stream_prefix.as_str(), shard);
        let key = shown_keys::shard_stream(&id);
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
            .shard_stream_info(&id)
            .await
            .map_err(store_err)?
            .ok_or_else(missing)?;
        let consumer_group = self
            .store()
            .shard_groups(&id)
            .await
            .map_err(store_err)?
            .unwrap_or_default()
            .into_iter()
            .find(|g| g.name.as_deref() == Some(name.consumer_group.as_str()))
            .ok_or_else(missing)?;
        let id_of = |id: Option<&String>| id.and_then(|s| parse_stream_id(s)).unwrap_or((0, 0));
        let current = id_of(consumer_group.last_delivered_id.as_ref());
        let last = id_of(info.last_generated_id.as_ref());
        let (new, count, capped, clamped) = if let Target::Shift(n) = target {
            let (new, moved, clamped) = self.shift_shard(&id, current, last, n).await?;
            (new, moved, false, clamped)
        } else {
            let new = target::new_id(target, current, last);
            let (count, capped) = self.count_between(&id, current, new).await?;
            (new, count, capped, false)
        };
        let direction = target::direction(current, new);
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
                clamped,
                pending_before,
                pending_acknowledged,
                pending_after: pending_before - pending_acknowledged,
            },
            entries_read,
        })
    }

    /// Records after the lower of `a` and `b` up to the higher, counted up to [`COUNT_CAP`]: (count, capped).
    async fn count_between(
        &self,
        shard: &Shard,
        a: StreamId,
        b: StreamId,
    ) -> Result<(i64, bool), CoordError> {
        if a == b {
            return Ok((0, false));
        }
        let (low, high) = if a < b { (a, b) } else { (b, a) };
        self.store()
            .shard_count_between(
                shard,
                &target::format_id(low),
                &target::format_id(high),
                COUNT_CAP,
            )
            .await
            .map_err(|e| {
                self.note_store_error(&e);
                CoordError::from(e)
            })
    }

    /// A shift by `n` records from `current` on `shard` (last generated id `last`): (new id, records moved,
    /// whether the stream ended first). Back by `n`: the `n` records at or before `current` are read again,
    /// so the new id is the record before them (`0-0` when the stream has no more). Forward by `n`: the new
    /// id is the `n`th record after `current` (the last generated id when fewer are left).
    async fn shift_shard(
        &self,
        shard: &Shard,
        current: StreamId,
        last: StreamId,
        n: i64,
    ) -> Result<(StreamId, i64, bool), CoordError> {
        let want = usize::try_from(n.unsigned_abs()).unwrap_or(COUNT_CAP);
        let from = target::format_id(current);
        let id = |w: &rsc_store::Walked| w.last_id.as_deref().and_then(parse_stream_id);
        if n < 0 {
            // One record more than those read again: the position goes just after it.
            let w = self.walk(shard, &from, Walk::Back, want + 1).await?;
            if w.count > want
                && let Some(before) = id(&w)
            {
                return Ok((before, want as i64, false));
            }
            return Ok(((0, 0), w.count as i64, w.count < want));
        }
        let w = self.walk(shard, &from, Walk::Forward, want).await?;
        match id(&w) {
            Some(nth) if w.count == want => Ok((nth, want as i64, false)),
            _ => Ok((last.max(current), w.count as i64, true)),
        }
    }

    /// [`rsc_store::Store::shard_walk`], its errors noted.
    async fn walk(
        &self,
        shard: &Shard,
        from: &str,
        walk: Walk,
        count: usize,
    ) -> Result<rsc_store::Walked, CoordError> {
        self.store()
            .shard_walk(shard, from, walk, count)
            .await
            .map_err(|e| {
                self.note_store_error(&e);
                CoordError::from(e)
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
        let shard = Shard::new(name.stream_prefix.as_str(), row.shard_index);
        if row.direction != ResetDirection::Unchanged {
            self.store()
                .shard_group_set_id(&shard, group, &row.new_id, p.entries_read)
                .await
                .map_err(store_err)?;
        }
        if row.direction == ResetDirection::Skip && row.pending_before > 0 {
            let limit = usize::try_from(row.pending_before).unwrap_or(usize::MAX);
            row.pending_acknowledged = self
                .store()
                .shard_ack_pending_up_to(&shard, group, &row.new_id, limit)
                .await
                .map_err(store_err)?;
        }
        let after = self
            .store()
            .shard_groups(&shard)
            .await
            .map_err(store_err)?
            .unwrap_or_default()
            .into_iter()
            .find(|g| g.name.as_deref() == Some(group))
            .and_then(|g| g.pending);
        row.pending_after = after.unwrap_or(row.pending_before - row.pending_acknowledged);
        Ok(())
    }
}

/// What a reset that stopped on `cause` had done: [`CoordError::ResetIncomplete`] once any shard has started
/// to move, else `cause` itself (nothing was written).
fn incomplete(
    name: &GroupName,
    moved: Vec<Planned>,
    in_doubt: Option<Planned>,
    not_moved: Vec<Planned>,
    cause: CoordError,
) -> CoordError {
    if moved.is_empty() && in_doubt.is_none() {
        return cause;
    }
    CoordError::ResetIncomplete(Box::new(ResetIncomplete {
        stream: name.stream_prefix.clone(),
        group: name.consumer_group.clone(),
        done: IncompleteReset {
            moved: moved.into_iter().map(|p| p.row).collect(),
            in_doubt: in_doubt.map(|p| p.row),
            not_moved: not_moved.iter().map(|p| p.row.shard_index).collect(),
            cause: cause.to_string(),
        },
    }))
}

fn target_name(req: &OffsetResetRequest) -> &'static str {
    req.to.map_or("", ResetTo::as_str)
}
