//! The runtime of one member: heartbeats at the coordinator's interval (with jitter), applies each answer
//! to its [`Membership`], and keeps exactly one read loop per readable shard.
//!
//! After every answer and whenever a read loop ends, it *reconciles*: stops loops of shards that are no
//! longer readable, marks stopped shards drained once their loop has ended, and starts loops for readable
//! shards that have none. A shard's loop is never started while a previous loop of it still runs. When a
//! shard finishes draining it heartbeats at once, so the hand-over is not delayed by a full interval.

use super::Handler;
use super::config::ConsumerConfig;
use super::delivery::ShardLocal;
use super::events::{ConsumerEvent, EventSink, MemberSnapshot};
use super::membership::{new_membership, request};
use super::reader::ReaderCtx;
use crate::coordinator::CoordinatorClient;
use crate::redis_target::Endpoint;
use rsc_member::{Applied, LocalShard, Membership, ReadFences};
use rsc_protocol::wire::{HeartbeatStatus, RuntimeConsumerCapacity, ShardId, ShardProgressReport};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinSet;

/// Where a member reports what it does: events, its snapshot, and its handled-entries counter.
pub(crate) struct Observers {
    pub events: Option<EventSink>,
    pub snapshot: Arc<Mutex<MemberSnapshot>>,
    pub handled: Arc<AtomicU64>,
}

pub(crate) struct Member<H> {
    id: String,
    config: Arc<ConsumerConfig>,
    coord: CoordinatorClient,
    client: Endpoint,
    handler: Arc<H>,
    membership: Membership,
    readers: HashMap<u32, watch::Sender<bool>>,
    tasks: JoinSet<u32>,
    shards: HashMap<u32, Arc<ShardLocal>>,
    lease_tx: watch::Sender<Option<Instant>>,
    /// Read fences of ordered streams, as the answers set and lift them (the membership's, shared with the
    /// read loops, which add what the shards' routing boundaries imply).
    fences_tx: watch::Sender<ReadFences>,
    workers: Arc<Semaphore>,
    reading_count: Arc<AtomicUsize>,
    handled: Arc<AtomicU64>,
    wake: Arc<Notify>,
    snapshot: Arc<Mutex<MemberSnapshot>>,
    events: Option<EventSink>,
    last_status: Option<HeartbeatStatus>,
    lease_was_valid: bool,
}

impl<H: Handler> Member<H> {
    pub fn new(
        id: String,
        config: Arc<ConsumerConfig>,
        coord: CoordinatorClient,
        client: Endpoint,
        handler: Arc<H>,
        observers: Observers,
    ) -> Self {
        let Observers {
            events,
            snapshot,
            handled,
        } = observers;
        let (lease_tx, _) = watch::channel(None);
        let (fences_tx, _) = watch::channel(ReadFences::default());
        Member {
            membership: new_membership(
                &id,
                config.assignment_lease,
                config.group_instance_id_of(&id).as_deref(),
            ),
            workers: Arc::new(Semaphore::new(config.workers)),
            id,
            config,
            coord,
            client,
            handler,
            readers: HashMap::new(),
            tasks: JoinSet::new(),
            shards: HashMap::new(),
            lease_tx,
            fences_tx,
            reading_count: Arc::new(AtomicUsize::new(0)),
            handled,
            wake: Arc::new(Notify::new()),
            snapshot,
            events,
            last_status: None,
            lease_was_valid: false,
        }
    }

    fn emit(&self, e: ConsumerEvent) {
        if let Some(sink) = &self.events {
            sink(&e);
        }
    }

