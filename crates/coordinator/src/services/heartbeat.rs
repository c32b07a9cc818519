//! The heartbeat path: the one endpoint that carries nearly all traffic. What to do when (decide, confirm,
//! renew, write, retry) is the replica core's (`rsc_group::replica::heartbeat`, which the simulation runs
//! too); this file performs each step against the cache, Redis, the batch and the reconciler.
//!
//! A rejection that depends on group state (an unknown or fenced member), decided on a cached aggregate, is
//! confirmed with one HGET of the revision rather than a reload of the group.
//!
//! Steady heartbeats (nothing in the aggregate changes) cost exactly one Redis round trip: a script that
//! checks the revision the decision was made on, checks and renews the member's lease and stores its progress.
//! Anything else is a transition, committed by compare-and-set together with the group's other waiting
//! transitions (`heartbeat/batch.rs`). A lost race or a moved revision means "decide again on fresh state", a bounded
//! number of times; infrastructure
//! trouble is answered with `RETRY` (HTTP 200), which both reference clients treat as "keep state, try again"
//! and which never renews a client's lease.
//!
//! A member incarnation belongs to the principal that joined it (`Member::owner`): a heartbeat or leave for it
//! from another principal (not an ADMIN) is refused with 403 `MEMBER_OWNED_BY_ANOTHER_PRINCIPAL`. The check
//! reads the aggregate the decision is made on, so it costs no Redis round trip; the steady path's revision
//! check covers it like everything else in the aggregate. Unauthenticated heartbeats record and check nothing.

mod batch;

use crate::domain_error::{BadRequest, CoordError, MemberCap};
use crate::observability::stats::Stats;
use crate::runtime::cache::{Cached, GroupName};
use crate::runtime::coordinator::Heartbeats;
use crate::security::principal::Principal;
use crate::security::roles::Role;
use crate::services::durability::Recording;
use rsc_group::heartbeat::explain::{self, Explanation, StreamLookup};
use rsc_group::heartbeat::release_forecast::{self, Holder};
use rsc_group::heartbeat::{Caller, rejected_response};
use rsc_group::replica::heartbeat::{
    Confirmation, HeartbeatFlow, Notes, ReadFailure, Renewal, Step,
};
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatResponse, HeartbeatStatus};
use rsc_store::{HeartbeatOutcome, PeerLease, Watch};
use serde::Serialize;

/// Hot per-member data stored beside the aggregate on every accepted heartbeat.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MemberProgress<'a> {
    member_name: Option<&'a str>,
    member_epoch: i64,
    metadata_version: i64,
    runtime_max_concurrency: i64,
    available_concurrency: i64,
    shard_progress: &'a [rsc_protocol::wire::ShardProgressReport],
    last_heartbeat_at_ms: i64,
}

/// The heartbeat's caller as the state machine sees it (None: heartbeats are not authenticated).
pub fn caller(principal: Option<&Principal>) -> Caller<'_> {
    match principal {
        None => Caller::ANONYMOUS,
        Some(p) => Caller {
            principal: Some(&p.username),
            acts_for_any_member: p.roles.contains(Role::Admin),
        },
    }
}

