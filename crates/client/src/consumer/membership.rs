//! One member's view of the protocol, as a pure state machine: what to put in the next heartbeat, how
//! each of the eight statuses changes what it may read (coord/v1 contract), and the assignment lease.
//!
//! The runtime ([`super::member`]) asks [`Membership::readable`] which shards should have a read loop and
//! reconciles its readers to that set; it tells the membership when a stopped shard has drained
//! ([`Membership::drained`]). Nothing here performs I/O or reads a clock.
//!
//! Safety rules kept here:
//! - A shard is readable only while it is in the latest assignment **and** the lease (time since the *send*
//!   of the last accepted heartbeat) has not run out. The lease is shorter than the coordinator's member lease
//!   TTL, so by the time the coordinator expires this member it has stopped reading (design invariant 4).
//! - New shards start only on `OK`. `SYNC_METADATA`/`REVOKE_PENDING` keep only shards already read.
//! - A shard taken away is reported `DRAINING` (with its in-flight count) until the runtime says it has
//!   drained, then `REVOKED` with 0 in flight until an accepted response confirms it.
//! - `UNKNOWN_MEMBER_ID`, `FENCED_MEMBER_EPOCH`, `INVALID_REQUEST` and `UNSUPPORTED_PROTOCOL` stop
//!   everything at once and rejoin with epoch 0. `RETRY` changes nothing and renews nothing.

use super::config::read_lease_left;
use rsc_protocol::PROTOCOL_VERSION_MAX;
use rsc_protocol::wire::{
    HeartbeatRequest, HeartbeatResponse, HeartbeatStatus, RevokeState, RevokingShardReport,
    RuntimeConsumerCapacity, ShardId, ShardProgressReport,
};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// What the runtime knows about a shard's local work, for reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LocalShard {
    /// Entries delivered to the handler and not finished, plus 1 while a read loop still runs.
    pub in_flight: i64,
    pub progress: Option<ShardProgressReport>,
}

/// What a response did, for logs and events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Applied {
    /// Accepted; the lease was renewed.
    Accepted,
    /// `RETRY`: nothing changed.
    Retry,
    /// Ownership was dropped and the member will rejoin with epoch 0.
    Reset(HeartbeatStatus),
    /// A graceful leave is complete: nothing is held any more.
    Left,
}

#[derive(Debug, Clone)]
pub(crate) struct Membership {
    member_id: String,
    member_name: String,
    /// The epoch to send next: 0 = join, -1 = leaving.
    epoch: i64,
    metadata_version: i64,
    /// Shards of the latest assignment that this member keeps (may read while the lease holds).
    owned: BTreeSet<u32>,
    /// Shards newly gained that must reclaim the previous owner's pending entries first.
    needs_reclaim: BTreeSet<u32>,
    /// Shards taken away whose local work has not finished.
    draining: BTreeSet<u32>,
    /// Shards drained and to be reported REVOKED (inFlight 0) until an accepted response.
    released: BTreeSet<u32>,
    /// `released` as sent in the last request (only those are confirmed by its response).
    released_sent: BTreeSet<u32>,
    /// The latest `assignedShards` (to resume a shard that was given back while it drained).
    last_assigned: BTreeSet<u32>,
    leaving: bool,
    lease: Duration,
    lease_until: Option<Instant>,
    interval: Option<Duration>,
    seq: u64,
}

impl Membership {
    pub fn new(member_id: &str, member_name: &str, lease: Duration) -> Self {
        Membership {
            member_id: member_id.to_owned(),
            member_name: member_name.to_owned(),
            epoch: 0,
            metadata_version: 0,
            owned: BTreeSet::new(),
            needs_reclaim: BTreeSet::new(),
            draining: BTreeSet::new(),
            released: BTreeSet::new(),
            released_sent: BTreeSet::new(),
            last_assigned: BTreeSet::new(),
            leaving: false,
            lease,
            lease_until: None,
            interval: None,
            seq: 0,
        }
    }

    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    pub fn owned(&self) -> &BTreeSet<u32> {
        &self.owned
    }