    /// Runs until a graceful leave completes (after `shutdown` turns true) or the shutdown bound passes.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let mut leave_deadline: Option<Instant> = None;
        loop {
            if *shutdown.borrow() && !self.membership.leaving() {
                // A static member leaves temporarily (-2): its shards stay reserved for its restart.
                self.membership.begin_temporary_leave();
                leave_deadline = Some(Instant::now() + self.config.shutdown_timeout);
                self.reconcile();
            }
            if self.membership.left() {
                break;
            }
            if leave_deadline.is_some_and(|d| Instant::now() >= d) {
                tracing::warn!(member = %self.id, "shutdown timed out with work in flight; leaving it to lease expiry");
                break;
            }
            let ok = self.heartbeat_once().await;
            // A shard that finished draining while the heartbeat was in flight is reported at once, not an
            // interval later (a graceful leave used to take two intervals for this).
            let drained = self.reconcile();
            if self.membership.left() {
                break;
            }
            let delay = if drained {
                Duration::ZERO
            } else {
                self.next_delay(ok)
            };
            let deadline = tokio::time::Instant::now() + delay;
            loop {
                let wake = self.wake.clone();
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => break,
                    _ = wake.notified() => {
                        if self.reconcile() {
                            break; // a shard drained: report it now
                        }
                    }
                    changed = shutdown.changed(), if !self.membership.leaving() => {
                        if changed.is_err() {
                            // The consumer handle is gone: leave as if asked to.
                            self.membership.begin_temporary_leave();
                            leave_deadline = Some(Instant::now() + self.config.shutdown_timeout);
                            self.reconcile();
                        }
                        break;
                    }
                }
            }
        }
        self.stop_all();
        while self.tasks.join_next().await.is_some() {}
        self.publish_snapshot();
    }

    /// Sends one heartbeat and applies the answer. Returns whether it was accepted.
    async fn heartbeat_once(&mut self) -> bool {
        let capacity = RuntimeConsumerCapacity {
            runtime_max_concurrency: self.config.workers as i64,
            available_concurrency: self.workers.available_permits() as i64,
        };
        let shards = &self.shards;
        let readers = &self.readers;
        let prefix = &self.config.stream_prefix;
        let req = request(&mut self.membership, capacity, |s| {
            local_report(prefix, s, shards.get(&s), readers.contains_key(&s))
        });
        let sent_at = Instant::now();
        let result = self
            .coord
            .heartbeat(
                &self.config.stream_prefix,
                &self.config.consumer_group,
                &self.id,
                &req,
                self.config.effective_heartbeat_timeout(),
            )
            .await;
        let resp = match result {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(member = %self.id, error = %e, "heartbeat failed");
                self.emit(ConsumerEvent::HeartbeatFailed {
                    member_id: self.id.clone(),
                    error: e.to_string(),
                });
                self.note_lease();
                return false;
            }
        };
        self.last_status = Some(resp.status);
        let applied = self.membership.on_response(sent_at, &resp);
        let fences = self.membership.fences();
        self.fences_tx.send_if_modified(|f| {
            let changed = f != fences;
            if changed {
                f.clone_from(fences);
            }
            changed
        });
        self.emit(ConsumerEvent::Heartbeat {
            member_id: self.id.clone(),
            status: resp.status,
            member_epoch: resp.member_epoch,
            assigned: resp
                .assignment
                .assigned_shards
                .iter()
                .map(|s| s.shard_index)
                .collect(),
            pending: resp
                .assignment
                .pending_shards
                .iter()
                .map(|s| s.shard_index)
                .collect(),
        });
        match applied {
            Applied::Reset(status) => {
                tracing::warn!(member = %self.id, ?status, "coordinator dropped this member's ownership; stopping all reads and rejoining");
                self.stop_all();
            }
            Applied::Retry => {
                tracing::debug!(member = %self.id, "coordinator asked to retry");
            }
            Applied::Accepted | Applied::Left => {}
        }
        self.lease_tx.send_replace(self.membership.lease_until());
        self.note_lease();
        matches!(applied, Applied::Accepted | Applied::Left)
    }

    fn note_lease(&mut self) {
        let valid = self.membership.lease_valid(Instant::now());
        if self.lease_was_valid && !valid && !self.membership.leaving() {
            tracing::warn!(member = %self.id, "assignment lease expired: stopped reading every shard until a fresh assignment");
            self.emit(ConsumerEvent::LeaseExpired {
                member_id: self.id.clone(),
            });
        }
        self.lease_was_valid = valid;
    }

    fn next_delay(&self, accepted: bool) -> Duration {
        let interval = self
            .membership
            .interval()
            .unwrap_or(Duration::from_millis(500));
        let base = if accepted {
            interval
        } else {
            (interval / 2).max(Duration::from_millis(50))
        };
        // Jitter only shortens the delay, so it never eats into the lease.
        let unit = (uuid::Uuid::new_v4().as_u128() % 10_000) as f64 / 10_000.0;
        base.mul_f64(1.0 - self.config.heartbeat_jitter * unit)
    }

    fn stop_all(&mut self) {
        for stop in self.readers.values() {
            let _ = stop.send(true);
        }
    }

    /// Brings read loops in line with the membership. Returns whether a shard finished draining.
    fn reconcile(&mut self) -> bool {
        // Reap finished tasks. Their entries are removed below, by whether their receiver is gone — not by
        // shard: a loop's receiver is dropped before its task counts as finished, so a newer loop of the same
        // shard may already be registered, and removing by shard would orphan it (two loops of one shard,
        // the newer one no longer stoppable by a revocation; found by the fault suite).
        while self.tasks.try_join_next().is_some() {}
        // Loops that ended, panicked or were cancelled: drop senders whose receivers are gone.
        self.readers.retain(|_, tx| !tx.is_closed());
        let now = Instant::now();
        let readable = self.membership.readable(now);
        for (shard, stop) in &self.readers {
            if !readable.contains(shard) {
                let _ = stop.send(true);
            }
        }
        let mut drained_any = false;
        let draining: Vec<u32> = self.membership.draining().iter().copied().collect();
        for s in draining {
            let busy = self.readers.contains_key(&s)
                || self
                    .shards
                    .get(&s)
                    .is_some_and(|l| l.in_flight.load(Ordering::SeqCst) > 0);
            if !busy {
                self.membership.drained(s);
                drained_any = true;
            }
        }
        let readable = self.membership.readable(now);
        for &s in &readable {
            if !self.readers.contains_key(&s) {
                self.start_reader(s);
            }
        }
        self.reading_count
            .store(self.readers.len(), Ordering::Relaxed);
        self.publish_snapshot();
        drained_any
    }

    fn start_reader(&mut self, shard: u32) {
        let local = self.shards.entry(shard).or_default().clone();
        // Both flags are taken (neither may stay set for a later loop).
        let gained = self.membership.take_reclaim(shard);
        let left_pending = local.left_pending.swap(false, Ordering::SeqCst);
        let reclaim = gained || left_pending;
        let (stop_tx, stop_rx) = watch::channel(false);
        let ctx = ReaderCtx {
            member_id: self.id.clone(),
            group: self.config.consumer_group.clone(),
            stream_key: rsc_protocol::names::shard_stream_key(&self.config.stream_prefix, shard),
            boundary: None,
            shard,
            reclaim,
            client: self.client.clone(),
            handler: self.handler.clone(),
            local,
            stop: stop_rx,
            lease: self.lease_tx.subscribe(),
            workers: self.workers.clone(),
            worker_count: self.config.workers,
            reading_count: self.reading_count.clone(),
            handled: self.handled.clone(),
            batch_size: self.config.batch_size,
            ack_after_handle: self.config.ack_after_handle,
            poll_timeout: self.config.poll_timeout,
            events: self.events.clone(),
            fences: self.fences_tx.subscribe(),
        };
        let wake = self.wake.clone();
        self.tasks.spawn(async move {
            ctx.run().await;
            wake.notify_one();
            shard
        });
        self.readers.insert(shard, stop_tx);
    }

    fn publish_snapshot(&self) {
        let mut reading: Vec<u32> = self.readers.keys().copied().collect();
        reading.sort_unstable();
        let snap = MemberSnapshot {
            member_id: self.id.clone(),
            member_epoch: self.membership.epoch(),
            owned: self.membership.owned().iter().copied().collect(),
            draining: self.membership.draining().iter().copied().collect(),
            reading,
            lease_valid: self.membership.lease_valid(Instant::now()),
            last_status: self.last_status,
            handled: self.handled.load(Ordering::Relaxed),
        };
        *self.snapshot.lock().unwrap_or_else(|p| p.into_inner()) = snap;
    }
}

/// The in-flight count and progress of a shard, for a heartbeat report.
fn local_report(
    prefix: &str,
    shard: u32,
    local: Option<&Arc<ShardLocal>>,
    reading: bool,
) -> LocalShard {
    let Some(local) = local else {
        return LocalShard {
            in_flight: i64::from(reading),
            progress: None,
        };
    };
    let p = local.lock().clone();
    LocalShard {
        in_flight: local.in_flight.load(Ordering::SeqCst) + i64::from(reading),
        progress: Some(ShardProgressReport {
            shard: ShardId::new(shard),
            stream_key: Some(rsc_protocol::names::shard_stream_key(prefix, shard)),
            last_delivered_id: p.last_delivered_id,
            last_acked_id: p.last_acked_id,
            pending_count: p.pending,
            updated_at: p.updated_at,
        }),
    }
}
