//! The heartbeat path: the one endpoint that carries nearly all traffic.
//!
//! A rejection that depends on group state (an unknown or fenced member), decided on a cached aggregate, is
//! confirmed with one HGET of the revision rather than a reload of the group.
//!
//! Steady heartbeats (nothing in the aggregate changes) cost exactly one Redis round trip: a script that
//! checks the revision the decision was made on, checks and renews the member's lease and stores its progress.
//! Anything else is a transition, committed by compare-and-set together with the group's other waiting
//! transitions (`batch.rs`). A lost race or a moved revision means "decide again on fresh state", a bounded
//! number of times; infrastructure
//! trouble is answered with `RETRY` (HTTP 200), which both reference clients treat as "keep state, try again"
//! and which never renews a client's lease.
//!
//! A member incarnation belongs to the principal that joined it (`Member::owner`): a heartbeat or leave for it
//! from another principal (not an ADMIN) is refused with 403 `MEMBER_OWNED_BY_ANOTHER_PRINCIPAL`. The check
//! reads the aggregate the decision is made on, so it costs no Redis round trip; the steady path's revision
//! check covers it like everything else in the aggregate. Unauthenticated heartbeats record and check nothing.

use crate::batch::BatchReply;
use crate::cache::{Cached, GroupName};
use crate::coordinator::{Coordinator, MAX_CAS_ATTEMPTS};
use crate::error::ApiError;
use crate::security::principal::Principal;
use crate::security::roles::Role;
use crate::stats::Stats;
use rsc_group::heartbeat::{Caller, Decision, Outcome, owner_conflict, probe, rejected_response};
use rsc_group::model::MemberState;
use rsc_protocol::errors::ErrorCode;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatResponse, HeartbeatStatus};
use rsc_store::HeartbeatOutcome;
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

impl Coordinator {
    /// Handles one validated heartbeat from `principal` (None when heartbeats are not authenticated). A
    /// contract response (HTTP 200), or 403 when the member belongs to another principal.
    pub async fn heartbeat(
        &self,
        name: &GroupName,
        member_id: &str,
        req: &HeartbeatRequest,
        principal: Option<&Principal>,
    ) -> Result<HeartbeatResponse, ApiError> {
        let mut response = self
            .heartbeat_inner(name, member_id, req, caller(principal))
            .await?;
        self.stats.count_heartbeat(response.status);
        if response.status != HeartbeatStatus::Ok && response.message.is_none() {
            response.message = Some(self.explain(name, member_id, req, &response).await);
        }
        Ok(response)
    }

