//! Producer quiesce (`producerQuiesce` on a scale): the scale is recorded and provisioned, then waits in
//! PREPARING while the routing answer tells producers to stop (`quiesce: {reshardingId, deadline}`). Producers
//! report `quiesced` (`POST /coord/v1/streams/{p}/producers/quiesced`); every routing fetch is a sighting. The
//! switch rule is `rsc_group::quiesce::decide` over the producers seen within
//! `coordinator.streams.producer-refresh-window`; the core's activation (`rsc_group::replica::reshard::activate`)
//! applies it where routing switches: on the scale call, on each report and on every reconciler pass, so the
//! deadline is kept within one tick. A switch is audited (`PRODUCER_QUIESCE_SWITCH`): forced by timeout with
//! the producers that had not quiesced, or with every producer quiesced. Sightings live in Redis through
//! the store's `producers.rs`.

use super::CachedStream;
use super::perform::Performer;
use crate::domain_error::{BadReshard, Conflict, CoordError, Forbidden, StreamNotFound};
use crate::http::error::store_error_text;
use crate::runtime::coordinator::Resharding;
use crate::security::audit::AuditRecord;
use rsc_group::model::{Migration, MigrationState};
use rsc_group::quiesce::{self, ProducerQuiesce, ProducerSighting, QuiesceOutcome};
use rsc_group::replica::reshard::switch::SwitchFlow;
use rsc_group::stream::StreamRecord;
use rsc_protocol::bounds::MAX_PRODUCER_ID_LEN;
use rsc_protocol::validate;
use rsc_protocol::wire::ProducerRoutingResponse;
use rsc_protocol::wire::ScaleRequest;
use rsc_protocol::wire::quiesce::{
    ProducerQuiescedRequest, ProducerQuiescedResponse, QuiesceNotice,
};
use rsc_store::{AuditStream, Sighting, SightingLimits};
use serde::Serialize;

/// The audit action of a quiesced scale's routing switch.
pub const SWITCH_AUDIT_ACTION: &str = "PRODUCER_QUIESCE_SWITCH";
/// Producers not seen for this many refresh windows are forgotten.
const FORGET_AFTER_WINDOWS: i64 = 10;
/// Producers one stream keeps sightings of; a new producer id beyond it is not recorded (logged).
const MAX_PRODUCERS_PER_STREAM: u32 = 10_000;

/// The quiesce part of the migration view.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuiesceView {
    pub timeout_ms: i64,
    pub deadline: String,
    /// Routing has not switched and producers are asked to hold still.
    pub waiting: bool,
    pub forced_by_timeout: Option<bool>,
    pub quiesced_producers: Vec<String>,
    /// Producers seen in the refresh window that have not reported quiesced (those ignoring the flag
    /// included); after a forced switch, those the audit names.
    pub not_quiesced_producers: Vec<String>,
}

/// `producerQuiesce.timeoutMs` of a scale request, checked: None when the scale does not quiesce.
pub(super) fn requested_timeout(req: &ScaleRequest) -> Result<Option<i64>, CoordError> {
    let Some(q) = &req.producer_quiesce else {
        return Ok(None);
    };
    match q.timeout_ms {
        None => Err(BadReshard::QuiesceTimeoutRequired.into()),
        Some(t) if t <= 0 => Err(BadReshard::QuiesceTimeoutNotPositive { given: t }.into()),
        Some(t) if t > quiesce::MAX_TIMEOUT_MS => {
            Err(BadReshard::QuiesceTimeoutTooLong { given: t }.into())
        }
        Some(t) => Ok(Some(t)),
    }
}

/// A producer id as reported: 1–200 visible ASCII characters.
pub fn validate_producer_id(field: &str, id: &str) -> Result<(), CoordError> {
    if id.is_empty() || id.len() > MAX_PRODUCER_ID_LEN || !id.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(BadReshard::ProducerId {
            field: field.to_owned(),
            given: id.to_owned(),
            max: MAX_PRODUCER_ID_LEN,
        }
        .into());
    }
    Ok(())
}

