//! A real Redis Cluster for tests: three masters, optionally one replica each, optionally announcing
//! addresses that clients cannot reach (a cluster behind NAT).
//!
//! The store must behave the same on a cluster as on a single server (every script's keys share
//! one hash slot; groups spread over nodes), and the SDK must ride out what happens to a real
//! cluster (slots migrating, a replica promoted). Cluster-enabled `redis-server` nodes are started
//! on free loopback ports and joined by hand (`CLUSTER ADDSLOTSRANGE`, `MEET`, `REPLICATE`), and the
//! handle waits until every node reports `cluster_state:ok` and every replica is in sync. With
//! [`RedisClusterBuilder::tls`] every node is TLS-only (the cluster bus and replication over TLS too).
//! Slot migration and failover are in `cluster_ops.rs`.

use std::time::{Duration, Instant};

use crate::ports;
use crate::resp::Reply;
use crate::server::RedisServer;
use crate::tls::TlsCerts;

/// Number of master nodes.
const MASTERS: usize = 3;
/// Bound on the cluster forming (and on any change of it becoming visible everywhere).
pub(crate) const FORM_TIMEOUT: Duration = Duration::from_secs(60);
pub(crate) const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Slot ranges of the three masters.
const RANGES: [(u16, u16); MASTERS] = [(0, 5460), (5461, 10922), (10923, 16383)];
/// The address announced by nodes of a cluster "behind NAT": bound (so the cluster bus works), but the
/// client port announced with it is one nothing listens on.
const ANNOUNCED_IP: &str = "127.0.0.2";

/// Options for a [`RedisCluster`].
#[derive(Debug, Clone, Default)]
pub struct RedisClusterBuilder {
    replicas: bool,
    unreachable_announce: bool,
    tls: bool,
}

impl RedisClusterBuilder {
    /// One replica per master (six nodes), so a master can fail over.
    pub fn with_replicas(mut self) -> Self {
        self.replicas = true;
        self
    }

    /// Every node announces `127.0.0.2:<a port nothing listens on>` (`cluster-announce-ip`/`-port`),
    /// so a client that follows the cluster's own addresses cannot connect; [`RedisCluster::node_map`]
    /// says where each announced address really is.
    pub fn unreachable_announced_addresses(mut self) -> Self {
        self.unreachable_announce = true;
        self
    }

    /// TLS only, on certificates made for the cluster ([`RedisCluster::certs`]): every node has a TLS port
    /// and no plain-text one (`--port 0`), and talks to the others over TLS (`--tls-cluster yes`,
    /// `--tls-replication yes`, with the client certificate of [`TlsCerts`]); clients need no certificate. [`RedisCluster::node_addresses`] are the TLS
    /// ports.
    pub fn tls(mut self) -> Self {
        self.tls = true;
        self
    }

    /// Starts the nodes, forms the cluster and waits until it is healthy. Panics with the node logs
    /// if any step fails.
    pub fn start(self) -> RedisCluster {
        let count = if self.replicas { MASTERS * 2 } else { MASTERS };
        let certs = self.tls.then(TlsCerts::generate);
        let nodes: Vec<RedisServer> = (0..count)
            .map(|_| {
                let mut builder = RedisServer::builder().cluster_node();
                if let Some(certs) = &certs {
                    // The cluster bus always wants a client certificate from the connecting node.
                    let client_cert = certs.client_cert_file().display().to_string();
                    let client_key = certs.client_key_file().display().to_string();
                    builder = builder
                        .tls_only(certs.server_args(false))
                        .args(["--tls-cluster", "yes", "--tls-replication", "yes"])
                        .args(["--tls-client-cert-file", &client_cert])
                        .args(["--tls-client-key-file", &client_key]);
                }
                if self.unreachable_announce {
                    builder = builder.args(["--bind", "127.0.0.1", ANNOUNCED_IP]);
                }
                builder.start()
            })
            .collect();
        let mut announced = Vec::new();
        if self.unreachable_announce {
            for node in &nodes {
                let port = ports::free_port();
                let _ = admin(
                    node,
                    &["CONFIG", "SET", "cluster-announce-ip", ANNOUNCED_IP],
                );
                let port_text = port.to_string();
                let _ = admin(
                    node,
                    &["CONFIG", "SET", "cluster-announce-port", &port_text],
                );
                announced.push(format!("{ANNOUNCED_IP}:{port}"));
            }
        }
        let cluster = RedisCluster {
            nodes,
            announced,
            certs,
        };
        cluster.form(self.replicas);
        cluster.wait_healthy();
        cluster
    }
}

