//! The background task that keeps the metrics gauges (`metrics/snapshot.rs`) current, and the health facts
//! it shares with monitoring. It sits outside `metrics` because it reads groups through the `Coordinator`,
//! which itself holds the metrics: `metrics` depends on nothing of the coordinator's.
//!
//! The task: every `coordinator.metrics.refresh-interval` (15 s, a Prometheus scrape) it
//! checks Redis, reads every group this replica owns (`coordinator/cluster_view.rs`) as Redis holds it (the
//! cached aggregate when one HGET shows its revision is current, else a fresh load, which also notices store
//! revisions going backwards without anyone calling an API), the leases and progress of a group that has
//! members, and the offsets of its shard streams, and swaps in a new snapshot. Shard offsets: a group with
//! members has the shard streams that exist read in full (one pipelined EXISTS, then one pipeline of XINFO
//! STREAM, XINFO GROUPS and MEMORY USAGE); an idle group costs one XREAD that says whether any of its shards
//! got an entry since the last full read, and every fourth refresh one XINFO GROUPS per shard for where the
//! group stands (a reader outside rsc moves it without appending; `metrics_refresh/shard_cache.rs`). Every replica runs it
//! for its own groups, so each group's series come from one replica (labelled with it, `group_owner`) and
//! Prometheus scrapes every replica; health and process metrics are each replica's own. Parsing every member's progress and
//! building the snapshot take milliseconds for a group of thousands of members, so they run off the async
//! workers, where they would hold up heartbeats.

use crate::domain_error::{CoordError, Internal};
use crate::observability::metrics::snapshot::{self, GroupObservation, HealthObservation};
use crate::runtime::cache::GroupName;
use crate::runtime::coordinator::Coordinator;
use crate::runtime::coordinator::Monitoring;
use rsc_store::IndexState;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

mod history_sample;
mod shard_cache;
use shard_cache::Plan;
pub(crate) use shard_cache::ShardCache;

/// Runs until `stop` turns true.
pub async fn run(c: Arc<Coordinator>, mut stop: watch::Receiver<bool>) {
    // The first snapshot waits for the reconciler's first pass, at most until health would call the reconciler
    // stalled: taken at start, it said DEGRADED ("reconciler stalled") for a whole refresh interval after every
    // start, while the health endpoint, a moment later, said UP.
    if c.config().reconciler.enabled {
        let reconciler = c.reconciler();
        tokio::select! {
            _ = tokio::time::timeout(stall_after(&c), reconciler.first_pass()) => {}
            _ = stop.changed() => return,
        }
    }
    let mut ticker = tokio::time::interval(c.config().metrics.refresh_interval.0);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shards = ShardCache::default();
    loop {
        tokio::select! {
            _ = ticker.tick() => c.monitoring().refresh_metrics(&mut shards).await,
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
    }
}

/// The reconciler's state for health: `UP`, `STALLED` or `DISABLED`, and its last run (Redis ms, 0 = never).
pub fn reconciler_state(c: &Coordinator) -> (&'static str, i64) {
    let last = c.reconciler().last_pass_ms();
    let state = if !c.config().reconciler.enabled {
        "DISABLED"
    } else if last > 0 && c.clock().now_ms() - last <= stall_after_ms(c) {
        "UP"
    } else {
        "STALLED"
    };
    (state, last)
}

/// How long after its last pass the reconciler counts as stalled: five ticks, at least 5 s.
fn stall_after(c: &Coordinator) -> Duration {
    (c.config().reconciler.tick_interval.0 * 5).max(Duration::from_secs(5))
}

fn stall_after_ms(c: &Coordinator) -> i64 {
    i64::try_from(stall_after(c).as_millis()).unwrap_or(i64::MAX)
}

/// Combines component states into the coordinator's health status.
pub fn overall_status(
    redis: &str,
    reconciler: &str,
    suspected: usize,
    terminating: bool,
) -> &'static str {
    match (redis, reconciler) {
        ("DOWN", _) => "DOWN",
        ("UP", "UP" | "DISABLED") if !terminating && suspected == 0 => "UP",
        _ => "DEGRADED",
    }
}

