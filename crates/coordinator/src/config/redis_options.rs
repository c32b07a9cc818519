//! `[coordinator.redis]`: how the coordinator reaches Redis beyond the URL or the cluster seed nodes.
//!
//! `cluster-node-map` maps the address a Redis Cluster node announces (`CLUSTER SLOTS`, MOVED and ASK
//! redirects) to the address this process can reach it at, for clusters behind NAT, port forwarding or a
//! Kubernetes service per pod: `{ "10.0.0.5:6379" = "127.0.0.1:16379" }` in TOML, or
//! `COORDINATOR_REDIS_CLUSTER_NODE_MAP=10.0.0.5:6379=127.0.0.1:16379,…` in the environment. Announced
//! addresses not in the map are connected to as announced.
//!
//! `tls` (`[coordinator.redis.tls]`: `ca-file`, `cert-file`, `key-file`, or `COORDINATOR_REDIS_TLS_CA_FILE`
//! etc.) are the TLS options of a `rediss://` address: the CA to verify the server with (default: the
//! system's trust store) and a client certificate with its key for mutual TLS. The server's name is always
//! verified. The files are read when the coordinator connects, so a missing one fails start-up naming it.

use figment::value::{Dict, Value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The environment variable of `coordinator.redis.cluster-node-map`.
pub const NODE_MAP_ENV: &str = "COORDINATOR_REDIS_CLUSTER_NODE_MAP";
/// The dotted key of the node map.
pub const NODE_MAP_KEY: &str = "coordinator.redis.cluster-node-map";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct RedisConfig {
    /// Announced `host:port` → reachable `host:port` (Redis Cluster only).
    pub cluster_node_map: BTreeMap<String, String>,
    /// TLS options of a `rediss://` address.
    pub tls: RedisTlsConfig,
    /// Redis's password, when the URL does not carry one (prefer `RSC_REDIS_PASSWORD` or `password-file`,
    /// which keep it off the command line).
    pub password: Option<crate::security::config::Secret>,
    /// A file holding Redis's password (one line; a trailing newline is ignored).
    pub password_file: Option<PathBuf>,
}

impl RedisConfig {
    /// The password given apart from the URL, read from `password-file` if that is set.
    pub fn password(&self) -> Result<Option<String>, String> {
        if let Some(path) = &self.password_file {
            let text = std::fs::read_to_string(path).map_err(|e| {
                format!(
                    "key `coordinator.redis.password-file`: cannot read {}: {e}",
                    path.display()
                )
            })?;
            let password = text.trim_end_matches(['\r', '\n']).to_owned();
            if password.is_empty() {
                return Err(format!(
                    "key `coordinator.redis.password-file`: {} is empty",
                    path.display()
                ));
            }
            return Ok(Some(password));
        }
        Ok(self.password.as_ref().map(|p| p.0.clone()))
    }
}

/// `[coordinator.redis.tls]`: PEM files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct RedisTlsConfig {
    /// CA certificate(s) the server's certificate must chain to (default: the system's trust store).
    pub ca_file: Option<PathBuf>,
    /// Client certificate for mutual TLS (with `key-file`).
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key (with `cert-file`).
    pub key_file: Option<PathBuf>,
}

impl RedisTlsConfig {
    /// The options to connect with; `None` when no file is given.
    pub fn options(&self) -> Option<rsc_store::RedisTls> {
        (*self != RedisTlsConfig::default()).then(|| rsc_store::RedisTls {
            ca_file: self.ca_file.clone(),
            cert_file: self.cert_file.clone(),
            key_file: self.key_file.clone(),
        })
    }
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

/// Checks every entry is `host:port` on both sides, and that a map comes with cluster nodes; that a client
/// certificate comes with its key (and a key with its certificate), and that TLS options go with TLS
/// addresses (`addresses`: the standalone URL, or the cluster seed nodes).
pub fn validate(c: &RedisConfig, cluster: bool, addresses: &[String]) -> Result<(), String> {
    validate_tls(&c.tls, addresses)?;
    if c.password.is_some() && c.password_file.is_some() {
        return Err(
            "keys `coordinator.redis.password` (or RSC_REDIS_PASSWORD) and `coordinator.redis.password-file` \
             are both set: keep one"
                .into(),
        );
    }
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

const TLS_KEY: &str = "coordinator.redis.tls";

fn validate_tls(tls: &RedisTlsConfig, addresses: &[String]) -> Result<(), String> {
    match (&tls.cert_file, &tls.key_file) {
        (Some(_), None) => {
            return Err(format!(
                "key `{TLS_KEY}.cert-file`: a client certificate needs its key; set {TLS_KEY}.key-file too"
            ));
        }
        (None, Some(_)) => {
            return Err(format!(
                "key `{TLS_KEY}.key-file`: a client key needs its certificate; set {TLS_KEY}.cert-file too"
            ));
        }
        _ => {}
    }
    if tls.options().is_some()
        && let Some(plain) = addresses.iter().find(|a| a.starts_with("redis://"))
    {
        return Err(format!(
            "key `{TLS_KEY}`: TLS options are set but {plain} is a plain-text address; use rediss:// (or host:port for cluster nodes)"
        ));
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
            ..RedisConfig::default()
        };
        assert!(validate(&bad, true, &[]).unwrap_err().contains("\"b\""));
        let good = RedisConfig {
            cluster_node_map: BTreeMap::from([("a:1".into(), "b:2".into())]),
            ..RedisConfig::default()
        };
        assert!(validate(&good, true, &[]).is_ok());
        assert!(
            validate(&good, false, &[])
                .unwrap_err()
                .contains("Cluster only")
        );
    }
}
