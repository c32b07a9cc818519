//! Builds one complete snapshot of gauges from what the background task observed: health, and for every
//! group its aggregate, member leases, member progress and (for groups small enough) per-shard offsets.
//!
//! Pure apart from the registry it fills: the same observations always give the same series. Because every
//! snapshot is built from scratch, members pruned from a group and groups deleted from the index have no
//! series in the next one.

use super::{Labels, MetricsConfig, PREFIX};
use crate::services::offsets::ShardOffsets;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use rsc_group::model::{Group, MemberState};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

type GaugeFamily = Family<Labels, Gauge<f64, AtomicU64>>;

/// Everything observed about one group in one pass.
#[derive(Debug, Clone)]
pub struct GroupObservation {
    pub group: Arc<Group>,
    /// member → lease deadline (Redis ms).
    pub leases: HashMap<String, i64>,
    /// member → progress document (as stored by the heartbeat path).
    pub progress: HashMap<String, Value>,
    /// Per-shard offsets, or None when the group has more shards than `max-shard-series`.
    pub shards: Option<Vec<ShardOffsets>>,
    /// Records appended per second to the group's stream, from the rate history (None: not known yet).
    pub produce_rate: Option<f64>,
    /// Records the group read per second, from the rate history (None: not known yet).
    pub consume_rate: Option<f64>,
}

/// Health as the background task found it.
#[derive(Debug, Clone)]
pub struct HealthObservation {
    pub redis_up: bool,
    /// `UP`, `DEGRADED` or `DOWN`.
    pub status: &'static str,
    /// Seconds since the reconciler's last pass (None = never ran or disabled).
    pub reconciler_age_seconds: Option<f64>,
}

/// A group suspected of a metadata rollback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuspectedGroup {
    pub stream_prefix: String,
    pub consumer_group: String,
    pub kinds: Vec<String>,
    pub last_signal: String,
}

/// One complete set of gauges plus the facts health needs.
#[derive(Debug)]
pub struct Snapshot {
    pub registry: Registry,
    /// Redis time of the pass (ms).
    pub taken_at_ms: i64,
    /// Whether every group in the index could be read in this pass.
    pub complete: bool,
    pub suspected: Vec<SuspectedGroup>,
    /// The cache's durability generation when the pass began (`GroupCache::durability_generation`): once it
    /// moved, `suspected` may be out of date and health reads the groups itself.
    pub durability_generation: u64,
}

/// Collects gauge families by name, then registers them all at once.
#[derive(Default)]
struct Gauges {
    families: BTreeMap<&'static str, (&'static str, GaugeFamily)>,
}

impl Gauges {
    fn set(&mut self, name: &'static str, help: &'static str, labels: Labels, value: f64) {
        let (_, family) = self
            .families
            .entry(name)
            .or_insert_with(|| (help, GaugeFamily::default()));
        family.get_or_create(&labels).set(value);
    }

    fn into_registry(self) -> Registry {
        let mut r = Registry::default();
        for (name, (help, family)) in self.families {
            r.register(format!("{PREFIX}_{name}"), help, family);
        }
        r
    }
}

