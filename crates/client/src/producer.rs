//! The routed producer: publishes keyed records to the shard stream the contract's hash picks
//! (coord/v1 contract), with a routing cache that keeps working through coordinator outages for the length
//! of its lease (see `crate::routing`).
//!
//! Publish procedure: route with the cached table → a guarded `XADD <streamKey> NOMKSTREAM [MAXLEN ~ n] * f v …`
//! (`producer/publish.rs`: the store's `guarded_append` script, refused when the routing used is older than
//! the shard's routing boundary, which the coordinator raises when a scale switches routing). A refusal or a
//! nil reply (the stream key is missing: a stale route) writes nothing and triggers a routing refresh and a
//! retry on the right shard; a Redis error one refresh and one retry. Batches are pipelined in one round
//! trip. The producer never creates streams.
//!
//! Producer quiesce (a scale with `producerQuiesce`, see `crate::quiesce`): while routing carries a quiesce
//! notice no new publish starts (callers wait, at most [`ProducerConfig::publish_timeout`]); the publishes in
//! flight finish with their retry, then the producer reports `quiesced` under its producer id.

use crate::coordinator::CoordinatorClient;
use crate::error::ClientError;
use crate::quiesce::Gate;
use crate::redis_target::{ConnectOptions, DataConn, RedisTarget, RedisTls};
use crate::routing::{Lookup, Offer, RoutingCache, route};
use rsc_protocol::wire::ProducerRoutingResponse;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

mod publish;
mod quiesced;
mod record;
pub use quiesced::RetryPolicy;
use quiesced::refresh_loop;
pub use record::{Published, Record};

/// Producer settings.
#[derive(Debug, Clone)]
pub struct ProducerConfig {
    /// The stream prefix (shard streams are `<prefix>:<i>`).
    pub stream_prefix: String,
    /// The coordinator group whose routing is used (default: the stream prefix).
    pub consumer_group: String,
    /// The Redis the shard streams live on (data plane): a standalone URL, e.g. `redis://127.0.0.1:6379`,
    /// or a Redis Cluster ([`ProducerConfig::redis`]).
    pub redis: RedisTarget,
    /// TLS options for a `rediss://` data plane ([`ProducerConfig::redis_tls`]).
    pub redis_tls: Option<RedisTls>,
    /// How often routing is refreshed while the coordinator answers (default 5 s).
    pub refresh_interval: Duration,
    /// How long a fetched routing table may be used without a successful refresh (default 60 s).
    pub routing_lease: Duration,
    /// `MAXLEN ~ n` trimming on every XADD (default `Some(100_000)`; `None` = no trimming).
    pub max_len: Option<u64>,
    /// This producer's stable id, reported to the coordinator (default: generated once per producer).
    pub producer_id: Option<String>,
    /// How long a publish call waits to start while a scale has producers quiesced (default 30 s).
    pub publish_timeout: Duration,
}

impl ProducerConfig {
    /// Settings for `stream_prefix` (group = prefix) on the Redis at `redis_url`, with defaults.
    ///
    /// ```
    /// use std::time::Duration;
    /// let cfg = rsc_client::ProducerConfig::new("orders", "redis://127.0.0.1:6379")
    ///     .refresh_interval(Duration::from_secs(2))
    ///     .routing_lease(Duration::from_secs(30))
    ///     .max_len(None);
    /// assert_eq!(cfg.consumer_group, "orders");
    /// ```
    pub fn new(stream_prefix: impl Into<String>, redis_url: impl Into<String>) -> Self {
        let stream_prefix = stream_prefix.into();
        ProducerConfig {
            consumer_group: stream_prefix.clone(),
            stream_prefix,
            redis: RedisTarget::Standalone(redis_url.into()),
            redis_tls: None,
            refresh_interval: Duration::from_secs(5),
            routing_lease: Duration::from_secs(60),
            max_len: Some(100_000),
            producer_id: None,
            publish_timeout: Duration::from_secs(30),
        }
    }

    /// A stable id for this producer (1–200 visible ASCII characters), instead of a generated one.
    pub fn producer_id(mut self, id: impl Into<String>) -> Self {
        self.producer_id = Some(id.into());
        self
    }

    /// How long a publish waits to start while producers are quiesced for a scale.
    pub fn publish_timeout(mut self, d: Duration) -> Self {
        self.publish_timeout = d;
        self
    }

