//! `[coordinator.redis]`: how the coordinator reaches Redis beyond the URL or the cluster seed nodes.
//!
//! `cluster-node-map` maps the address a Redis Cluster node announces (`CLUSTER SLOTS`, MOVED and ASK
//! redirects) to the address this process can reach it at, for clusters behind NAT, port forwarding or a
//! Kubernetes service per pod: `{ "10.0.0.5:6379" = "127.0.0.1:16379" }` in TOML, or
//! `COORDINATOR_REDIS_CLUSTER_NODE_MAP=10.0.0.5:6379=127.0.0.1:16379,…` in the environment. Announced
//! addresses not in the map are connected to as announced.

use figment::value::{Dict, Value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The environment variable of `coordinator.redis.cluster-node-map`.
pub const NODE_MAP_ENV: &str = "COORDINATOR_REDIS_CLUSTER_NODE_MAP";
/// The dotted key of the node map.
pub const NODE_MAP_KEY: &str = "coordinator.redis.cluster-node-map";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct RedisConfig {
    /// Announced `host:port` → reachable `host:port` (Redis Cluster only).
    pub cluster_node_map: BTreeMap<String, String>,
}

/// The node map written in the environment as `announced=reachable` pairs separated by commas.
pub fn node_map_from_env(raw: &str) -> Result<Value, String> {
    let mut map = Dict::new();
    for pair in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((announced, reachable)) = pair.split_once('=') else {
            return Err(format!(
                "environment variable {NODE_MAP_ENV}: {pair:?} is not announced-host:port=reachable-host:port"
            ));
        };
        map.insert(
            announced.trim().to_owned(),
            Value::from(reachable.trim().to_owned()),
        );
    }
    Ok(Value::from(map))
}

/// Checks every entry is `host:port` on both sides, and that a map comes with cluster nodes.
pub fn validate(c: &RedisConfig, cluster: bool) -> Result<(), String> {
    if !c.cluster_node_map.is_empty() && !cluster {
        return Err(format!(
            "key `{NODE_MAP_KEY}`: applies to a Redis Cluster only; set coordinator.redis-cluster-nodes too, or remove it"
        ));
    }
    for (announced, reachable) in &c.cluster_node_map {
        for text in [announced, reachable] {
            if !is_host_port(text) {
                return Err(format!(
                    "key `{NODE_MAP_KEY}`: {text:?} (in {announced:?} = {reachable:?}) is not host:port"
                ));
            }
        }
    }
    Ok(())
}

fn is_host_port(text: &str) -> bool {
    match text.rsplit_once(':') {
        Some((host, port)) => {
            !host.trim().is_empty()
                && !host.contains('/')
                && port.parse::<u16>().is_ok_and(|p| p != 0)
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_pairs_and_bad_entries() {
        let v = node_map_from_env("10.0.0.1:7000=127.0.0.1:17000, 10.0.0.2:7000=h:2").unwrap();
        let Value::Dict(_, d) = v else { panic!("dict") };
        assert_eq!(d.len(), 2);
        assert!(
            node_map_from_env("10.0.0.1:7000")
                .unwrap_err()
                .contains(NODE_MAP_ENV)
        );
        let bad = RedisConfig {
            cluster_node_map: BTreeMap::from([("a:1".into(), "b".into())]),
        };
        assert!(validate(&bad, true).unwrap_err().contains("\"b\""));
        let good = RedisConfig {
            cluster_node_map: BTreeMap::from([("a:1".into(), "b:2".into())]),
        };
        assert!(validate(&good, true).is_ok());
        assert!(validate(&good, false).unwrap_err().contains("Cluster only"));
    }
}