    /// What a non-OK answer means for this member and what it should do, in words (the `message` field).
    /// Off the hot path: steady and accepted heartbeats are `OK`. Reads only the cache, except for an unknown
    /// group, where one read of the stream record tells a missing stream from a missing group.
    async fn explain(
        &self,
        name: &GroupName,
        path_member_id: &str,
        req: &HeartbeatRequest,
        response: &HeartbeatResponse,
    ) -> String {
        const REJOIN: &str =
            "stop reading every shard and send the next heartbeat with memberEpoch 0 to rejoin";
        let ttl = human_ms(self.timing.member_lease_ttl_ms);
        let m = path_member_id;
        let cached = self.cache.get(name);
        let member = cached
            .as_ref()
            .and_then(|c| c.group.members.get(path_member_id));
        match response.status {
            HeartbeatStatus::Ok => String::new(),
            HeartbeatStatus::UnsupportedProtocol => format!(
                "protocolVersion {} is not supported: this coordinator speaks {}..={}; use a client that speaks it",
                req.protocol_version,
                rsc_protocol::PROTOCOL_VERSION_MIN,
                rsc_protocol::PROTOCOL_VERSION_MAX
            ),
            HeartbeatStatus::InvalidRequest if req.member_id != path_member_id => format!(
                "the body's memberId {:?} differs from the path's {m:?}; send the same id in both",
                req.member_id
            ),
            HeartbeatStatus::InvalidRequest => format!(
                "memberEpoch {} is not valid: send 0 to join, -1 to leave, or the memberEpoch of the last answer",
                req.member_epoch
            ),
            HeartbeatStatus::UnknownMemberId => match &cached {
                Some(_) => format!(
                    "member {m:?} is not in group {name} (it was never there with this epoch, it was forgotten \
                     after it expired or left, or the group was recreated); {REJOIN}"
                ),
                None => self.explain_missing_group(name).await,
            },
            HeartbeatStatus::FencedMemberEpoch => {
                let state = member.map(|mm| mm.state);
                match state {
                    Some(MemberState::Expired) => format!(
                        "member {m:?} expired: no heartbeat of it was accepted for longer than the member lease \
                         ({ttl}), so its shards were released to other members; {REJOIN}"
                    ),
                    Some(MemberState::Fenced) => {
                        let why = cached
                            .as_ref()
                            .and_then(|c| c.group.holds.iter().find(|h| h.member_id == m))
                            .map(|h| h.reason.as_str());
                        let why = match why {
                            Some("rebalance timeout") => format!(
                                "it did not release the shards taken from it within the rebalance timeout ({})",
                                human_ms(self.timing.rebalance_timeout_ms)
                            ),
                            Some("ownership report outside its grants") => {
                                "it reported reading shards it had not been given".to_owned()
                            }
                            _ => "it did not release revoked shards in time, or reported shards it had not been \
                                  given"
                                .to_owned(),
                        };
                        format!("member {m:?} was fenced: {why}; {REJOIN}")
                    }
                    Some(MemberState::Leaving) if req.member_epoch != -1 => format!(
                        "member {m:?} has left the group (its memberEpoch -1 was accepted); {REJOIN}"
                    ),
                    Some(_) if req.member_epoch == -1 => format!(
                        "this leave (memberEpoch -1, metadataVersion {}) is older than the current incarnation of \
                         member {m:?}: it came from an earlier process with this id and was ignored",
                        req.metadata_version
                    ),
                    Some(_) => format!(
                        "memberEpoch {} belongs to an earlier incarnation of member {m:?}: a process joined with \
                         this id since; {REJOIN} (give every process its own member id)",
                        req.member_epoch
                    ),
                    None => format!("member {m:?} was fenced; {REJOIN}"),
                }
            }
            HeartbeatStatus::Retry => format!(
                "the coordinator could not complete this heartbeat now (Redis unavailable, or the group kept \
                 changing); nothing changed and the member's lease was not renewed: keep only the shards already \
                 being read, stop them if no heartbeat is accepted within the lease ({ttl}), and retry after \
                 heartbeatIntervalMs"
            ),
            HeartbeatStatus::SyncMetadata => format!(
                "the member reported metadataVersion {} / memberEpoch {}, ahead of what Redis holds \
                 (metadataVersion {}): the group's metadata appears to have rolled back and is being corrected; \
                 keep reading only the assignedShards already being read, start none, and report \
                 metadataVersion {} next",
                req.metadata_version,
                req.member_epoch,
                response.metadata_version,
                response.metadata_version
            ),
            HeartbeatStatus::RevokePending => "a metadata-correction round is open: shards that move must be \
                released first; keep reading only assignedShards, start no new shard, and keep heartbeating"
                .to_owned(),
        }
    }

    /// UNKNOWN_MEMBER_ID because the group does not exist: say whether the stream does, and how to create
    /// what is missing (an admin call; a heartbeat never creates anything).
    async fn explain_missing_group(&self, name: &GroupName) -> String {
        let (p, g) = (&name.stream_prefix, &name.consumer_group);
        match self.load_stream(p).await {
            Ok(Some(_)) => format!(
                "stream {p:?} exists but has no consumer group {g:?}; an admin creates it with \
                 POST /coord/v1/streams/{p}/groups/{g}, then members join with memberEpoch 0"
            ),
            Ok(None) if p == g => format!(
                "stream {p:?} does not exist; an admin creates it with POST /coord/v1/streams/{p} (its first \
                 consumer group is named {p:?}), then members join with memberEpoch 0"
            ),
            Ok(None) => format!(
                "stream {p:?} does not exist; an admin creates it with its consumer group {g:?} with \
                 POST /coord/v1/streams/{p}/groups/{g}, then members join with memberEpoch 0"
            ),
            Err(e) => format!(
                "consumer group {name} could not be read ({e}); a heartbeat never creates a group: check that \
                 it exists (GET /coord/v1/streams/{p}/groups/{g})"
            ),
        }
    }

