//! `[coordinator.metrics]`: where `/metrics` is also served without authentication, how often the gauges are
//! rebuilt, and the caps that keep label cardinality bounded.

use crate::duration::Dur;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct MetricsConfig {
    /// A second listener (e.g. `127.0.0.1:9464`) serving only `GET /metrics` without authentication, for a
    /// Prometheus that cannot hold a token. Empty (the default) = off; `/metrics` on the API port needs READ.
    pub listen: String,
    /// How often the background task rebuilds the gauges (groups, members, shards, health) of the groups this
    /// replica owns. 15 s by default, a Prometheus scrape interval: reading a group costs Redis commands.
    pub refresh_interval: Dur,
    /// Per group, at most this many members get per-member (and per-member-shard) series.
    pub max_member_series: usize,
    /// Per group, shard-level series (stream length, pending, lag) only for groups with at most this many
    /// shards; larger groups export group totals only.
    pub max_shard_series: u32,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            listen: String::new(),
            refresh_interval: Dur(Duration::from_secs(15)),
            max_member_series: 500,
            max_shard_series: 256,
        }
    }
}

impl MetricsConfig {
    /// Checks the values; the error names the key.
    pub fn validate(&self) -> Result<(), String> {
        if !self.listen.is_empty() && self.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(format!(
                "key `coordinator.metrics.listen`: {:?} is not a socket address like 127.0.0.1:9464 (empty = off)",
                self.listen
            ));
        }
        if self.refresh_interval.0 < Duration::from_millis(10) {
            return Err("key `coordinator.metrics.refresh-interval`: must be at least 10ms".into());
        }
        Ok(())
    }
}