fn ms_to_s(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

/// Parses an ISO-8601 instant into epoch milliseconds.
fn iso_to_ms(s: &str) -> Option<i64> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// Builds the snapshot.
pub fn build(
    now_ms: i64,
    coordinator_id: &str,
    config: &MetricsConfig,
    lease_ttl_ms: i64,
    health: &HealthObservation,
    groups: &[GroupObservation],
    complete: bool,
) -> Snapshot {
    let mut g = Gauges::default();
    let none = Labels::new;
    liveness_gauges(&mut g, coordinator_id, health);
    if let Some(age) = health.reconciler_age_seconds {
        g.set(
            "reconciler_last_run_age_seconds",
            "Seconds since the reconciler last completed a pass",
            none(),
            age,
        );
    }
    g.set(
        "member_lease_ttl_seconds",
        "The configured member lease TTL",
        none(),
        ms_to_s(lease_ttl_ms),
    );
    g.set(
        "groups",
        "Groups listed in the index and readable",
        none(),
        groups.len() as f64,
    );
    let mut suspected = Vec::new();
    for obs in groups {
        group_series(&mut g, now_ms, coordinator_id, config, lease_ttl_ms, obs);
        if let Some(s) = &obs.group.rollback_suspicion {
            suspected.push(SuspectedGroup {
                stream_prefix: obs.group.stream_prefix.clone(),
                consumer_group: obs.group.consumer_group.clone(),
                kinds: s.kinds.iter().map(|k| k.as_str().to_owned()).collect(),
                last_signal: s.last_signal.clone(),
            });
        }
    }
    Snapshot {
        registry: g.into_registry(),
        taken_at_ms: now_ms,
        complete,
        suspected,
        durability_generation: 0,
    }
}

/// `up{coordinator}`, `health{status}` and `redis_up`: what every scrape shows, even one whose credentials
/// could not be checked while Redis is down.
fn liveness_gauges(g: &mut Gauges, coordinator_id: &str, health: &HealthObservation) {
    g.set(
        "up",
        "1 while this coordinator runs",
        vec![("coordinator", coordinator_id.to_owned())],
        1.0,
    );
    for status in ["UP", "DEGRADED", "DOWN"] {
        g.set(
            "health",
            "Coordinator health: 1 for the current status (UP, DEGRADED or DOWN), 0 for the others",
            vec![("status", status.to_owned())],
            if health.status == status { 1.0 } else { 0.0 },
        );
    }
    g.set(
        "redis_up",
        "1 when Redis answered the last health PING",
        Labels::new(),
        if health.redis_up { 1.0 } else { 0.0 },
    );
}

/// A registry of the liveness gauges alone (`liveness_gauges`).
pub fn liveness_registry(coordinator_id: &str, health: &HealthObservation) -> Registry {
    let mut g = Gauges::default();
    liveness_gauges(&mut g, coordinator_id, health);
    g.into_registry()
}

fn group_series(
    g: &mut Gauges,
    now_ms: i64,
    owner: &str,
    config: &MetricsConfig,
    lease_ttl_ms: i64,
    obs: &GroupObservation,
) {
    let grp = &obs.group;
    let base = || -> Labels {
        vec![
            ("stream", grp.stream_prefix.clone()),
            ("group", grp.consumer_group.clone()),
        ]
    };
    let with = |extra: &[(&'static str, String)]| -> Labels {
        let mut l = base();
        l.extend(extra.iter().cloned());
        l
    };
    g.set(
        "group_owner",
        "1 on the replica that owns the group's background work (reconciler visits, these series): scrape every replica",
        with(&[("owner", owner.to_owned())]),
        1.0,
    );
    if let Some(r) = obs.produce_rate {
        g.set(
            "produce_rate",
            "Records appended per second to the group's stream over the last minute (XINFO STREAM entries-added, from the replica's rate history)",
            base(),
            r,
        );
    }
    if let Some(r) = obs.consume_rate {
        g.set(
            "consume_rate",
            "Records the group read per second over the last minute (XINFO GROUPS entries-read, from the replica's rate history)",
            base(),
            r,
        );
    }
    g.set(
        "group_epoch",
        "The group's groupEpoch",
        base(),
        grp.group_epoch as f64,
    );
    g.set(
        "assignment_epoch",
        "The group's assignmentEpoch",
        base(),
        grp.assignment_epoch as f64,
    );
    g.set(
        "metadata_version",
        "The group's metadataVersion",
        base(),
        grp.metadata_version as f64,
    );
    g.set(
        "shard_count",
        "The group's shard count",
        base(),
        f64::from(grp.shard_count),
    );
    g.set(
        "ordering_gated_shards",
        "Ordered streams: child shards of this group still waiting for their parents (a new one is read by no member, a surviving one only up to its switch point)",
        base(),
        grp.ordering_gates.len() as f64,
    );
    for (child, parents) in &grp.ordering_gates {
        g.set(
            "ordering_gate_parents",
            "Ordered streams: per gated child shard, how many parents it still waits for in this group",
            with(&[("shard", child.to_string())]),
            parents.len() as f64,
        );
    }
    let mut by_state: BTreeMap<&str, usize> = BTreeMap::new();
    for m in grp.members.values() {
        *by_state.entry(m.state.as_str()).or_default() += 1;
    }
    g.set(
        "members",
        "Members by state, spelled as the contract does (total, active, leaving, expired, fenced)",
        with(&[("state", "total".to_owned())]),
        grp.members.len() as f64,
    );
    for state in [
        MemberState::Active,
        MemberState::Leaving,
        MemberState::Expired,
        MemberState::Fenced,
    ] {
        g.set(
            "members",
            "Members by state, spelled as the contract does (total, active, leaving, expired, fenced)",
            with(&[("state", state.as_str().to_ascii_lowercase())]),
            by_state.get(state.as_str()).copied().unwrap_or(0) as f64,
        );
    }
    let revoking: usize = grp
        .members
        .values()
        .filter(|m| m.state.is_live())
        .map(|m| m.revoking.len())
        .sum();
    g.set(
        "revoke_pending",
        "Shards taken from a live member that it has not released yet",
        base(),
        revoking as f64,
    );
    g.set(
        "invariant_violations",
        "Invariant violations found in the group's current aggregate",
        base(),
        rsc_group::invariants::check(grp).len() as f64,
    );
    let active = grp
        .active_migration_id
        .as_ref()
        .and_then(|id| grp.migrations.iter().find(|m| &m.resharding_id == id));
    g.set(
        "migration_active",
        "1 while a resharding migration is active",
        base(),
        if active.is_some() { 1.0 } else { 0.0 },
    );
    g.set(
        "migration_active_age_seconds",
        "Age of the active migration (0 when none)",
        base(),
        active.map_or(0.0, |m| ms_to_s((now_ms - m.created_at_ms).max(0))),
    );
    g.set(
        "metadata_rollback_suspected",
        "1 while the group is suspected of a metadata rollback (admin mutations fail closed)",
        base(),
        if grp.rollback_suspicion.is_some() {
            1.0
        } else {
            0.0
        },
    );
    g.set(
        "metadata_correction_open",
        "1 while a metadata-correction round (SYNC_METADATA) is open",
        base(),
        if grp.metadata_correction.is_some() {
            1.0
        } else {
            0.0
        },
    );

    for m in grp.members.values().take(config.max_member_series) {
        let ml = || with(&[("member", m.member_id.clone())]);
        let live = m.state.is_live();
        g.set(
            "member_active",
            "1 for an ACTIVE member, 0 otherwise",
            ml(),
            if m.state == MemberState::Active {
                1.0
            } else {
                0.0
            },
        );
        g.set(
            "member_current_shards",
            "Shards the member reported reading",
            ml(),
            if live {
                m.reported_owned.len() as f64
            } else {
                0.0
            },
        );
        g.set(
            "member_target_shards",
            "Shards in the member's target assignment",
            ml(),
            grp.target_assignments
                .get(&m.member_id)
                .map_or(0, |t| t.len()) as f64,
        );
        g.set(
            "member_revoking_shards",
            "Shards the member still has to release",
            ml(),
            m.revoking.len() as f64,
        );
        let lease = obs.leases.get(&m.member_id).copied();
        // A member that left keeps its last progress (for monitoring) but no lease: nothing here is current.
        if !live || (m.state == MemberState::Leaving && lease.is_none()) {
            continue;
        }
        let progress = obs.progress.get(&m.member_id);
        let from_progress = progress
            .and_then(|p| p.get("lastHeartbeatAtMs"))
            .and_then(Value::as_i64);
        let from_lease = lease.map(|d| d - lease_ttl_ms);
        if let Some(last) = from_progress.max(from_lease) {
            g.set(
                "member_heartbeat_age_seconds",
                "Seconds since the member's last accepted heartbeat",
                ml(),
                ms_to_s((now_ms - last).max(0)),
            );
        }
        if let Some(deadline) = lease {
            g.set(
                "member_lease_remaining_seconds",
                "Seconds until the member's lease lapses (0 = lapsed)",
                ml(),
                ms_to_s((deadline - now_ms).max(0)),
            );
        }
        let rows = progress
            .and_then(|p| p.get("shardProgress"))
            .and_then(Value::as_array);
        for row in rows.into_iter().flatten() {
            let Some(shard) = row
                .get("shard")
                .and_then(|s| s.get("shardIndex"))
                .and_then(Value::as_u64)
            else {
                continue;
            };
            let sl = || {
                with(&[
                    ("member", m.member_id.clone()),
                    ("shard", shard.to_string()),
                ])
            };
            g.set(
                "consumer_shard_pending",
                "Entries the member reported delivered but not acknowledged, per shard",
                sl(),
                row.get("pendingCount").and_then(Value::as_i64).unwrap_or(0) as f64,
            );
            if let Some(at) = row
                .get("updatedAt")
                .and_then(Value::as_str)
                .and_then(iso_to_ms)
            {
                g.set(
                    "consumer_shard_progress_age_seconds",
                    "Seconds since the member's progress on the shard last changed (as it reported)",
                    sl(),
                    ms_to_s((now_ms - at).max(0)),
                );
            }
        }
    }
    g.set(
        "member_series_truncated",
        "1 when the group has more members than coordinator.metrics.max-member-series",
        base(),
        if grp.members.len() > config.max_member_series {
            1.0
        } else {
            0.0
        },
    );

    let Some(shards) = &obs.shards else {
        return;
    };
    let (mut length, mut pending, mut lag) = (0i64, 0i64, 0i64);
    for s in shards {
        length += s.stream_length;
        pending += s.pending_count.unwrap_or(0);
        lag += s.lag.unwrap_or(0);
        let sl = || {
            with(&[
                ("shard", s.shard.to_string()),
                ("stream_key", s.stream_key.clone()),
            ])
        };
        g.set(
            "shard_stream_length",
            "Entries in the shard stream (XLEN)",
            sl(),
            s.stream_length as f64,
        );
        if let Some(p) = s.pending_count {
            g.set(
                "shard_pending",
                "Entries delivered to the group but not acknowledged (XINFO GROUPS pending)",
                sl(),
                p as f64,
            );
        }
        if let Some(bytes) = s.memory_usage_bytes {
            g.set(
                "shard_memory_usage_bytes",
                "Memory the shard stream uses in Redis (MEMORY USAGE)",
                sl(),
                bytes as f64,
            );
        }
        if let Some(l) = s.lag {
            g.set(
                "shard_lag",
                "Entries not yet delivered to the group (XINFO GROUPS lag)",
                sl(),
                l as f64,
            );
        }
    }
    g.set(
        "stream_length_total",
        "Entries in all shard streams of the group",
        base(),
        length as f64,
    );
    g.set(
        "pending_total",
        "Pending entries over all shards of the group",
        base(),
        pending as f64,
    );
    g.set(
        "lag_total",
        "Lag over all shards of the group",
        base(),
        lag as f64,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode_registry;
    use rsc_group::model::Member;

    fn render(s: &Snapshot) -> String {
        let mut out = String::new();
        encode_registry(&mut out, &s.registry).unwrap();
        out
    }

    #[test]
    fn member_series_exist_only_for_members_in_the_aggregate() {
        let mut grp = Group::new("orders", "orders", 2, 0, "l");
        grp.members.insert("m1".into(), Member::new("m1", "m1", 0));
        let health = HealthObservation {
            redis_up: true,
            status: "UP",
            reconciler_age_seconds: Some(0.1),
        };
        let obs = GroupObservation {
            group: Arc::new(grp.clone()),
            leases: HashMap::from([("m1".to_owned(), 20_000)]),
            progress: HashMap::new(),
            shards: None,
            produce_rate: Some(2.5),
            consume_rate: None,
        };
        let cfg = MetricsConfig::default();
        let text = render(&build(
            10_000,
            "c1",
            &cfg,
            15_000,
            &health,
            std::slice::from_ref(&obs),
            true,
        ));
        assert!(text.contains(
            "redis_stream_coord_member_lease_remaining_seconds{stream=\"orders\",group=\"orders\",member=\"m1\"} 10.0"
        ), "{text}");
        assert!(
            text.contains(
                "redis_stream_coord_produce_rate{stream=\"orders\",group=\"orders\"} 2.5"
            ),
            "{text}"
        );
        assert!(
            !text.contains("consume_rate{"),
            "unknown: no series: {text}"
        );
        assert!(text.contains(
            "redis_stream_coord_member_heartbeat_age_seconds{stream=\"orders\",group=\"orders\",member=\"m1\"} 5.0"
        ), "{text}");
        grp.members.clear();
        let obs = GroupObservation {
            group: Arc::new(grp),
            ..obs
        };
        let text = render(&build(10_000, "c1", &cfg, 15_000, &health, &[obs], true));
        assert!(!text.contains("member=\"m1\""), "{text}");
        let text = render(&build(10_000, "c1", &cfg, 15_000, &health, &[], true));
        assert!(!text.contains("group=\"orders\""), "{text}");
    }
}
