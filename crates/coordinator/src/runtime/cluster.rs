//! The replica registry loop: every `coordinator.cluster.renew-interval` this replica renews its lease in the
//! registry (`coordinator.cluster.replica-lease`) and takes the live replicas it reads back as its view
//! (`coordinator/cluster_view.rs`), from which it knows which groups' background work is its own. When another
//! replica's lease would end before the next renewal, it reads the registry again right then: a replica that
//! died is dropped, and its groups taken up, at its lease end rather than up to a renewal later. On a graceful
//! stop it leaves the registry, so its groups move at once instead of when its lease runs out.

use crate::runtime::coordinator::Coordinator;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How long after another replica's lease end the extra registry read comes (Redis drops leases that ended
/// by its own clock, which may run a little behind this one's).
const LAPSE_MARGIN: Duration = Duration::from_millis(5);

/// Renews this replica's registration once and takes the live set as the view. Returns how long until the
/// earliest lease end among the other replicas (None: no other replica, or the registry was not read).
pub async fn renew(c: &Coordinator) -> Option<Duration> {
    let lease_ms = c.config().cluster.replica_lease.ms();
    let me = c.cluster().me().to_owned();
    match c
        .metrics()
        .time_store(
            "replica_register",
            c.store().replica_register(&me, lease_ms),
        )
        .await
    {
        Ok(live) => {
            c.clock().observe(live.now_ms);
            if c.cluster().set_live(live.ids) {
                let replicas = c.cluster().replicas();
                tracing::info!(
                    replicas = ?replicas.ids(),
                    "live coordinator replicas changed; background work is split anew"
                );
            }
            live.next_lease_end_ms
                .map(|end| Duration::from_millis((end - live.now_ms).max(0) as u64))
        }
        Err(e) => {
            c.note_store_error(&e);
            None
        }
    }
}

/// Renews until `stop` turns true, then leaves the registry.
pub async fn run(c: Arc<Coordinator>, mut stop: watch::Receiver<bool>) {
    let every = c.config().cluster.renew_interval.0;
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // An extra read of the registry just after another replica's lease would end, when that comes before
    // the next renewal (a replica that renews is always a lease ahead, so this fires only for one that stopped).
    let mut lapse_check: Option<tokio::time::Instant> = None;
    loop {
        let check_at = lapse_check.unwrap_or_else(|| tokio::time::Instant::now() + every * 2);
        let until_end = tokio::select! {
            _ = ticker.tick() => renew(&c).await,
            _ = tokio::time::sleep_until(check_at), if lapse_check.is_some() => renew(&c).await,
            _ = stop.changed() => None,
        };
        lapse_check = until_end
            .filter(|d| *d < every)
            .map(|d| tokio::time::Instant::now() + d + LAPSE_MARGIN);
        if *stop.borrow() {
            break;
        }
    }
    if let Err(e) = c.store().replica_leave(c.cluster().me()).await {
        tracing::warn!(error = %e, "could not leave the replica registry; the lease runs out instead");
    }
}
