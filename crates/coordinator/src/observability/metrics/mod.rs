//! Prometheus metrics (`GET /metrics`, OpenMetrics text), under the names the runbook alerts on.
//!
//! Three sources are encoded into one exposition:
//! - event metrics updated where things happen: API request count and latency by route *template*, Redis
//!   command latency by operation, Redis connection failures (a static registry, cheap atomics);
//! - the coordinator's counters (`stats.rs`: heartbeats by status, expiries, conflicts, regressions, …),
//!   read at scrape time — counters are cumulative, so reading them late is still exact;
//! - gauges describing groups, members, shards and health, rebuilt as a whole by a background task
//!   (`metrics_refresh.rs`) and swapped in atomically. They are correct with nobody calling the monitoring API, and a
//!   removed member's or group's series simply do not appear in the next snapshot.
//!
//! Label values stay bounded: route labels are templates, methods and operations come from fixed sets,
//! member ids are length-limited by validation and per-group series are capped by configuration.

pub mod config;
mod handles;
pub mod resharding;
pub mod snapshot;

pub use config::MetricsConfig;

use crate::observability::stats::Stats;
use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use rsc_protocol::wire::HeartbeatStatus;
use rsc_store::StoreError;
use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::Instant;

/// The metric name prefix every rsc metric carries.
pub const PREFIX: &str = "redis_stream_coord";

/// The Content-Type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