    async fn heartbeat_inner(
        &self,
        name: &GroupName,
        member_id: &str,
        req: &HeartbeatRequest,
        caller: Caller<'_>,
    ) -> Result<HeartbeatResponse, ApiError> {
        // Rollback evidence is acted on only when decided on state known to be current (a stale cache can
        // make a member look ahead), counted once per request, and recorded before deciding again.
        let mut signals_counted = false;
        let mut rebalance_regression_counted = false;
        let mut recorded_revision = None;
        for _ in 0..MAX_CAS_ATTEMPTS {
            let (cached, fresh) = match self.cached_or_load(name).await {
                Ok(x) => x,
                Err(e) if e.code == ErrorCode::MetadataCorrupt => {
                    tracing::error!(error = %e, "heartbeat refused: group metadata unreadable");
                    let mut r =
                        rejected_response(req, &self.timing, HeartbeatStatus::UnknownMemberId);
                    r.message = Some(format!(
                        "group {name} fails closed: {}; nothing is rebuilt from heartbeats, so keep retrying \
                         with memberEpoch 0 until an operator repairs it",
                        e.message
                    ));
                    return Ok(r);
                }
                Err(_) => return Ok(self.retry(req)),
            };
            if let Some(base) = &cached
                && let Some(owner) = owner_conflict(&base.group, member_id, &caller)
            {
                // Refused only on state known to be current: the member may have been replaced since.
                let current = fresh || {
                    match self.still_current(name, base).await {
                        Ok(current) => current,
                        Err(e) if e.is_transient() => return Ok(self.retry(req)),
                        Err(_) => false,
                    }
                };
                if current {
                    return Err(ApiError::new(
                        ErrorCode::MemberOwnedByAnotherPrincipal,
                        format!(
                            "member {member_id:?} of group {}/{} was joined by principal {owner:?}: only {owner:?} \
                             (or an ADMIN) may send its heartbeats; {:?} must use a member id of its own",
                            name.stream_prefix,
                            name.consumer_group,
                            caller.principal.unwrap_or_default()
                        ),
                    ));
                }
                self.cache.invalidate(name);
                continue;
            }
            // A probe: a transition is only recognised here (not built); the batch decides it for real.
            let decision = probe(
                cached.as_ref().map(|c| &*c.group),
                member_id,
                req,
                self.clock.now_ms(),
                &self.timing,
            );
            let fresh = fresh
                || cached
                    .as_ref()
                    .map(|c| c.revision)
                    .is_some_and(|r| recorded_revision == Some(r));
            if decision.signals.rebalance_regression && !rebalance_regression_counted {
                Stats::bump(&self.stats.rebalance_regressions);
                rebalance_regression_counted = true;
            }
            if decision.signals.epochs_exhausted {
                tracing::error!(group = ?name, member_id = ?member_id,
                    "heartbeat transition refused (RETRY): an epoch of the group would pass 2^53 - 1; the group \
                     cannot change until an operator deletes and re-creates it");
            }
            if let Some(base) = &cached
                && let Some(mut signal) =
                    crate::durability::member_signal(&base.group, member_id, req, &decision.signals)
            {
                signal.principal = caller.principal.map(str::to_owned);
                if !fresh {
                    self.cache.invalidate(name);
                    continue;
                }
                if !signals_counted {
                    self.count_signals(&decision);
                    signals_counted = true;
                }
                if let Some(written) = self.record_suspicion(name, base, &signal).await {
                    recorded_revision = Some(written.revision);
                    continue;
                }
            }
            match decision.outcome {
                Outcome::Rejected {
                    needs_fresh_state: true,
                } if !fresh => {
                    let current = match &cached {
                        Some(c) => self.still_current(name, c).await,
                        None => Ok(false),
                    };
                    match current {
                        Ok(true) => return Ok(decision.response),
                        Err(e) if e.is_transient() => return Ok(self.retry(req)),
                        // Moved on, or unreadable: the reload decides (and reports damage as a load does).
                        Ok(false) | Err(_) => self.cache.invalidate(name),
                    }
                }
                Outcome::Rejected { .. } => return Ok(decision.response),
                Outcome::Steady => {
                    let Some(base) = cached else {
                        return Ok(self.retry(req));
                    };
                    match self.renew(name, &base, member_id, req).await {
                        Some(true) => return Ok(decision.response),
                        Some(false) => continue,
                        None => return Ok(self.retry(req)),
                    }
                }
                Outcome::Write(_) => match self.write_batched(name, member_id, req, caller).await {
                    BatchReply::Answered(response) => return Ok(*response),
                    BatchReply::DecideAgain => {}
                    // E.g. the member's lease lapsed before this request: expire it, then decide again.
                    BatchReply::Reconcile => self.reconcile_group(name).await,
                    BatchReply::Unavailable => return Ok(self.retry(req)),
                },
            }
        }
        tracing::warn!(group = %name, member_id = ?member_id, "heartbeat gave up after repeated state conflicts");
        Ok(self.retry(req))
    }

