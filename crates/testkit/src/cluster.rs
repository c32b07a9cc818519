//! A real three-master Redis Cluster for tests.
//!
//! The store must behave the same on a cluster as on a single server (every script's keys share
//! one hash slot; groups spread over nodes). Three cluster-enabled `redis-server` nodes are
//! started on free loopback ports, joined with `redis-cli --cluster create`, and the handle waits
//! until every node reports `cluster_state:ok`. No replicas: tests need slots, not failover.

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::resp::{self, Reply};
use crate::server::RedisServer;

/// Number of master nodes.
const MASTERS: usize = 3;
/// Bound on `redis-cli --cluster create` and on the cluster becoming healthy.
const FORM_TIMEOUT: Duration = Duration::from_secs(60);
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Three cluster-enabled masters covering all 16384 slots. Dropping it kills every node.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts the nodes, creates the cluster and waits for `cluster_state:ok` on all of them.
    /// Panics with the tool output or node logs if any step fails.
    pub fn start() -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..MASTERS)
            .map(|_| RedisServer::builder().cluster_node().start())
            .collect();
        let cluster = RedisCluster { nodes };
        cluster.create();
        cluster.wait_healthy();
        cluster
    }

    /// `redis://127.0.0.1:PORT` of every node.
    pub fn node_urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The node processes, e.g. to kill one.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// Index (into [`Self::nodes`]) of the master that owns `key`'s hash slot: the one node that
    /// answers `EXISTS key` instead of redirecting with MOVED.
    pub fn node_index_for_key(&self, key: &str) -> usize {
        let mut replies = Vec::new();
        for (index, node) in self.nodes.iter().enumerate() {
            match resp::query(node.port(), &["EXISTS", key], Duration::from_secs(2)) {
                Ok(Reply::Text(_)) => return index,
                other => replies.push(format!("{}: {other:?}", node.port())),
            }
        }
        panic!("no cluster node owns key {key:?}; replies: {replies:?}");
    }

    fn create(&self) {
        let first = &self.nodes[0];
        let out_path = first.dir().join("cluster-create.out");
        let out = File::create(&out_path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", out_path.display()));
        let err = out
            .try_clone()
            .unwrap_or_else(|e| panic!("cannot clone {}: {e}", out_path.display()));
        let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
        args.extend(self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())));
        args.push("--cluster-yes".into());
        let spawned = Command::new("redis-cli")
            .args(&args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
                "redis-cli was not found on PATH; cluster tests need it \
                 (install it, e.g. `apt-get install -y redis-server`)"
            ),
            Err(e) => panic!("cannot spawn redis-cli: {e}"),
        };
        let deadline = Instant::now() + FORM_TIMEOUT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL_INTERVAL),
                Ok(None) | Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "redis-cli --cluster create did not finish within {FORM_TIMEOUT:?}:\n{}",
                        std::fs::read_to_string(&out_path).unwrap_or_default()
                    );
                }
            }
        };
        if !status.success() {
            panic!(
                "redis-cli {} failed ({status}):\n{}",
                args.join(" "),
                std::fs::read_to_string(&out_path).unwrap_or_default()
            );
        }
    }

    fn wait_healthy(&self) {
        let deadline = Instant::now() + FORM_TIMEOUT;
        for node in &self.nodes {
            loop {
                let info = resp::query(node.port(), &["CLUSTER", "INFO"], Duration::from_secs(2));
                if matches!(&info, Ok(Reply::Text(text)) if text.contains("cluster_state:ok")) {
                    break;
                }
                if Instant::now() >= deadline {
                    panic!(
                        "cluster node {} not ok within {FORM_TIMEOUT:?}: {info:?}\n{}",
                        node.port(),
                        node.log_tail(30)
                    );
                }
                std::thread::sleep(POLL_INTERVAL);
            }
        }
    }
}
