//! The heartbeat service's own state: the per-group queues of heartbeats waiting to write on this replica
//! (group commit, `heartbeat/batch.rs`). A request that needs a write joins its group's queue; whoever holds
//! the group's lock takes the queue.

use crate::runtime::cache::GroupName;
use rsc_group::replica::commit::{BatchReply, MAX_BATCH, Queued};
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::oneshot;

/// A request waiting to write, and where to answer it.
pub(crate) type Pending = Queued<oneshot::Sender<BatchReply>>;

/// The per-group queues of requests waiting to write.
#[derive(Default)]
pub(crate) struct TransitionQueues {
    queues: Mutex<HashMap<GroupName, Vec<Pending>>>,
}
impl TransitionQueues {
    /// Queues a request; false if the queues are unusable (a panic poisoned them).
    pub(crate) fn push(&self, name: &GroupName, p: Pending) -> bool {
        match self.queues.lock() {
            Ok(mut q) => {
                q.entry(name.clone()).or_default().push(p);
                true
            }
            Err(_) => false,
        }
    }

    /// How many requests of this group are waiting to write.
    pub(crate) fn queued(&self, name: &GroupName) -> usize {
        self.queues
            .lock()
            .map_or(0, |q| q.get(name).map_or(0, Vec::len))
    }

    pub(crate) fn take(&self, name: &GroupName) -> Vec<Pending> {
        let Ok(mut q) = self.queues.lock() else {
            return Vec::new();
        };
        let Some(list) = q.get_mut(name) else {
            return Vec::new();
        };
        if list.len() <= MAX_BATCH {
            q.remove(name).unwrap_or_default()
        } else {
            list.drain(..MAX_BATCH).collect()
        }
    }
}