impl Monitoring<'_> {
    /// One PING, timed and bounded: `UP`, `SLOW` (answered later than `coordinator.health.redis-timeout`) or
    /// `DOWN`, with a detail for people.
    pub async fn probe_redis(&self) -> (&'static str, String) {
        let timeout = self.config().health.redis_timeout.0;
        let bound = timeout.max(Duration::from_millis(50)) * 4;
        let ping = tokio::time::timeout(
            bound,
            self.metrics().time_store("ping", self.store().ping()),
        )
        .await;
        match ping {
            Ok(Ok(rtt)) if rtt <= timeout => ("UP", format!("PING {} ms", rtt.as_millis())),
            Ok(Ok(rtt)) => (
                "SLOW",
                format!(
                    "PING {} ms exceeds {} ms",
                    rtt.as_millis(),
                    timeout.as_millis()
                ),
            ),
            Ok(Err(e)) => ("DOWN", e.to_string()),
            Err(_) => {
                self.metrics()
                    .observe_redis("ping", bound.as_secs_f64(), true);
                ("DOWN", "PING timed out".to_owned())
            }
        }
    }

    /// Rebuilds the gauge snapshot once; `shards` is what the last refreshes read of the owned groups' shards.
    pub(crate) async fn refresh_metrics(&self, shards: &mut ShardCache) {
        let durability_generation = self.cache().durability_generation();
        shards.begin_refresh();
        let (redis, _) = self.probe_redis().await;
        let redis_up = redis != "DOWN";
        let mut now = self.clock().now_ms();
        let mut groups = Vec::new();
        let mut complete = redis_up;
        if redis_up {
            if let Ok(t) = self
                .metrics()
                .time_store("time", self.store().server_time_ms())
                .await
            {
                self.clock().observe(t);
                now = t;
            }
            match self.index_entries().await {
                Ok(entries) => {
                    // Only the groups this replica owns: each group's series come from one replica.
                    let cluster = self.cluster();
                    let owned: Vec<GroupName> = entries
                        .iter()
                        .map(|e| GroupName::new(&e.stream_prefix, &e.consumer_group))
                        .filter(|n| cluster.owns_group(n))
                        .collect();
                    // A snapshot of some groups cannot answer for all (`Durability::suspected_groups`).
                    complete &= owned.len() == entries.len();
                    let owned_set: std::collections::HashSet<&GroupName> = owned.iter().collect();
                    shards.retain(|n| owned_set.contains(n));
                    self.metrics().retain_groups(
                        &owned
                            .iter()
                            .map(|n| (n.stream_prefix.clone(), n.consumer_group.clone()))
                            .collect(),
                    );
                    for e in entries.iter().filter(|e| e.state == IndexState::Live) {
                        let name = GroupName::new(&e.stream_prefix, &e.consumer_group);
                        if !cluster.owns_group(&name) {
                            continue;
                        }
                        match self.observe_group(&name, shards).await {
                            Ok(Some(obs)) => groups.push(obs),
                            Ok(None) => {}
                            Err(err) => {
                                complete = false;
                                tracing::debug!(group = %name, error = %err, "group left out of metrics");
                            }
                        }
                    }
                }
                Err(_) => complete = false,
            }
        }
        let (loop_state, last) = reconciler_state(self);
        let suspected = groups
            .iter()
            .filter(|o| o.group.rollback_suspicion.is_some())
            .count();
        let status = overall_status(redis, loop_state, suspected, self.is_terminating());
        let health = HealthObservation {
            redis_up,
            status,
            reconciler_age_seconds: (last > 0).then(|| (now - last).max(0) as f64 / 1000.0),
        };
        let (id, config, ttl) = (
            self.config().id.clone(),
            self.config().metrics.clone(),
            self.timing().member_lease_ttl_ms,
        );
        // The rate history gets one sample per stream from the rows just read (`history_sample.rs`), and the
        // rates it derives go into the snapshot's rate gauges.
        let history = redis_up.then(|| self.history().clone());
        let built = tokio::task::spawn_blocking(move || {
            let mut groups = groups;
            if let Some(history) = history {
                let rates = history.record(now, history_sample::samples(&groups));
                for obs in &mut groups {
                    if let Some(r) = rates.get(&obs.group.stream_prefix)
                        && r.span_ms > 0
                    {
                        obs.produce_rate = r.produce;
                        obs.consume_rate =
                            r.consume.get(&obs.group.consumer_group).copied().flatten();
                    }
                }
            }
            snapshot::build(now, &id, &config, ttl, &health, &groups, complete)
        })
        .await;
        match built {
            Ok(mut snap) => {
                snap.durability_generation = durability_generation;
                self.metrics().install(snap)
            }
            Err(e) => {
                tracing::error!(error = %e, "building the metrics snapshot failed; the last one stays")
            }
        }
    }

    async fn observe_group(
        &self,
        name: &GroupName,
        cache: &mut ShardCache,
    ) -> Result<Option<GroupObservation>, CoordError> {
        let Some(cached) = self.current_or_load(name).await? else {
            return Ok(None);
        };
        let g = &cached.group;
        // Leases and progress belong to members: a group without any has none to read.
        let has_members = !g.members.is_empty();
        let (leases, progress) = if has_members {
            let leases: HashMap<String, i64> = self
                .metrics()
                .time_store("leases", self.store().leases(name))
                .await?
                .into_iter()
                .collect();
            let stored = self
                .metrics()
                .time_store("progress", self.store().progress_all(name))
                .await?;
            let progress: HashMap<String, Value> = tokio::task::spawn_blocking(move || {
                stored
                    .into_iter()
                    .filter_map(|(m, json)| serde_json::from_str(&json).ok().map(|v| (m, v)))
                    .collect()
            })
            .await
            .map_err(|e| Internal::ProgressParse {
                cause: e.to_string(),
            })?;
            (leases, progress)
        } else {
            (HashMap::new(), HashMap::new())
        };
        let shard_ids: Vec<u32> = g.assignable_shards().into_iter().collect();
        let shards = if shard_ids.len() <= self.config().metrics.max_shard_series as usize {
            match self
                .shard_rows(name, &shard_ids, has_members, cached.revision, cache)
                .await
            {
                Ok(rows) => Some(rows),
                Err(e) => {
                    cache.forget(name);
                    tracing::debug!(group = %name, error = %e, "shard offsets left out of metrics");
                    None
                }
            }
        } else {
            None
        };
        Ok(Some(GroupObservation {
            group: cached.group.clone(),
            leases,
            progress,
            shards,
            produce_rate: None,
            consume_rate: None,
        }))
    }

    /// The offsets rows of `name`'s shards: the remembered ones when the group is idle, its revision has
    /// not moved and none of its shards got an entry since they were read (with its positions re-read on
    /// its turn: one `XINFO GROUPS` per shard stream), else a full read (only of the shard streams that
    /// exist: one pipelined EXISTS first, so no XINFO fails on a missing key).
    async fn shard_rows(
        &self,
        name: &GroupName,
        shard_ids: &[u32],
        has_members: bool,
        revision: u64,
        cache: &mut ShardCache,
    ) -> Result<Vec<crate::services::offsets::ShardOffsets>, CoordError> {
        let prefix = &name.stream_prefix;
        let shards: Vec<rsc_store::Shard> = shard_ids
            .iter()
            .map(|s| rsc_store::Shard::new(prefix.as_str(), *s))
            .collect();
        let now = std::time::Instant::now();
        if let Plan::Check { after, positions } =
            cache.plan(name, shard_ids, has_members, revision, now)
        {
            let grown = self
                .metrics()
                .time_store("xread", self.store().streams_grown_since(&shards, &after))
                .await?;
            if !grown.contains(&true) {
                if positions {
                    // A reader outside rsc moves the group without appending anything.
                    let present = cache.present_shards(name);
                    let read = self
                        .metrics()
                        .time_store("xinfo", self.store().shard_groups_of(&present))
                        .await?;
                    cache.update_positions(name, &name.consumer_group, read);
                }
                if let Some(rows) = cache.rows(name) {
                    return Ok(rows.to_vec());
                }
            }
        }
        let observed =
            crate::services::describe::observe_shard_streams(self.metrics(), self.store(), &shards)
                .await?;
        let rows: Vec<crate::services::offsets::ShardOffsets> = shard_ids
            .iter()
            .zip(&observed)
            .map(|(s, o)| {
                crate::services::offsets::from_observation(
                    prefix,
                    &name.consumer_group,
                    *s,
                    o.as_ref(),
                )
            })
            .collect();
        cache.record(name, shard_ids.to_vec(), revision, rows.clone(), now);
        Ok(rows)
    }
}
