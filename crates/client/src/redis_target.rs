//! Where the SDK's data plane lives, and the one place the SDK connects to it: one standalone Redis (a
//! URL) or a Redis Cluster (seed nodes, plus a map from the addresses nodes announce to the addresses this
//! process can reach them at, for clusters behind NAT or port forwarding).
//!
//! A cluster connection follows MOVED and ASK redirects and refreshes its slot map by itself, so a slot
//! migrating between masters or a replica promoted in a failover is ridden out by a retry inside the
//! connection. The shard streams of one stream hash by their own keys (`<prefix>:<i>`, no hash tag), so
//! they spread over the masters; a pipeline, which must stay within one slot, is split per stream key by
//! the producer ([`DataConn::is_cluster`]).
//!
//! Over TLS (a `rediss://` URL, or cluster seeds given as `host:port`) the options are a [`RedisTls`]:
//! a CA file and a client certificate for mutual TLS, given to the consumer and producer configs
//! (`redis_tls`) or to [`RedisTarget::connect_with_tls`]. The server's name is always verified.

use crate::error::ClientError;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};
pub use rsc_redis_connect::{RedisTls, parse_node_map};
use std::collections::BTreeMap;
use std::time::Duration;

/// The Redis the shard streams live on.
///
/// ```
/// use rsc_client::RedisTarget;
/// let standalone = RedisTarget::standalone("redis://127.0.0.1:6379");
/// let cluster = RedisTarget::cluster(["10.0.0.1:7000", "10.0.0.2:7000"])
///     .node_map([("10.0.0.1:7000", "127.0.0.1:17000")]);
/// assert!(cluster.validate().is_ok());
/// assert_eq!(standalone.describe(), "redis://127.0.0.1:6379");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisTarget {
    /// One Redis server, e.g. `redis://127.0.0.1:6379`.
    Standalone(String),
    /// A Redis Cluster.
    Cluster {
        /// Seed nodes (`host:port` or `redis://host:port`); the rest are discovered.
        nodes: Vec<String>,
        /// Announced address (`host:port`, as in `CLUSTER SLOTS`) → address to connect to instead.
        /// Redirects still name announced addresses; each is mapped when connecting.
        node_map: BTreeMap<String, String>,
    },
}

/// Timeouts and retries of one connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectOptions {
    pub connect_timeout: Duration,
    pub response_timeout: Duration,
    /// Standalone: reconnect attempts behind one failed command (None: the library's default).
    pub reconnect_retries: Option<usize>,
    /// Standalone: longest delay between reconnect attempts.
    pub max_reconnect_delay: Option<Duration>,
}

impl RedisTarget {
    /// One standalone Redis.
    pub fn standalone(url: impl Into<String>) -> Self {
        RedisTarget::Standalone(url.into())
    }

    /// A Redis Cluster reached through these seed nodes, with no address mapping.
    pub fn cluster<I, S>(nodes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        RedisTarget::Cluster {
            nodes: nodes.into_iter().map(Into::into).collect(),
            node_map: BTreeMap::new(),
        }
    }

    /// Adds `announced → reachable` address pairs (`host:port` each); no effect on a standalone target.
    pub fn node_map<I, A, R>(mut self, pairs: I) -> Self
    where
        I: IntoIterator<Item = (A, R)>,
        A: Into<String>,
        R: Into<String>,
    {
        if let RedisTarget::Cluster { node_map, .. } = &mut self {
            node_map.extend(pairs.into_iter().map(|(a, r)| (a.into(), r.into())));
        }
        self
    }

    /// The address(es) for messages: the URL, or the seed nodes joined with commas.
    pub fn describe(&self) -> String {
        match self {
            RedisTarget::Standalone(url) => url.clone(),
            RedisTarget::Cluster { nodes, .. } => nodes.join(","),
        }
    }

    /// Checks the URL, the seed nodes and the node map without connecting.
    pub fn validate(&self) -> Result<(), ClientError> {
        self.endpoint().map(|_| ())
    }

