//! Where password checks (Argon2id) run: off the async threads, at most [`PERMITS`] at once per replica,
//! in reused working memory, and fairly between client addresses.
//!
//! - **Bounded memory.** Each check needs the hash's `m` (19 MiB by default). Fresh allocations for every
//!   check stayed in glibc's arenas (40 failed logins left 220 MB resident, 200 concurrent ones 1.13 GB), so
//!   checks compute into one of at most [`PERMITS`] areas, allocated on first use and reused for the life
//!   of the process ([`Verifier::areas_allocated`]).
//! - **Fair share.** Each client address has at most one check in flight; a freed permit goes to the next
//!   address in round-robin order, so one address's queue — however long — delays another address's
//!   sign-in by at most one turn of each address ahead of it. Verified credentials never come here (the
//!   credential cache is consulted first).

use super::password::{Phc, memory_area};
use argon2::Block;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// Argon2 checks running at once per replica (each holds its hash's `m`, 19 MiB by default).
pub const PERMITS: usize = 2;

#[derive(Clone)]
pub struct Verifier {
    inner: Arc<Inner>,
}

struct Inner {
    sched: Mutex<Sched>,
    areas: Mutex<Vec<Box<[Block]>>>,
    area_blocks: usize,
    areas_allocated: AtomicUsize,
    unmatchable: Phc,
}

#[derive(Default)]
struct Sched {
    /// Permits nobody holds. While any is free, no address that could use it is waiting.
    free: usize,
    /// Addresses with a check in flight (never in `ring`).
    busy: HashSet<String>,
    /// Waiters per address, oldest first.
    waiting: HashMap<String, VecDeque<oneshot::Sender<()>>>,
    /// Addresses with waiters and nothing in flight, in turn order.
    ring: VecDeque<String>,
    in_ring: HashSet<String>,
}

/// The right to run one check for an address; handing it back passes the permit on.
struct Turn {
    inner: Arc<Inner>,
    addr: String,
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.inner.release(&self.addr);
    }
}

/// A queued request for a turn; dropping it (the caller went away) gives back a turn granted meanwhile.
struct Waiting {
    inner: Arc<Inner>,
    addr: String,
    rx: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else {
            return;
        };
        // Under the lock: the grant is sent under it too, so either it is here now or it never will be.
        let granted = {
            let _s = self.inner.lock();
            rx.close();
            rx.try_recv().is_ok()
        };
        if granted {
            self.inner.release(&self.addr);
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Sched> {
        self.sched.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A check for `addr` finished: pass the permit to the next address in turn, or keep it free.
    fn release(&self, addr: &str) {
        let mut s = self.lock();
        s.busy.remove(addr);
        if s.waiting.contains_key(addr) && s.in_ring.insert(addr.to_owned()) {
            s.ring.push_back(addr.to_owned());
        }
        while let Some(next) = s.ring.pop_front() {
            s.in_ring.remove(&next);
            let mut granted = false;
            if let Some(queue) = s.waiting.get_mut(&next) {
                while let Some(tx) = queue.pop_front() {
                    if tx.send(()).is_ok() {
                        granted = true;
                        break;
                    }
                }
                if queue.is_empty() {
                    s.waiting.remove(&next);
                }
            }
            if granted {
                s.busy.insert(next);
                return;
            }
        }
        s.free += 1;
    }

    fn take_area(&self, blocks: usize) -> Box<[Block]> {
        let pooled = self.areas.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match pooled {
            Some(a) if a.len() >= blocks => a,
            _ => {
                self.areas_allocated.fetch_add(1, Ordering::Relaxed);
                memory_area(blocks.max(self.area_blocks))
            }
        }
    }

    fn put_area(&self, area: Box<[Block]>) {
        self.areas
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(area);
    }
}

impl Verifier {
    /// `permits` checks at once, each in an area of at least `area_blocks` blocks (the largest `m` among
    /// the directory's hashes, so that no check needs a bigger one).
    pub fn new(permits: usize, area_blocks: usize) -> Verifier {
        let unmatchable = Phc::unmatchable();
        Verifier {
            inner: Arc::new(Inner {
                sched: Mutex::new(Sched {
                    free: permits.max(1),
                    ..Sched::default()
                }),
                areas: Mutex::new(Vec::new()),
                area_blocks: area_blocks.max(unmatchable.memory_blocks()),
                areas_allocated: AtomicUsize::new(0),
                unmatchable,
            }),
        }
    }

    /// Waits for `addr`'s turn.
    async fn turn(&self, addr: &str) -> Turn {
        let rx = {
            let mut s = self.inner.lock();
            if s.free > 0 && !s.busy.contains(addr) {
                s.free -= 1;
                s.busy.insert(addr.to_owned());
                None
            } else {
                let (tx, rx) = oneshot::channel();
                s.waiting.entry(addr.to_owned()).or_default().push_back(tx);
                if !s.busy.contains(addr) && s.in_ring.insert(addr.to_owned()) {
                    s.ring.push_back(addr.to_owned());
                }
                Some(rx)
            }
        };
        if let Some(rx) = rx {
            let mut waiting = Waiting {
                inner: self.inner.clone(),
                addr: addr.to_owned(),
                rx: Some(rx),
            };
            if let Some(rx) = waiting.rx.as_mut() {
                // Senders are dropped unsent only when this waiter is gone, so this is always the grant.
                let _ = rx.await;
            }
            // Granted: the turn below now owns the permit.
            waiting.rx = None;
        }
        Turn {
            inner: self.inner.clone(),
            addr: addr.to_owned(),
        }
    }

    /// Checks `password` against `phc` (or, for an unknown user, against a hash nothing matches, taking as
    /// long) in `client`'s turn. The permit and the memory are held until the computation ends, even if the
    /// caller stops waiting.
    pub async fn verify(&self, client: &str, password: String, phc: Option<Arc<Phc>>) -> bool {
        let turn = self.turn(client).await;
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            let target = phc.as_deref().unwrap_or(&inner.unmatchable);
            let mut area = inner.take_area(target.memory_blocks());
            let ok = target.verify_in(password.as_bytes(), &mut area);
            inner.put_area(area);
            ok && phc.is_some()
        })
        .await
        .unwrap_or(false)
    }

