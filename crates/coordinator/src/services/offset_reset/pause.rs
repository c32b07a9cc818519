//! A test's handle on the steps of an offset reset: [`pause_after_hold`] makes the next applied reset of one
//! group stop right after its hold is written, before any position moves; [`pause_after_shards`] makes it
//! stop once that many shards have moved, before the next — each until the handle is released (or dropped).
//! Tests use them to heartbeat a member into the join window, or to take the hold away midway,
//! deterministically (`coordinator/tests/offset_reset.rs`, `reset_interrupted.rs`); nothing else registers
//! a pause, and a reset of a group with none registered passes straight through (one lock of an empty map
//! per step).

use crate::runtime::cache::GroupName;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use tokio::sync::oneshot;

/// Where a reset may be stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Its hold is written; no position has moved.
    Held,
    /// This many shards have moved; the next has not.
    Moved(usize),
}

type Waiting = (Stop, oneshot::Sender<()>, oneshot::Receiver<()>);

/// Registered pauses by (stream, group).
static PAUSES: LazyLock<Mutex<HashMap<(String, String), Waiting>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The test's end of a registered pause.
#[derive(Debug)]
pub struct ResetPause {
    reached: oneshot::Receiver<()>,
    release: oneshot::Sender<()>,
}

impl ResetPause {
    /// Waits until a reset of the group has reached the registered step and stopped (false: it never will —
    /// the registration was dropped).
    pub async fn reached(&mut self) -> bool {
        (&mut self.reached).await.is_ok()
    }

    /// Lets the stopped reset go on (dropping the handle does too).
    pub fn release(self) {
        let _ = self.release.send(());
    }
}

fn register(stream_prefix: &str, consumer_group: &str, at: Stop) -> ResetPause {
    let (reached_tx, reached) = oneshot::channel();
    let (release, release_rx) = oneshot::channel();
    PAUSES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(
            (stream_prefix.to_owned(), consumer_group.to_owned()),
            (at, reached_tx, release_rx),
        );
    ResetPause { reached, release }
}

/// Makes the next applied reset of `stream_prefix`/`consumer_group` (of any coordinator in this process)
/// stop once its hold is written, until the returned handle is released.
pub fn pause_after_hold(stream_prefix: &str, consumer_group: &str) -> ResetPause {
    register(stream_prefix, consumer_group, Stop::Held)
}

/// Makes the next applied reset of `stream_prefix`/`consumer_group` stop once `moved` of its shards have
/// moved (before it checks its hold for the next), until the returned handle is released.
pub fn pause_after_shards(stream_prefix: &str, consumer_group: &str, moved: usize) -> ResetPause {
    register(stream_prefix, consumer_group, Stop::Moved(moved))
}

/// Called by the reset at each step: stops here while a pause is registered for the group at this step.
pub(crate) async fn reached(name: &GroupName, at: Stop) {
    let waiting = {
        let mut pauses = PAUSES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = (name.stream_prefix.clone(), name.consumer_group.clone());
        match pauses.get(&key) {
            Some((stop, ..)) if *stop == at => pauses.remove(&key),
            _ => None,
        }
    };
    if let Some((_, reached, release)) = waiting {
        let _ = reached.send(());
        let _ = release.await;
    }
}
