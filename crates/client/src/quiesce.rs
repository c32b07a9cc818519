//! The producer's side of a scale's producer quiesce: while the routing answer carries
//! `quiesce: {reshardingId, deadline}`, no new publish starts (callers wait, at most their publish timeout);
//! publishes already admitted finish, their retry included; once none is in flight the producer reports
//! `quiesced` for that resharding with the routing version it holds. A routing answer without the notice
//! resumes publishing (on the routing it brought). The pause never outlasts the notice's deadline (plus a
//! margin), even if the coordinator cannot be reached meanwhile.
//!
//! [`Gate`] is the bookkeeping, shared by the publish path (admission) and the routing refresh.

use rsc_protocol::wire::quiesce::QuiesceNotice;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How long past the coordinator's deadline a producer still holds still (clock and network slack).
const DEADLINE_MARGIN: Duration = Duration::from_secs(1);

/// A pause the coordinator asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pause {
    pub resharding_id: String,
    pub until: Instant,
    /// The routing version held when the pause began.
    pub routing_version: i64,
    /// A quiesced report for it was accepted.
    pub reported: bool,
}

#[derive(Debug, Default)]
struct State {
    pause: Option<Pause>,
    in_flight: u64,
}

/// Admission and in-flight bookkeeping of one producer.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    state: Mutex<State>,
    changed: Notify,
    /// Pauses begun (one per resharding the producer quiesced for).
    pub pauses: AtomicU64,
    /// Publish calls that had to wait for a pause to end.
    pub held: AtomicU64,
}

/// An admitted publish; dropping it ends it.
pub(crate) struct InFlight<'g>(&'g Gate);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        drop(s);
        self.0.changed.notify_waiters();
    }
}

/// Why a publish was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StillPaused {
    pub resharding_id: String,
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The pause in force at `now`, if any.
    fn active(s: &State, now: Instant) -> Option<&Pause> {
        s.pause.as_ref().filter(|p| now < p.until)
    }

    /// Waits until no pause is in force (at most `timeout`), then counts the publish in flight.
    pub async fn admit(&self, timeout: Duration) -> Result<InFlight<'_>, StillPaused> {
        let give_up = Instant::now() + timeout;
        let mut counted = false;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let wait_until = {
                let mut s = self.lock();
                let now = Instant::now();
                match Self::active(&s, now) {
                    None => {
                        s.in_flight += 1;
                        return Ok(InFlight(self));
                    }
                    Some(p) if now >= give_up => {
                        return Err(StillPaused {
                            resharding_id: p.resharding_id.clone(),
                        });
                    }
                    Some(p) => p.until.min(give_up),
                }
            };
            if !counted {
                counted = true;
                self.held.fetch_add(1, Ordering::Relaxed);
            }
            let _ = tokio::time::timeout_at(wait_until.into(), notified).await;
        }
    }

    /// Applies the notice of a routing answer (accepted into the cache) fetched at `fetched_at`: begins a
    /// pause (true if new), or ends one when the answer has none.
    pub fn observe(
        &self,
        notice: Option<&QuiesceNotice>,
        routing_version: i64,
        fetched_at: Instant,
    ) -> bool {
        let mut s = self.lock();
        let began = match notice {
            Some(n) => {
                let until = fetched_at
                    + Duration::from_millis(u64::try_from(n.remaining_ms).unwrap_or(0))
                    + DEADLINE_MARGIN;
                let same = s
                    .pause
                    .as_ref()
                    .is_some_and(|p| p.resharding_id == n.resharding_id);
                if same {
                    if let Some(p) = s.pause.as_mut() {
                        p.until = until;
                    }
                    false
                } else {
                    s.pause = Some(Pause {
                        resharding_id: n.resharding_id.clone(),
                        until,
                        routing_version,
                        reported: false,
                    });
                    self.pauses.fetch_add(1, Ordering::Relaxed);
                    true
                }
            }
            None => {
                let ended = s.pause.take().is_some();
                drop(s);
                if ended {
                    self.changed.notify_waiters();
                }
                return false;
            }
        };
        drop(s);
        self.changed.notify_waiters();
        began
    }

    /// The pause to report as quiesced now: in force, not reported yet, nothing in flight.
    pub fn to_report(&self) -> Option<Pause> {
        let s = self.lock();
        let p = Self::active(&s, Instant::now())?;
        (s.in_flight == 0 && !p.reported).then(|| p.clone())
    }

    /// Marks the report for `resharding_id` as accepted.
    pub fn reported(&self, resharding_id: &str) {
        if let Some(p) = self.lock().pause.as_mut()
            && p.resharding_id == resharding_id
        {
            p.reported = true;
        }
    }

    /// Whether a pause is in force (the refresher then polls faster, to resume promptly).
    pub fn paused(&self) -> bool {
        Self::active(&self.lock(), Instant::now()).is_some()
    }

    /// Waits until the in-flight count or the pause changes (or `bound` passes).
    pub async fn changed(&self, bound: Duration) {
        let _ = tokio::time::timeout(bound, self.changed.notified()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(id: &str, remaining_ms: i64) -> QuiesceNotice {
        QuiesceNotice {
            resharding_id: id.into(),
            deadline: "2026-01-01T00:00:00.000Z".into(),
            remaining_ms,
        }
    }

    #[tokio::test]
    async fn a_pause_holds_new_publishes_and_waits_for_those_in_flight() {
        let g = Gate::default();
        let first = g.admit(Duration::from_secs(1)).await.expect("no pause yet");
        assert!(g.observe(Some(&notice("r1", 60_000)), 4, Instant::now()));
        // In flight: nothing to report yet; a new publish is held and gives up at its own timeout.
        assert_eq!(g.to_report(), None);
        let refused = g.admit(Duration::from_millis(50)).await.err();
        assert_eq!(
            refused,
            Some(StillPaused {
                resharding_id: "r1".into()
            })
        );
        assert_eq!(g.held.load(Ordering::Relaxed), 1);
        drop(first);
        let report = g.to_report().expect("quiesced now");
        assert_eq!(
            (report.resharding_id.as_str(), report.routing_version),
            ("r1", 4)
        );
        g.reported("r1");
        assert_eq!(g.to_report(), None);
        // The same notice again is the same pause.
        assert!(!g.observe(Some(&notice("r1", 50_000)), 4, Instant::now()));
        assert_eq!(g.pauses.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn routing_without_the_notice_resumes_waiting_callers() {
        let g = std::sync::Arc::new(Gate::default());
        g.observe(Some(&notice("r1", 60_000)), 4, Instant::now());
        let waiter = {
            let g = g.clone();
            tokio::spawn(async move { g.admit(Duration::from_secs(10)).await.map(|_| ()) })
        };
        tokio::time::timeout(Duration::from_secs(5), async {
            while g.held.load(Ordering::Relaxed) == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("caller waits");
        g.observe(None, 5, Instant::now());
        let admitted = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("resumed in time")
            .expect("task");
        assert!(admitted.is_ok());
        assert!(!g.paused());
    }

    #[tokio::test]
    async fn a_pause_never_outlasts_its_deadline() {
        let g = Gate::default();
        g.observe(Some(&notice("r1", 0)), 4, Instant::now() - DEADLINE_MARGIN);
        assert!(!g.paused());
        assert!(g.admit(Duration::from_millis(10)).await.is_ok());
    }
}
