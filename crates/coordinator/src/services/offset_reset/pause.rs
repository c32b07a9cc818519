//! A test's handle on the join window of an offset reset: [`pause_after_hold`] makes the next applied reset
//! of one group stop right after its hold is written, before any position moves, until the handle is
//! released (or dropped). Tests use it to heartbeat a member into that window deterministically
//! (`coordinator/tests/offset_reset.rs`); nothing else registers a pause, and a reset of a group with none
//! registered passes straight through (one lock of an empty map).

use crate::runtime::cache::GroupName;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use tokio::sync::oneshot;

type Waiting = (oneshot::Sender<()>, oneshot::Receiver<()>);

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
    /// Waits until a reset of the group has written its hold and stopped (false: it never will — the
    /// registration was dropped).
    pub async fn reached(&mut self) -> bool {
        (&mut self.reached).await.is_ok()
    }

    /// Lets the stopped reset go on (dropping the handle does too).
    pub fn release(self) {
        let _ = self.release.send(());
    }
}

/// Makes the next applied reset of `stream_prefix`/`consumer_group` (of any coordinator in this process)
/// stop once its hold is written, until the returned handle is released.
pub fn pause_after_hold(stream_prefix: &str, consumer_group: &str) -> ResetPause {
    let (reached_tx, reached) = oneshot::channel();
    let (release, release_rx) = oneshot::channel();
    PAUSES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(
            (stream_prefix.to_owned(), consumer_group.to_owned()),
            (reached_tx, release_rx),
        );
    ResetPause { reached, release }
}

/// Called by the reset once its hold is written: stops here while a pause is registered for the group.
pub(crate) async fn reached(name: &GroupName) {
    let waiting = PAUSES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .remove(&(name.stream_prefix.clone(), name.consumer_group.clone()));
    if let Some((reached, release)) = waiting {
        let _ = reached.send(());
        let _ = release.await;
    }
}
