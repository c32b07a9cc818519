//! Consumer settings, their defaults and validation.
//!
//! **The assignment lease.** A member stops reading every shard when no heartbeat has been accepted for
//! `assignment_lease`, counted from when that heartbeat was *sent* (so it always ends before the lease
//! the coordinator granted on receipt). It must be shorter than the coordinator's
//! `coordinator.member-lease-ttl` by a safety margin that covers one read poll (`poll_timeout`), the
//! coordinator's expiry tick, and clock-rate error. The default, 10 s, is the coordinator's default
//! TTL of 15 s minus a 5 s margin; if you shorten the coordinator's TTL, shorten this too (the coordinator
//! does not send its TTL on the wire).

use crate::error::ClientError;
use crate::identity;
use crate::redis_target::{RedisTarget, RedisTls};
use std::time::{Duration, Instant};

/// Guard kept between the end of a blocking read and the lease deadline.
pub(crate) const LEASE_GUARD: Duration = Duration::from_millis(20);

/// The least lease time that must be left to start a read. Both the member (which shards get a read
/// loop, [`crate::Membership::readable`]) and the read loop (whether to read once more) use
/// it, through [`read_lease_left`]: with different margins, in the window between them the member would
/// start loops that stop at once, over and over.
pub(crate) const READ_LEASE_MARGIN: Duration = LEASE_GUARD.saturating_mul(2);

/// Lease time left at `now` if it is worth starting a read with (more than [`READ_LEASE_MARGIN`]).
pub(crate) fn read_lease_left(lease_until: Option<Instant>, now: Instant) -> Option<Duration> {
    let left = lease_until?.checked_duration_since(now)?;
    (left > READ_LEASE_MARGIN).then_some(left)
}

/// Settings of a managed consumer.
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    /// The stream prefix (shard streams are `<prefix>:<i>`).
    pub stream_prefix: String,
    /// The coordinator group, which is also the Redis consumer group (default: the stream prefix).
    pub consumer_group: String,
    /// The Redis the shard streams live on (data plane): a standalone URL, e.g. `redis://127.0.0.1:6379`,
    /// or a Redis Cluster ([`ConsumerConfig::redis`]).
    pub redis: RedisTarget,
    /// TLS options for a `rediss://` data plane (CA file, client certificate and key); `None`: plain text,
    /// or a `rediss://` URL verified with the system's trust store ([`ConsumerConfig::redis_tls`]).
    pub redis_tls: Option<RedisTls>,
    /// Member id, also the Redis consumer name (default: pod IP or host name, see [`crate::default_member_id`]).
    pub member_id: String,
    /// Logical members in this process; with N > 1 they are `<member_id>-m0 … -m{N-1}` (default 1).
    pub concurrency: usize,
    /// Static membership: the member's stable identity across restarts (`groupInstanceId`; with N > 1
    /// members, `<id>-m0 … -m{N-1}`). A static member that stops — it crashes, or shuts down, which then is
    /// a temporary leave — keeps its shards reserved on the coordinator for `coordinator.group.static-member-grace`,
    /// and a process started with the same instance id within it gets the same shards back, so a rolling
    /// restart moves no shard. Two live processes must never share one: the second is refused
    /// (`FENCED_INSTANCE_ID`) until the first has gone. Default: `RSC_GROUP_INSTANCE_ID` if set, else none
    /// (a dynamic member); [`ConsumerConfig::group_instance_id_from_pod_name`] takes the pod name.
    pub group_instance_id: Option<String>,
    /// Handler workers per member: how many of its shards are handled at once (default 1). A member owning
    /// more shards than workers gives them turns in FIFO order.
    pub workers: usize,
    /// XREADGROUP / XAUTOCLAIM `COUNT` (default 10).
    pub batch_size: usize,
    /// Longest `BLOCK` of one read (default 250 ms); also bounds how long a revocation waits for a read.
    pub poll_timeout: Duration,
    /// See the module docs (default 10 s).
    pub assignment_lease: Duration,
    /// Timeout of one heartbeat attempt (default: a third of the lease, at most 5 s).
    pub heartbeat_timeout: Option<Duration>,
    /// Fraction by which heartbeat delays are randomly shortened, 0.0–0.5 (default 0.1).
    pub heartbeat_jitter: f64,
    /// How long a graceful shutdown waits for in-flight work before giving up (default 30 s).
    pub shutdown_timeout: Duration,
    /// Acknowledge every entry whose handler returned, with one XACK per batch (default false: the handler
    /// acknowledges with [`crate::Delivery::ack`]). An entry whose handler did not return (a crash, a lapsed
    /// lease) stays pending and is delivered again, so processing stays at-least-once.
    pub ack_after_handle: bool,
}