impl Heartbeats<'_> {
    /// Handles one validated heartbeat from `principal` (None when heartbeats are not authenticated). A
    /// contract response (HTTP 200), or 403 when the member belongs to another principal.
    pub async fn heartbeat(
        &self,
        name: &GroupName,
        member_id: &str,
        req: &HeartbeatRequest,
        principal: Option<&Principal>,
    ) -> Result<HeartbeatResponse, CoordError> {
        let mut response = self
            .heartbeat_inner(name, member_id, req, caller(principal))
            .await?;
        self.stats().count_heartbeat(response.status);
        self.metrics()
            .count_heartbeat(&name.stream_prefix, &name.consumer_group, response.status);
        if response.status != HeartbeatStatus::Ok && response.message.is_none() {
            response.message = Some(self.explain(name, member_id, req, &response).await);
        }
        Ok(response)
    }

    /// What a non-OK answer means for this member and what it should do, in words (the `message` field),
    /// as the core writes it (`rsc_group::heartbeat::explain`) from the request and the cached group; for an
    /// unknown group, after one read of the stream record (a missing stream or only a missing group).
    async fn explain(
        &self,
        name: &GroupName,
        path_member_id: &str,
        req: &HeartbeatRequest,
        response: &HeartbeatResponse,
    ) -> String {
        let (p, g) = (&name.stream_prefix, &name.consumer_group);
        let cached = self.cache().get(name);
        let group = cached.as_ref().map(|c| &*c.group);
        match explain::explain(p, g, path_member_id, req, response, group, self.timing()) {
            Explanation::Text(message) => message,
            Explanation::GroupUnknown => {
                let stream = match self.resharding().load_stream(p).await {
                    Ok(Some(_)) => StreamLookup::Exists,
                    Ok(None) => StreamLookup::Missing,
                    Err(e) => StreamLookup::Failed(e.to_string()),
                };
                explain::missing_group(p, g, &stream)
            }
        }
    }

    /// One heartbeat, with two hints. The release forecast (`rsc_group::heartbeat::release_forecast`): when the
    /// answer names pending shards another member holds, the caller is asked back just after that member is
    /// due to release the first of them (its lease read in the steady renewal's script, or with one ZSCORE
    /// after a write). The failover
    /// hint of `coordinator/lapse_forecasts.rs`: when the steady renewal saw another member's lease end within
    /// one interval and that member's expiry would give this caller shards, the answer asks the caller back
    /// just after the lapse (a shorter `heartbeatIntervalMs`); when the lease has already lapsed, the expiry is
    /// reconciled now and the heartbeat decided again, so the answer carries the grant instead of the caller's
    /// next heartbeat, an interval later.
    async fn heartbeat_inner(
        &self,
        name: &GroupName,
        member_id: &str,
        req: &HeartbeatRequest,
        caller: Caller<'_>,
    ) -> Result<HeartbeatResponse, CoordError> {
        let (mut response, mut renewed) = self.decide(name, member_id, req, caller).await?;
        if response.status != HeartbeatStatus::Ok {
            return Ok(response);
        }
        if response.heartbeat_interval_ms < self.timing().heartbeat_interval_ms {
            // Only the acknowledgement request shortens an answer before the hints below.
            Stats::bump(&self.stats().acknowledgements_requested);
        }
        let awaited =
            match &mut renewed {
                Some(r) => r.awaited.take().zip(r.leases.awaited_deadline_ms).map(
                    |(holder, deadline_ms)| AwaitedLease {
                        holder,
                        deadline_ms,
                        now_ms: r.leases.now_ms,
                    },
                ),
                None => self.awaited_lease(name, member_id, &response).await,
            };
        if let Some(back_in) = awaited.and_then(|a| {
            release_forecast::back_for_release_ms(self.timing(), a.now_ms, &a.holder, a.deadline_ms)
        }) && back_in < response.heartbeat_interval_ms
        {
            Stats::bump(&self.stats().release_intervals_shortened);
            response.heartbeat_interval_ms = back_in;
        }
        let Some(RenewalSeen { base, leases, .. }) = renewed else {
            return Ok(response);
        };
        let Some(peer) = leases.next_lapse else {
            return Ok(response);
        };
        let lapse = LapseSeen {
            base,
            peer,
            now_ms: leases.now_ms,
        };
        let gainers = self.state().lapses.gainers(
            name,
            &lapse.base,
            &lapse.peer.member,
            lapse.peer.deadline_ms.max(lapse.now_ms),
            self.timing(),
        );
        if !gainers.contains(member_id) {
            return Ok(response);
        }
        if lapse.peer.deadline_ms <= lapse.now_ms {
            tracing::debug!(group = %name, member = %member_id, lapsed = %lapse.peer.member,
                "a lapsed member's shards go to this member: expiring it now and answering with the grant");
            Stats::bump(&self.stats().failover_grants_in_answer);
            self.reconciler().reconcile_group(name).await;
            return Ok(self.decide(name, member_id, req, caller).await?.0);
        }
        let back_in = lapse.peer.deadline_ms - lapse.now_ms + LAPSE_MARGIN_MS;
        if back_in < response.heartbeat_interval_ms {
            Stats::bump(&self.stats().failover_intervals_shortened);
            response.heartbeat_interval_ms = back_in;
        }
        Ok(response)
    }

    /// For an answer that was not a steady renewal (a join, a write) and names pending shards: the member the
    /// caller waits for, its lease deadline read with one ZSCORE, and the replica's estimate of Redis time (the
    /// steady renewal reads it in its own script instead). None when no other member holds a pending shard, or
    /// on any error (it is only a hint).
    async fn awaited_lease(
        &self,
        name: &GroupName,
        member_id: &str,
        response: &HeartbeatResponse,
    ) -> Option<AwaitedLease> {
        let cached = self.cache().get(name)?;
        let holder =
            self.state()
                .releases
                .awaited_for(name, &cached, self.timing(), member_id, response)?;
        let deadline_ms = self
            .store()
            .lease_of(name, &holder.member_id)
            .await
            .ok()??;
        Some(AwaitedLease {
            holder,
            deadline_ms,
            now_ms: self.clock().now_ms(),
        })
    }

    /// Drives the replica core's heartbeat flow (`rsc_group::replica::heartbeat`) with this replica's cache,
    /// store, batch and reconciler. Also returns, when the answer is a steady renewal's, what the renewal saw
    /// of other members' leases.
    async fn decide(
        &self,
        name: &GroupName,
        member_id: &str,
        req: &HeartbeatRequest,
        caller: Caller<'_>,
    ) -> Result<(HeartbeatResponse, Option<RenewalSeen>), CoordError> {
        let mut seen = None;
        let (mut flow, mut step) = HeartbeatFlow::<Cached>::start(member_id, caller, self.timing());
        let mut unreadable = None;
        let response = loop {
            step = match step {
                Step::Read | Step::Reload => {
                    if matches!(step, Step::Reload) {
                        self.cache().invalidate(name);
                    }
                    match self.cached_or_load(name).await {
                        Ok((cached, fresh)) => {
                            if let Some(c) = &cached {
                                check_progress_shards(&c.group, req)?;
                                self.check_member_cap(c, member_id, req, caller)?;
                                check_instance_owner(&c.group, member_id, req, caller)?;
                            }
                            flow.on_read(req, Ok(cached), fresh, self.clock().now_ms())
                        }
                        Err(CoordError::MetadataCorrupt(corrupt)) => {
                            let why = corrupt.to_string();
                            tracing::error!(error = %why, "heartbeat refused: group metadata unreadable");
                            unreadable = Some(why);
                            flow.on_read(req, Err(ReadFailure::Corrupt), false, 0)
                        }
                        Err(_) => flow.on_read(req, Err(ReadFailure::Unavailable), false, 0),
                    }
                }
                Step::ConfirmCurrent(base) => {
                    let confirmation = match self.still_current(name, &base).await {
                        Ok(true) => Confirmation::Current,
                        Ok(false) => Confirmation::Moved,
                        Err(e) if e.is_transient() => Confirmation::Unavailable,
                        Err(_) => Confirmation::Unreadable,
                    };
                    flow.on_confirmed(req, confirmation)
                }
                Step::RecordSuspicion { base, signal } => {
                    let written = match self
                        .durability()
                        .record_suspicion(name, &base, &signal)
                        .await
                    {
                        Recording::Written(c) => Some(c.revision),
                        Recording::Unchanged(_) | Recording::NotRecorded(_) => None,
                    };
                    flow.on_recorded(req, written)
                }
                Step::Renew(base) => {
                    let awaited = flow.steady_answer().and_then(|answer| {
                        self.state().releases.awaited_for(
                            name,
                            &base,
                            self.timing(),
                            member_id,
                            answer,
                        )
                    });
                    let awaited_id = awaited.as_ref().map(|h| h.member_id.as_str());
                    let (renewal, leases) =
                        self.renew(name, &base, member_id, req, awaited_id).await;
                    seen = leases.map(|leases| RenewalSeen {
                        base,
                        leases,
                        awaited,
                    });
                    flow.on_renewed(req, renewal)
                }
                Step::Write => {
                    let reply = self.write_batched(name, member_id, req, caller).await;
                    flow.on_batch(req, reply)
                }
                Step::Reconcile => {
                    self.reconciler().reconcile_group(name).await;
                    flow.on_reconciled(req)
                }
                Step::Answer(response) => break response,
                Step::Refuse { owner } => {
                    return Err(CoordError::MemberOwnedByAnotherPrincipal {
                        member: member_id.to_owned(),
                        stream: name.stream_prefix.clone(),
                        group: name.consumer_group.clone(),
                        owner,
                        caller: caller.principal.unwrap_or_default().to_owned(),
                    });
                }
                Step::FailClosed => {
                    break self.fail_closed(
                        name,
                        req,
                        unreadable.as_deref().unwrap_or("unreadable"),
                    );
                }
            };
        };
        self.count_notes(name, member_id, flow.notes());
        Ok((response, seen))
    }

    /// The answer to a heartbeat of a group whose metadata cannot be read: UNKNOWN_MEMBER_ID, and why.
    fn fail_closed(
        &self,
        name: &GroupName,
        req: &HeartbeatRequest,
        why: &str,
    ) -> HeartbeatResponse {
        let mut r = rejected_response(req, self.timing(), HeartbeatStatus::UnknownMemberId);
        r.message = Some(explain::fails_closed(
            &name.stream_prefix,
            &name.consumer_group,
            why,
        ));
        r
    }

    /// Counts and logs what the flow saw (each at most once per request).
    fn count_notes(&self, name: &GroupName, member_id: &str, notes: Notes) {
        if notes.metadata_regression {
            Stats::bump(&self.stats().metadata_regressions);
        }
        if notes.rebalance_regression {
            Stats::bump(&self.stats().rebalance_regressions);
        }
        if notes.epochs_exhausted {
            tracing::error!(group = ?name, member_id = ?member_id,
                "heartbeat transition refused (RETRY): an epoch of the group would pass 2^53 - 1; the group \
                 cannot change until an operator deletes and re-creates it");
        }
        if notes.gave_up {
            tracing::warn!(group = %name, member_id = ?member_id, "heartbeat gave up after repeated state conflicts");
        }
    }

    /// The steady path: one round trip (`heartbeat.lua`). Also returns, with Redis time, the other member
    /// whose lease ends first when it ends within one heartbeat interval, and the lease deadline of
    /// `awaited` (the member whose release the caller waits for).
    async fn renew(
        &self,
        name: &GroupName,
        base: &Cached,
        member_id: &str,
        req: &HeartbeatRequest,
        awaited: Option<&str>,
    ) -> (Renewal, Option<LeasesSeen>) {
        let json = progress_json(req, self.clock().now_ms());
        let outcome = self
            .metrics()
            .time_store(
                "heartbeat",
                self.store().heartbeat_watching(
                    name,
                    base.revision,
                    member_id,
                    self.timing().member_lease_ttl_ms,
                    Watch {
                        window_ms: self.timing().heartbeat_interval_ms,
                        awaited,
                    },
                    json.as_deref(),
                ),
            )
            .await;
        let renewal = match outcome {
            Ok(HeartbeatOutcome::Renewed {
                now_ms,
                others_lapsed,
                next_lapse,
                awaited_deadline_ms,
            }) => {
                self.clock().observe(now_ms);
                if others_lapsed {
                    // Expire it now rather than at the next reconciler tick: the shards move sooner.
                    self.reconciler().reconcile_soon(name);
                }
                let seen = LeasesSeen {
                    now_ms,
                    next_lapse,
                    awaited_deadline_ms,
                };
                return (Renewal::Renewed, Some(seen));
            }
            Ok(HeartbeatOutcome::Conflict { current, now_ms }) => {
                self.clock().observe(now_ms);
                // Usually another request of this replica has already cached the revision Redis holds (a batch
                // just committed): decide again on it. Reload only when the cache is really behind.
                let cache_current =
                    current.is_some() && self.cache().get(name).map(|c| c.revision) == current;
                if !cache_current {
                    self.cache().invalidate(name);
                }
                Renewal::Conflict
            }
            Ok(HeartbeatOutcome::LeaseLapsed { now_ms }) => {
                // The lease ran out before this heartbeat arrived: expire the member, then answer on that state.
                self.clock().observe(now_ms);
                Renewal::LeaseLapsed
            }
            Err(e) => {
                self.note_store_error(&e);
                Renewal::Unavailable
            }
        };
        (renewal, None)
    }
}