    /// Working areas allocated since start (at most the number of permits).
    pub fn areas_allocated(&self) -> usize {
        self.inner.areas_allocated.load(Ordering::Relaxed)
    }

    /// Checks waiting for their address's turn, all addresses together (tests and diagnostics).
    pub fn queued(&self) -> usize {
        self.inner.lock().waiting.values().map(VecDeque::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn turns_go_round_robin_between_addresses_with_one_in_flight_each() {
        let v = Verifier::new(1, 8);
        let first = v.turn("flood").await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        let spawn = |addr: &'static str, tasks: &mut Vec<tokio::task::JoinHandle<()>>| {
            let (v, order) = (v.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let t = v.turn(addr).await;
                order.lock().unwrap().push(addr);
                drop(t);
            }));
        };
        for _ in 0..5 {
            spawn("flood", &mut tasks);
        }
        settle().await;
        spawn("login", &mut tasks);
        settle().await;
        assert_eq!(v.queued(), 6);
        drop(first);
        for t in tasks {
            t.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        assert_eq!(order[0], "login", "the other address goes next: {order:?}");
        assert_eq!(order.len(), 6);
        assert_eq!(v.inner.lock().free, 1);
    }

    #[tokio::test]
    async fn one_address_uses_one_permit_and_abandoned_waits_lose_nothing() {
        let v = Verifier::new(2, 8);
        let a = v.turn("a").await;
        // "a" is busy: its second request waits although a permit is free; "b" takes the free one at once.
        let waiting = tokio::spawn({
            let v = v.clone();
            async move { v.turn("a").await }
        });
        settle().await;
        assert_eq!(v.queued(), 1);
        let b = tokio::time::timeout(Duration::from_secs(5), v.turn("b"))
            .await
            .expect("b gets the free permit");
        // A waiter that gives up before its turn.
        let gone = tokio::spawn({
            let v = v.clone();
            async move { v.turn("c").await }
        });
        settle().await;
        gone.abort();
        let _ = gone.await;
        drop(a);
        let a2 = waiting.await.unwrap();
        drop(b);
        drop(a2);
        let s = v.inner.lock();
        assert_eq!((s.free, s.busy.len(), s.waiting.len()), (2, 0, 0));
    }

    #[tokio::test]
    async fn checks_reuse_at_most_one_area_per_permit() {
        let phc = Arc::new(
            Phc::parse(
                &argon2::PasswordHasher::hash_password(
                    &argon2::Argon2::new(
                        argon2::Algorithm::Argon2id,
                        argon2::Version::V0x13,
                        argon2::Params::new(64, 1, 1, None).unwrap(),
                    ),
                    b"pw-pw-pw",
                )
                .unwrap()
                .to_string(),
            )
            .unwrap(),
        );
        let v = Verifier::new(2, 64);
        let mut tasks = Vec::new();
        for i in 0..20 {
            let (v, phc) = (v.clone(), phc.clone());
            tasks.push(tokio::spawn(async move {
                let pw = if i % 2 == 0 { "pw-pw-pw" } else { "wrong" };
                (
                    i,
                    v.verify(&format!("10.0.0.{i}"), pw.into(), Some(phc)).await,
                )
            }));
        }
        for t in tasks {
            let (i, ok) = t.await.unwrap();
            assert_eq!(ok, i % 2 == 0);
        }
        assert!(!v.verify("x", "pw-pw-pw".into(), None).await);
        assert!(v.areas_allocated() <= 2, "{}", v.areas_allocated());
    }
}