    /// Writes to this Redis instead of the URL given to [`ProducerConfig::new`], e.g. a Redis Cluster.
    pub fn redis(mut self, target: RedisTarget) -> Self {
        self.redis = target;
        self
    }

    /// Writes over TLS with these options (see [`crate::ConsumerConfig::redis_tls`]).
    pub fn redis_tls(mut self, tls: RedisTls) -> Self {
        self.redis_tls = Some(tls);
        self
    }

    /// Use the routing of this coordinator group instead of the one named like the prefix.
    pub fn consumer_group(mut self, group: impl Into<String>) -> Self {
        self.consumer_group = group.into();
        self
    }

    /// Refresh interval of the routing cache.
    pub fn refresh_interval(mut self, d: Duration) -> Self {
        self.refresh_interval = d;
        self
    }

    /// Routing lease: how long cached routing is used while the coordinator cannot be reached.
    pub fn routing_lease(mut self, d: Duration) -> Self {
        self.routing_lease = d;
        self
    }

    /// Approximate `MAXLEN ~` trimming (None = never trim).
    pub fn max_len(mut self, n: Option<u64>) -> Self {
        self.max_len = n;
        self
    }

    fn validate(&self) -> Result<(), ClientError> {
        rsc_protocol::validate::validate_stream_prefix(&self.stream_prefix)
            .map_err(|e| ClientError::InvalidConfig(e.to_string()))?;
        rsc_protocol::validate::validate_consumer_group(&self.consumer_group)
            .map_err(|e| ClientError::InvalidConfig(e.to_string()))?;
        self.redis.endpoint_tls(self.redis_tls.as_ref())?;
        if self.refresh_interval.is_zero() || self.routing_lease <= self.refresh_interval {
            return Err(ClientError::InvalidConfig(format!(
                "routing lease ({:?}) must be longer than the refresh interval ({:?}), and both positive",
                self.routing_lease, self.refresh_interval
            )));
        }
        if let Some(id) = &self.producer_id
            && (id.is_empty() || id.len() > 200 || !id.bytes().all(|b| b.is_ascii_graphic()))
        {
            return Err(ClientError::InvalidConfig(format!(
                "producer id {id:?} must be 1–200 visible ASCII characters"
            )));
        }
        if self.max_len == Some(0) {
            return Err(ClientError::InvalidConfig(
                "max_len must be positive (or None for no trimming)".into(),
            ));
        }
        Ok(())
    }
}

/// Counters of a producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProducerStats {
    /// Routing tables refused because their metadataVersion was lower than one already seen.
    pub version_regressions: u64,
    /// The highest routing metadataVersion seen.
    pub metadata_version: i64,
    /// Writes that found their shard stream missing (`XADD … NOMKSTREAM` answered nil): a stale route, e.g. to
    /// a shard retired by a scale-in. Each was refreshed and retried once.
    pub stale_route_writes: u64,
    /// Scales this producer paused for (producer quiesce).
    pub quiesce_pauses: u64,
    /// Publish calls that waited for a producer quiesce to end.
    pub publishes_held: u64,
    /// Appends refused because their routing was older than the shard's routing boundary (a scale switched
    /// routing): nothing was written; each was refreshed and retried on the right shard.
    pub stale_routing_refusals: u64,
}

/// A routed producer. Cheap to share (`&self` methods); dropping it stops its background refresher.
pub struct Producer {
    inner: Arc<Inner>,
    refresher: tokio::task::JoinHandle<()>,
}

struct Inner {
    coord: CoordinatorClient,
    config: ProducerConfig,
    conn: DataConn,
    cache: Mutex<RoutingCache>,
    /// See `ProducerStats::stale_route_writes`.
    stale_route_writes: std::sync::atomic::AtomicU64,
    /// See `ProducerStats::stale_routing_refusals`.
    stale_routing_refusals: std::sync::atomic::AtomicU64,
    /// Serialises refreshes; holds the number of completed fetch attempts.
    refresh_lock: tokio::sync::Mutex<u64>,
    wake_refresher: Notify,
    /// Producer quiesce: admission of publishes and the in-flight count.
    gate: Gate,
    producer_id: String,
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.refresher.abort();
    }
}

