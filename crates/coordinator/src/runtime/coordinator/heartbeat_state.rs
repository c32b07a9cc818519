//! The heartbeat service's own state: its write queues (group commit), its lapse forecasts (failover
//! hints), its shard holders (release forecasts) and the large groups' batch copies, each in its own file.

use super::batch_copies::BatchCopies;
use super::lapse_forecasts::LapseForecasts;
use super::queues::TransitionQueues;
use super::release_forecasts::ReleaseForecasts;

#[derive(Default)]
pub(crate) struct HeartbeatState {
    /// Heartbeats waiting to write, per group (`heartbeat/batch.rs`).
    pub(crate) queues: TransitionQueues,
    /// Who would take over a lapsing member's shards, per group (`heartbeat.rs`).
    pub(crate) lapses: LapseForecasts,
    /// Who holds each shard, per group, for members waiting for one (`heartbeat.rs`).
    pub(crate) releases: ReleaseForecasts,
    /// Each large group's copy of its aggregate, kept from one batch to the next (`heartbeat/batch.rs`).
    pub(crate) copies: BatchCopies,
}
