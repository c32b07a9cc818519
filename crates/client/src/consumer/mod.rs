//! The managed consumer: N logical members in one process, each joining the coordinator group,
//! heartbeating, and reading exactly the shards it is entitled to, with explicit acknowledgement.
//!
//! - [`config`]: settings and the assignment lease. `membership`: how the SDK sets up and uses the
//!   member protocol model ([`crate::Membership`], from `rsc-member`).
//! - `member`: one member's runtime (heartbeats, reconciling read loops). `reader`: one shard's loop.
//! - [`delivery`]: what the handler receives and acknowledges. [`events`]: ownership events, snapshots.

pub mod config;
pub mod delivery;
pub mod events;
pub(crate) mod member;
pub(crate) mod membership;
pub(crate) mod reader;

use crate::coordinator::CoordinatorClient;
use crate::error::ClientError;
use crate::redis_target::ConnectOptions;
use config::ConsumerConfig;
use delivery::Delivery;
use events::{EventSink, MemberSnapshot};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The application's message handler. Implemented for every `Fn(Delivery) -> impl Future<Output = ()>`;
/// the handler acknowledges with [`Delivery::ack`] when it is done with an entry.
pub trait Handler: Send + Sync + 'static {
    /// Handles one entry. Entries of one shard are handled one at a time, in stream order.
    fn handle(&self, delivery: Delivery) -> impl Future<Output = ()> + Send;
}

impl<F, Fut> Handler for F
where
    F: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    fn handle(&self, delivery: Delivery) -> impl Future<Output = ()> + Send {
        self(delivery)
    }
}

/// How a graceful shutdown ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Members that drained and left the group.
    pub left: Vec<String>,
    /// Members still busy when `shutdown_timeout` passed (their shards are released by lease expiry).
    pub timed_out: Vec<String>,
}

struct MemberHandle {
    id: String,
    task: JoinHandle<()>,
    snapshot: Arc<Mutex<MemberSnapshot>>,
    handled: Arc<AtomicU64>,
}

/// A running managed consumer. Stop it with [`Consumer::shutdown`]; dropping it aborts it.
pub struct Consumer {
    members: Vec<MemberHandle>,
    shutdown: watch::Sender<bool>,
    config: Arc<ConsumerConfig>,
}

impl Consumer {
    /// Starts the consumer's members; each joins the group on its first heartbeat.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), rsc_client::ClientError> {
    /// use rsc_client::{Consumer, ConsumerConfig, CoordinatorClient, Delivery};
    /// let coord = CoordinatorClient::new(["http://127.0.0.1:8080", "http://127.0.0.1:8081"])?;
    /// let config = ConsumerConfig::new("orders", "redis://127.0.0.1:6379").concurrency(3);
    /// let consumer = Consumer::start(coord, config, |d: Delivery| async move {
    ///     println!("{} {:?}", d.id(), d.field_str("payload"));
    ///     let _ = d.ack().await;
    /// })
    /// .await?;
    /// // … later:
    /// let report = consumer.shutdown().await;
    /// assert!(report.timed_out.is_empty());
    /// # Ok(()) }
    /// ```
    pub async fn start<H: Handler>(
        coord: CoordinatorClient,
        config: ConsumerConfig,
        handler: H,
    ) -> Result<Consumer, ClientError> {
        Self::start_with_events(coord, config, handler, None).await
    }