impl ConsumerConfig {
    /// Settings for `stream_prefix` (group = prefix) on the Redis at `redis_url`, with defaults.
    ///
    /// ```
    /// use std::time::Duration;
    /// let cfg = rsc_client::ConsumerConfig::new("orders", "redis://127.0.0.1:6379")
    ///     .member_id("pod-a")
    ///     .concurrency(3)
    ///     .batch_size(50)
    ///     .assignment_lease(Duration::from_secs(8));
    /// assert_eq!(cfg.consumer_group, "orders");
    /// assert!(cfg.validate().is_ok());
    /// ```
    pub fn new(stream_prefix: impl Into<String>, redis_url: impl Into<String>) -> Self {
        let stream_prefix = stream_prefix.into();
        ConsumerConfig {
            consumer_group: stream_prefix.clone(),
            stream_prefix,
            redis: RedisTarget::Standalone(redis_url.into()),
            redis_tls: None,
            member_id: identity::default_member_id(),
            concurrency: 1,
            group_instance_id: std::env::var("RSC_GROUP_INSTANCE_ID")
                .ok()
                .filter(|v| !v.is_empty()),
            workers: 1,
            batch_size: 10,
            poll_timeout: Duration::from_millis(250),
            assignment_lease: Duration::from_secs(10),
            heartbeat_timeout: None,
            heartbeat_jitter: 0.1,
            shutdown_timeout: Duration::from_secs(30),
            ack_after_handle: false,
        }
    }

    /// Reads from this Redis instead of the URL given to [`ConsumerConfig::new`], e.g. a Redis Cluster.
    ///
    /// ```
    /// use rsc_client::{ConsumerConfig, RedisTarget};
    /// let cfg = ConsumerConfig::new("orders", "unused")
    ///     .redis(RedisTarget::cluster(["127.0.0.1:7000", "127.0.0.1:7001"]));
    /// assert!(cfg.validate().is_ok());
    /// ```
    pub fn redis(mut self, target: RedisTarget) -> Self {
        self.redis = target;
        self
    }

    /// Connects to the data plane over TLS with these options (the URL must be `rediss://`; cluster seeds
    /// given as `host:port` become `rediss://`). The files are read by [`ConsumerConfig::validate`] and at
    /// start; the server's name is always verified.
    ///
    /// ```
    /// use rsc_client::{ConsumerConfig, RedisTls};
    /// let cfg = ConsumerConfig::new("orders", "redis://127.0.0.1:6379")
    ///     .redis_tls(RedisTls::new().ca_file("/nonexistent/ca.pem"));
    /// let err = cfg.validate().unwrap_err().to_string();
    /// assert!(err.contains("use rediss://"), "{err}");
    /// ```
    pub fn redis_tls(mut self, tls: RedisTls) -> Self {
        self.redis_tls = Some(tls);
        self
    }

    /// The coordinator / Redis consumer group.
    pub fn consumer_group(mut self, group: impl Into<String>) -> Self {
        self.consumer_group = group.into();
        self
    }

    /// The member id (and Redis consumer name) base.
    pub fn member_id(mut self, id: impl Into<String>) -> Self {
        self.member_id = id.into();
        self
    }

    /// Makes the members static with this instance id (see [`ConsumerConfig::group_instance_id`]).
    ///
    /// ```
    /// let cfg = rsc_client::ConsumerConfig::new("orders", "redis://127.0.0.1:6379")
    ///     .member_id("10.0.0.7")
    ///     .group_instance_id("orders-worker-0");
    /// assert_eq!(cfg.group_instance_id_of("10.0.0.7").as_deref(), Some("orders-worker-0"));
    /// ```
    pub fn group_instance_id(mut self, id: impl Into<String>) -> Self {
        self.group_instance_id = Some(id.into());
        self
    }

    /// Makes the members static with the pod name as instance id (`HOSTNAME`, which Kubernetes sets to the
    /// pod name; stable across restarts in a StatefulSet). Left as it was when `HOSTNAME` is not set.
    pub fn group_instance_id_from_pod_name(mut self) -> Self {
        if let Some(name) = std::env::var("HOSTNAME").ok().filter(|v| !v.is_empty()) {
            self.group_instance_id = Some(name);
        }
        self
    }

    /// The instance id of one of [`ConsumerConfig::member_ids`] (None: dynamic members).
    pub fn group_instance_id_of(&self, member_id: &str) -> Option<String> {
        let base = self.group_instance_id.as_deref()?;
        let i = self.member_ids().iter().position(|m| m == member_id)?;
        identity::member_ids(base, self.concurrency)
            .into_iter()
            .nth(i)
    }