/// A running cluster: nodes `0..3` start as the masters, `3..6` (with replicas) as the replica of
/// master `i - 3`. Roles change with [`RedisCluster::failover`]. Dropping it kills every node.
#[derive(Debug)]
pub struct RedisCluster {
    pub(crate) nodes: Vec<RedisServer>,
    /// `host:port` each node announces, when it announces an unreachable one.
    announced: Vec<String>,
    /// The certificates of a TLS cluster.
    certs: Option<TlsCerts>,
}

impl RedisCluster {
    /// Three masters, no replicas.
    pub fn start() -> RedisCluster {
        RedisClusterBuilder::default().start()
    }

    /// Options, e.g. `RedisCluster::builder().with_replicas().start()`.
    pub fn builder() -> RedisClusterBuilder {
        RedisClusterBuilder::default()
    }

    /// The certificates of a cluster started with [`RedisClusterBuilder::tls`] (the CA to verify the
    /// nodes with: [`TlsCerts::ca_file`]); `None` for a plain-text cluster.
    pub fn certs(&self) -> Option<&TlsCerts> {
        self.certs.as_ref()
    }

    /// `redis://127.0.0.1:PORT` (`rediss://` on a TLS cluster) of every node (the masters first):
    /// reachable seed addresses.
    pub fn node_urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// `127.0.0.1:PORT` of every node, as `--redis-cluster-nodes` takes them.
    pub fn node_addresses(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect()
    }

    /// `(announced, reachable)` address pairs (`host:port`) of a cluster started with
    /// [`RedisClusterBuilder::unreachable_announced_addresses`]; empty otherwise.
    pub fn node_map(&self) -> Vec<(String, String)> {
        self.announced
            .iter()
            .zip(&self.nodes)
            .map(|(a, n)| (a.clone(), format!("127.0.0.1:{}", n.port())))
            .collect()
    }

    /// The node processes, e.g. to kill one.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// Index (into [`Self::nodes`]) of the master that owns `key`'s hash slot: the one node that
    /// answers `EXISTS key` instead of redirecting with MOVED (a replica redirects too).
    pub fn node_index_for_key(&self, key: &str) -> usize {
        let mut replies = Vec::new();
        for (index, node) in self.nodes.iter().enumerate() {
            match node.query(&["EXISTS", key], Duration::from_secs(2)) {
                Ok(Reply::Text(_)) => return index,
                other => replies.push(format!("{}: {other:?}", node.port())),
            }
        }
        panic!("no cluster node owns key {key:?}; replies: {replies:?}");
    }