    /// A connection to the target (2 s to connect, 5 s per reply), e.g. for an application's own reads
    /// and writes next to the SDK's. On a cluster it follows redirects; keep each pipeline within one slot.
    pub async fn connect(&self) -> Result<DataConn, ClientError> {
        self.connect_tls(None).await
    }

    /// [`RedisTarget::connect`] over TLS with these options (a `rediss://` URL, or `host:port` seeds).
    pub async fn connect_with_tls(&self, tls: &RedisTls) -> Result<DataConn, ClientError> {
        self.connect_tls(Some(tls)).await
    }

    async fn connect_tls(&self, tls: Option<&RedisTls>) -> Result<DataConn, ClientError> {
        self.endpoint_tls(tls)?
            .connect_checked(ConnectOptions {
                connect_timeout: Duration::from_secs(2),
                response_timeout: Duration::from_secs(5),
                reconnect_retries: None,
                max_reconnect_delay: None,
            })
            .await
    }

    /// The parsed form a plain-text (or system-trusted `rediss://`) connection is made from.
    pub(crate) fn endpoint(&self) -> Result<Endpoint, ClientError> {
        self.endpoint_tls(None)
    }

    /// The parsed form a connection is made from, with TLS options (their files are read now, so a
    /// missing or malformed one fails here, named).
    pub(crate) fn endpoint_tls(&self, tls: Option<&RedisTls>) -> Result<Endpoint, ClientError> {
        let invalid = |what: String| ClientError::InvalidConfig(what);
        match self {
            RedisTarget::Standalone(url) => rsc_redis_connect::standalone_client(url, tls)
                .map(|client| Endpoint::Standalone {
                    client,
                    url: url.clone(),
                })
                .map_err(|e| invalid(format!("redis URL {url:?} is not usable: {e}"))),
            RedisTarget::Cluster { nodes, node_map } => {
                if nodes.is_empty() {
                    return Err(invalid(
                        "a Redis Cluster needs at least one seed node (host:port)".into(),
                    ));
                }
                let client = rsc_redis_connect::cluster_builder(nodes, node_map, tls)
                    .and_then(|b| {
                        b.build()
                            .map_err(|source| rsc_redis_connect::ConnectError::Url {
                                url: nodes.join(","),
                                source,
                            })
                    })
                    .map_err(|e| invalid(format!("redis cluster nodes are not usable: {e}")))?;
                Ok(Endpoint::Cluster {
                    client,
                    seeds: nodes.join(","),
                    tls: tls.is_some() || nodes.iter().any(|n| n.starts_with("rediss://")),
                })
            }
        }
    }
}

/// A validated target, ready to connect (cheap to clone).
// Both clients are a few hundred bytes (TLS parameters); one endpoint is made per consumer or producer.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub(crate) enum Endpoint {
    Standalone {
        client: redis::Client,
        url: String,
    },
    Cluster {
        client: ClusterClient,
        seeds: String,
        /// Whether the seeds are reached over TLS.
        tls: bool,
    },
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Standalone { .. } => f.write_str("Endpoint::Standalone"),
            Endpoint::Cluster { seeds, .. } => write!(f, "Endpoint::Cluster({seeds})"),
        }
    }
}

impl Endpoint {
    /// A failed connection (or first command) as the SDK reports it: a TLS failure, or over TLS a
    /// handshake that got no answer (a plain-text Redis behind `rediss://`), is [`ClientError::RedisTls`]
    /// naming the address and what to check; anything else [`ClientError::Redis`].
    pub(crate) fn connect_error(&self, e: redis::RedisError) -> ClientError {
        let address = match self {
            Endpoint::Standalone { url, .. } => url.as_str(),
            Endpoint::Cluster { seeds, .. } => seeds.as_str(),
        };
        match rsc_redis_connect::explain_connect(address, &e, self.is_tls()) {
            Some(text) => ClientError::RedisTls(text),
            None => ClientError::Redis(e),
        }
    }