impl Resharding<'_> {
    /// Notes a routing fetch by `producer` (best effort: a failure is logged, routing still answers).
    /// Called before the stream record is read, so a producer that got routing without the flag is seen
    /// by any switch decision made after the flag was set.
    ///
    /// Nothing is written for a stream without a record (a routing read that ends in 404), nor for a new
    /// producer id once the stream keeps `MAX_PRODUCERS_PER_STREAM`; the hashes expire
    /// `FORGET_AFTER_WINDOWS` refresh windows after their last write (issue #32, finding 8).
    pub async fn note_producer_seen(&self, prefix: &str, producer: &str, principal: Option<&str>) {
        match self
            .store()
            .producer_seen(
                prefix,
                producer,
                principal,
                self.clock().now_ms(),
                self.sighting_limits(),
            )
            .await
        {
            Ok(Sighting::Recorded | Sighting::NoStream) => {}
            Ok(Sighting::Full) => {
                tracing::warn!(
                    stream = prefix,
                    producer,
                    max = MAX_PRODUCERS_PER_STREAM,
                    "producer sighting not recorded: the stream already keeps the most producers it may"
                );
            }
            Err(e) => {
                tracing::warn!(stream = prefix, producer, error = %store_error_text(&e), "producer sighting not recorded");
            }
        }
    }

    /// A quiesced report counts only for a producer this stream has seen fetch routing, and only from the
    /// principal whose routing reads registered it (an ADMIN may report for anyone; without authentication
    /// nothing is recorded or compared): issue #32, finding 7, a READ caller reported `quiesced` for a real
    /// producer that never paused, and routing switched.
    async fn check_reporter(
        &self,
        prefix: &str,
        producer: &str,
        principal: Option<&crate::security::principal::Principal>,
    ) -> Result<(), CoordError> {
        let all = self
            .store()
            .producers(prefix)
            .await
            .map_err(CoordError::from)?;
        let Some(entry) = all.get(producer) else {
            return Err(Conflict::ProducerUnseen {
                producer: producer.to_owned(),
                stream: prefix.to_owned(),
            }
            .into());
        };
        let Some(caller) = principal else {
            return Ok(());
        };
        if caller.roles.contains(crate::security::roles::Role::Admin) {
            return Ok(());
        }
        match entry.principal.as_deref() {
            Some(owner) if owner != caller.username => Err(Forbidden::ProducerOwner {
                producer: producer.to_owned(),
                stream: prefix.to_owned(),
                owner: owner.to_owned(),
            }
            .into()),
            _ => Ok(()),
        }
    }

    fn sighting_limits(&self) -> SightingLimits {
        let window = self.config().streams.producer_refresh_window.ms();
        SightingLimits {
            ttl_ms: window.saturating_mul(FORGET_AFTER_WINDOWS),
            max_producers: MAX_PRODUCERS_PER_STREAM,
        }
    }

    /// Adds the quiesce notice to a routing answer built from `record`, while a scale waits for producers.
    pub fn add_quiesce_notice(&self, record: &StreamRecord, routing: &mut ProducerRoutingResponse) {
        let now = self.clock().now_ms();
        routing.quiesce = waiting_quiesce(record, now).map(|q| QuiesceNotice {
            resharding_id: q.resharding_id.clone(),
            deadline: crate::runtime::clock::iso_ms(q.deadline_ms),
            remaining_ms: q.deadline_ms.saturating_sub(now),
        });
    }

    /// `POST /coord/v1/streams/{p}/producers/quiesced`: records the report, then switches routing at once
    /// if that was the last producer the scale waited for.
    pub async fn producer_quiesced(
        &self,
        prefix: &str,
        req: &ProducerQuiescedRequest,
        principal: Option<&crate::security::principal::Principal>,
    ) -> Result<ProducerQuiescedResponse, CoordError> {
        let producer = req.producer_id.clone().unwrap_or_default();
        validate_producer_id("producerId", &producer)?;
        let Some(rid) = req.resharding_id.clone().filter(|r| !r.trim().is_empty()) else {
            return Err(BadReshard::ReshardingIdRequired.into());
        };
        let Some(version) = req.observed_routing_version else {
            return Err(BadReshard::ObservedRoutingVersionRequired.into());
        };
        validate::validate_observed("observedRoutingVersion", version, 0)?;
        let Some(stream) = self.load_stream(prefix).await? else {
            return Err(StreamNotFound::Quiesce {
                stream: prefix.to_owned(),
            }
            .into());
        };
        let now = self.clock().now_ms();
        let waiting = waiting_quiesce(&stream.record, now).is_some_and(|q| q.resharding_id == rid);
        if waiting {
            self.check_reporter(prefix, &producer, principal).await?;
            self.store()
                .producer_quiesced(
                    prefix,
                    &producer,
                    principal.map(|p| p.username.as_str()),
                    &rid,
                    version,
                    now,
                    self.sighting_limits(),
                )
                .await
                .map_err(CoordError::from)?;
            tracing::info!(
                stream = prefix,
                producer,
                resharding_id = rid,
                routing_version = version,
                "producer quiesced"
            );
            if let Some(m) = stream.record.active_migration.clone() {
                let groups = self.stream_groups(prefix).await?;
                let names = groups.into_iter().map(|g| g.consumer_group).collect();
                let mut p = Performer::on(prefix);
                let (mut flow, first) =
                    SwitchFlow::start(stream, m, names, &self.settings(), self.clock().now_ms());
                self.drive(&mut p, &mut flow, first)
                    .await
                    .map_err(|e| p.error(e))?;
            }
        }
        let still = self
            .load_stream(prefix)
            .await?
            .and_then(|s| waiting_quiesce(&s.record, self.clock().now_ms()).cloned())
            .is_some_and(|q| q.resharding_id == rid);
        Ok(ProducerQuiescedResponse {
            producer_id: producer,
            resharding_id: rid,
            waiting: still,
        })
    }

    /// The producers of the stream as the switch rule sees them; forgets those not seen for long.
    pub(super) async fn sightings(
        &self,
        prefix: &str,
    ) -> Result<Vec<ProducerSighting>, CoordError> {
        let all = self
            .store()
            .producers(prefix)
            .await
            .map_err(CoordError::from)?;
        let window = self.config().streams.producer_refresh_window.ms();
        let horizon = self
            .clock()
            .now_ms()
            .saturating_sub(window.saturating_mul(FORGET_AFTER_WINDOWS));
        let old: Vec<String> = all
            .iter()
            .filter(|(_, e)| e.last_seen_ms < horizon)
            .map(|(id, _)| id.clone())
            .collect();
        if let Err(e) = self.store().producers_forget(prefix, &old).await {
            tracing::debug!(stream = prefix, error = %store_error_text(&e), "old producer sightings not removed");
        }
        Ok(all
            .into_iter()
            .filter(|(id, _)| !old.contains(id))
            .map(|(id, e)| {
                let (quiesced_for, observed) = match e.quiesced {
                    Some((rid, v, _)) => (Some(rid), Some(v)),
                    None => (None, None),
                };
                ProducerSighting {
                    producer_id: id,
                    last_seen_ms: e.last_seen_ms,
                    quiesced_for,
                    observed_routing_version: observed,
                }
            })
            .collect())
    }

    /// One audit record for a quiesced scale's switch (written by the coordinator itself, no request).
    pub(super) async fn audit_quiesce_switch(
        &self,
        prefix: &str,
        migration: &Migration,
        outcome: &QuiesceOutcome,
    ) {
        let reason = if outcome.forced_by_timeout {
            format!(
                "routing switched, forced by timeout: producers not quiesced: {}",
                outcome.not_quiesced.join(", ")
            )
        } else {
            format!(
                "routing switched: every producer seen quiesced ({})",
                outcome.quiesced.len()
            )
        };
        let mut summary = serde_json::Map::new();
        summary.insert("forcedByTimeout".into(), outcome.forced_by_timeout.into());
        summary.insert("notQuiesced".into(), outcome.not_quiesced.clone().into());
        summary.insert("quiesced".into(), outcome.quiesced.clone().into());
        summary.insert("targetShardCount".into(), migration.to_shard_count.into());
        let record = AuditRecord {
            id: None,
            timestamp: crate::runtime::clock::iso_ms(outcome.decided_at_ms),
            timestamp_ms: outcome.decided_at_ms,
            coordinator_id: self.config().id.clone(),
            action: SWITCH_AUDIT_ACTION.into(),
            outcome: "SUCCESS".into(),
            status: 200,
            error_code: None,
            principal: Some("coordinator".into()),
            roles: Vec::new(),
            auth_method: None,
            method: "-".into(),
            route: "/coord/v1/streams/{stream_prefix}/scale".into(),
            path: format!("/coord/v1/streams/{prefix}/scale"),
            query_string: None,
            request_id: format!("{}-switch", migration.resharding_id),
            request_body_sha256: None,
            client_address: "-".into(),
            user_agent: None,
            duration_ms: 0,
            stream_prefix: Some(prefix.to_owned()),
            consumer_group: None,
            resharding_id: Some(migration.resharding_id.clone()),
            requested_by: Some(migration.requested_by.clone()),
            reason: Some(reason),
            request_summary: summary,
            result: Default::default(),
            attempted_username: None,
            repeats: None,
        };
        let json = match rsc_store::to_json("audit record", &record) {
            Ok(json) => json,
            Err(e) => {
                tracing::error!(target: "rsc::audit", action = SWITCH_AUDIT_ACTION, stream_prefix = prefix, error = %e, "audit record of a quiesced switch not written");
                return;
            }
        };
        tracing::info!(target: "rsc::audit", action = SWITCH_AUDIT_ACTION, stream_prefix = prefix,
            forced_by_timeout = outcome.forced_by_timeout, not_quiesced = ?outcome.not_quiesced, record = %json, "audit");
        if let Err(e) = self
            .store()
            .audit_append(
                AuditStream::Mutations,
                self.config().audit.redis_max_entries,
                &json,
            )
            .await
        {
            tracing::error!(target: "rsc::audit", error = %store_error_text(&e), "audit record of a quiesced switch could not be written to Redis; it exists only in this log");
        }
    }

    /// The migration view's quiesce section for `resharding_id` (None when that scale did not quiesce).
    pub(super) async fn quiesce_view(
        &self,
        prefix: &str,
        stream: Option<&CachedStream>,
        resharding_id: &str,
    ) -> Option<QuiesceView> {
        let q = stream?
            .record
            .producer_quiesce
            .as_ref()
            .filter(|q| q.resharding_id == resharding_id)?;
        let now = self.clock().now_ms();
        let (quiesced, pending, forced) = match &q.outcome {
            Some(o) => (
                o.quiesced.clone(),
                o.not_quiesced.clone(),
                Some(o.forced_by_timeout),
            ),
            None => {
                let sightings = self.sightings(prefix).await.unwrap_or_default();
                let window = self.config().streams.producer_refresh_window.ms();
                let (q2, p) = quiesce::split(q, &sightings, now, window);
                (q2, p, None)
            }
        };
        Some(QuiesceView {
            timeout_ms: q.timeout_ms,
            deadline: crate::runtime::clock::iso_ms(q.deadline_ms),
            waiting: waiting_quiesce(&stream?.record, now).is_some(),
            forced_by_timeout: forced,
            quiesced_producers: quiesced,
            not_quiesced_producers: pending,
        })
    }
}

/// The quiesce producers must honour now: the record's, while its scale is the active PREPARING migration,
/// undecided, before its deadline.
fn waiting_quiesce(record: &StreamRecord, now_ms: i64) -> Option<&ProducerQuiesce> {
    let m = record.active_migration.as_ref()?;
    let q = record.producer_quiesce.as_ref()?;
    (m.state == MigrationState::Preparing
        && q.resharding_id == m.resharding_id
        && q.is_waiting(now_ms))
    .then_some(q)
}
