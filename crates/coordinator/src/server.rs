//! Start-up and shutdown of `rsc serve`.
//!
//! Start-up fails fast, with a message a person can act on, when Redis is unreachable or the listen port is
//! taken. SIGTERM (or Ctrl-C) begins a graceful shutdown: new heartbeats and mutations get 503
//! `COORDINATOR_TERMINATING`, in-flight requests (and so their Redis writes) finish, the reconciler stops,
//! and the process exits — or exits anyway after `coordinator.shutdown-grace`.

use crate::config::Config;
use crate::runtime::coordinator::Coordinator;
use rsc_store::{RedisTopology, Store};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Redis(String),
    #[error(
        "cannot listen on {addr}: {source}. Is another rsc (or other server) using it? Choose another address with --listen or RSC_LISTEN"
    )]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot set up authentication: {0}")]
    Security(String),
    #[error("server failed: {0}")]
    Io(#[from] std::io::Error),
}

/// A running coordinator: its address and a handle to stop it (used by tests and `rsc serve`).
pub struct Running {
    pub addr: std::net::SocketAddr,
    /// The unauthenticated metrics listener's address (`coordinator.metrics.listen`), if enabled.
    pub metrics_addr: Option<std::net::SocketAddr>,
    pub coordinator: Arc<Coordinator>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Result<(), ServeError>>,
}

impl Running {
    /// Begins graceful shutdown and waits for it to finish.
    pub async fn shutdown(self) -> Result<(), ServeError> {
        self.coordinator.begin_termination();
        let _ = self.stop.send(true);
        match self.task.await {
            Ok(r) => r,
            Err(e) => Err(ServeError::Io(std::io::Error::other(e.to_string()))),
        }
    }
}

/// Connects to Redis, binds the listener, and starts serving in the background.
pub async fn start(config: Config) -> Result<Running, ServeError> {
    let c = &config.coordinator;
    for risk in crate::config::risky_settings(c) {
        tracing::warn!("risky setting: {risk}");
    }
    let tls = c.redis.tls.options();
    // A password given apart (RSC_REDIS_PASSWORD, coordinator.redis.password-file) goes into the URL here.
    let password = c.redis.password().map_err(ServeError::Redis)?;
    let with_password = |url: &str| match &password {
        Some(p) => rsc_redis_connect::with_password(url, p, tls.is_some()),
        None => url.to_owned(),
    };
    let topology = if c.redis_cluster_nodes.is_empty() {
        RedisTopology::Standalone(with_password(&c.redis_url))
    } else {
        RedisTopology::Cluster {
            nodes: c
                .redis_cluster_nodes
                .iter()
                .map(|n| with_password(n))
                .collect(),
            node_map: c.redis.cluster_node_map.clone(),
        }
    };
    let urls: Vec<String> = match &topology {
        RedisTopology::Standalone(url) => vec![url.clone()],
        RedisTopology::Cluster { nodes, .. } => nodes.clone(),
    };
    // Whatever a library quoted of the URL or its password, the message shows neither (finding 10).
    let store = Store::connect_with_tls(&topology, tls.as_ref(), c.redis_connect_timeout.0)
        .await
        .map_err(|e| {
            ServeError::Redis(rsc_redis_connect::scrub(
                &e.to_string(),
                urls.iter().map(String::as_str),
            ))
        })?
        .with_aggregate_compression(c.store.aggregate_compression.for_store());
    let listener = TcpListener::bind(&c.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: c.listen.clone(),
            source,
        })?;
    let addr = listener.local_addr()?;
    let coordinator = Coordinator::new(config.coordinator.clone(), store);
    let cc = coordinator.config();
    let security =
        crate::security::Security::start(&cc.api, &cc.audit, &cc.id, coordinator.store())
            .await
            .map_err(|e| ServeError::Security(e.message().into_owned()))?;
    let (stop_tx, stop_rx) = watch::channel(false);

    // A replica that runs the reconciler registers, so the others count it in the split of background work;
    // one with the reconciler off does not register and, seeing only itself, keeps every group's metrics.
    let (reconciler, registry) = if coordinator.config().reconciler.enabled {
        crate::runtime::cluster::renew(&coordinator).await;
        (
            Some(tokio::spawn(crate::background::reconciler::run(
                coordinator.clone(),
                stop_rx.clone(),
            ))),
            Some(tokio::spawn(crate::runtime::cluster::run(
                coordinator.clone(),
                stop_rx.clone(),
            ))),
        )
    } else {
        (None, None)
    };
    // Gauges are rebuilt in the background; an optional second listener serves /metrics without auth.
    tokio::spawn(crate::background::metrics_refresh::run(
        coordinator.clone(),
        stop_rx.clone(),
    ));
    let metrics_addr =
        crate::http::api::metrics::spawn_listener(coordinator.clone(), stop_rx.clone())
            .await
            .map_err(|(addr, source)| ServeError::Bind { addr, source })?;
    let app = crate::http::api::router(coordinator.clone(), security);
    let grace = coordinator.config().shutdown_grace.0;
    let task_coordinator = coordinator.clone();
    let mut stop_signal = stop_rx.clone();
    let http = coordinator.config().http.clone();
    let task = tokio::spawn(async move {
        let shutdown = async move {
            while !*stop_signal.borrow() {
                if stop_signal.changed().await.is_err() {
                    break;
                }
            }
            task_coordinator.begin_termination();
        };
        let server = crate::http::http_server::serve(listener, app, http, shutdown);
        let mut stopped = stop_rx.clone();
        let served = tokio::spawn(server);
        // Once shutdown begins, give in-flight requests `grace` to finish.
        while !*stopped.borrow() {
            if stopped.changed().await.is_err() {
                break;
            }
        }
        let result = match tokio::time::timeout(grace, served).await {
            Ok(Ok(r)) => r.map_err(ServeError::Io),
            Ok(Err(e)) => Err(ServeError::Io(std::io::Error::other(e.to_string()))),
            Err(_) => {
                tracing::warn!(
                    "in-flight requests did not finish within the shutdown grace period"
                );
                Ok(())
            }
        };
        if let Some(r) = reconciler {
            let _ = r.await;
        }
        if let Some(r) = registry {
            let _ = r.await;
        }
        result
    });
    tracing::info!(%addr, id = %coordinator.config().id, redis = ?topology_name(coordinator.config()), "rsc coordinator listening");
    Ok(Running {
        addr,
        metrics_addr,
        coordinator,
        stop: stop_tx,
        task,
    })
}

fn topology_name(c: &crate::config::CoordinatorConfig) -> String {
    if c.redis_cluster_nodes.is_empty() {
        rsc_redis_connect::redact_url(&c.redis_url)
    } else {
        let nodes: Vec<String> = c
            .redis_cluster_nodes
            .iter()
            .map(|n| rsc_redis_connect::redact_url(n))
            .collect();
        nodes.join(",")
    }
}

/// Runs until SIGTERM or Ctrl-C, then shuts down gracefully. The signal handlers are installed before the
/// server starts answering, so a signal sent as soon as it is up is never lost.
pub async fn run_until_signal(config: Config) -> Result<(), ServeError> {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let running = start(config).await?;
    eprintln!(
        "rsc coordinator listening on http://{} (Ctrl-C or SIGTERM to stop)",
        running.addr
    );
    #[cfg(unix)]
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
    tracing::info!("shutdown signal received; finishing in-flight requests");
    running.shutdown().await
}