    /// [`Endpoint::connect`] with a failure said by [`Endpoint::connect_error`]. Over TLS it is bounded by
    /// the connect and response timeouts together: the connect timeout does not cover the handshake, and
    /// a plain-text Redis behind `rediss://` never answers one (it reads the client hello as the start of
    /// an inline command and waits for its end).
    pub(crate) async fn connect_checked(&self, o: ConnectOptions) -> Result<DataConn, ClientError> {
        if !self.is_tls() {
            return self.connect(o).await.map_err(|e| self.connect_error(e));
        }
        let bound = o.connect_timeout + o.response_timeout;
        match tokio::time::timeout(bound, self.connect(o)).await {
            Ok(result) => result.map_err(|e| self.connect_error(e)),
            Err(_) => Err(
                self.connect_error(redis::RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no TLS connection within {bound:?}"),
                ))),
            ),
        }
    }

    fn is_tls(&self) -> bool {
        match self {
            Endpoint::Standalone { url, .. } => url.starts_with("rediss://"),
            Endpoint::Cluster { tls, .. } => *tls,
        }
    }

    /// A new connection (standalone: a reconnecting manager; cluster: a cluster connection that follows
    /// redirects and reconnects per node).
    pub(crate) async fn connect(&self, o: ConnectOptions) -> redis::RedisResult<DataConn> {
        match self {
            Endpoint::Standalone { client, .. } => {
                let mut cfg = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(o.connect_timeout))
                    .set_response_timeout(Some(o.response_timeout));
                if let Some(n) = o.reconnect_retries {
                    cfg = cfg.set_number_of_retries(n);
                }
                if let Some(d) = o.max_reconnect_delay {
                    cfg = cfg.set_max_delay(d);
                }
                let manager = ConnectionManager::new_with_config(client.clone(), cfg).await?;
                Ok(DataConn(Inner::Standalone(manager)))
            }
            Endpoint::Cluster { client, .. } => {
                let config = ClusterConfig::new()
                    .set_connection_timeout(o.connect_timeout)
                    .set_response_timeout(o.response_timeout);
                let conn = client.get_async_connection_with_config(config).await?;
                Ok(DataConn(Inner::Cluster(conn)))
            }
        }
    }
}

/// A multiplexed connection to the target, standalone or cluster; cheap to clone.
#[derive(Clone)]
pub struct DataConn(Inner);

#[derive(Clone)]
enum Inner {
    Standalone(ConnectionManager),
    Cluster(ClusterConnection),
}

impl DataConn {
    /// Whether this is a cluster connection (a pipeline must then stay within one slot).
    pub fn is_cluster(&self) -> bool {
        matches!(self.0, Inner::Cluster(_))
    }
}

impl std::fmt::Debug for DataConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_cluster() {
            "DataConn(cluster)"
        } else {
            "DataConn(standalone)"
        })
    }
}

impl ConnectionLike for DataConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match &mut self.0 {
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
        match &mut self.0 {
            Inner::Standalone(c) => c.req_packed_commands(pipeline, offset, count),
            Inner::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.0 {
            Inner::Standalone(c) => c.get_db(),
            Inner::Cluster(c) => c.get_db(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_node_map_entry_is_named() {
        let target = RedisTarget::cluster(["127.0.0.1:7000"]).node_map([("10.0.0.1", "x:1")]);
        let err = target.validate().expect_err("no port").to_string();
        assert!(err.contains("\"10.0.0.1\""), "{err}");
        assert!(
            RedisTarget::cluster(Vec::<String>::new())
                .validate()
                .is_err()
        );
        assert!(RedisTarget::standalone("http://x").validate().is_err());
    }

    #[test]
    fn tls_options_need_rediss_and_readable_files() {
        let tls = RedisTls::new().ca_file("/nonexistent/ca.pem");
        let plain = RedisTarget::standalone("redis://127.0.0.1:6379")
            .endpoint_tls(Some(&tls))
            .unwrap_err()
            .to_string();
        assert!(plain.contains("use rediss://"), "{plain}");
        let missing = RedisTarget::standalone("rediss://127.0.0.1:6379")
            .endpoint_tls(Some(&tls))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("/nonexistent/ca.pem"), "{missing}");
        let cluster = RedisTarget::cluster(["127.0.0.1:7000"])
            .endpoint_tls(Some(&tls))
            .unwrap_err()
            .to_string();
        assert!(cluster.contains("/nonexistent/ca.pem"), "{cluster}");
    }
}
