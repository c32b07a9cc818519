//! Monitoring views that combine the aggregate with hot per-member data (leases, progress) from Redis:
//! members, assignments, health and compatibility.

use crate::cache::GroupName;
use crate::clock::iso_ms;
use crate::coordinator::Coordinator;
use crate::error::ApiError;
use rsc_group::model::MemberState;
use rsc_protocol::wire::ShardId;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};

fn shard_ids<'a>(it: impl IntoIterator<Item = &'a u32>) -> Vec<ShardId> {
    it.into_iter().map(|s| ShardId::new(*s)).collect()
}

/// One entry of `GET …/members` (MemberMetadata in the coord/v1 contract).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    pub member_id: String,
    pub member_name: String,
    pub state: &'static str,
    pub member_epoch: i64,
    /// The coord/v1 protocol version the member joined with (0: joined before this was recorded).
    pub protocol_version: i64,
    pub metadata_version: i64,
    pub runtime_max_concurrency: i64,
    pub active_consumer_workers: i64,
    pub current_assignment: Vec<ShardId>,
    pub granted_assignment: Vec<ShardId>,
    pub revoking: Vec<ShardId>,
    pub last_heartbeat_at: Option<String>,
    pub member_lease_expires_at: Option<String>,
    pub rebalance_timeout_ms: i64,
    pub rebalance_deadline_at: Option<String>,
    pub shard_progress: Value,
}

impl Coordinator {
    pub async fn members(&self, name: &GroupName) -> Result<Vec<MemberView>, ApiError> {
        let cached = self.require_group(name).await?;
        let keys = self.keys(name);
        let leases: HashMap<String, i64> = self
            .store
            .leases(&keys)
            .await
            .map_err(ApiError::from)?
            .into_iter()
            .collect();
        let progress: HashMap<String, Value> = self
            .store
            .progress_all(&keys)
            .await
            .map_err(ApiError::from)?
            .into_iter()
            .filter_map(|(m, json)| serde_json::from_str(&json).ok().map(|v| (m, v)))
            .collect();
        let g = &cached.group;
        Ok(g.members
            .values()
            .map(|m| {
                let p = progress.get(&m.member_id);
                let int = |k: &str| p.and_then(|p| p.get(k)).and_then(Value::as_i64);
                let max = int("runtimeMaxConcurrency").unwrap_or(0);
                let available = int("availableConcurrency").unwrap_or(0);
                MemberView {
                    member_id: m.member_id.clone(),
                    member_name: m.member_name.clone(),
                    state: m.state.as_str(),
                    member_epoch: m.member_epoch,
                    protocol_version: m.protocol_version,
                    metadata_version: int("metadataVersion").unwrap_or(0),
                    runtime_max_concurrency: max,
                    active_consumer_workers: (max - available).max(0),
                    current_assignment: shard_ids(&m.reported_owned),
                    granted_assignment: shard_ids(&m.assigned),
                    revoking: shard_ids(m.revoking.keys()),
                    last_heartbeat_at: int("lastHeartbeatAtMs").map(iso_ms),
                    member_lease_expires_at: leases.get(&m.member_id).map(|d| iso_ms(*d)),
                    rebalance_timeout_ms: self.timing.rebalance_timeout_ms,
                    rebalance_deadline_at: m.rebalance_deadline_ms.map(iso_ms),
                    shard_progress: p
                        .and_then(|p| p.get("shardProgress"))
                        .cloned()
                        .unwrap_or(json!([])),
                }
            })
            .collect())
    }