    /// Like [`Consumer::start`], also calling `events` for every `ConsumerEvent` (read loops started and
    /// stopped, heartbeats, lease expiry). The callback must be quick.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), rsc_client::ClientError> {
    /// use rsc_client::{Consumer, ConsumerConfig, ConsumerEvent, CoordinatorClient, Delivery};
    /// use std::sync::Arc;
    /// let coord = CoordinatorClient::new(["http://127.0.0.1:8080"])?;
    /// let log = Arc::new(|e: &ConsumerEvent| {
    ///     if let ConsumerEvent::ReadStarted { member_id, shard, .. } = e {
    ///         println!("{member_id} reads shard {shard}");
    ///     }
    /// });
    /// let consumer = Consumer::start_with_events(
    ///     coord,
    ///     ConsumerConfig::new("orders", "redis://127.0.0.1:6379"),
    ///     |d: Delivery| async move { let _ = d.ack().await; },
    ///     Some(log),
    /// )
    /// .await?;
    /// # drop(consumer); Ok(()) }
    /// ```
    pub async fn start_with_events<H: Handler>(
        coord: CoordinatorClient,
        config: ConsumerConfig,
        handler: H,
        events: Option<EventSink>,
    ) -> Result<Consumer, ClientError> {
        config.validate()?;
        let client = config.redis.endpoint_tls(config.redis_tls.as_ref())?;
        // Fail fast on an unreachable Redis rather than joining a group we cannot read.
        let mut probe = client
            .connect_checked(ConnectOptions {
                connect_timeout: Duration::from_secs(2),
                response_timeout: Duration::from_secs(5),
                reconnect_retries: Some(0),
                max_reconnect_delay: None,
            })
            .await?;
        let _: String = redis::cmd("PING")
            .query_async(&mut probe)
            .await
            .map_err(|e| client.connect_error(e))?;
        drop(probe);
        let config = Arc::new(config);
        let handler = Arc::new(handler);
        let (shutdown, _) = watch::channel(false);
        let mut members = Vec::new();
        for id in config.member_ids() {
            let snapshot = Arc::new(Mutex::new(MemberSnapshot {
                member_id: id.clone(),
                ..MemberSnapshot::default()
            }));
            let handled = Arc::new(AtomicU64::new(0));
            let member = member::Member::new(
                id.clone(),
                config.clone(),
                coord.clone(),
                client.clone(),
                handler.clone(),
                member::Observers {
                    events: events.clone(),
                    snapshot: snapshot.clone(),
                    handled: handled.clone(),
                },
            );
            let task = tokio::spawn(member.run(shutdown.subscribe()));
            members.push(MemberHandle {
                id,
                task,
                snapshot,
                handled,
            });
        }
        Ok(Consumer {
            members,
            shutdown,
            config,
        })
    }

    /// The member ids this consumer runs.
    pub fn member_ids(&self) -> Vec<String> {
        self.members.iter().map(|m| m.id.clone()).collect()
    }

    /// The current state of every member.
    ///
    /// ```no_run
    /// # fn demo(consumer: &rsc_client::Consumer) {
    /// for m in consumer.snapshot() {
    ///     println!("{} epoch {} reads {:?} handled {}", m.member_id, m.member_epoch, m.reading, m.handled);
    /// }
    /// # }
    /// ```
    pub fn snapshot(&self) -> Vec<MemberSnapshot> {
        self.members
            .iter()
            .map(|m| {
                let mut s = m.snapshot.lock().unwrap_or_else(|p| p.into_inner()).clone();
                s.handled = m.handled.load(Ordering::Relaxed);
                s
            })
            .collect()
    }

    /// Stops reading, finishes in-flight work, reports DRAINING then REVOKED, and leaves the group
    /// (epoch -1; a static member, one with a `group_instance_id`, leaves temporarily with -2 so that its
    /// shards stay reserved for its next process), within the configured `shutdown_timeout`.
    ///
    /// ```no_run
    /// # async fn demo(consumer: rsc_client::Consumer) {
    /// let report = consumer.shutdown().await;
    /// println!("left: {:?}, timed out: {:?}", report.left, report.timed_out);
    /// # }
    /// ```
    pub async fn shutdown(mut self) -> ShutdownReport {
        let _ = self.shutdown.send(true);
        // The members bound their own drain by shutdown_timeout; allow a little more for the final heartbeat.
        let bound = self.config.shutdown_timeout + self.config.effective_heartbeat_timeout() * 2;
        let deadline = Instant::now() + bound;
        let mut report = ShutdownReport {
            left: Vec::new(),
            timed_out: Vec::new(),
        };
        for m in std::mem::take(&mut self.members) {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut task = m.task;
            match tokio::time::timeout(left, &mut task).await {
                Ok(_) => {
                    let snap = m.snapshot.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    if snap.owned.is_empty() && snap.draining.is_empty() {
                        report.left.push(m.id);
                    } else {
                        report.timed_out.push(m.id);
                    }
                }
                Err(_) => {
                    task.abort();
                    report.timed_out.push(m.id);
                }
            }
        }
        report
    }

    /// Stops at once without draining or leaving, as if the process had died: read loops and handlers are
    /// cancelled mid-batch, nothing is acknowledged or reported. The coordinator releases the shards when the
    /// member's lease expires, and the next owners reclaim its pending entries. Meant for failure drills.
    ///
    /// ```no_run
    /// # fn demo(consumer: rsc_client::Consumer) {
    /// consumer.abort();
    /// # }
    /// ```
    pub fn abort(mut self) {
        for m in std::mem::take(&mut self.members) {
            m.task.abort();
        }
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        for m in &self.members {
            m.task.abort();
        }
    }
}
