//! One member's view of the protocol, as a pure state machine: what to put in the next heartbeat, how
//! each of the eight statuses changes what it may read (coord/v1 contract), and the client lease.
//!
//! What the caller does (the SDK's runtime, the bench, test support, the simulation):
//! - build a heartbeat with [`Membership::request`] and send it; hand the answer to
//!   [`Membership::on_response`] with the instant the request was *sent*;
//! - read exactly [`Membership::readable`] at a given instant: one reader per shard in that set, none
//!   outside it;
//! - stop reading a shard that left `owned` (it is then in [`Membership::draining`]) and, once its local
//!   work is finished, say so with [`Membership::drained`];
//! - on shutdown, [`Membership::begin_leave`] and heartbeat until [`Membership::left`].
//!
//! Safety rules kept here:
//! - A shard is readable only while it is in the latest assignment **and** the lease (time since the *send*
//!   of the last accepted heartbeat) has more than the read margin left. The lease is shorter than the
//!   coordinator's member lease TTL, so by the time the coordinator expires this member it has stopped
//!   reading (ARCHITECTURE.md, invariant 4).
//! - New shards start only on `OK`. `SYNC_METADATA`/`REVOKE_PENDING` keep only shards already read.
//! - A shard taken away is reported `DRAINING` (with its in-flight count) until the caller says it has
//!   drained, then `REVOKED` with 0 in flight until an accepted response confirms it.
//! - `UNKNOWN_MEMBER_ID`, `FENCED_MEMBER_EPOCH`, `INVALID_REQUEST`, `UNSUPPORTED_PROTOCOL` and rsc's
//!   `FENCED_INSTANCE_ID` (another live member holds this member's `groupInstanceId`) stop everything at once
//!   and rejoin with epoch 0. `RETRY` changes nothing and renews nothing.
//! - A static member (one with a `groupInstanceId`) may leave temporarily
//!   ([`Membership::begin_temporary_leave`], epoch -2): the coordinator then keeps its shards reserved for a
//!   member with the same instance id for its static-member grace.

use crate::fences::ReadFences;
use crate::moment::Moment;
use rsc_protocol::PROTOCOL_VERSION_MAX;
use rsc_protocol::wire::{
    HeartbeatRequest, HeartbeatResponse, HeartbeatStatus, RevokeState, RevokingShardReport,
    RuntimeConsumerCapacity, ShardId, ShardProgressReport,
};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// What the caller knows about a shard's local work, for reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalShard {
    /// Entries delivered to the handler and not finished, plus 1 while a read loop still runs. A draining
    /// shard is always reported with at least 1.
    pub in_flight: i64,
    /// The shard's progress report, if the caller keeps one.
    pub progress: Option<ShardProgressReport>,
}

/// What a heartbeat carries besides the protocol state: it comes from the caller's runtime, randomness
/// or wall clock, which the membership does not have.
#[derive(Debug, Clone)]
pub struct Outgoing<'a> {
    /// `runtimeConsumerCapacity` of the request.
    pub capacity: RuntimeConsumerCapacity,
    /// Appended to `<memberId>-<n>` (n counts this membership's requests) to form the `requestId`; e.g. a
    /// random tag, so that ids stay unique across processes of one member id. May be empty.
    pub request_id_suffix: &'a str,
    /// `ackedAt` of the `REVOKED` reports (RFC 3339), if the caller keeps a wall clock.
    pub acked_at: Option<&'a str>,
}

/// What a response did, for logs and events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// Accepted; the lease was renewed.
    Accepted,
    /// `RETRY`: nothing changed.
    Retry,
    /// Ownership was dropped and the member will rejoin with epoch 0.
    Reset(HeartbeatStatus),
    /// A graceful leave is complete: nothing is held any more.
    Left,
}

/// One member's protocol state: epoch, metadata version, the shards it reads, gives up and has released,
/// and its client lease, judged by instants of type `I` that the caller supplies ([`Moment`]).
#[derive(Debug, Clone)]
pub struct Membership<I = Instant> {
    member_id: String,
    member_name: Option<String>,
    client_name: Option<String>,
    client_version: Option<String>,
    group_instance_id: Option<String>,
    /// The epoch to send next: 0 = join, -1 = leaving (-2 = leaving temporarily).
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
    /// No shard is readable once no more than this is left on the lease.
    read_margin: Duration,
    lease_until: Option<I>,
    interval: Option<Duration>,
    seq: u64,
    /// Read fences of ordered streams, as the accepted answers set them.
    fences: ReadFences,
}

impl Membership<Instant> {
    /// A member that has not joined yet (its first request carries epoch 0), its lease judged by
    /// [`Instant`]s. `lease` is the client lease: how long after the send of an accepted heartbeat the
    /// member may still read; it must be shorter than the coordinator's member lease TTL.
    pub fn new(member_id: &str, lease: Duration) -> Self {
        Self::new_with_clock(member_id, lease)
    }
}

