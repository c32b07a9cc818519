//! The producer's routing refresher and producer-quiesce path (see [`crate::quiesce`]): the background
//! refresh loop (faster while paused), admission of publishes, the routing
//! answer's notice applied with a log line, the `quiesced` report, and publishing with a retry window the
//! producer owns ([`Producer::publish_retrying`]): every attempt of such a call counts as one publish in
//! flight, so a quiesced scale never switches routing between a publish and its retry.

use super::*;

/// Retries of [`Producer::publish_retrying`]: up to `attempts` in all, `backoff` apart, each after a fresh
/// routing fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// How many attempts in all (the first included).
    pub attempts: u32,
    /// How long to wait between two attempts.
    pub backoff: Duration,
}

impl Default for RetryPolicy {
    /// 3 attempts, 200 ms apart.
    fn default() -> Self {
        RetryPolicy {
            attempts: 3,
            backoff: Duration::from_millis(200),
        }
    }
}

/// Refreshes routing every refresh interval (or when a publish finds it stale) until the producer is dropped.
/// While producers are quiesced it polls every [`QUIESCE_POLL`], reports `quiesced` as soon as nothing is in
/// flight, and resumes publishing on the first routing without the notice.
pub(super) async fn refresh_loop(inner: Weak<Inner>) {
    loop {
        let (interval, seen, paused) = {
            let Some(i) = inner.upgrade() else { return };
            let seen = *i.refresh_lock.lock().await;
            let paused = i.gate.paused();
            let interval = if paused {
                i.config.refresh_interval.min(QUIESCE_POLL)
            } else {
                i.config.refresh_interval
            };
            (interval, seen, paused)
        };
        let wake = async {
            if let Some(i) = inner.upgrade() {
                if paused {
                    // A publish ending may be the last one in flight: report without waiting a poll.
                    tokio::select! {
                        _ = i.wake_refresher.notified() => {}
                        _ = i.gate.changed(interval) => {}
                    }
                } else {
                    i.wake_refresher.notified().await;
                }
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = wake => {}
        }
        let Some(i) = inner.upgrade() else { return };
        if paused && i.gate.to_report().is_some() {
            i.report_quiesced().await;
            continue;
        }
        if let Err(e) = i.refresh(Some(seen)).await {
            tracing::debug!(error = %e, "background routing refresh failed; using cached routing while its lease lasts");
        }
        i.report_quiesced().await;
    }
}

impl Producer {
    /// Publishes `records`, retrying a retryable failure (a cut connection, Redis restarting, routing
    /// unavailable) after `policy.backoff` on freshly fetched routing, at most `policy.attempts` times in
    /// all. The same records are sent again, so a record whose first XADD Redis took but whose answer was
    /// lost is written twice (at-least-once) — but, with producer quiesce, always under the same shard count:
    /// the whole call is one publish in flight.
    ///
    /// ```no_run
    /// # async fn demo(producer: rsc_client::Producer) -> Result<(), rsc_client::ClientError> {
    /// use rsc_client::{Record, RetryPolicy};
    /// let event = Record::new("order-123").field("eventId", "e-1");
    /// producer.publish_retrying(&[event], RetryPolicy::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn publish_retrying(
        &self,
        records: &[Record],
        policy: RetryPolicy,
    ) -> Result<Vec<Published>, ClientError> {
        let _in_flight = self.inner.admit().await?;
        let mut attempt = 1;
        loop {
            match self.publish_admitted(records).await {
                Err(e) if e.is_retryable() && attempt < policy.attempts.max(1) => {
                    tracing::warn!(error = %e, attempt, "publish failed; retrying on fresh routing");
                    tokio::time::sleep(policy.backoff).await;
                    self.inner.cache_lock().mark_stale();
                    if let Err(e) = self.inner.refresh(None).await {
                        tracing::warn!(error = %e, "routing refresh before a publish retry failed");
                    }
                    attempt += 1;
                }
                result => return result,
            }
        }
    }
}

/// How often routing is fetched while producers are quiesced (so publishing resumes promptly).
const QUIESCE_POLL: Duration = Duration::from_millis(200);

impl Inner {
    /// Admission of a publish (producer quiesce): waits while paused, bounded by the publish timeout.
    pub(super) async fn admit(&self) -> Result<crate::quiesce::InFlight<'_>, ClientError> {
        self.gate
            .admit(self.config.publish_timeout)
            .await
            .map_err(|p| ClientError::Quiesced {
                stream_prefix: self.config.stream_prefix.clone(),
                resharding_id: p.resharding_id,
                waited: self.config.publish_timeout,
            })
    }

    /// Applies a fetched routing answer's quiesce notice, with a log line when a pause begins or ends.
    pub(super) fn observe_quiesce(
        &self,
        notice: Option<rsc_protocol::wire::quiesce::QuiesceNotice>,
        routing_version: i64,
        fetched_at: Instant,
    ) {
        let was_paused = self.gate.paused();
        if self
            .gate
            .observe(notice.as_ref(), routing_version, fetched_at)
            && let Some(n) = &notice
        {
            tracing::info!(stream = %self.config.stream_prefix, producer = %self.producer_id,
                resharding_id = %n.resharding_id, deadline = %n.deadline,
                "a scale asked producers to quiesce: new publishes wait, those in flight finish");
        }
        if was_paused && notice.is_none() {
            tracing::info!(stream = %self.config.stream_prefix, producer = %self.producer_id,
                routing_version, "producer quiesce ended: publishing resumes on the new routing");
        }
    }

    /// Reports `quiesced` when paused with nothing in flight (once per resharding; retried on failure).
    pub(super) async fn report_quiesced(&self) {
        let Some(p) = self.gate.to_report() else {
            return;
        };
        match self
            .coord
            .report_quiesced(
                &self.config.stream_prefix,
                &self.producer_id,
                &p.resharding_id,
                p.routing_version,
            )
            .await
        {
            Ok(answer) => {
                self.gate.reported(&p.resharding_id);
                tracing::info!(stream = %self.config.stream_prefix, producer = %self.producer_id,
                    resharding_id = %p.resharding_id, waiting = answer.waiting, "reported quiesced");
                if !answer.waiting {
                    self.wake_refresher.notify_one();
                }
            }
            Err(e) => tracing::warn!(error = %e, resharding_id = %p.resharding_id,
                "quiesced report failed; retried on the next refresh"),
        }
    }
}
