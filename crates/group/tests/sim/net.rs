//! The network between members and coordinator replicas. Every message gets its own random delay, so
//! messages overtake each other (a later heartbeat of a member can be processed before an earlier one, a
//! response can arrive after a newer one); a message may be dropped or duplicated (the copy gets its own
//! delay, sometimes a long one, so it can arrive after the member restarted or the group moved on).
//! Partitions are applied by the world at send and delivery time.

use super::rng::Rng;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatResponse};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::rc::Rc;

/// Which process of a client a message belongs to (a restarted process ignores its predecessor's answers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    pub client: usize,
    pub process: u64,
    pub replica: usize,
}

#[derive(Debug, Clone)]
pub enum Payload {
    Request(Endpoint, Rc<HeartbeatRequest>),
    Response(Endpoint, Rc<HeartbeatResponse>),
    /// The replica is down: the connection was refused (a transport error the client sees).
    Refused(Endpoint, String),
}

/// Fault rates, per mille, and delays in ms.
#[derive(Debug, Clone, Copy, Default)]
pub struct NetFaults {
    pub drop: u64,
    pub duplicate: u64,
    pub max_delay_ms: i64,
    /// Chance that a message is held back much longer than usual (reordering across many steps).
    pub long_delay: u64,
    pub max_long_delay_ms: i64,
}

struct Queued {
    at: i64,
    order: u64,
    payload: Payload,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    /// Reversed, so the heap pops the earliest message first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.order).cmp(&(self.at, self.order))
    }
}

#[derive(Default)]
pub struct Network {
    pub faults: NetFaults,
    queue: BinaryHeap<Queued>,
    pub sent: u64,
    pub dropped: u64,
    pub duplicated: u64,
}

impl Network {
    pub fn new(faults: NetFaults) -> Self {
        Network {
            faults,
            ..Network::default()
        }
    }

    pub fn send(&mut self, payload: Payload, rng: &mut Rng, now: i64) {
        self.sent += 1;
        if rng.chance(self.faults.drop) {
            self.dropped += 1;
            return;
        }
        let copies = if rng.chance(self.faults.duplicate) {
            self.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut delay = rng.range(0, self.faults.max_delay_ms);
            if rng.chance(self.faults.long_delay) {
                delay += rng.range(0, self.faults.max_long_delay_ms);
            }
            self.queue.push(Queued {
                at: now + delay,
                order: rng.next(),
                payload: payload.clone(),
            });
        }
    }

    /// Messages due at `now`, earliest first (ties in random order).
    pub fn due(&mut self, now: i64) -> Vec<Payload> {
        let mut out = Vec::new();
        while self.queue.peek().is_some_and(|q| q.at <= now) {
            if let Some(q) = self.queue.pop() {
                out.push(q.payload);
            }
        }
        out
    }
}