    /// The steady path: one round trip. Some(true) = renewed; Some(false) = decide again; None = Redis failed.
    async fn renew(
        &self,
        name: &GroupName,
        base: &Cached,
        member_id: &str,
        req: &HeartbeatRequest,
    ) -> Option<bool> {
        let json = progress_json(req, self.clock.now_ms());
        let keys = self.keys(name);
        let outcome = self
            .metrics
            .time_store(
                "heartbeat",
                self.store.heartbeat(
                    &keys,
                    base.revision,
                    member_id,
                    self.timing.member_lease_ttl_ms,
                    json.as_deref(),
                ),
            )
            .await;
        match outcome {
            Ok(HeartbeatOutcome::Renewed {
                now_ms,
                others_lapsed,
            }) => {
                self.clock.observe(now_ms);
                if others_lapsed {
                    // Expire it now rather than at the next reconciler tick: the shards move sooner.
                    self.reconcile_soon(name);
                }
                Some(true)
            }
            Ok(HeartbeatOutcome::Conflict { current, now_ms }) => {
                self.clock.observe(now_ms);
                // Usually another request of this replica has already cached the revision Redis holds (a batch
                // just committed): decide again on it. Reload only when the cache is really behind.
                let cache_current =
                    current.is_some() && self.cache.get(name).map(|c| c.revision) == current;
                if !cache_current {
                    self.cache.invalidate(name);
                }
                Some(false)
            }
            Ok(HeartbeatOutcome::LeaseLapsed { now_ms }) => {
                // The lease ran out before this heartbeat arrived: expire the member, then answer on that state.
                self.clock.observe(now_ms);
                self.reconcile_group(name).await;
                Some(false)
            }
            Err(e) => {
                self.note_store_error(&e);
                None
            }
        }
    }

    fn retry(&self, req: &HeartbeatRequest) -> HeartbeatResponse {
        rejected_response(req, &self.timing, HeartbeatStatus::Retry)
    }

    fn count_signals(&self, d: &Decision) {
        if d.signals.metadata_regression {
            Stats::bump(&self.stats.metadata_regressions);
        }
    }
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

/// A duration in milliseconds as people write it (`15s`, `1m 30s`, `500ms`).
fn human_ms(ms: i64) -> String {
    humantime::format_duration(std::time::Duration::from_millis(ms.max(0).unsigned_abs()))
        .to_string()
}