impl<I: Moment> Membership<I> {
    /// [`Membership::new`] with the lease judged by instants of the caller's clock `I` (e.g. a
    /// simulation's virtual time as a [`Duration`] since its origin).
    pub fn new_with_clock(member_id: &str, lease: Duration) -> Self {
        Membership {
            member_id: member_id.to_owned(),
            member_name: None,
            client_name: None,
            client_version: None,
            group_instance_id: None,
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
            read_margin: Duration::ZERO,
            lease_until: None,
            interval: None,
            seq: 0,
            fences: ReadFences::default(),
        }
    }

    /// Sends `memberName` with every request (none by default).
    pub fn with_member_name(mut self, name: &str) -> Self {
        self.member_name = Some(name.to_owned());
        self
    }

    /// Sends the client library's name and version with every request (rsc's optional `clientName` /
    /// `clientVersion`; none by default). The coordinator records them when the member joins.
    pub fn with_client(mut self, name: &str, version: &str) -> Self {
        self.client_name = Some(name.to_owned());
        self.client_version = Some(version.to_owned());
        self
    }

    /// Sends rsc's `groupInstanceId` with every request: the member's static identity (none by default).
    pub fn with_group_instance_id(mut self, id: &str) -> Self {
        self.group_instance_id = Some(id.to_owned());
        self
    }

    pub fn group_instance_id(&self) -> Option<&str> {
        self.group_instance_id.as_deref()
    }

    /// No shard is [`readable`](Self::readable) once no more than `margin` is left on the lease (zero by
    /// default: readable while the lease runs). A runtime whose read loops refuse to read within a
    /// margin of the lease end sets the same margin here, so it never starts a loop only to stop it.
    pub fn with_read_margin(mut self, margin: Duration) -> Self {
        self.read_margin = margin;
        self
    }

    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    /// The epoch the next request carries: 0 to join, -1 while leaving (-2 while leaving temporarily).
    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    /// The highest metadata version the coordinator has answered with.
    pub fn metadata_version(&self) -> i64 {
        self.metadata_version
    }

    /// Shards this member keeps (reported `ownedShards`; read while the lease holds).
    pub fn owned(&self) -> &BTreeSet<u32> {
        &self.owned
    }

    /// Shards given up whose local work has not finished (reported `DRAINING`).
    pub fn draining(&self) -> &BTreeSet<u32> {
        &self.draining
    }

    /// Shards drained and reported `REVOKED` until an accepted response confirms them.
    pub fn released(&self) -> &BTreeSet<u32> {
        &self.released
    }

    /// The read fences of ordered streams that the accepted answers set, with the routing version they
    /// reflect; [`ReadFences::fence_for`] gives the fence to honour on a shard given its routing boundary.
    pub fn fences(&self) -> &ReadFences {
        &self.fences
    }

    /// The latest `assignedShards` accepted (what the coordinator wants this member to read).
    pub fn assigned(&self) -> &BTreeSet<u32> {
        &self.last_assigned
    }

    /// The heartbeat interval the coordinator asked for (None before the first answer).
    pub fn interval(&self) -> Option<Duration> {
        self.interval
    }

    /// When the client lease runs out (None before the first accepted answer and after a reset).
    pub fn lease_until(&self) -> Option<I> {
        self.lease_until
    }

    pub fn lease_valid(&self, now: I) -> bool {
        self.lease_until.is_some_and(|u| now < u)
    }

    /// Shards that should have a reader at `now`: none while leaving, and none once no more than the read
    /// margin is left on the lease.
    pub fn readable(&self, now: I) -> BTreeSet<u32> {
        let left = self.lease_until.and_then(|u| u.checked_duration_since(now));
        if !self.leaving && left.is_some_and(|l| l > self.read_margin) {
            self.owned.clone()
        } else {
            BTreeSet::new()
        }
    }

    /// Whether a reader started for `shard` now must first reclaim pending entries; clears the flag.
    pub fn take_reclaim(&mut self, shard: u32) -> bool {
        self.needs_reclaim.remove(&shard)
    }

    /// The caller finished all local work of a shard it stopped.
    pub fn drained(&mut self, shard: u32) {
        if self.draining.remove(&shard) {
            self.finish_drain(shard);
        }
    }

    /// [`drained`](Self::drained) for every draining shard: for a caller whose local work stops at once.
    pub fn drained_all(&mut self) {
        for s in std::mem::take(&mut self.draining) {
            self.finish_drain(s);
        }
    }

    /// A shard no longer draining is read again if it was given back meanwhile, else reported REVOKED.
    fn finish_drain(&mut self, shard: u32) {
        if !self.leaving && self.epoch > 0 && self.last_assigned.contains(&shard) {
            // It was given back to us while it drained: keep reading it (we were its last reader).
            self.owned.insert(shard);
        } else {
            self.released.insert(shard);
        }
    }

