//! `[coordinator.cluster]`: how replicas find each other and split the groups' background work
//! (`cluster.rs`: the replica registry, rendezvous ownership, the change feed).

use crate::duration::Dur;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ClusterConfig {
    /// How long a replica's registration lasts without renewal. A replica that dies is counted out this long
    /// after its last renewal, and its groups' background work moves to the others.
    pub replica_lease: Dur,
    /// How often a replica renews its registration and reads the live replicas.
    pub renew_interval: Dur,
    /// How often an owner confirms, with one HGET each, that none of its quiet groups changed without the
    /// change feed saying so (a replica that died between its write and its notice). A safety net only.
    pub sweep_interval: Dur,
    /// About how many entries the change feed keeps.
    pub change_feed_length: u32,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            replica_lease: Dur::from_secs(5),
            renew_interval: Dur::from_secs(1),
            sweep_interval: Dur::from_secs(60),
            change_feed_length: 10_000,
        }
    }
}

impl ClusterConfig {
    /// Checks the values; the error names the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.renew_interval.0 < Duration::from_millis(10) {
            return Err("key `coordinator.cluster.renew-interval`: must be at least 10ms".into());
        }
        if self.replica_lease.0 < self.renew_interval.0 * 2 {
            return Err(format!(
                "key `coordinator.cluster.replica-lease`: must be at least twice coordinator.cluster.renew-interval ({}), or a live replica is counted out between renewals",
                humantime::format_duration(self.renew_interval.0)
            ));
        }
        if self.sweep_interval.0 < Duration::from_millis(100) {
            return Err("key `coordinator.cluster.sweep-interval`: must be at least 100ms".into());
        }
        if self.change_feed_length < 100 {
            return Err(
                "key `coordinator.cluster.change-feed-length`: must be at least 100".into(),
            );
        }
        Ok(())
    }
}