    /// The node id (`CLUSTER MYID`) of node `index`.
    pub fn node_id(&self, index: usize) -> String {
        match admin(&self.nodes[index], &["CLUSTER", "MYID"]) {
            Ok(redis::Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
            Ok(redis::Value::SimpleString(s)) => s,
            other => panic!("CLUSTER MYID on node {index}: {other:?}"),
        }
    }

    fn form(&self, replicas: bool) {
        let masters = &self.nodes[..MASTERS];
        for (i, (node, (first, last))) in masters.iter().zip(RANGES).enumerate() {
            let epoch = (i + 1).to_string();
            must(node, &["CLUSTER", "SET-CONFIG-EPOCH", &epoch]);
            must(
                node,
                &[
                    "CLUSTER",
                    "ADDSLOTSRANGE",
                    &first.to_string(),
                    &last.to_string(),
                ],
            );
        }
        let first = &self.nodes[0];
        for node in &self.nodes[1..] {
            let port = node.port().to_string();
            must(first, &["CLUSTER", "MEET", "127.0.0.1", &port]);
        }
        self.wait_all_known();
        if replicas {
            for (i, replica) in self.nodes[MASTERS..].iter().enumerate() {
                let master_id = self.node_id(i);
                must(replica, &["CLUSTER", "REPLICATE", &master_id]);
            }
        }
    }

    /// Waits until every node knows every other one (no handshake left).
    fn wait_all_known(&self) {
        let deadline = Instant::now() + FORM_TIMEOUT;
        for (index, node) in self.nodes.iter().enumerate() {
            loop {
                let listing = cluster_nodes(node);
                let known = listing
                    .lines()
                    .filter(|l| !l.contains("handshake") && !l.contains("noaddr"))
                    .count();
                if known == self.nodes.len() {
                    break;
                }
                if Instant::now() >= deadline {
                    panic!(
                        "cluster node {index} knows {known} of {} nodes within {FORM_TIMEOUT:?}:\n{listing}\n{}",
                        self.nodes.len(),
                        node.log_tail(30)
                    );
                }
                std::thread::sleep(POLL_INTERVAL);
            }
        }
    }

    /// Waits until every node reports `cluster_state:ok`, sees the same number of masters and
    /// replicas, and every replica's link to its master is up.
    pub(crate) fn wait_healthy(&self) {
        let deadline = Instant::now() + FORM_TIMEOUT;
        let replicas = self.nodes.len() - MASTERS;
        for (index, node) in self.nodes.iter().enumerate() {
            loop {
                let info = node.query(&["CLUSTER", "INFO"], Duration::from_secs(2));
                let listing = cluster_nodes(node);
                let slaves = listing
                    .lines()
                    .filter(|l| l.contains("slave") && !l.contains("fail"))
                    .count();
                let ok = matches!(&info, Ok(Reply::Text(text)) if text.contains("cluster_state:ok"))
                    && slaves == replicas
                    && replica_in_sync(node);
                if ok {
                    break;
                }
                if Instant::now() >= deadline {
                    panic!(
                        "cluster node {index} ({}) not healthy within {FORM_TIMEOUT:?}: {info:?}\n{listing}\n{}",
                        node.port(),
                        node.log_tail(30)
                    );
                }
                std::thread::sleep(POLL_INTERVAL);
            }
        }
    }
}

/// `CLUSTER NODES` of `node` as text ("" when it cannot be read).
pub(crate) fn cluster_nodes(node: &RedisServer) -> String {
    match admin(node, &["CLUSTER", "NODES"]) {
        Ok(redis::Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(redis::Value::VerbatimString { text, .. }) => text,
        _ => String::new(),
    }
}

/// Whether `node` is a master, or a replica whose link to its master is up and not syncing.
fn replica_in_sync(node: &RedisServer) -> bool {
    let info = match admin(node, &["INFO", "replication"]) {
        Ok(redis::Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(redis::Value::VerbatimString { text, .. }) => text,
        _ => return false,
    };
    info.contains("role:master")
        || (info.contains("master_link_status:up") && info.contains("master_sync_in_progress:0"))
}

/// One command on a fresh connection to `node` (the redis crate, blocking: the test kit's own RESP
/// reader does not keep array contents).
pub(crate) fn admin(node: &RedisServer, args: &[&str]) -> redis::RedisResult<redis::Value> {
    let client = redis::Client::open(node.admin_url())?;
    let mut conn = client.get_connection_with_timeout(Duration::from_secs(2))?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(&mut conn)
}

/// [`admin`] that panics with the node's log on failure.
pub(crate) fn must(node: &RedisServer, args: &[&str]) -> redis::Value {
    admin(node, args).unwrap_or_else(|e| {
        panic!(
            "{} on node {}: {e}\n{}",
            args.join(" "),
            node.port(),
            node.log_tail(30)
        )
    })
}