    /// Starts a graceful leave: stop reading everything; the next heartbeats carry epoch -1.
    pub fn begin_leave(&mut self) {
        self.leave_with(-1);
    }

    /// Starts a temporary leave (a static member's restart): as [`begin_leave`](Self::begin_leave), but the
    /// next heartbeats carry epoch -2, so the coordinator keeps this member's shards reserved for its
    /// `groupInstanceId`. Without an instance id it is a plain leave.
    pub fn begin_temporary_leave(&mut self) {
        let epoch = if self.group_instance_id.is_some() {
            -2
        } else {
            -1
        };
        self.leave_with(epoch);
    }

    fn leave_with(&mut self, leave_epoch: i64) {
        if self.leaving {
            return;
        }
        self.leaving = true;
        let owned = std::mem::take(&mut self.owned);
        self.draining.extend(owned);
        self.needs_reclaim.clear();
        if self.epoch != 0 {
            self.epoch = leave_epoch;
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

    /// Builds the next heartbeat. `local(shard)` gives the caller's in-flight count and progress of a
    /// shard it owns or drains. The answer to it goes to [`on_response`](Self::on_response); a request
    /// that got no answer may be sent again as it is, or replaced by a new one.
    pub fn request(
        &mut self,
        out: Outgoing<'_>,
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
        for &s in &self.released {
            revoking.push(RevokingShardReport {
                shard: ShardId::new(s),
                state: RevokeState::Revoked,
                in_flight: 0,
                acked_at: out.acked_at.map(str::to_owned),
            });
        }
        self.released_sent.clone_from(&self.released);
        for &s in &self.owned {
            progress.extend(local(s).progress);
        }
        progress.sort_by_key(|p| p.shard);
        HeartbeatRequest {
            protocol_version: PROTOCOL_VERSION_MAX,
            request_id: format!("{}-{}{}", self.member_id, self.seq, out.request_id_suffix),
            member_id: self.member_id.clone(),
            member_name: self.member_name.clone(),
            client_name: self.client_name.clone(),
            client_version: self.client_version.clone(),
            group_instance_id: self.group_instance_id.clone(),
            member_epoch: self.epoch,
            metadata_version: self.metadata_version,
            runtime_consumer_capacity: out.capacity,
            owned_shards: self.owned.iter().map(|&s| ShardId::new(s)).collect(),
            revoking_shards: revoking,
            shard_progress: progress,
        }
    }

    /// Applies the response to the last request built, sent at `sent_at` (the lease runs from there).
    pub fn on_response(&mut self, sent_at: I, resp: &HeartbeatResponse) -> Applied {
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
                if self.steady(resp) {
                    // The same assignment, all of it owned or draining: nothing to change (and nothing
                    // allocated, which keeps a steady heartbeat cheap for the bench).
                    return Applied::Accepted;
                }
                let assigned = assigned_shards(resp);
                self.give_up_all_but(&assigned);
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
                self.give_up_all_but(&assigned_shards(resp));
                self.last_assigned.clone_from(&self.owned);
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
            | HeartbeatStatus::UnsupportedProtocol
            | HeartbeatStatus::FencedInstanceId => {
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

    /// Whether `resp` assigns exactly the latest assignment and each of its shards is owned or draining.
    /// Owned shards are always part of the latest assignment, so the answer then changes nothing.
    fn steady(&self, resp: &HeartbeatResponse) -> bool {
        let assigned = &resp.assignment.assigned_shards;
        assigned.len() == self.last_assigned.len()
            && assigned
                .iter()
                .map(|s| s.shard_index)
                .eq(self.last_assigned.iter().copied())
            && self
                .last_assigned
                .iter()
                .all(|s| self.owned.contains(s) || self.draining.contains(s))
    }

    /// Owned shards not in `assigned` start draining.
    fn give_up_all_but(&mut self, assigned: &BTreeSet<u32>) {
        let owned = &mut self.owned;
        let (needs_reclaim, draining) = (&mut self.needs_reclaim, &mut self.draining);
        owned.retain(|s| {
            let keep = assigned.contains(s);
            if !keep {
                needs_reclaim.remove(s);
                draining.insert(*s);
            }
            keep
        });
    }

    fn accept_common(&mut self, sent_at: I, resp: &HeartbeatResponse) {
        if resp.metadata_version > 0 {
            self.metadata_version = resp.metadata_version;
        }
        for s in std::mem::take(&mut self.released_sent) {
            self.released.remove(&s);
        }
        self.fences.apply_answer(resp);
        // A lease the clock cannot represent is no lease (fail closed).
        self.lease_until = sent_at.checked_add(self.lease);
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
        self.fences.clear();
        self.lease_until = None;
    }
}

fn assigned_shards(resp: &HeartbeatResponse) -> BTreeSet<u32> {
    resp.assignment
        .assigned_shards
        .iter()
        .map(|s| s.shard_index)
        .collect()
}

#[cfg(test)]
mod tests;