pub type Labels = Vec<(&'static str, String)>;
type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

fn api_histogram() -> Histogram {
    // 1 ms … ~8 s
    Histogram::new(exponential_buckets(0.001, 2.0, 14))
}

fn rebalance_histogram() -> Histogram {
    // 0.1 s … ~27 min
    Histogram::new(exponential_buckets(0.1, 2.0, 15))
}

fn redis_histogram() -> Histogram {
    // 0.1 ms … ~3.3 s
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}

/// The coordinator's metrics.
/// Every Redis operation the coordinator times (the `operation` label of `redis_command_duration_seconds` and
/// `redis_connection_failures_total`). The failure counter of each starts at 0, so that `increase()` in an
/// alert sees the first burst of failures after a restart. A test checks that every `time_store` call of the
/// crate names one of these.
pub const REDIS_OPERATIONS: [&str; 16] = [
    "cas",
    "change_publish",
    "cluster_slots",
    "exists",
    "heartbeat",
    "leases",
    "load",
    "ping",
    "progress",
    "replica_register",
    "revision",
    "time",
    "xinfo",
    "xpending",
    "xrange",
    "xread",
];

#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    api_requests: Family<Labels, Counter>,
    api_duration: HistogramFamily,
    redis_duration: HistogramFamily,
    redis_connection_failures: Family<Labels, Counter>,
    rebalances: Counter,
    rebalance_duration: Histogram,
    /// `heartbeat_total{stream,group,status}`: per group (`none`/`none` for a heartbeat to an unknown group).
    group_heartbeats: Family<Labels, Counter>,
    /// `member_expired_total{stream,group}`.
    group_expired: Family<Labels, Counter>,
    /// The per-request handles of the families above (`handles.rs`).
    heartbeat_handles: handles::HeartbeatCounters,
    route_handles: handles::RouteSeries,
    operation_handles: handles::OperationSeries,
    /// Groups with series in the two families above, so that a deleted group's series can be removed.
    counted_groups:
        std::sync::Mutex<std::collections::BTreeMap<String, std::collections::BTreeSet<String>>>,
    /// `quiesce_switch_total{stream,outcome}` (`resharding.rs`).
    quiesce_switches: Family<Labels, Counter>,
    /// `unordered_appends_after_switch{stream,shard}` (`resharding.rs`).
    unordered_appends: Family<Labels, Gauge>,
    snapshot: RwLock<Option<Arc<snapshot::Snapshot>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let api_requests = Family::<Labels, Counter>::default();
        let api_duration = HistogramFamily::new_with_constructor(api_histogram);
        let redis_duration = HistogramFamily::new_with_constructor(redis_histogram);
        let redis_connection_failures = Family::<Labels, Counter>::default();
        for operation in REDIS_OPERATIONS {
            let _ =
                redis_connection_failures.get_or_create(&vec![("operation", operation.to_owned())]);
        }
        registry.register(
            format!("{PREFIX}_api_request"),
            "HTTP requests by method, route template and status",
            api_requests.clone(),
        );
        registry.register(
            format!("{PREFIX}_api_request_duration_seconds"),
            "HTTP request latency by method and route template",
            api_duration.clone(),
        );
        registry.register(
            format!("{PREFIX}_redis_command_duration_seconds"),
            "Latency of Redis operations issued by the coordinator, by operation",
            redis_duration.clone(),
        );
        registry.register(
            format!("{PREFIX}_redis_connection_failures"),
            "Redis operations that failed to reach Redis (refused, dropped, timed out), by operation",
            redis_connection_failures.clone(),
        );
        let rebalances = Counter::default();
        let rebalance_duration = rebalance_histogram();
        registry.register(
            format!("{PREFIX}_rebalance"),
            "Rebalances started: a group left STABLE or EMPTY for RECONCILING (counted by the replica that wrote it)",
            rebalances.clone(),
        );
        registry.register(
            format!("{PREFIX}_rebalance_duration_seconds"),
            "From a rebalance's start to every active member holding exactly its target (STABLE), or the group \
             emptying",
            rebalance_duration.clone(),
        );
        let group_heartbeats = Family::<Labels, Counter>::default();
        let group_expired = Family::<Labels, Counter>::default();
        registry.register(
            format!("{PREFIX}_heartbeat"),
            "Heartbeats answered, by group and status (stream and group are none for an unknown group)",
            group_heartbeats.clone(),
        );
        registry.register(
            format!("{PREFIX}_member_expired"),
            "Members expired because their lease lapsed, by group",
            group_expired.clone(),
        );
        let quiesce_switches = Family::<Labels, Counter>::default();
        let unordered_appends = Family::<Labels, Gauge>::default();
        registry.register(
            format!("{PREFIX}_quiesce_switch"),
            "Routing switches of scales with producerQuiesce, by stream and outcome (all_quiesced, forced_by_timeout)",
            quiesce_switches.clone(),
        );
        registry.register(
            format!("{PREFIX}_unordered_appends_after_switch"),
            "Plain-XADD appends (bypassing guarded publish) to an old shard after the latest routing switch, by \
             stream and shard: records that keep at-least-once but not per-key order",
            unordered_appends.clone(),
        );
        Metrics {
            registry,
            quiesce_switches,
            unordered_appends,
            group_heartbeats,
            group_expired,
            counted_groups: Default::default(),
            heartbeat_handles: Default::default(),
            route_handles: Default::default(),
            operation_handles: Default::default(),
            api_requests,
            api_duration,
            redis_duration,
            redis_connection_failures,
            rebalances,
            rebalance_duration,
            snapshot: RwLock::new(None),
        }
    }

    /// Records a rebalance starting or ending in a committed transition from `before` to `after`.
    pub fn observe_rebalance(
        &self,
        before: &rsc_group::model::Group,
        after: &rsc_group::model::Group,
    ) {
        match (before.reconciling_since_ms, after.reconciling_since_ms) {
            (None, Some(_)) => {
                self.rebalances.inc();
            }
            (Some(start), None) => {
                self.rebalance_duration
                    .observe((after.updated_at_ms - start).max(0) as f64 / 1000.0);
            }
            _ => {}
        }
    }

    /// Counts one answered heartbeat of a group. `UNKNOWN_MEMBER_ID` is counted under `none`/`none`: it is
    /// the answer for groups that do not exist, whose names must not become label values.
    pub fn count_heartbeat(&self, stream: &str, group: &str, status: HeartbeatStatus) {
        let (stream, group) = if status == HeartbeatStatus::UnknownMemberId {
            ("none", "none")
        } else {
            (stream, group)
        };
        let index = HeartbeatStatus::ALL
            .iter()
            .position(|s| *s == status)
            .unwrap_or(0);
        if self.heartbeat_handles.inc(
            &self.group_heartbeats,
            stream,
            group,
            index,
            status.as_str(),
        ) {
            self.note_group(stream, group);
        }
    }

    /// Counts one member expiry in a group.
    pub fn count_expired(&self, stream: &str, group: &str) {
        self.note_group(stream, group);
        self.group_expired
            .get_or_create(&vec![
                ("stream", stream.to_owned()),
                ("group", group.to_owned()),
            ])
            .inc();
    }

    fn note_group(&self, stream: &str, group: &str) {
        // Looked up by reference: a group already noted (every heartbeat but its group's first) allocates nothing.
        if let Ok(mut seen) = self.counted_groups.lock()
            && !seen
                .get(stream)
                .is_some_and(|groups| groups.contains(group))
        {
            seen.entry(stream.to_owned())
                .or_default()
                .insert(group.to_owned());
        }
    }

    /// Removes the per-group counter series of groups that no longer exist (`live`: every live group), as the
    /// gauges of a deleted group disappear from the next snapshot.
    /// Every group in `live` gets its `member_expired_total` series at 0 if it has none yet, so that an
    /// alert's `increase()` counts its first expiries after a restart.
    pub fn retain_groups(&self, live: &std::collections::BTreeSet<(String, String)>) {
        for (stream, group) in live {
            self.note_group(stream, group);
            let _ = self
                .group_expired
                .get_or_create(&vec![("stream", stream.clone()), ("group", group.clone())]);
        }
        let Ok(mut seen) = self.counted_groups.lock() else {
            return;
        };
        let gone: Vec<(String, String)> = seen
            .iter()
            .flat_map(|(stream, groups)| groups.iter().map(|g| (stream.clone(), g.clone())))
            .filter(|g| !live.contains(g) && g.0 != "none")
            .collect();
        for (stream, group) in gone {
            let base = vec![("stream", stream.clone()), ("group", group.clone())];
            self.group_expired.remove(&base);
            self.heartbeat_handles.forget(&stream, &group);
            for status in HeartbeatStatus::ALL {
                let mut labels = base.clone();
                labels.push(("status", status.as_str().to_owned()));
                self.group_heartbeats.remove(&labels);
            }
            if let Some(groups) = seen.get_mut(&stream) {
                groups.remove(&group);
                if groups.is_empty() {
                    seen.remove(&stream);
                }
            }
        }
    }

    /// Records one answered HTTP request.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        self.route_handles.observe(
            &self.api_requests,
            &self.api_duration,
            (handles::method_index(method), route, status, seconds),
        );
    }

    /// Records the latency of one Redis operation and whether it failed to reach Redis.
    pub fn observe_redis(&self, operation: &'static str, seconds: f64, connection_failed: bool) {
        self.operation_handles
            .observe(&self.redis_duration, operation, seconds);
        if connection_failed {
            self.redis_connection_failures
                .get_or_create(&vec![("operation", operation.to_owned())])
                .inc();
        }
    }

    /// Times a store call.
    pub async fn time_store<T>(
        &self,
        operation: &'static str,
        fut: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let started = Instant::now();
        let result = fut.await;
        let failed = result.as_ref().err().is_some_and(is_connection_failure);
        self.observe_redis(operation, started.elapsed().as_secs_f64(), failed);
        result
    }

    /// Installs a freshly built snapshot of gauges.
    pub fn install(&self, snapshot: snapshot::Snapshot) {
        if let Ok(mut s) = self.snapshot.write() {
            *s = Some(Arc::new(snapshot));
        }
    }

    /// The latest gauge snapshot, if one was built.
    pub fn snapshot(&self) -> Option<Arc<snapshot::Snapshot>> {
        self.snapshot.read().ok().and_then(|s| s.clone())
    }

    /// The whole exposition.
    pub fn render(&self, stats: &Stats) -> String {
        let mut out = String::with_capacity(16 * 1024);
        let counters = counters(stats);
        let _ = encode_registry(&mut out, &self.registry);
        let _ = encode_registry(&mut out, &counters);
        if let Some(s) = self.snapshot() {
            let _ = encode_registry(&mut out, &s.registry);
        }
        let _ = encode_eof(&mut out);
        out
    }
}

