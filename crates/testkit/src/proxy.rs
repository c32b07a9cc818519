//! A loopback TCP proxy for fault tests: it forwards to a target port and can delay every chunk, cut every
//! connection at once, and refuse new ones until healed. Runs on the caller's tokio runtime; stops on drop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub struct LoopbackProxy {
    port: u16,
    latency_ms: Arc<AtomicU64>,
    refuse: Arc<AtomicBool>,
    cut_tx: tokio::sync::watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl LoopbackProxy {
    /// Listens on a free loopback port and forwards each connection to 127.0.0.1:`target_port`.
    pub async fn start(target_port: u16) -> LoopbackProxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("proxy listens on loopback");
        let port = listener.local_addr().expect("proxy address").port();
        let latency_ms = Arc::new(AtomicU64::new(0));
        let refuse = Arc::new(AtomicBool::new(false));
        let (cut_tx, cut_rx) = tokio::sync::watch::channel(0u64);
        let (lat, refusing) = (latency_ms.clone(), refuse.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((inbound, _)) = listener.accept().await else {
                    return;
                };
                if refusing.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let mut cut_rx = cut_rx.clone();
                cut_rx.mark_unchanged();
                let lat = lat.clone();
                tokio::spawn(async move {
                    let Ok(outbound) =
                        tokio::net::TcpStream::connect(("127.0.0.1", target_port)).await
                    else {
                        return;
                    };
                    let (ri, wi) = inbound.into_split();
                    let (ro, wo) = outbound.into_split();
                    tokio::select! {
                        _ = pump(ri, wo, lat.clone()) => {}
                        _ = pump(ro, wi, lat) => {}
                        _ = cut_rx.changed() => {}
                    }
                });
            }
        });
        LoopbackProxy {
            port,
            latency_ms,
            refuse,
            cut_tx,
            task,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Delays every chunk, both ways, by `d` (zero for none).
    pub fn set_latency(&self, d: Duration) {
        self.latency_ms.store(
            u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
            Ordering::SeqCst,
        );
    }

    /// Drops every connection and refuses new ones until [`LoopbackProxy::heal`].
    pub fn cut(&self) {
        self.refuse.store(true, Ordering::SeqCst);
        self.cut_tx.send_modify(|g| *g += 1);
    }

    /// Accepts new connections again.
    pub fn heal(&self) {
        self.refuse.store(false, Ordering::SeqCst);
    }
}

impl Drop for LoopbackProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Copies one direction, delaying each chunk by the current latency. Ends at EOF or error.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    latency_ms: Arc<AtomicU64>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return;
            }
            Ok(n) => n,
        };
        let l = latency_ms.load(Ordering::SeqCst);
        if l > 0 {
            tokio::time::sleep(Duration::from_millis(l)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
