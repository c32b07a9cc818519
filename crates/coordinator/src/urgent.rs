//! Groups the reconciler should visit before its next tick (a steady heartbeat saw another member's lease
//! lapsed), and the reconciler's wake-up.

use crate::cache::GroupName;
use std::collections::BTreeSet;

/// Groups waiting for an early visit, and the reconciler's wake-up.
#[derive(Debug, Default)]
pub struct Urgent {
    pub(crate) groups: std::sync::Mutex<BTreeSet<GroupName>>,
    pub(crate) wake: tokio::sync::Notify,
}