impl Producer {
    /// Connects to Redis and fetches the routing once (fails if neither works).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), rsc_client::ClientError> {
    /// use rsc_client::{CoordinatorClient, Producer, ProducerConfig};
    /// let coord = CoordinatorClient::new(["http://127.0.0.1:8080"])?;
    /// let producer = Producer::connect(coord, ProducerConfig::new("orders", "redis://127.0.0.1:6379")).await?;
    /// let p = producer.publish("order-123", &[("payload", "{\"total\":42}")]).await?;
    /// println!("{} -> {}", p.stream_key, p.id);
    /// # Ok(()) }
    /// ```
    pub async fn connect(
        coord: CoordinatorClient,
        config: ProducerConfig,
    ) -> Result<Producer, ClientError> {
        config.validate()?;
        let conn = config
            .redis
            .endpoint_tls(config.redis_tls.as_ref())?
            .connect_checked(ConnectOptions {
                connect_timeout: Duration::from_secs(2),
                response_timeout: Duration::from_secs(5),
                reconnect_retries: None,
                max_reconnect_delay: None,
            })
            .await?;
        let producer_id = config
            .producer_id
            .clone()
            .unwrap_or_else(|| format!("producer-{}", uuid::Uuid::new_v4()));
        let inner = Arc::new(Inner {
            coord,
            config,
            conn,
            cache: Mutex::new(RoutingCache::default()),
            stale_route_writes: std::sync::atomic::AtomicU64::new(0),
            stale_routing_refusals: std::sync::atomic::AtomicU64::new(0),
            refresh_lock: tokio::sync::Mutex::new(0),
            wake_refresher: Notify::new(),
            gate: Gate::default(),
            producer_id,
        });
        inner.refresh(None).await?;
        let refresher = tokio::spawn(refresh_loop(Arc::downgrade(&inner)));
        Ok(Producer { inner, refresher })
    }

