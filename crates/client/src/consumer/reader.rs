//! The read loop of one owned shard: reclaim the previous owner's pending entries (XAUTOCLAIM), then read
//! new ones (XREADGROUP `>`), handing each to the handler in stream order.
//!
//! Before every read it checks that it was not told to stop and that the member's assignment lease still
//! has time left; a blocking read never outlasts the lease. A stop lets the current batch finish (that is
//! the in-flight work reported as DRAINING) and then ends the loop. Workers are a member-wide fair
//! semaphore: with more shards than workers, a shard holds a worker for one read and its batch, then queues
//! again behind the others, and reads do not block (so an idle shard never holds a worker for long).
//!
//! Ordered streams: while the shard has a read fence (`rsc_member::ReadFences`), no entry after it goes to
//! the handler; the loop stops handing over at the first one (it and the rest of the batch stay pending),
//! waits for the fence to be lifted without holding a worker, and then claims its pending entries again
//! from the start, so they are handled in stream order. Every read is pipelined with a read of the shard's
//! routing boundary (one round trip): a switch the heartbeat answers do not reflect yet fences the shard at
//! its switch point by itself, so a record routed by the new routing is never handed over before the answers
//! say whether it may be (`rsc_protocol::ordering::self_fence`).

use super::Handler;
use super::config::{LEASE_GUARD, read_lease_left};
use super::delivery::{Delivery, ShardLocal};
use super::events::{ConsumerEvent, EventSink, StopReason};
use crate::redis_target::{ConnectOptions, DataConn, Endpoint};
use redis::streams::{StreamAutoClaimReply, StreamId, StreamReadReply};
use rsc_member::ReadFences;
use rsc_protocol::ordering::ShardBoundary;
use rsc_scripts::{BoundaryFields, read_boundary};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{Semaphore, watch};

/// Everything a read loop needs.
pub(crate) struct ReaderCtx<H> {
    pub member_id: String,
    pub group: String,
    pub stream_key: String,
    /// The shard's routing boundary as the last read saw it (None: never raised, or not read yet).
    pub boundary: Option<ShardBoundary>,
    pub shard: u32,
    pub reclaim: bool,
    pub client: Endpoint,
    pub handler: Arc<H>,
    pub local: Arc<ShardLocal>,
    pub stop: watch::Receiver<bool>,
    pub lease: watch::Receiver<Option<Instant>>,
    pub workers: Arc<Semaphore>,
    pub worker_count: usize,
    pub reading_count: Arc<AtomicUsize>,
    pub handled: Arc<AtomicU64>,
    pub batch_size: usize,
    /// Acknowledge what the handler returned from, one XACK per batch.
    pub ack_after_handle: bool,
    pub poll_timeout: Duration,
    pub events: Option<EventSink>,
    /// The member's read fences (ordered streams); this loop honours the one of its shard.
    pub fences: watch::Receiver<ReadFences>,
}

/// How a batch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handled {
    /// Every entry went to the handler (and, with `ack_after_handle`, was acknowledged).
    All,
    /// The lease lapsed before every entry went to the handler.
    LeaseLapsed,
    /// The XACK of handled entries failed.
    AckFailed,
    /// An entry lies after the shard's read fence: it and the rest wait, pending, until it is lifted.
    Fenced,
}

const IDLE_BACKOFF_MIN: Duration = Duration::from_millis(10);
const IDLE_BACKOFF_MAX: Duration = Duration::from_millis(100);
const ERROR_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Time left on the lease, if any worth starting a read with (the margin the member uses too).
fn lease_left(lease: &watch::Receiver<Option<Instant>>) -> Option<Duration> {
    read_lease_left(*lease.borrow(), Instant::now())
}

impl<H: Handler> ReaderCtx<H> {
    fn emit(&self, e: ConsumerEvent) {
        if let Some(sink) = &self.events {
            sink(&e);
        }
    }

    /// Why the loop must end now, if it must. A lapsed lease is named even when the member also asked the
    /// loop to stop (it does so because the lease lapsed).
    fn should_stop(&self) -> Option<StopReason> {
        if lease_left(&self.lease).is_none() {
            Some(StopReason::LeaseExpired)
        } else if *self.stop.borrow() {
            Some(StopReason::Stopped)
        } else {
            None
        }
    }