/// What a steady renewal saw of other members' leases, with Redis time: the member whose lease ends first
/// (within one interval) and the deadline of the awaited member's lease.
struct LeasesSeen {
    now_ms: i64,
    next_lapse: Option<PeerLease>,
    awaited_deadline_ms: Option<i64>,
}

/// A steady renewal's [`LeasesSeen`], with the aggregate the heartbeat was decided on and the member whose
/// lease it read for the release forecast.
struct RenewalSeen {
    base: Cached,
    leases: LeasesSeen,
    awaited: Option<Holder>,
}

/// The member a caller waits for (the release forecast), its lease deadline and Redis time.
struct AwaitedLease {
    holder: Holder,
    deadline_ms: i64,
    now_ms: i64,
}

/// A steady renewal's view of the other member whose lease ends first (within one interval), with the
/// aggregate the heartbeat was decided on and Redis time.
struct LapseSeen {
    base: Cached,
    peer: PeerLease,
    now_ms: i64,
}

/// How long after a peer's lease deadline a member asked back for it should arrive: the expiry is due once
/// Redis time has passed the deadline.
const LAPSE_MARGIN_MS: i64 = 25;

impl Heartbeats<'_> {
    /// A join that would add a member beyond `coordinator.group.max-members`, or beyond what one principal may
    /// hold in the group, is refused before anything is decided (issue #32, finding 14: one principal put
    /// 17,332 members into a group and a legitimate join went from 14 ms to 1 s). Only a new member id counts:
    /// a member that joins again keeps its place. Checked here on the aggregate in hand (to answer at once), and
    /// kept exactly by the batch that writes the join (`rsc_group::batch::MemberCaps`, counted on the aggregate
    /// its compare-and-set replaces), so concurrent joins on several replicas never pass it.
    fn check_member_cap(
        &self,
        cached: &Cached,
        member_id: &str,
        req: &HeartbeatRequest,
        caller: Caller<'_>,
    ) -> Result<(), CoordError> {
        let group = &*cached.group;
        if req.member_epoch != 0 || group.members.contains_key(member_id) {
            return Ok(());
        }
        let caps = &self.config().group;
        // Counting live members walks the group: not needed while the group has fewer members in all (live or
        // not) than either cap, as during most of a big group's first join, nor while the invariant facts kept
        // with the cached aggregate count them.
        let all = group.members.len();
        let below = |cap: u32| all < cap as usize;
        if below(caps.max_members) && caps.max_members_per_principal.is_none_or(below) {
            return Ok(());
        }
        let counted = cached
            .facts
            .as_ref()
            .and_then(|f| f.live_members(caller.principal));
        let live = counted.as_ref().map_or_else(
            || group.members.values().filter(|m| m.state.is_live()).count(),
            |c| c.all,
        );
        if live >= caps.max_members as usize {
            return Err(MemberCap::Group {
                stream: group.stream_prefix.clone(),
                group: group.consumer_group.clone(),
                live,
                cap: caps.max_members,
                member: member_id.to_owned(),
            }
            .into());
        }
        if let (Some(per_principal), Some(principal)) =
            (caps.max_members_per_principal, caller.principal)
            && !caller.acts_for_any_member
        {
            let held = counted.as_ref().map_or_else(
                || {
                    group
                        .members
                        .values()
                        .filter(|m| m.state.is_live() && m.owner.as_deref() == Some(principal))
                        .count()
                },
                |c| c.by_principal.get(principal).copied().unwrap_or(0),
            );
            if held >= per_principal as usize {
                return Err(MemberCap::Principal {
                    principal: principal.to_owned(),
                    held,
                    stream: group.stream_prefix.clone(),
                    group: group.consumer_group.clone(),
                    cap: per_principal,
                    member: member_id.to_owned(),
                }
                .into());
            }
        }
        Ok(())
    }
}

