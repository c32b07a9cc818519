//! The heartbeat service's own state: its write queues (group commit) and its lapse forecasts (failover
//! hints), each in its own file.

use super::lapse_forecasts::LapseForecasts;
use super::queues::TransitionQueues;

#[derive(Default)]
pub(crate) struct HeartbeatState {
    /// Heartbeats waiting to write, per group (`heartbeat/batch.rs`).
    pub(crate) queues: TransitionQueues,
    /// Who would take over a lapsing member's shards, per group (`heartbeat.rs`).
    pub(crate) lapses: LapseForecasts,
}
