//! `rsc demo --ordered` / `--scale`: making the demo stream ordered, and checking per-key order.
//!
//! The producer gives each record its key's number (`k`) and the run's sequence number (`seq`, increasing for
//! every key). The handler records, per key, the highest sequence number handled so far; a record handled
//! for the first time with a lower one than that is an *order violation* (a newer record of its key was
//! handled before it). Redeliveries of a record already handled are duplicates, not violations.

use rsc_client::{AdminClient, CoordinatorClient};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// Per-key order as the handlers saw it.
#[derive(Default)]
pub struct OrderCheck {
    inner: Mutex<OrderState>,
}

#[derive(Default)]
struct OrderState {
    highest: HashMap<u64, u64>,
    seen: HashSet<u64>,
    violations: u64,
}

impl OrderCheck {
    /// Notes that record `seq` of key `key` is being handled.
    pub fn handled(&self, key: u64, seq: u64) {
        let mut s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !s.seen.insert(seq) {
            return;
        }
        let highest = s.highest.entry(key).or_insert(seq);
        if seq < *highest {
            s.violations += 1;
        } else {
            *highest = seq;
        }
    }

    pub fn violations(&self) -> u64 {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .violations
    }
}

/// Sets the stream's ordering option to KEY (a WRITE call).
pub async fn make_ordered(coord: &CoordinatorClient, stream: &str) -> Result<(), String> {
    AdminClient::new(coord.clone(), "rsc demo")
        .set_stream_ordering(
            stream,
            rsc_protocol::ordering::Ordering::Key,
            "rsc demo --ordered",
        )
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}