    pub fn draining(&self) -> &BTreeSet<u32> {
        &self.draining
    }

    /// The heartbeat interval the coordinator asked for (None before the first answer).
    pub fn interval(&self) -> Option<Duration> {
        self.interval
    }

    pub fn lease_until(&self) -> Option<Instant> {
        self.lease_until
    }

    pub fn lease_valid(&self, now: Instant) -> bool {
        self.lease_until.is_some_and(|u| now < u)
    }

    /// Shards that should have a read loop now: none once less than the read margin is left on the lease
    /// (the margin under which a read loop refuses to read, so no loop is started only to stop at once).
    pub fn readable(&self, now: Instant) -> BTreeSet<u32> {
        if self.leaving || read_lease_left(self.lease_until, now).is_none() {
            BTreeSet::new()
        } else {
            self.owned.clone()
        }
    }

    /// Whether a reader started for `shard` now must first reclaim pending entries; clears the flag.
    pub fn take_reclaim(&mut self, shard: u32) -> bool {
        self.needs_reclaim.remove(&shard)
    }

    /// The runtime finished all local work of a shard it stopped.
    pub fn drained(&mut self, shard: u32) {
        if !self.draining.remove(&shard) {
            return;
        }
        if !self.leaving && self.epoch > 0 && self.last_assigned.contains(&shard) {
            // It was given back to us while it drained: keep reading it (we were its last reader).
            self.owned.insert(shard);
        } else {
            self.released.insert(shard);
        }
    }

    /// Starts a graceful leave: stop reading everything; the next heartbeats carry epoch -1.
    pub fn begin_leave(&mut self) {
        if self.leaving {
            return;
        }
        self.leaving = true;
        let owned = std::mem::take(&mut self.owned);
        self.draining.extend(owned);
        self.needs_reclaim.clear();
        if self.epoch != 0 {
            self.epoch = -1;
        }
    }

    pub fn leaving(&self) -> bool {
        self.leaving
    }

    /// A leave is complete when nothing is held or unreported (or the member never joined).
    pub fn left(&self) -> bool {
        self.leaving
            && (self.epoch == 0
                || (self.draining.is_empty() && self.released.is_empty() && self.owned.is_empty()))
    }

    /// Builds the next heartbeat. `local(shard)` gives the runtime's in-flight count and progress.
    pub fn request(
        &mut self,
        capacity: RuntimeConsumerCapacity,
        local: impl Fn(u32) -> LocalShard,
    ) -> HeartbeatRequest {
        self.seq += 1;
        let mut revoking = Vec::new();
        let mut progress = Vec::new();
        for &s in &self.draining {
            let l = local(s);
            revoking.push(RevokingShardReport {
                shard: ShardId::new(s),
                state: RevokeState::Draining,
                in_flight: l.in_flight.max(1),
                acked_at: None,
            });
            progress.extend(l.progress);
        }
        let now = now_iso();
        for &s in &self.released {
            revoking.push(RevokingShardReport {
                shard: ShardId::new(s),
                state: RevokeState::Revoked,
                in_flight: 0,
                acked_at: Some(now.clone()),
            });
        }
        self.released_sent = self.released.clone();
        for &s in &self.owned {
            progress.extend(local(s).progress);
        }
        progress.sort_by_key(|p| p.shard);
        HeartbeatRequest {
            protocol_version: PROTOCOL_VERSION_MAX,
            request_id: format!("{}-{}-{}", self.member_id, self.seq, short_random()),
            member_id: self.member_id.clone(),
            member_name: Some(self.member_name.clone()),
            member_epoch: self.epoch,
            metadata_version: self.metadata_version,
            runtime_consumer_capacity: capacity,
            owned_shards: self.owned.iter().map(|&s| ShardId::new(s)).collect(),
            revoking_shards: revoking,
            shard_progress: progress,
        }
    }