/// The exposition of the liveness gauges alone (`up`, `health{status}`, `redis_up`), for a scrape whose
/// credentials could not be checked because Redis is down: it names no group.
pub fn render_liveness(coordinator_id: &str, health: &snapshot::HealthObservation) -> String {
    let mut out = String::new();
    let _ = encode_registry(
        &mut out,
        &snapshot::liveness_registry(coordinator_id, health),
    );
    let _ = encode_eof(&mut out);
    out
}

/// Whether a store error means Redis could not be reached (as opposed to a refused or corrupt answer).
pub fn is_connection_failure(e: &StoreError) -> bool {
    e.is_connection_failure()
}

/// The coordinator's cumulative counters, as a registry built for one scrape.
fn counters(stats: &Stats) -> Registry {
    let mut r = Registry::default();
    let routing = Family::<Labels, Counter>::default();
    for (status, counter) in [
        ("SUCCESS", &stats.routing_success),
        ("ERROR", &stats.routing_error),
    ] {
        routing
            .get_or_create(&vec![("status", status.to_owned())])
            .inc_by(Stats::get(counter));
    }
    r.register(
        format!("{PREFIX}_producer_routing_request"),
        "Producer routing requests, by status",
        routing,
    );
    let plain: [(&str, &str, &std::sync::atomic::AtomicU64); 15] = [
        (
            "member_fenced",
            "Members fenced (stale report or rebalance timeout)",
            &stats.members_fenced,
        ),
        (
            "state_conflict",
            "Compare-and-set writes lost to a concurrent writer",
            &stats.state_conflicts,
        ),
        (
            "invariant_violation",
            "Committed transitions after which an invariant check failed",
            &stats.invariant_violations,
        ),
        (
            "metadata_version_regression",
            "Members or producers that reported a higher metadataVersion or epoch than Redis holds",
            &stats.metadata_regressions,
        ),
        (
            "store_revision_regression",
            "Store revisions lower than one this coordinator had already seen",
            &stats.revision_regressions,
        ),
        (
            "rebalance_regression",
            "Shards reported as revoking again after their release was recorded",
            &stats.rebalance_regressions,
        ),
        (
            "redis_errors",
            "Redis operations that failed for any reason",
            &stats.redis_errors,
        ),
        (
            "rollback_suspicion_recorded",
            "Times this coordinator recorded new evidence of a metadata rollback in a group",
            &stats.rollback_suspicions,
        ),
        (
            "rollback_observation_ignored",
            "Rollback evidence not recorded: reported by a principal without MEMBER or ADMIN, over its budget, or not written (the group kept changing, was replaced, or Redis failed)",
            &stats.rollback_observations_ignored,
        ),
        (
            "transition_batch",
            "Aggregate writes that committed waiting heartbeat transitions together",
            &stats.transition_batches,
        ),
        (
            "batched_transition",
            "Heartbeat transitions committed in those writes (divide by transition_batch for the mean size)",
            &stats.batched_transitions,
        ),
        (
            "failover_interval_shortened",
            "Heartbeat answers that asked a member back just after a peer's lease deadline (it would take over shards)",
            &stats.failover_intervals_shortened,
        ),
        (
            "failover_grant_in_answer",
            "Heartbeats that expired a just-lapsed peer and answered with the shards it freed",
            &stats.failover_grants_in_answer,
        ),
        (
            "acknowledgement_requested",
            "Heartbeat answers that asked a member back at once to acknowledge the revocation of a shard it never started reading",
            &stats.acknowledgements_requested,
        ),
        (
            "release_interval_shortened",
            "Heartbeat answers that asked a member waiting for a shard back just after its holder was due to release it",
            &stats.release_intervals_shortened,
        ),
    ];
    for (name, help, counter) in plain {
        let c = Counter::<u64>::default();
        c.inc_by(Stats::get(counter));
        r.register(format!("{PREFIX}_{name}"), help, c);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_every_counter_with_its_total_suffix() {
        let m = Metrics::new();
        let stats = Stats::default();
        m.count_heartbeat("orders", "orders", HeartbeatStatus::Ok);
        m.count_heartbeat("nope", "nope", HeartbeatStatus::UnknownMemberId);
        m.count_expired("orders", "orders");
        m.observe_request("GET", "/coord/v1/monitoring/health", 200, 0.01);
        m.observe_request("BREW", "unmatched", 404, 0.01);
        m.observe_redis("load", 0.001, true);
        let text = m.render(&stats);
        for needle in [
            "redis_stream_coord_heartbeat_total{stream=\"orders\",group=\"orders\",status=\"OK\"} 1",
            "redis_stream_coord_heartbeat_total{stream=\"none\",group=\"none\",status=\"UNKNOWN_MEMBER_ID\"} 1",
            "redis_stream_coord_member_expired_total{stream=\"orders\",group=\"orders\"} 1",
            "redis_stream_coord_producer_routing_request_total{status=\"ERROR\"} 0",
            "redis_stream_coord_api_request_total{method=\"GET\",route=\"/coord/v1/monitoring/health\",status=\"200\"} 1",
            "redis_stream_coord_api_request_total{method=\"OTHER\",route=\"unmatched\",status=\"404\"} 1",
            "redis_stream_coord_redis_connection_failures_total{operation=\"load\"} 1",
            "# TYPE redis_stream_coord_api_request_duration_seconds histogram",
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn labelled_counters_of_alerts_start_at_zero() {
        let m = Metrics::new();
        let live = [("orders".to_owned(), "billing".to_owned())].into();
        m.retain_groups(&live);
        let text = m.render(&Stats::default());
        for op in REDIS_OPERATIONS {
            let series = format!(
                "redis_stream_coord_redis_connection_failures_total{{operation=\"{op}\"}} 0"
            );
            assert!(text.contains(&series), "missing {series} in\n{text}");
        }
        let expired =
            "redis_stream_coord_member_expired_total{stream=\"orders\",group=\"billing\"} 0";
        assert!(text.contains(expired), "missing {expired} in\n{text}");
        // A deleted group's series goes away again.
        m.retain_groups(&Default::default());
        assert!(!m.render(&Stats::default()).contains("group=\"billing\""));
    }

    #[test]
    fn every_timed_redis_operation_is_listed() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = vec![src];
        let mut named = Vec::new();
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for call in ["time_store(", "observe_redis("] {
                for (at, _) in text.match_indices(call) {
                    let rest = text[at + call.len()..].trim_start();
                    if let Some(literal) = rest.strip_prefix('"') {
                        let name = &literal[..literal.find('"').unwrap()];
                        // (This test's own string literals are not operation names.)
                        if !name.is_empty()
                            && name.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                        {
                            named.push((path.display().to_string(), name.to_owned()));
                        }
                    }
                }
            }
        }
        assert!(named.len() >= REDIS_OPERATIONS.len(), "{named:?}");
        for (file, name) in named {
            assert!(
                REDIS_OPERATIONS.contains(&name.as_str()),
                "{file} times Redis operation {name:?}, which REDIS_OPERATIONS does not list"
            );
        }
    }
}
