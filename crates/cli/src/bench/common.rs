//! Pieces shared by the SDK-driven benches (`dataplane`, `failover`, `reshard`): connection flags, the SDK
//! coordinator client, the coordinator's timing, and cleanup of a bench stream (group metadata, shard streams
//! and their routing boundaries).

use clap::Args;
use rsc_client::{Auth, CoordinatorClient, Credentials, RedisTarget};
use std::time::Duration;

/// Where the coordinator and Redis are, and how to authenticate.
#[derive(Args, Debug, Clone)]
pub struct Target {
    /// Coordinator base URL (loopback only).
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    pub coordinator: String,
    /// Redis (data plane) URL the coordinator uses (loopback only).
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,
    /// Redis Cluster instead of --redis-url (`rsc bench dataplane` only).
    #[command(flatten)]
    pub cluster: crate::redis_args::ClusterArgs,
    /// User name for HTTP Basic (needs write access to create and delete the bench stream's group).
    #[arg(long, env = "RSC_USERNAME")]
    pub username: Option<String>,
    /// Password for --username.
    #[arg(long, env = "RSC_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
}

impl Target {
    /// Checks loopback-only URLs and that credentials come in pairs.
    pub fn validate(&self) -> Result<(), String> {
        if self.username.is_some() != self.password.is_some() {
            return Err("give both --username and --password (or RSC_USERNAME and RSC_PASSWORD), or neither".into());
        }
        if !super::heartbeat::is_loopback_url(&self.coordinator) {
            return Err(
                "--coordinator must be a loopback URL (127.0.0.1, ::1 or localhost)".into(),
            );
        }
        if !super::heartbeat::is_loopback_url(&self.redis_url) {
            return Err("--redis-url must be a loopback URL (127.0.0.1, ::1 or localhost)".into());
        }
        for node in &self.cluster.redis_cluster_nodes {
            if !super::heartbeat::is_loopback_url(&format!("redis://{node}")) {
                return Err(format!(
                    "--redis-cluster-nodes: {node} is not a loopback address (127.0.0.1, ::1 or localhost)"
                ));
            }
        }
        self.cluster.tls()?;
        self.redis().map(drop)
    }

    /// The data plane: the cluster when `--redis-cluster-nodes` is given, else `--redis-url`.
    pub fn redis(&self) -> Result<RedisTarget, String> {
        self.cluster.target(&self.redis_url)
    }

    fn credentials(&self) -> Option<Credentials> {
        self.username
            .clone()
            .zip(self.password.clone())
            .map(|(u, p)| Credentials::new(u, p))
    }

    /// The SDK's coordinator client, authenticating with HTTP Basic like `rsc bench heartbeat`.
    pub fn client(&self) -> Result<CoordinatorClient, String> {
        let auth = self.credentials().map_or(Auth::None, Auth::Basic);
        CoordinatorClient::builder([self.coordinator.clone()])
            .auth(auth)
            .build()
            .map_err(|e| format!("--coordinator: {e}"))
    }

    /// Deletes the group `prefix` (force), the shard streams `prefix:0..shards` and their routing boundaries.
    /// Returns what failed.
    pub async fn cleanup(&self, prefix: &str, shards: u32) -> Vec<String> {
        self.cleanup_groups(prefix, &[prefix.to_owned()], shards)
            .await
    }

    /// Deletes the groups `groups` of stream `prefix` (force; the last first, so the default group named
    /// like the prefix goes last; a group that does not exist is fine), then the shard streams
    /// `prefix:0..shards` and their routing boundaries. Returns what failed.
    pub async fn cleanup_groups(
        &self,
        prefix: &str,
        groups: &[String],
        shards: u32,
    ) -> Vec<String> {
        let mut failures = Vec::new();
        let http = reqwest::Client::new();
        for group in groups.iter().rev() {
            let url = format!(
                "{}/coord/v1/streams/{prefix}/groups/{group}",
                self.coordinator.trim_end_matches('/')
            );
            let mut req = http.delete(url).json(&serde_json::json!({
                "requestedBy": "bench", "reason": "rsc bench cleanup", "force": true
            }));
            if let Some(c) = self.credentials() {
                req = req.basic_auth(c.username, Some(c.password));
            }
            match req.send().await {
                Ok(r)
                    if r.status().is_success() || r.status() == reqwest::StatusCode::NOT_FOUND => {}
                Ok(r) => failures.push(format!("deleting group {group}: HTTP {}", r.status())),
                Err(e) => failures.push(format!("deleting group {group}: {e}")),
            }
        }
        let keys: Vec<String> = (0..shards)
            .map(|i| rsc_store::Keyspace::shard_stream(prefix, i))
            .flat_map(|k| [rsc_store::Keyspace::routing_of(&k), k])
            .collect();
        // One DEL per key: on a cluster the shard streams live in different slots.
        let deleted: Result<(), String> = async {
            let target = self.redis()?;
            let mut conn = match self.cluster.tls()? {
                Some(tls) => target.connect_with_tls(&tls).await,
                None => target.connect().await,
            }
            .map_err(|e| e.to_string())?;
            for key in &keys {
                let _: i64 = redis::cmd("DEL")
                    .arg(key)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Ok(())
        }
        .await;
        if let Err(e) = deleted {
            failures.push(format!("deleting the shard streams of {prefix}: {e}"));
        }
        failures
    }
}

/// The coordinator's heartbeat interval and member lease TTL, from `GET /coord/v1/monitoring/compatibility`.
pub async fn coordinator_timing(coord: &CoordinatorClient) -> Result<(Duration, Duration), String> {
    let doc = coord
        .get_json(&["coord", "v1", "monitoring", "compatibility"])
        .await
        .map_err(|e| format!("reading the coordinator's timing: {e}"))?;
    Ok((
        timing_default(&doc, "heartbeatInterval")?,
        timing_default(&doc, "memberLeaseTtl")?,
    ))
}

/// One of `timingDefaults` (`heartbeatInterval`, `memberLeaseTtl`, `rebalanceTimeout`) of a compatibility
/// document.
pub fn timing_default(doc: &serde_json::Value, name: &str) -> Result<Duration, String> {
    doc["coordinationVersions"][0]["timingDefaults"][name]
        .as_str()
        .and_then(parse_iso_seconds)
        .ok_or_else(|| format!("compatibility document has no usable timingDefaults.{name}"))
}

/// `PT<seconds>S` (fractional seconds allowed), the only form the coordinator writes.
fn parse_iso_seconds(s: &str) -> Option<Duration> {
    let secs: f64 = s.strip_prefix("PT")?.strip_suffix('S')?.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

/// A multi-threaded tokio runtime, or the error text.
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// The value at quantile `q` (0..=1) of a sorted slice (nearest rank).
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// The median of `values` (the mean of the middle two for an even count); 0 for none.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [0.9, 1.2, 0.6]), 0.9);
        assert_eq!(median(&mut [1.0, 0.5, 0.7, 0.9]), 0.8);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn iso_seconds() {
        assert_eq!(parse_iso_seconds("PT15S"), Some(Duration::from_secs(15)));
        assert_eq!(
            parse_iso_seconds("PT0.2S"),
            Some(Duration::from_millis(200))
        );
        assert_eq!(parse_iso_seconds("15s"), None);
        assert_eq!(parse_iso_seconds("PT-1S"), None);
    }

    #[test]
    fn quantiles() {
        let v = [1.0, 2.0, 3.0];
        assert_eq!(quantile(&v, 0.5), Some(2.0));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&v, 1.0), Some(3.0));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
