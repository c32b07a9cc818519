//! Monitoring views that combine the aggregate with hot per-member data (leases, progress) from Redis:
//! members, assignments, health and compatibility.

use crate::domain_error::CoordError;
use crate::runtime::cache::GroupName;
use crate::runtime::clock::iso_ms;
use crate::runtime::coordinator::Monitoring;
use rsc_group::model::MemberState;
use rsc_protocol::wire::ShardId;
use rsc_protocol::wire::monitoring::{
    AssignmentsResponse, CompatibilityResponse, CoordinationVersion, DepartedMember,
    DurabilityHealth, HealthComponents, HealthResponse, HoldView, MemberMetadata, ReconcilerHealth,
    RedisHealth, ReleaseVersion, ReservationView, RevokeProgress, SuspectedGroupHealth,
    TimingDefaults, VersionRange,
};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

fn shard_ids<'a>(it: impl IntoIterator<Item = &'a u32>) -> Vec<ShardId> {
    it.into_iter().map(|s| ShardId::new(*s)).collect()
}

impl Monitoring<'_> {
    pub async fn members(&self, name: &GroupName) -> Result<Vec<MemberMetadata>, CoordError> {
        let cached = self.require_group(name).await?;
        let leases: HashMap<String, i64> = self
            .store()
            .leases(name)
            .await
            .map_err(CoordError::from)?
            .into_iter()
            .collect();
        let progress: HashMap<String, Value> = self
            .store()
            .progress_all(name)
            .await
            .map_err(CoordError::from)?
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
                MemberMetadata {
                    member_id: m.member_id.clone(),
                    member_name: m.member_name.clone(),
                    state: m.state.as_str().to_owned(),
                    member_epoch: m.member_epoch,
                    protocol_version: m.protocol_version,
                    client_name: m.client_name.clone(),
                    client_version: m.client_version.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    metadata_version: int("metadataVersion").unwrap_or(0),
                    runtime_max_concurrency: max,
                    active_consumer_workers: (max - available).max(0),
                    current_assignment: shard_ids(&m.reported_owned),
                    granted_assignment: shard_ids(&m.assigned),
                    revoking: shard_ids(m.revoking.keys()),
                    last_heartbeat_at: int("lastHeartbeatAtMs").map(iso_ms),
                    member_lease_expires_at: leases.get(&m.member_id).map(|d| iso_ms(*d)),
                    rebalance_timeout_ms: self.timing().rebalance_timeout_ms,
                    rebalance_deadline_at: m.rebalance_deadline_ms.map(iso_ms),
                    shard_progress: p
                        .and_then(|p| p.get("shardProgress"))
                        .cloned()
                        .unwrap_or_else(|| Value::Array(Vec::new())),
                }
            })
            .collect())
    }

    /// `GET …/assignments`: target, what live owners report, what the coordinator has granted, what is being
    /// revoked and held, and the last reports of departed members shown apart.
    pub async fn assignments(&self, name: &GroupName) -> Result<AssignmentsResponse, CoordError> {
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
                    let rows: Vec<RevokeProgress> = m
                        .revoking
                        .keys()
                        .map(|s| {
                            let r = m.reported_revoking.get(s);
                            RevokeProgress {
                                shard: ShardId::new(*s),
                                state: r.map(|r| r.state),
                                in_flight: r.map_or(0, |r| r.in_flight),
                            }
                        })
                        .collect();
                    revoke_progress.insert(m.member_id.clone(), rows);
                }
            } else {
                departed.insert(
                    m.member_id.clone(),
                    DepartedMember {
                        state: m.state.as_str().to_owned(),
                        last_reported_assignment: shard_ids(&m.reported_owned),
                        since: iso_ms(m.state_changed_at_ms),
                    },
                );
            }
        }
        let holds = g
            .holds
            .iter()
            .map(|h| HoldView {
                member_id: h.member_id.clone(),
                shards: shard_ids(&h.shards),
                until: iso_ms(h.until_ms),
                end_pending: h.anchor_pending,
                reason: h.reason.to_string(),
            })
            .collect();
        let static_reservations = g
            .static_reservations
            .iter()
            .map(|r| ReservationView {
                group_instance_id: r.group_instance_id.clone(),
                member_id: r.member_id.clone(),
                shards: shard_ids(&r.shards),
                until: iso_ms(r.until_ms),
                reason: r.reason.as_str().to_owned(),
            })
            .collect();
        Ok(AssignmentsResponse {
            target_assignment: target,
            current_assignments: current,
            granted_assignments: granted,
            revoke_progress,
            departed_members: departed,
            holds,
            static_reservations,
            invariant_violations: rsc_group::invariants::check(g),
        })
    }

    /// Coordinator health as JSON (what `GET /coord/v1/monitoring/health` answers; see [`Self::health_view`]).
    pub async fn health(&self) -> Value {
        serde_json::to_value(self.health_view().await).unwrap_or_default()
    }

    /// Coordinator health with components that are really checked: Redis answers a PING in time, the
    /// reconciler ran recently, and no group is suspected of a metadata rollback. `UP`, `DEGRADED` or `DOWN`.
    pub async fn health_view(&self) -> HealthResponse {
        self.health_view_for(|_| true).await
    }

    /// Health as a caller who may see only the streams `visible` accepts: suspected groups of other streams
    /// are neither named nor counted (a principal scoped to some streams learns nothing of the others').
    pub async fn health_view_for(
        &self,
        visible: impl Fn(&str) -> bool + Send + Sync,
    ) -> HealthResponse {
        self.health_view_showing(Some(&visible)).await
    }

    /// Health for a caller whose credentials could not be checked because Redis is unreachable
    /// (`security::guard::CredentialsUnchecked`): the same statuses, but no group is named.
    pub async fn health_without_credentials(&self) -> HealthResponse {
        self.health_view_showing(None).await
    }

    async fn health_view_showing(
        &self,
        visible: Option<&(dyn Fn(&str) -> bool + Sync)>,
    ) -> HealthResponse {
        let (redis, redis_detail) = self.probe_redis().await;
        let (loop_state, last) = crate::background::metrics_refresh::reconciler_state(self);
        let (durability, suspected, checked_by) = if redis == "DOWN" {
            ("UNKNOWN", Vec::new(), "not checked: Redis is down")
        } else if let Some(visible) = visible {
            match self.durability().suspected_groups().await {
                Ok((mut list, how)) => {
                    list.retain(|s| visible(&s.stream_prefix));
                    if list.is_empty() {
                        ("UP", list, how)
                    } else {
                        ("SUSPECTED_ROLLBACK", list, how)
                    }
                }
                Err(_) => ("UNKNOWN", Vec::new(), "groups could not be read"),
            }
        } else {
            (
                "UNKNOWN",
                Vec::new(),
                "not shown: the caller's credentials could not be checked (Redis was unreachable)",
            )
        };
        let mut status = crate::background::metrics_refresh::overall_status(
            redis,
            loop_state,
            suspected.len(),
            self.is_terminating(),
        );
        if status == "UP" && durability == "UNKNOWN" {
            status = "DEGRADED";
        }
        let suspected_groups = suspected
            .into_iter()
            .map(|s| SuspectedGroupHealth {
                stream_prefix: s.stream_prefix,
                consumer_group: s.consumer_group,
                signals: s.kinds,
                last_signal: s.last_signal,
            })
            .collect();
        HealthResponse {
            status: status.to_owned(),
            coordinator_id: self.config().id.clone(),
            redis: redis.to_owned(),
            loop_state: loop_state.to_owned(),
            terminating: self.is_terminating(),
            components: HealthComponents {
                redis: RedisHealth {
                    status: redis.to_owned(),
                    detail: redis_detail,
                },
                reconciler: ReconcilerHealth {
                    status: loop_state.to_owned(),
                    last_run_at: (last > 0).then(|| iso_ms(last)),
                },
                metadata_durability: DurabilityHealth {
                    status: durability.to_owned(),
                    checked_by: checked_by.to_owned(),
                    suspected_groups,
                },
            },
        }
    }

    /// Live members of every group, counted by the protocol version they joined with (None when the
    /// index or a group cannot be read).
    async fn live_members_by_protocol_version(
        &self,
    ) -> Option<std::collections::BTreeMap<String, u64>> {
        let mut counts = std::collections::BTreeMap::new();
        for e in self.index_entries().await.ok()? {
            if e.state != rsc_store::IndexState::Live {
                continue;
            }
            let name = GroupName::new(&e.stream_prefix, &e.consumer_group);
            let Some(c) = self.cached_or_load(&name).await.ok()?.0 else {
                continue;
            };
            for m in c.group.members.values().filter(|m| m.state.is_live()) {
                *counts.entry(m.protocol_version.to_string()).or_default() += 1;
            }
        }
        Some(counts)
    }

    pub async fn compatibility(&self) -> CompatibilityResponse {
        let live_members_by_protocol_version = self.live_members_by_protocol_version().await;
        let seconds = |ms: i64| format!("PT{}S", ms as f64 / 1000.0);
        CompatibilityResponse {
            current_coordination_version: rsc_protocol::PROTOCOL_VERSION_MAX,
            supported_coordination_versions: VersionRange {
                min: rsc_protocol::PROTOCOL_VERSION_MIN,
                max: rsc_protocol::PROTOCOL_VERSION_MAX,
            },
            coordination_versions: vec![CoordinationVersion {
                version: 1,
                status: "ACTIVE".to_owned(),
                introduced_in: ReleaseVersion::new(0, 1, 0),
                deprecated_in: None,
                minimum_supported_until: ReleaseVersion::new(1, 0, 0),
                removed_in: None,
                timing_defaults: TimingDefaults {
                    heartbeat_interval: seconds(self.timing().heartbeat_interval_ms),
                    member_lease_ttl: seconds(self.timing().member_lease_ttl_ms),
                    rebalance_timeout: seconds(self.timing().rebalance_timeout_ms),
                },
            }],
            coordinator_version: env!("CARGO_PKG_VERSION").to_owned(),
            live_members_by_protocol_version,
        }
    }
}