    /// Applies the response to a heartbeat sent at `sent_at`.
    pub fn on_response(&mut self, sent_at: Instant, resp: &HeartbeatResponse) -> Applied {
        if resp.heartbeat_interval_ms > 0 {
            self.interval = Some(Duration::from_millis(resp.heartbeat_interval_ms as u64));
        }
        match resp.status {
            HeartbeatStatus::Retry => Applied::Retry,
            HeartbeatStatus::Ok if self.leaving => {
                self.accept_common(sent_at, resp);
                if self.left() {
                    Applied::Left
                } else {
                    Applied::Accepted
                }
            }
            HeartbeatStatus::Ok => {
                self.accept_common(sent_at, resp);
                self.epoch = resp.member_epoch;
                let assigned: BTreeSet<u32> = resp
                    .assignment
                    .assigned_shards
                    .iter()
                    .map(|s| s.shard_index)
                    .collect();
                let removed: Vec<u32> = self.owned.difference(&assigned).copied().collect();
                for s in removed {
                    self.owned.remove(&s);
                    self.needs_reclaim.remove(&s);
                    self.draining.insert(s);
                }
                for &s in &assigned {
                    if self.draining.contains(&s) || self.owned.contains(&s) {
                        continue;
                    }
                    self.released.remove(&s);
                    self.owned.insert(s);
                    self.needs_reclaim.insert(s);
                }
                self.last_assigned = assigned;
                Applied::Accepted
            }
            HeartbeatStatus::SyncMetadata | HeartbeatStatus::RevokePending if !self.leaving => {
                self.accept_common(sent_at, resp);
                self.epoch = resp.member_epoch;
                let assigned: BTreeSet<u32> = resp
                    .assignment
                    .assigned_shards
                    .iter()
                    .map(|s| s.shard_index)
                    .collect();
                let removed: Vec<u32> = self.owned.difference(&assigned).copied().collect();
                for s in removed {
                    self.owned.remove(&s);
                    self.needs_reclaim.remove(&s);
                    self.draining.insert(s);
                }
                self.last_assigned = self.owned.clone();
                Applied::Accepted
            }
            HeartbeatStatus::SyncMetadata | HeartbeatStatus::RevokePending => {
                // Leaving: keep reporting until released.
                self.accept_common(sent_at, resp);
                Applied::Accepted
            }
            HeartbeatStatus::UnknownMemberId
            | HeartbeatStatus::FencedMemberEpoch
            | HeartbeatStatus::InvalidRequest
            | HeartbeatStatus::UnsupportedProtocol => {
                let was_leaving = self.leaving;
                self.reset(resp);
                if was_leaving {
                    // The coordinator no longer holds anything for us: the leave is over.
                    self.leaving = true;
                    Applied::Left
                } else {
                    Applied::Reset(resp.status)
                }
            }
        }
    }

    fn accept_common(&mut self, sent_at: Instant, resp: &HeartbeatResponse) {
        if resp.metadata_version > 0 {
            self.metadata_version = resp.metadata_version;
        }
        for s in std::mem::take(&mut self.released_sent) {
            self.released.remove(&s);
        }
        self.lease_until = Some(sent_at + self.lease);
    }

    /// Drops all ownership; the next heartbeat joins with epoch 0.
    fn reset(&mut self, resp: &HeartbeatResponse) {
        self.epoch = 0;
        if resp.metadata_version > 0 {
            self.metadata_version = resp.metadata_version;
        }
        self.owned.clear();
        self.needs_reclaim.clear();
        self.draining.clear();
        self.released.clear();
        self.released_sent.clear();
        self.last_assigned.clear();
        self.lease_until = None;
    }
}

fn short_random() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    id[..8].to_owned()
}

fn now_iso() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