/// A `groupInstanceId` belongs to the principal that first joined with it, as member ids do (issue #32,
/// finding 6: another MEMBER principal joined with a stopped member's instance id, took its reserved shards
/// and fenced its restart). A join naming an instance id that a live member of another principal holds, or
/// that is reserved for another principal's stopped member, is refused 403 (an ADMIN may act for anyone;
/// without authentication nothing is recorded or checked).
fn check_instance_owner(
    group: &rsc_group::model::Group,
    member_id: &str,
    req: &HeartbeatRequest,
    caller: Caller<'_>,
) -> Result<(), CoordError> {
    let (Some(instance), Some(principal)) = (req.group_instance_id.as_deref(), caller.principal)
    else {
        return Ok(());
    };
    if req.member_epoch != 0 || caller.acts_for_any_member {
        return Ok(());
    }
    let held = group
        .members
        .values()
        .find(|m| {
            m.state.is_live()
                && m.member_id != member_id
                && m.group_instance_id.as_deref() == Some(instance)
        })
        .and_then(|m| m.owner.as_deref());
    let reserved = group
        .static_reservations
        .iter()
        .find(|r| r.group_instance_id == instance)
        .and_then(|r| r.owner.as_deref());
    match held.or(reserved) {
        Some(owner) if owner != principal => Err(CoordError::InstanceOwnedByAnotherPrincipal {
            instance: instance.to_owned(),
            stream: group.stream_prefix.clone(),
            group: group.consumer_group.clone(),
            owner: owner.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// A heartbeat reports progress only for shards the group has, each once (issue #32, finding 9: progress for
/// 9,000 made-up shards of a 6-shard group was stored for every member). The group's shards: below its shard
/// count, below either count of a migration it knows, or draining. 400 naming the first bad index.
fn check_progress_shards(
    group: &rsc_group::model::Group,
    req: &HeartbeatRequest,
) -> Result<(), CoordError> {
    if req.shard_progress.is_empty() {
        return Ok(());
    }
    let mut bound = group.shard_count;
    for m in &group.migrations {
        bound = bound.max(m.from_shard_count).max(m.to_shard_count);
    }
    if let Some(last) = group.draining_shards.iter().next_back() {
        bound = bound.max(last.saturating_add(1));
    }
    for p in &req.shard_progress {
        let shard = p.shard.shard_index;
        if shard >= bound {
            return Err(BadRequest::ProgressShardUnknown {
                shard,
                stream: group.stream_prefix.clone(),
                group: group.consumer_group.clone(),
                bound,
            }
            .into());
        }
    }
    if req.shard_progress.len() == 1 {
        return Ok(());
    }
    let mut shards: Vec<u32> = req
        .shard_progress
        .iter()
        .map(|p| p.shard.shard_index)
        .collect();
    shards.sort_unstable();
    if let Some(twice) = shards.windows(2).find(|w| w[0] == w[1]) {
        return Err(BadRequest::ProgressShardTwice { shard: twice[0] }.into());
    }
    Ok(())
}

/// The progress document an accepted heartbeat stores beside the aggregate (steady or not).
pub(crate) fn progress_json(req: &HeartbeatRequest, now_ms: i64) -> Option<String> {
    let progress = MemberProgress {
        member_name: req.member_name.as_deref(),
        member_epoch: req.member_epoch,
        metadata_version: req.metadata_version,
        runtime_max_concurrency: req.runtime_consumer_capacity.runtime_max_concurrency,
        available_concurrency: req.runtime_consumer_capacity.available_concurrency,
        shard_progress: &req.shard_progress,
        last_heartbeat_at_ms: now_ms,
    };
    serde_json::to_string(&progress).ok()
}