    /// `GET …/assignments`: target, what live owners report, what the coordinator has granted, what is being
    /// revoked and held, and the last reports of departed members shown apart.
    pub async fn assignments(&self, name: &GroupName) -> Result<Value, ApiError> {
        let cached = self.require_group(name).await?;
        let g = &cached.group;
        let mut target = BTreeMap::new();
        let mut current = BTreeMap::new();
        let mut granted = BTreeMap::new();
        let mut revoke_progress = BTreeMap::new();
        let mut departed = BTreeMap::new();
        for m in g.members.values() {
            if m.state == MemberState::Active {
                target.insert(
                    m.member_id.clone(),
                    shard_ids(g.target_assignments.get(&m.member_id).into_iter().flatten()),
                );
            }
            if m.state.is_live() {
                current.insert(m.member_id.clone(), shard_ids(&m.reported_owned));
                granted.insert(m.member_id.clone(), shard_ids(&m.assigned));
                if !m.revoking.is_empty() {
                    let rows: Vec<Value> = m
                        .revoking
                        .keys()
                        .map(|s| {
                            let r = m.reported_revoking.get(s);
                            json!({"shard": ShardId::new(*s), "state": r.map(|r| r.state), "inFlight": r.map_or(0, |r| r.in_flight)})
                        })
                        .collect();
                    revoke_progress.insert(m.member_id.clone(), rows);
                }
            } else {
                departed.insert(
                    m.member_id.clone(),
                    json!({"state": m.state.as_str(), "lastReportedAssignment": shard_ids(&m.reported_owned),
                           "since": iso_ms(m.state_changed_at_ms)}),
                );
            }
        }
        let holds: Vec<Value> = g
            .holds
            .iter()
            .map(|h| json!({"memberId": h.member_id, "shards": shard_ids(&h.shards), "until": iso_ms(h.until_ms), "reason": h.reason}))
            .collect();
        Ok(json!({
            "targetAssignment": target,
            "currentAssignments": current,
            "grantedAssignments": granted,
            "revokeProgress": revoke_progress,
            "departedMembers": departed,
            "holds": holds,
            "invariantViolations": rsc_group::invariants::check(g),
        }))
    }

    /// Coordinator health with components that are really checked.
    /// Coordinator health with components that are really checked: Redis answers a PING in time, the
    /// reconciler ran recently, and no group is suspected of a metadata rollback. `UP`, `DEGRADED` or `DOWN`.
    pub async fn health(&self) -> Value {
        let (redis, redis_detail) = self.probe_redis().await;
        let (loop_state, last) = crate::metrics::refresh::reconciler_state(self);
        let (durability, suspected, checked_by) = if redis == "DOWN" {
            ("UNKNOWN", Vec::new(), "not checked: Redis is down")
        } else {
            match self.suspected_groups().await {
                Ok((list, how)) if list.is_empty() => ("UP", list, how),
                Ok((list, how)) => ("SUSPECTED_ROLLBACK", list, how),
                Err(_) => ("UNKNOWN", Vec::new(), "groups could not be read"),
            }
        };
        let mut status = crate::metrics::refresh::overall_status(
            redis,
            loop_state,
            suspected.len(),
            self.is_terminating(),
        );
        if status == "UP" && durability == "UNKNOWN" {
            status = "DEGRADED";
        }
        let suspected: Vec<Value> = suspected
            .iter()
            .map(|s| {
                json!({"streamPrefix": s.stream_prefix, "consumerGroup": s.consumer_group,
                       "signals": s.kinds, "lastSignal": s.last_signal})
            })
            .collect();
        json!({
            "status": status,
            "coordinatorId": self.config.id,
            "redis": redis,
            "loop": loop_state,
            "terminating": self.is_terminating(),
            "components": {
                "redis": {"status": redis, "detail": redis_detail},
                "reconciler": {"status": loop_state, "lastRunAt": (last > 0).then(|| iso_ms(last))},
                "metadataDurability": {"status": durability, "checkedBy": checked_by, "suspectedGroups": suspected},
            }
        })
    }

    pub fn compatibility(&self) -> Value {
        let version = env!("CARGO_PKG_VERSION");
        json!({
            "currentCoordinationVersion": rsc_protocol::PROTOCOL_VERSION_MAX,
            "supportedCoordinationVersions": {"min": rsc_protocol::PROTOCOL_VERSION_MIN, "max": rsc_protocol::PROTOCOL_VERSION_MAX},
            "coordinationVersions": [{
                "version": 1, "status": "ACTIVE",
                "introducedIn": {"major": 0, "minor": 1, "patch": 0, "qualifier": null, "version": "0.1.0"},
                "deprecatedIn": null, "minimumSupportedUntil": {"major": 1, "minor": 0, "patch": 0, "qualifier": null, "version": "1.0.0"},
                "removedIn": null,
                "timingDefaults": {
                    "heartbeatInterval": format!("PT{}S", self.timing.heartbeat_interval_ms as f64 / 1000.0),
                    "memberLeaseTtl": format!("PT{}S", self.timing.member_lease_ttl_ms as f64 / 1000.0),
                    "rebalanceTimeout": format!("PT{}S", self.timing.rebalance_timeout_ms as f64 / 1000.0),
                }
            }],
            "coordinatorVersion": version,
        })
    }
}
