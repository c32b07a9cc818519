//! The one multiplexed Redis connection a [`crate::Store`] uses, standalone or cluster.
//!
//! Standalone Redis uses a `ConnectionManager` (multiplexed, reconnects by itself); Redis Cluster
//! uses the async `ClusterConnection` (multiplexed per node, follows MOVED/ASK, refreshes slots).
//! Both are cheap to clone and safe to share, so no pool is needed. [`RedisConn`] hides which one
//! is in use behind `redis::aio::ConnectionLike`, so every store module runs its commands through
//! the same handle in either topology (and tests can inspect Redis through it).

use std::collections::BTreeMap;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use rsc_redis_connect::{RedisTls, cluster_builder, connect_hint, standalone_client};

use crate::error::StoreError;

/// Where the metadata lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisTopology {
    /// One Redis server, e.g. `redis://127.0.0.1:6379`.
    Standalone(String),
    /// A Redis Cluster.
    Cluster {
        /// Seed nodes (`redis://host:port` or `host:port`); the rest are discovered.
        nodes: Vec<String>,
        /// Announced `host:port` → `host:port` to connect to instead (clusters behind NAT). Redirects keep
        /// naming announced addresses; each is mapped when connecting.
        node_map: BTreeMap<String, String>,
    },
}

impl RedisTopology {
    /// The address(es) for messages: the URL, or the node URLs joined with commas.
    pub fn describe(&self) -> String {
        match self {
            RedisTopology::Standalone(url) => rsc_redis_connect::redact_url(url),
            RedisTopology::Cluster { nodes, .. } => nodes
                .iter()
                .map(|n| rsc_redis_connect::redact_url(n))
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    /// A cluster reached through `nodes`, with no address mapping.
    pub fn cluster(nodes: Vec<String>) -> Self {
        RedisTopology::Cluster {
            nodes,
            node_map: BTreeMap::new(),
        }
    }
}

/// A clonable, multiplexed connection to the configured topology.
#[derive(Clone)]
pub struct RedisConn {
    inner: Inner,
}

#[derive(Clone)]
enum Inner {
    Standalone(ConnectionManager),
    Cluster(ClusterConnection),
}

impl std::fmt::Debug for RedisConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.inner {
            Inner::Standalone(_) => "standalone",
            Inner::Cluster(_) => "cluster",
        };
        f.debug_struct("RedisConn")
            .field("topology", &kind)
            .finish()
    }
}

/// Reconnect attempts behind one command after the first fails (standalone).
const RECONNECT_RETRIES: usize = 1;

impl RedisConn {
    /// Whether this is a Redis Cluster connection (where one pipeline must not span slots).
    pub fn is_cluster(&self) -> bool {
        matches!(self.inner, Inner::Cluster(_))
    }

    /// Connects within `timeout`, over TLS with `tls` (or for a `rediss://` address). The same bound
    /// applies to every later command's reply, so a stalled Redis surfaces as a (transient) error
    /// instead of a hung request. A failed TLS handshake is [`StoreError::Tls`], saying what to check.
    pub(crate) async fn open(
        topology: &RedisTopology,
        tls: Option<&RedisTls>,
        timeout: Duration,
    ) -> Result<RedisConn, StoreError> {
        let url = topology.describe();
        let over_tls = tls.is_some() || url.contains("rediss://");
        let unreachable = |source: redis::RedisError| connect_failure(&url, source, over_tls);
        let connecting = async {
            match topology {
                RedisTopology::Standalone(address) => {
                    let client = standalone_client(address, tls)?;
                    // Every command waits for a reconnect in progress, and by default a reconnect retries six
                    // times with a backoff from 100 ms (about 6 s in all): with Redis down, each heartbeat
                    // and each authenticated request hung that long before failing. One retry is enough;
                    // the next command starts a new reconnect anyway.
                    let config = ConnectionManagerConfig::new()
                        .set_connection_timeout(Some(timeout))
                        .set_response_timeout(Some(timeout))
                        .set_number_of_retries(RECONNECT_RETRIES);
                    let manager = ConnectionManager::new_with_config(client, config)
                        .await
                        .map_err(unreachable)?;
                    Ok(Inner::Standalone(manager))
                }
                RedisTopology::Cluster { nodes, node_map } => {
                    let client = cluster_builder(nodes, node_map, tls)?
                        .connection_timeout(timeout)
                        .response_timeout(timeout)
                        .build()
                        .map_err(|source| StoreError::InvalidUrl {
                            url: url.clone(),
                            source,
                        })?;
                    let connection = client.get_async_connection().await.map_err(unreachable)?;
                    Ok(Inner::Cluster(connection))
                }
            }
        };
        match tokio::time::timeout(timeout, connecting).await {
            Ok(Ok(inner)) => Ok(RedisConn { inner }),
            Ok(Err(e)) => Err(e),
            // A plain-text Redis reads a TLS client hello as the start of a command and waits for the
            // rest, so a TLS client to a plain-text port sees nothing until this timeout.
            Err(_) if over_tls => Err(connect_failure(
                &url,
                redis::RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer within {timeout:?}"),
                )),
                true,
            )),
            Err(_) => Err(unreachable(redis::RedisError::from(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no connection within {timeout:?}"),
            )))),
        }
    }
}

/// A failure to connect: a TLS failure said as such (with what to check; over TLS a timeout is one too,
/// since a plain-text Redis may wait for the rest of a "command"), anything else unreachable.
pub(crate) fn connect_failure(url: &str, source: redis::RedisError, over_tls: bool) -> StoreError {
    match connect_hint(&source, over_tls) {
        Some(hint) => StoreError::Tls {
            url: url.to_owned(),
            detail: format!("{hint} ({source})"),
        },
        None => StoreError::Unreachable {
            url: url.to_owned(),
            source,
        },
    }
}

impl ConnectionLike for RedisConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match &mut self.inner {
            Inner::Standalone(c) => c.req_packed_command(cmd),
            Inner::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match &mut self.inner {
            Inner::Standalone(c) => c.req_packed_commands(pipeline, offset, count),
            Inner::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.inner {
            Inner::Standalone(c) => c.get_db(),
            Inner::Cluster(c) => c.get_db(),
        }
    }
}
