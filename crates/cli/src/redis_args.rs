//! The data-plane Redis flags `rsc demo` and `rsc bench dataplane` share besides `--redis-url`: Redis
//! Cluster seed nodes and the map from the addresses cluster nodes announce to reachable ones (the SDK's
//! `RedisTarget`; the coordinator's `coordinator.redis-cluster-nodes` and `coordinator.redis.cluster-node-map`),
//! and the TLS files of a `rediss://` data plane (the SDK's `RedisTls`; the coordinator's
//! `coordinator.redis.tls.*`).

use clap::Args;
use rsc_client::{RedisTarget, RedisTls};
use std::path::PathBuf;

#[derive(Args, Debug, Clone, Default)]
pub struct ClusterArgs {
    /// Redis Cluster seed nodes, `host:port,…`; when given, the data plane is this cluster and
    /// --redis-url is not used.
    #[arg(long, env = "RSC_REDIS_CLUSTER_NODES", value_delimiter = ',')]
    pub redis_cluster_nodes: Vec<String>,
    /// For a cluster behind NAT: `announced-host:port=reachable-host:port,…` (the address a node
    /// announces in CLUSTER SLOTS and redirects → the address to connect to).
    #[arg(long, env = "RSC_REDIS_CLUSTER_NODE_MAP", value_delimiter = ',')]
    pub redis_cluster_node_map: Vec<String>,
    /// The TLS files of a `rediss://` data plane.
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// `--redis-tls-ca-file`, `--redis-tls-cert-file`, `--redis-tls-key-file` (also `rsc bench heartbeat`'s, for
/// its `--redis-url`).
#[derive(Args, Debug, Clone, Default)]
pub struct TlsArgs {
    /// TLS: the CA certificate(s) (PEM) the Redis server's certificate must chain to (default: the
    /// system's trust store). Needs a rediss:// URL (cluster nodes as host:port).
    #[arg(long, env = "RSC_REDIS_TLS_CA_FILE")]
    pub redis_tls_ca_file: Option<PathBuf>,
    /// TLS: client certificate (PEM) for mutual TLS; needs --redis-tls-key-file.
    #[arg(long, env = "RSC_REDIS_TLS_CERT_FILE")]
    pub redis_tls_cert_file: Option<PathBuf>,
    /// TLS: the client certificate's private key (PEM); needs --redis-tls-cert-file.
    #[arg(long, env = "RSC_REDIS_TLS_KEY_FILE")]
    pub redis_tls_key_file: Option<PathBuf>,
}

impl TlsArgs {
    /// The TLS options, `None` when no file is given; a certificate without its key (or a key without its
    /// certificate) is refused, naming the flags.
    pub fn tls(&self) -> Result<Option<RedisTls>, String> {
        let tls = RedisTls {
            ca_file: self.redis_tls_ca_file.clone(),
            cert_file: self.redis_tls_cert_file.clone(),
            key_file: self.redis_tls_key_file.clone(),
        };
        if tls == RedisTls::default() {
            return Ok(None);
        }
        tls.check_pairing()
            .map_err(|e| format!("--redis-tls-cert-file / --redis-tls-key-file: {e}"))?;
        Ok(Some(tls))
    }
}

impl ClusterArgs {
    /// The TLS options ([`TlsArgs::tls`]).
    pub fn tls(&self) -> Result<Option<RedisTls>, String> {
        self.tls.tls()
    }
    /// The data plane: the cluster when nodes are given, else the standalone `url`. Checked without
    /// connecting; the message names the flag.
    pub fn target(&self, url: &str) -> Result<RedisTarget, String> {
        let nodes: Vec<String> = self
            .redis_cluster_nodes
            .iter()
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty())
            .collect();
        if nodes.is_empty() {
            if !self.redis_cluster_node_map.is_empty() {
                return Err(
                    "--redis-cluster-node-map applies to a Redis Cluster only: give --redis-cluster-nodes too"
                        .into(),
                );
            }
            return Ok(RedisTarget::standalone(url));
        }
        let mut pairs = Vec::new();
        for pair in &self.redis_cluster_node_map {
            let Some((announced, reachable)) = pair.split_once('=') else {
                return Err(format!(
                    "--redis-cluster-node-map: {pair:?} is not announced-host:port=reachable-host:port"
                ));
            };
            pairs.push((announced.trim().to_owned(), reachable.trim().to_owned()));
        }
        let target = RedisTarget::cluster(nodes).node_map(pairs);
        target
            .validate()
            .map_err(|e| format!("--redis-cluster-nodes / --redis-cluster-node-map: {e}"))?;
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_select_the_cluster_and_a_map_needs_nodes() {
        let none = ClusterArgs::default();
        assert_eq!(
            none.target("redis://h:1"),
            Ok(RedisTarget::standalone("redis://h:1"))
        );
        let map_only = ClusterArgs {
            redis_cluster_node_map: vec!["a:1=b:2".into()],
            ..ClusterArgs::default()
        };
        assert!(map_only.target("redis://h:1").is_err());
        let cluster = ClusterArgs {
            redis_cluster_nodes: vec!["127.0.0.1:7000".into()],
            redis_cluster_node_map: vec!["10.0.0.1:7000=127.0.0.1:7000".into()],
            ..ClusterArgs::default()
        };
        assert!(matches!(
            cluster.target("unused"),
            Ok(RedisTarget::Cluster { nodes, node_map }) if nodes.len() == 1 && node_map.len() == 1
        ));
        let bad = ClusterArgs {
            redis_cluster_nodes: vec!["127.0.0.1:7000".into()],
            redis_cluster_node_map: vec!["nonsense".into()],
            ..ClusterArgs::default()
        };
        assert!(bad.target("unused").unwrap_err().contains("nonsense"));
    }

    #[test]
    fn tls_flags_come_in_pairs() {
        assert_eq!(ClusterArgs::default().tls(), Ok(None));
        let ca = ClusterArgs {
            tls: TlsArgs {
                redis_tls_ca_file: Some("ca.pem".into()),
                ..TlsArgs::default()
            },
            ..ClusterArgs::default()
        };
        assert_eq!(ca.tls(), Ok(Some(RedisTls::new().ca_file("ca.pem"))));
        let cert_only = ClusterArgs {
            tls: TlsArgs {
                redis_tls_cert_file: Some("c.pem".into()),
                ..TlsArgs::default()
            },
            ..ClusterArgs::default()
        };
        assert!(
            cert_only
                .tls()
                .unwrap_err()
                .contains("--redis-tls-key-file")
        );
    }
}