    /// Publishes one record with partition `key`; retried once after a routing refresh on a stale route.
    ///
    /// ```no_run
    /// # async fn demo(producer: rsc_client::Producer) -> Result<(), rsc_client::ClientError> {
    /// match producer.publish("customer-7", &[("payload", "hello")]).await {
    ///     Ok(p) => println!("shard {} id {}", p.shard, p.id),
    ///     Err(e) if e.is_retryable() => println!("try again later: {e}"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn publish<K, F, V>(
        &self,
        key: K,
        fields: &[(F, V)],
    ) -> Result<Published, ClientError>
    where
        K: AsRef<[u8]>,
        F: AsRef<str>,
        V: AsRef<[u8]>,
    {
        let record = Record {
            key: key.as_ref().to_vec(),
            fields: fields
                .iter()
                .map(|(f, v)| (f.as_ref().to_owned(), v.as_ref().to_vec()))
                .collect(),
        };
        let mut out = self.publish_batch(std::slice::from_ref(&record)).await?;
        out.pop()
            .ok_or_else(|| ClientError::Protocol("empty publish result".into()))
    }

    /// Publishes many records in one pipelined round trip (per attempt). Results are in input order.
    /// Records whose stream was missing, or refused because a scale switched routing since the routing used,
    /// are retried after a routing refresh (nothing was written for them); if the whole pipeline
    /// fails with a Redis error it is retried once, so a record may then be written twice (at-least-once).
    ///
    /// ```no_run
    /// # async fn demo(producer: rsc_client::Producer) -> Result<(), rsc_client::ClientError> {
    /// use rsc_client::Record;
    /// let records: Vec<Record> = (0..100)
    ///     .map(|i| Record::new(format!("key-{i}")).field("n", i.to_string()))
    ///     .collect();
    /// let published = producer.publish_batch(&records).await?;
    /// assert_eq!(published.len(), 100);
    /// # Ok(()) }
    /// ```
    pub async fn publish_batch(&self, records: &[Record]) -> Result<Vec<Published>, ClientError> {
        // Producer quiesce: wait while a scale has producers paused; counted in flight until done.
        let _in_flight = self.inner.admit().await?;
        self.publish_admitted(records).await
    }

    /// Fetches routing now (e.g. after a scale operation, runbook step 5).
    ///
    /// ```no_run
    /// # async fn demo(producer: rsc_client::Producer) -> Result<(), rsc_client::ClientError> {
    /// producer.refresh_routing().await?;
    /// # Ok(()) }
    /// ```
    pub async fn refresh_routing(&self) -> Result<(), ClientError> {
        self.inner.refresh(None).await
    }

    /// Counters and the routing version in use.
    ///
    /// ```no_run
    /// # fn demo(producer: rsc_client::Producer) {
    /// let s = producer.stats();
    /// println!("routing v{} ({} regressions refused)", s.metadata_version, s.version_regressions);
    /// # }
    /// ```
    pub fn stats(&self) -> ProducerStats {
        let cache = self.inner.cache_lock();
        ProducerStats {
            version_regressions: cache.regressions,
            metadata_version: cache.highest_version(),
            stale_route_writes: self
                .inner
                .stale_route_writes
                .load(std::sync::atomic::Ordering::Relaxed),
            stale_routing_refusals: self
                .inner
                .stale_routing_refusals
                .load(std::sync::atomic::Ordering::Relaxed),
            quiesce_pauses: self
                .inner
                .gate
                .pauses
                .load(std::sync::atomic::Ordering::Relaxed),
            publishes_held: self
                .inner
                .gate
                .held
                .load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// This producer's id, as the coordinator sees it (producer quiesce).
    pub fn producer_id(&self) -> &str {
        &self.inner.producer_id
    }
}

impl Inner {
    fn cache_lock(&self) -> std::sync::MutexGuard<'_, RoutingCache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The table to publish with: cached while its lease holds, else refreshed, else fail closed.
    async fn table(&self) -> Result<Arc<ProducerRoutingResponse>, ClientError> {
        let lookup = self
            .cache_lock()
            .lookup(Instant::now(), self.config.refresh_interval);
        match lookup {
            Lookup::Fresh(t) => Ok(t),
            Lookup::Stale(t) => {
                self.wake_refresher.notify_one();
                Ok(t)
            }
            Lookup::Expired => {
                let refreshed = self.refresh(None).await;
                let lookup = self
                    .cache_lock()
                    .lookup(Instant::now(), self.config.refresh_interval);
                match (lookup, refreshed) {
                    (Lookup::Fresh(t) | Lookup::Stale(t), _) => Ok(t),
                    (Lookup::Expired, Err(e @ ClientError::Api { status: 404, .. })) => Err(e),
                    (Lookup::Expired, result) => Err(ClientError::RoutingUnavailable {
                        stream_prefix: self.config.stream_prefix.clone(),
                        consumer_group: self.config.consumer_group.clone(),
                        reason: match result {
                            Err(e) => e.to_string(),
                            Ok(()) => "the coordinator returned an older metadataVersion than already seen (metadata rollback?); fix the coordinator metadata".into(),
                        },
                    }),
                }
            }
        }
    }

    /// Fetches routing once. `seen`: skip if a fetch completed since the caller observed that count.
    async fn refresh(&self, seen: Option<u64>) -> Result<(), ClientError> {
        let mut done = self.refresh_lock.lock().await;
        if seen.is_some_and(|s| s != *done) {
            return Ok(());
        }
        let started = Instant::now();
        let observed = self.cache_lock().highest_version();
        let result = self
            .coord
            .producer_routing_as(
                &self.config.stream_prefix,
                &self.config.consumer_group,
                Some(observed),
                Some(&self.producer_id),
            )
            .await;
        *done += 1;
        match result {
            Ok(table) => {
                let version = table.metadata_version;
                let notice = table.quiesce.clone();
                let routing_version = table.routing_version.unwrap_or(0);
                let offer = self
                    .cache_lock()
                    .offer(table, started, self.config.routing_lease);
                if offer == Offer::Accepted {
                    self.observe_quiesce(notice, routing_version, started);
                }
                if offer == Offer::Regressed {
                    tracing::warn!(
                        stream = %self.config.stream_prefix,
                        returned = version,
                        "coordinator returned an older routing metadataVersion than this producer has seen; keeping the newer routing (it will expire if this persists)"
                    );
                }
                Ok(())
            }
            Err(e) => {
                if let ClientError::Api { status: 404, .. } = &e {
                    // The group is gone: the coordinator says the old routing is void.
                    self.cache_lock().forget();
                }
                Err(e)
            }
        }
    }
}