    /// Sleeps for `d` unless told to stop first.
    async fn pause(&mut self, d: Duration) {
        let mut stop = self.stop.clone();
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = stop.wait_for(|s| *s) => {}
        }
    }

    pub async fn run(mut self) {
        // A loop started on state that went stale meanwhile (e.g. the process was paused past its lease) never
        // reads, so it announces nothing: ReadStarted means a read may follow.
        if self.should_stop().is_some() {
            return;
        }
        self.emit(ConsumerEvent::ReadStarted {
            member_id: self.member_id.clone(),
            shard: self.shard,
            at: SystemTime::now(),
            reclaim: self.reclaim,
        });
        let reason = self.read_loop().await;
        self.emit(ConsumerEvent::ReadStopped {
            member_id: self.member_id.clone(),
            shard: self.shard,
            at: SystemTime::now(),
            reason,
        });
    }

    async fn read_loop(&mut self) -> StopReason {
        let mut conn: Option<DataConn> = None;
        let mut cursor: Option<String> = self.reclaim.then(|| "0-0".to_owned());
        // The highest entry id a read of this loop returned (handed over, or held behind a fence).
        let mut last_read: Option<String> = None;
        let mut idle = IDLE_BACKOFF_MIN;
        let mut error_backoff = IDLE_BACKOFF_MIN;
        loop {
            if let Some(reason) = self.should_stop() {
                return reason;
            }
            let workers = self.workers.clone();
            let mut stop = self.stop.clone();
            let permit = tokio::select! {
                p = workers.acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => return StopReason::Stopped,
                },
                _ = stop.wait_for(|s| *s) => {
                    return self.should_stop().unwrap_or(StopReason::Stopped);
                }
            };
            // Waiting for a worker may have taken a while: check again right before reading.
            if let Some(reason) = self.should_stop() {
                return reason;
            }
            let Some(left) = lease_left(&self.lease) else {
                return StopReason::LeaseExpired;
            };
            let c = match &conn {
                Some(c) => c.clone(),
                None => match self.connect_unless_stopped().await {
                    None => {
                        drop(permit);
                        return self.should_stop().unwrap_or(StopReason::Stopped);
                    }
                    Some(Ok(c)) => {
                        conn = Some(c.clone());
                        c
                    }
                    Some(Err(e)) => {
                        drop(permit);
                        tracing::warn!(member = %self.member_id, shard = self.shard, error = %e, "cannot connect to redis; retrying");
                        self.pause(error_backoff).await;
                        error_backoff = (error_backoff * 2).min(ERROR_BACKOFF_MAX);
                        continue;
                    }
                },
            };
            let contended = self.reading_count.load(Ordering::Relaxed) > self.worker_count;
            let result = match &cursor {
                Some(start) => self
                    .autoclaim(c.clone(), start)
                    .await
                    .map(|(next, entries)| {
                        cursor = (next != "0-0").then_some(next);
                        if cursor.is_none() {
                            // Everything pending was claimed by this loop: no later loop needs to.
                            self.local.left_pending.store(false, Ordering::SeqCst);
                        }
                        (entries, true)
                    }),
                None => {
                    let block = (!contended).then(|| {
                        self.poll_timeout
                            .min(left.saturating_sub(LEASE_GUARD))
                            .max(Duration::from_millis(1))
                    });
                    self.read_new(c.clone(), block).await.map(|e| (e, false))
                }
            };
            match result {
                Err(e) => {
                    drop(permit);
                    conn = None;
                    // The read may have delivered entries whose answer never arrived (a lost reply, or a
                    // pipeline whose boundary read failed after its XREADGROUP ran, e.g. on an ASK during a
                    // slot migration): they are pending under this member, after everything this loop read, so
                    // the next read claims them first, in order, from just after that.
                    if cursor.is_none() {
                        cursor = Some(last_read.as_deref().map_or("0-0".to_owned(), next_id));
                    }
                    // If this loop ends before that claim has run (it is stopped, or the lease lapses), this
                    // member's next loop of the shard claims them instead (the flag is cleared once a claim of
                    // this loop reaches the end of the pending list).
                    self.local.left_pending.store(true, Ordering::SeqCst);
                    tracing::warn!(member = %self.member_id, shard = self.shard, error = %e, "stream read failed; retrying");
                    self.pause(error_backoff).await;
                    error_backoff = (error_backoff * 2).min(ERROR_BACKOFF_MAX);
                }
                Ok((entries, reclaimed)) if entries.is_empty() => {
                    drop(permit);
                    error_backoff = IDLE_BACKOFF_MIN;
                    if contended && !reclaimed {
                        self.pause(idle).await;
                        idle = (idle * 2).min(IDLE_BACKOFF_MAX);
                    }
                }
                Ok((entries, reclaimed)) => {
                    if let Some(e) = entries.last()
                        && last_read
                            .as_deref()
                            .is_none_or(|l| rsc_member::beyond(&e.id, l))
                    {
                        last_read = Some(e.id.clone());
                    }
                    error_backoff = IDLE_BACKOFF_MIN;
                    idle = IDLE_BACKOFF_MIN;
                    let handled = self.handle_batch(&c, entries, reclaimed).await;
                    drop(permit);
                    match handled {
                        Handled::All => {}
                        Handled::LeaseLapsed => return StopReason::LeaseExpired,
                        // Ending the loop makes the member start a new one that reclaims them.
                        Handled::AckFailed => return StopReason::Stopped,
                        Handled::Fenced => {
                            if let Err(reason) = self.wait_unfenced(&c).await {
                                // The held entries stay pending under this member: its next loop of the
                                // shard claims them (found by the fault suite: a consumer paused while
                                // fenced came back past its lease, and its next loop read only new entries).
                                self.local.left_pending.store(true, Ordering::SeqCst);
                                return reason;
                            }
                            // The held entries are pending under this member: claim them in order.
                            cursor = Some("0-0".to_owned());
                        }
                    }
                }
            }
        }
    }

    /// A new connection for this loop and the deliveries of its batches, or None if the loop was told to
    /// stop first.
    ///
    /// It is a [`DataConn`] (standalone: a connection manager; cluster: a cluster connection): the loop
    /// still drops it and makes a new one (with its own backoff) after a failed read, but a [`Delivery`]
    /// keeps the one of its batch, and that one must reconnect by itself so that an application retrying an
    /// ack after a Redis restart (or a cluster failover) succeeds. A standalone manager makes few attempts
    /// of its own per failure: retrying is the loop's backoff or the application's.
    async fn connect_unless_stopped(&self) -> Option<redis::RedisResult<DataConn>> {
        let options = ConnectOptions {
            connect_timeout: Duration::from_secs(2),
            response_timeout: self.poll_timeout + Duration::from_secs(5),
            reconnect_retries: Some(1),
            max_reconnect_delay: Some(ERROR_BACKOFF_MAX),
        };
        let mut stop = self.stop.clone();
        tokio::select! {
            c = self.client.connect(options) => Some(c),
            _ = stop.wait_for(|s| *s) => None,
        }
    }

    /// One XAUTOCLAIM page from `start`: (next cursor, entries claimed by this member), and the shard's
    /// routing boundary read right after it.
    async fn autoclaim(
        &mut self,
        mut c: DataConn,
        start: &str,
    ) -> redis::RedisResult<(String, Vec<StreamId>)> {
        let mut pipe = redis::pipe();
        pipe.cmd("XAUTOCLAIM")
            .arg(&self.stream_key)
            .arg(&self.group)
            .arg(&self.member_id)
            .arg(0)
            .arg(start)
            .arg("COUNT")
            .arg(self.batch_size)
            .add_command(read_boundary(&self.routing_key()));
        let (reply, boundary): (StreamAutoClaimReply, redis::Value) =
            pipe.query_async(&mut c).await?;
        self.note_boundary(&boundary)?;
        Ok((reply.next_stream_id, reply.claimed))
    }

    /// One XREADGROUP of new entries, blocking up to `block` (None = do not block), and the shard's routing
    /// boundary read right after it (Redis answers a connection's commands in order, so the boundary is read
    /// after the entries were delivered: one that a record after the switch point was appended behind is seen).
    async fn read_new(
        &mut self,
        mut c: DataConn,
        block: Option<Duration>,
    ) -> redis::RedisResult<Vec<StreamId>> {
        let mut pipe = redis::pipe();
        let read = pipe
            .cmd("XREADGROUP")
            .arg("GROUP")
            .arg(&self.group)
            .arg(&self.member_id)
            .arg("COUNT")
            .arg(self.batch_size);
        if let Some(b) = block {
            read.arg("BLOCK").arg(b.as_millis() as u64);
        }
        read.arg("STREAMS")
            .arg(&self.stream_key)
            .arg(">")
            .add_command(read_boundary(&self.routing_key()));
        let (reply, boundary): (Option<StreamReadReply>, redis::Value) =
            pipe.query_async(&mut c).await?;
        self.note_boundary(&boundary)?;
        Ok(reply
            .map(|r| r.keys.into_iter().flat_map(|k| k.ids).collect())
            .unwrap_or_default())
    }

    /// The shard's routing key (beside its stream, in its slot).
    fn routing_key(&self) -> String {
        rsc_protocol::names::shard_routing_key(&self.stream_key)
    }

    /// Keeps the routing boundary a read returned. A reply that cannot be read fails the read (its entries
    /// stay pending for the next loop's reclaim).
    fn note_boundary(&mut self, v: &redis::Value) -> redis::RedisResult<()> {
        let f = BoundaryFields::from_value(v).map_err(|e| {
            self.local.left_pending.store(true, Ordering::SeqCst);
            redis::RedisError::from((
                redis::ErrorKind::UnexpectedReturnType,
                "routing boundary",
                e.to_string(),
            ))
        })?;
        self.boundary = ShardBoundary::from_fields(
            f.floor.as_deref(),
            f.switch_id.as_deref(),
            f.scale.as_deref(),
        );
        Ok(())
    }

    /// The shard's read fence now, if it has one: the answered one, or the one its boundary implies.
    fn fence(&self) -> Option<String> {
        self.fences
            .borrow()
            .fence_for(self.shard, self.boundary.as_ref())
    }

    /// Waits until the shard's read fence is lifted (Ok), or the loop must stop (Err: why). The boundary is read
    /// again now and then: a fence it implied ends when the coordinator annotates the switch, as well as when
    /// an answer reflects it.
    async fn wait_unfenced(&mut self, conn: &DataConn) -> Result<(), StopReason> {
        let mut fences = self.fences.clone();
        let mut stop = self.stop.clone();
        loop {
            if let Some(reason) = self.should_stop() {
                return Err(reason);
            }
            fences.borrow_and_update();
            if self.fence().is_none() {
                return Ok(());
            }
            let poll = tokio::select! {
                changed = fences.changed() => {
                    if changed.is_err() {
                        return Err(StopReason::Stopped);
                    }
                    false
                }
                _ = stop.wait_for(|s| *s) => false,
                // The lease is judged again now and then, and the boundary read again.
                _ = tokio::time::sleep(self.poll_timeout) => true,
            };
            if poll {
                let mut c = conn.clone();
                match read_boundary(&self.routing_key())
                    .query_async::<redis::Value>(&mut c)
                    .await
                {
                    Ok(v) => {
                        let _ = self.note_boundary(&v);
                    }
                    Err(e) => {
                        tracing::debug!(member = %self.member_id, shard = self.shard, error = %e, "routing boundary not read")
                    }
                }
            }
        }
    }

    /// Whether the assignment lease has run out. Entries already read are handed to the handler only while
    /// it runs: a read answered after it lapsed (the process was paused while Redis delivered, or the
    /// handler was slow with an earlier entry of the batch) must not be handled, because the shard may
    /// already be another member's.
    fn lease_lapsed(&self) -> bool {
        self.lease
            .borrow()
            .is_none_or(|until| Instant::now() >= until)
    }

    /// Hands a batch to the handler, one entry at a time, in stream order, while the lease runs, and with
    /// `ack_after_handle` acknowledges what was handled with one XACK. Entries left when the lease lapsed (or
    /// whose XACK failed) stay pending under this member in Redis: the shard's next owner reclaims them, and
    /// so does this member's own next loop of the shard ([`ShardLocal::left_pending`]).
    async fn handle_batch(
        &self,
        conn: &DataConn,
        entries: Vec<StreamId>,
        reclaimed: bool,
    ) -> Handled {
        let mut handled_ids = Vec::new();
        let outcome = self
            .hand_over(conn, entries, reclaimed, &mut handled_ids)
            .await;
        if self.ack_after_handle
            && !handled_ids.is_empty()
            && let Err(e) = self.ack_all(conn, &handled_ids).await
        {
            self.local.left_pending.store(true, Ordering::SeqCst);
            tracing::warn!(member = %self.member_id, shard = self.shard, error = %e, entries = handled_ids.len(), "acknowledging a handled batch failed; its entries stay pending and are handled again");
            return Handled::AckFailed;
        }
        outcome
    }

    /// One XACK for `ids`; the local progress follows it.
    async fn ack_all(&self, conn: &DataConn, ids: &[String]) -> redis::RedisResult<()> {
        let mut c = conn.clone();
        let removed: i64 = redis::cmd("XACK")
            .arg(&self.stream_key)
            .arg(&self.group)
            .arg(ids)
            .query_async(&mut c)
            .await?;
        let mut p = self.local.lock();
        p.last_acked_id = ids.last().cloned();
        p.pending = (p.pending - removed).max(0);
        Ok(())
    }

    /// The handler part of [`Self::handle_batch`]; with `ack_after_handle`, collects the ids it handled.
    async fn hand_over(
        &self,
        conn: &DataConn,
        entries: Vec<StreamId>,
        reclaimed: bool,
        handled_ids: &mut Vec<String>,
    ) -> Handled {
        let now = now_iso();
        {
            let mut p = self.local.lock();
            p.pending += entries.len() as i64;
            if let Some(last) = entries.last()
                && !reclaimed
            {
                p.last_delivered_id = Some(last.id.clone());
            }
            p.updated_at = Some(now);
        }
        self.local
            .in_flight
            .fetch_add(entries.len() as i64, Ordering::SeqCst);
        let mut left = entries.len() as i64;
        for entry in entries {
            if self.lease_lapsed() {
                self.local.in_flight.fetch_sub(left, Ordering::SeqCst);
                self.local.left_pending.store(true, Ordering::SeqCst);
                tracing::warn!(member = %self.member_id, shard = self.shard, unhandled = left, "assignment lease lapsed with entries of a batch not yet handled; they stay pending for reclaim");
                return Handled::LeaseLapsed;
            }
            if let Some(f) = self.fence()
                && rsc_member::beyond(&entry.id, &f)
            {
                self.local.in_flight.fetch_sub(left, Ordering::SeqCst);
                tracing::debug!(member = %self.member_id, shard = self.shard, fence = %f, held = left, "entries after the read fence wait until it is lifted");
                return Handled::Fenced;
            }
            let ack_id = self.ack_after_handle.then(|| entry.id.clone());
            let delivery = Delivery {
                shard: self.shard,
                stream_key: self.stream_key.clone(),
                id: entry.id,
                fields: to_fields(entry.map),
                reclaimed,
                member_id: self.member_id.clone(),
                group: self.group.clone(),
                conn: conn.clone(),
                local: self.local.clone(),
            };
            self.handler.handle(delivery).await;
            handled_ids.extend(ack_id);
            self.handled.fetch_add(1, Ordering::Relaxed);
            self.local.in_flight.fetch_sub(1, Ordering::SeqCst);
            left -= 1;
        }
        debug_assert_eq!(left, 0);
        Handled::All
    }
}

/// The smallest stream id after `id` (`ms-seq` → `ms-(seq+1)`), the start of an XAUTOCLAIM that must not
/// claim `id` itself; an id that cannot be read starts from the beginning.
fn next_id(id: &str) -> String {
    match id
        .split_once('-')
        .and_then(|(ms, seq)| Some((ms.parse::<u64>().ok()?, seq.parse::<u64>().ok()?)))
    {
        Some((ms, seq)) if seq < u64::MAX => format!("{ms}-{}", seq + 1),
        Some((ms, _)) => format!("{}-0", ms.saturating_add(1)),
        None => "0-0".to_owned(),
    }
}

fn to_fields(map: HashMap<String, redis::Value>) -> HashMap<String, Vec<u8>> {
    map.into_iter()
        .map(|(k, v)| {
            let bytes = match v {
                redis::Value::BulkString(b) => b,
                redis::Value::SimpleString(s) => s.into_bytes(),
                redis::Value::Int(i) => i.to_string().into_bytes(),
                other => format!("{other:?}").into_bytes(),
            };
            (k, bytes)
        })
        .collect()
}

fn now_iso() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
