//! The replica registry loop: every `coordinator.cluster.renew-interval` this replica renews its lease in the
//! registry (`coordinator.cluster.replica-lease`) and takes the live replicas it reads back as its view
//! (`coordinator/cluster_view.rs`), from which it knows which groups' background work is its own. On a graceful
//! stop it leaves the registry, so its groups move at once instead of when its lease runs out.

use crate::coordinator::Coordinator;
use rsc_protocol::names;
use std::sync::Arc;
use tokio::sync::watch;

/// Renews this replica's registration once and takes the live set as the view.
pub async fn renew(c: &Coordinator) {
    let key = names::replica_registry_key(&c.config().store.key_prefix);
    let lease_ms = c.config().cluster.replica_lease.ms();
    let me = c.cluster().me().to_owned();
    match c
        .metrics()
        .time_store(
            "replica_register",
            c.store().replica_register(&key, &me, lease_ms),
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
        }
        Err(e) => c.note_store_error(&e),
    }
}

/// Renews until `stop` turns true, then leaves the registry.
pub async fn run(c: Arc<Coordinator>, mut stop: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(c.config().cluster.renew_interval.0);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => renew(&c).await,
            _ = stop.changed() => {}
        }
        if *stop.borrow() {
            break;
        }
    }
    let key = names::replica_registry_key(&c.config().store.key_prefix);
    if let Err(e) = c.store().replica_leave(&key, c.cluster().me()).await {
        tracing::warn!(error = %e, "could not leave the replica registry; the lease runs out instead");
    }
}