    /// Number of logical members in this process.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n;
        self
    }

    /// Handler workers per member.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n;
        self
    }

    /// Entries per read.
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n;
        self
    }

    /// Longest blocking read.
    pub fn poll_timeout(mut self, d: Duration) -> Self {
        self.poll_timeout = d;
        self
    }

    /// The assignment lease (see the module docs).
    pub fn assignment_lease(mut self, d: Duration) -> Self {
        self.assignment_lease = d;
        self
    }

    /// Timeout of one heartbeat attempt.
    pub fn heartbeat_timeout(mut self, d: Duration) -> Self {
        self.heartbeat_timeout = Some(d);
        self
    }

    /// Graceful shutdown bound.
    pub fn shutdown_timeout(mut self, d: Duration) -> Self {
        self.shutdown_timeout = d;
        self
    }

    /// Let the SDK acknowledge each batch with one XACK once the handler returned for its entries (see
    /// [`ConsumerConfig::ack_after_handle`]).
    ///
    /// ```
    /// let cfg = rsc_client::ConsumerConfig::new("orders", "redis://127.0.0.1:6379").ack_after_handle(true);
    /// assert!(cfg.ack_after_handle);
    /// ```
    pub fn ack_after_handle(mut self, on: bool) -> Self {
        self.ack_after_handle = on;
        self
    }

    /// Checks every setting, naming the one that is wrong.
    pub fn validate(&self) -> Result<(), ClientError> {
        let bad = |m: String| Err(ClientError::InvalidConfig(m));
        rsc_protocol::validate::validate_stream_prefix(&self.stream_prefix)
            .map_err(|e| ClientError::InvalidConfig(e.to_string()))?;
        rsc_protocol::validate::validate_consumer_group(&self.consumer_group)
            .map_err(|e| ClientError::InvalidConfig(e.to_string()))?;
        self.redis.endpoint_tls(self.redis_tls.as_ref())?;
        for id in self.member_ids() {
            rsc_protocol::validate::validate_member_id(&id)
                .map_err(|e| ClientError::InvalidConfig(e.to_string()))?;
        }
        if let Some(base) = &self.group_instance_id {
            for id in identity::member_ids(base, self.concurrency) {
                rsc_protocol::validate::validate_group_instance_id(&id)
                    .map_err(|e| ClientError::InvalidConfig(e.to_string()))?;
            }
        }
        if !(1..=1024).contains(&self.concurrency) {
            return bad(format!(
                "concurrency must be 1..=1024, got {}",
                self.concurrency
            ));
        }
        if !(1..=1024).contains(&self.workers) {
            return bad(format!("workers must be 1..=1024, got {}", self.workers));
        }
        if !(1..=10_000).contains(&self.batch_size) {
            return bad(format!(
                "batch_size must be 1..=10000, got {}",
                self.batch_size
            ));
        }
        if self.poll_timeout.is_zero() {
            return bad("poll_timeout must be positive".into());
        }
        if self.assignment_lease < self.poll_timeout * 2 + LEASE_GUARD {
            return bad(format!(
                "assignment_lease ({:?}) must be at least twice poll_timeout ({:?}); it must also stay below the coordinator's member-lease-ttl",
                self.assignment_lease, self.poll_timeout
            ));
        }
        if !(0.0..=0.5).contains(&self.heartbeat_jitter) {
            return bad(format!(
                "heartbeat_jitter must be within 0.0..=0.5, got {}",
                self.heartbeat_jitter
            ));
        }
        Ok(())
    }

    /// The member ids this configuration runs.
    pub fn member_ids(&self) -> Vec<String> {
        identity::member_ids(&self.member_id, self.concurrency)
    }

    pub(crate) fn effective_heartbeat_timeout(&self) -> Duration {
        self.heartbeat_timeout
            .unwrap_or_else(|| (self.assignment_lease / 3).min(Duration::from_secs(5)))
            .max(Duration::from_millis(50))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_setting() {
        let base = ConsumerConfig::new("orders", "redis://127.0.0.1:6379").member_id("m");
        assert!(base.validate().is_ok());
        let e = base.clone().concurrency(0).validate().unwrap_err();
        assert!(e.to_string().contains("concurrency"), "{e}");
        let e = base
            .clone()
            .assignment_lease(Duration::from_millis(100))
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("assignment_lease"), "{e}");
        let e = base.clone().member_id("").validate().unwrap_err();
        assert!(e.to_string().contains("memberId"), "{e}");
        assert!(base.clone().consumer_group("a:b").validate().is_err());
    }

    #[test]
    fn static_instance_ids_follow_the_member_ids_and_are_validated() {
        let base = ConsumerConfig::new("orders", "redis://127.0.0.1:6379").member_id("m");
        assert_eq!(base.clone().group_instance_id_of("m"), None);
        let one = base.clone().group_instance_id("pod-a");
        assert_eq!(one.group_instance_id_of("m").as_deref(), Some("pod-a"));
        assert_eq!(one.group_instance_id_of("other"), None);
        let three = one.clone().concurrency(3);
        assert_eq!(
            three.group_instance_id_of("m-m2").as_deref(),
            Some("pod-a-m2")
        );
        assert!(three.validate().is_ok());
        let e = base.group_instance_id("pod a").validate().unwrap_err();
        assert!(e.to_string().contains("groupInstanceId"), "{e}");
    }

    #[test]
    fn heartbeat_timeout_follows_the_lease() {
        let c = ConsumerConfig::new("o", "redis://x").assignment_lease(Duration::from_secs(3));
        assert_eq!(c.effective_heartbeat_timeout(), Duration::from_secs(1));
        let c = ConsumerConfig::new("o", "redis://x");
        assert_eq!(c.effective_heartbeat_timeout(), Duration::from_secs(10) / 3);
    }
}
