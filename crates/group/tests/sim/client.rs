//! A simulated consumer process. It follows the protocol as the Rust SDK does (`crates/client/src/consumer`):
//! one heartbeat call at a time; a call tries the replica that last answered, and on a timeout or a refused
//! connection sends the *same* request to the next replica (each replica once per call), so the coordinator
//! may see it twice; only the answer to the call in progress is applied — an answer that arrives after the
//! call timed out, a duplicate answer, or one addressed to a previous process of the same member id is
//! dropped, like the SDK dropping an abandoned HTTP exchange. The client lease runs from the *send* of the
//! last accepted heartbeat (invariant 4): no shard is read once it has run out.
//!
//! Two reporting styles: Spring-style (a shard given up is reported DRAINING once, then REVOKED until an
//! answer confirms it) and Python-style (given-up shards are simply left out of the report).

use super::{CLIENT_LEASE_MS, HEARTBEAT_TIMEOUT_MS, TIMING};
use rsc_group::model::ShardSet;
use rsc_protocol::wire::{
    HeartbeatRequest, HeartbeatResponse, HeartbeatStatus, RevokeState, RevokingShardReport,
    RuntimeConsumerCapacity, ShardId,
};
use std::collections::BTreeMap;
use std::rc::Rc;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Style {
    Spring,
    Python,
}

/// The heartbeat call in progress.
#[derive(Debug)]
pub struct Call {
    pub req: Rc<HeartbeatRequest>,
    pub sent_at: i64,
    pub replica: usize,
    pub deadline: i64,
    pub tries: usize,
}

pub struct Client {
    pub id: String,
    pub style: Style,
    /// Incremented on every (re)start; answers to an older process are ignored.
    pub process: u64,
    pub running: bool,
    /// Cut off from every replica until then (keeps running and reading until its lease runs out).
    pub partitioned_until: i64,
    /// Cut off from one replica until then.
    pub cut_from: Option<(usize, i64)>,
    pub epoch: i64,
    pub metadata_version: i64,
    /// Shards of the latest assignment it keeps (read while the lease holds).
    pub owned: ShardSet,
    /// Shards given up, with how many more requests report them DRAINING before REVOKED.
    pub giving_up: BTreeMap<u32, u8>,
    /// Send time of the last accepted heartbeat.
    pub renewed_at: i64,
    pub next_heartbeat: i64,
    pub leaving: bool,
    /// The replica that answered last.
    pub sticky: usize,
    pub call: Option<Call>,
    seq: u64,
    pub stale_answers: u64,
    /// Spring-style: how many requests report a given-up shard DRAINING (a slow consumer takes many, and
    /// is fenced at the rebalance timeout).
    pub drain_rounds: u8,
    /// A rolling restart: a new process starts as soon as this one's graceful leave is over.
    pub restart_when_left: bool,
}

impl Client {
    pub fn new(id: &str, style: Style, process: u64, sticky: usize, now: i64) -> Self {
        Client {
            id: id.to_owned(),
            style,
            process,
            running: true,
            partitioned_until: 0,
            cut_from: None,
            epoch: 0,
            metadata_version: 0,
            owned: ShardSet::new(),
            giving_up: BTreeMap::new(),
            renewed_at: i64::MIN / 2,
            next_heartbeat: now,
            leaving: false,
            sticky,
            call: None,
            seq: 0,
            stale_answers: 0,
            drain_rounds: 1,
            restart_when_left: false,
        }
    }

    /// A new process under the same member id (the old one is gone).
    pub fn restart(&mut self, now: i64) {
        let (stale, rounds) = (self.stale_answers, self.drain_rounds);
        *self = Client::new(&self.id, self.style, self.process + 1, self.sticky, now);
        self.stale_answers = stale;
        self.drain_rounds = rounds;
    }

    /// The process dies: reading stops with it.
    pub fn crash(&mut self) {
        self.running = false;
        self.owned.clear();
        self.call = None;
    }

    pub fn lease_valid(&self, now: i64) -> bool {
        now < self.renewed_at + CLIENT_LEASE_MS
    }

    /// Shards this process reads right now.
    pub fn readable(&self, now: i64) -> ShardSet {
        if self.running && !self.leaving && self.lease_valid(now) {
            self.owned.clone()
        } else {
            ShardSet::new()
        }
    }

    pub fn reachable(&self, replica: usize, now: i64) -> bool {
        self.partitioned_until <= now && self.cut_from.is_none_or(|(r, u)| r != replica || u <= now)
    }

    pub fn begin_leave(&mut self, now: i64) {
        if self.leaving || !self.running {
            return;
        }
        if self.epoch == 0 {
            self.crash(); // never joined: nothing to give back
            return;
        }
        self.leaving = true;
        self.epoch = -1;
        let draining = self.draining_rounds();
        for s in std::mem::take(&mut self.owned) {
            self.giving_up.insert(s, draining);
        }
        self.next_heartbeat = now;
    }

    fn draining_rounds(&self) -> u8 {
        match self.style {
            Style::Spring => self.drain_rounds,
            Style::Python => 0,
        }
    }

    fn request(&mut self) -> HeartbeatRequest {
        self.seq += 1;
        let revoking = match self.style {
            Style::Python => Vec::new(),
            Style::Spring => self
                .giving_up
                .iter()
                .map(|(s, n)| RevokingShardReport {
                    shard: ShardId::new(*s),
                    state: if *n > 0 {
                        RevokeState::Draining
                    } else {
                        RevokeState::Revoked
                    },
                    in_flight: i64::from(*n > 0),
                    acked_at: None,
                })
                .collect(),
        };
        for n in self.giving_up.values_mut() {
            *n = n.saturating_sub(1);
        }
        HeartbeatRequest {
            protocol_version: 1,
            request_id: format!("{}-{}-{}", self.id, self.process, self.seq),
            member_id: self.id.clone(),
            member_name: None,
            member_epoch: self.epoch,
            metadata_version: self.metadata_version,
            runtime_consumer_capacity: RuntimeConsumerCapacity {
                runtime_max_concurrency: 1,
                available_concurrency: 1,
            },
            owned_shards: self.owned.iter().map(|s| ShardId::new(*s)).collect(),
            revoking_shards: revoking,
            shard_progress: Vec::new(),
        }
    }

    /// What to send now, if anything: a new heartbeat, or the current one again to the next replica after
    /// a timeout.
    pub fn poll(&mut self, now: i64, replicas: usize) -> Option<(usize, Rc<HeartbeatRequest>)> {
        if !self.running {
            return None;
        }
        if let Some(call) = &self.call {
            if now >= call.deadline {
                return self.fail_over(now, replicas);
            }
            return None;
        }
        if self.next_heartbeat > now {
            return None;
        }
        let req = Rc::new(self.request());
        if super::tracing() {
            eprintln!(
                "t={now} {} p{} -> r{} {} epoch {} owned {:?} revoking {:?}",
                self.id,
                self.process,
                self.sticky,
                req.request_id,
                req.member_epoch,
                self.owned,
                self.giving_up
            );
        }
        self.call = Some(Call {
            req: req.clone(),
            sent_at: now,
            replica: self.sticky,
            deadline: now + HEARTBEAT_TIMEOUT_MS,
            tries: 1,
        });
        Some((self.sticky, req))
    }

    /// The attempt failed (timeout or refused): the next replica, or give up this call.
    fn fail_over(&mut self, now: i64, replicas: usize) -> Option<(usize, Rc<HeartbeatRequest>)> {
        let call = self.call.as_mut()?;
        if call.tries < replicas {
            call.tries += 1;
            call.replica = (call.replica + 1) % replicas;
            call.deadline = now + HEARTBEAT_TIMEOUT_MS;
            return Some((call.replica, call.req.clone()));
        }
        self.call = None;
        self.next_heartbeat = now + (TIMING.heartbeat_interval_ms / 2).max(50);
        None
    }

    pub fn on_refused(
        &mut self,
        replica: usize,
        request_id: &str,
        now: i64,
        replicas: usize,
    ) -> Option<(usize, Rc<HeartbeatRequest>)> {
        let current = self
            .call
            .as_ref()
            .is_some_and(|c| c.replica == replica && c.req.request_id == request_id);
        if !current {
            return None;
        }
        self.fail_over(now, replicas)
    }

    /// Applies an answer, if it answers the call in progress. `jitter` shortens the next delay.
    pub fn on_response(&mut self, replica: usize, resp: &HeartbeatResponse, now: i64, jitter: i64) {
        let current = self
            .call
            .as_ref()
            .is_some_and(|c| c.req.request_id == resp.response_to);
        if super::tracing() {
            eprintln!(
                "t={now} {} p{} <- r{replica} {:?} to {} epoch {} assigned {:?} (current call: {current})",
                self.id,
                self.process,
                resp.status,
                resp.response_to,
                resp.member_epoch,
                resp.assignment
                    .assigned_shards
                    .iter()
                    .map(|s| s.shard_index)
                    .collect::<Vec<_>>()
            );
        }
        if !self.running || !current {
            self.stale_answers += 1;
            return;
        }
        let Some(call) = self.call.take() else {
            return;
        };
        self.sticky = replica;
        self.next_heartbeat = now + TIMING.heartbeat_interval_ms - jitter;
        let confirmed: Vec<u32> = call
            .req
            .revoking_shards
            .iter()
            .filter(|r| r.is_released())
            .map(|r| r.shard.shard_index)
            .collect();
        match resp.status {
            HeartbeatStatus::Retry => {
                self.next_heartbeat = now + (TIMING.heartbeat_interval_ms / 2).max(50);
            }
            HeartbeatStatus::Ok if self.leaving => {
                self.accept_common(&call, resp, &confirmed);
                if self.giving_up.is_empty() {
                    self.running = false; // the leave is complete
                }
            }
            HeartbeatStatus::Ok => {
                self.accept_common(&call, resp, &confirmed);
                self.epoch = resp.member_epoch;
                let assigned: ShardSet = shard_set(resp);
                for s in self
                    .owned
                    .difference(&assigned)
                    .copied()
                    .collect::<Vec<_>>()
                {
                    self.owned.remove(&s);
                    self.giving_up.insert(s, self.draining_rounds());
                }
                self.giving_up.retain(|s, _| !assigned.contains(s));
                self.owned = assigned;
            }
            HeartbeatStatus::SyncMetadata | HeartbeatStatus::RevokePending if !self.leaving => {
                self.accept_common(&call, resp, &confirmed);
                self.epoch = resp.member_epoch;
                let assigned: ShardSet = shard_set(resp);
                for s in self
                    .owned
                    .difference(&assigned)
                    .copied()
                    .collect::<Vec<_>>()
                {
                    self.owned.remove(&s);
                    self.giving_up.insert(s, self.draining_rounds());
                }
            }
            HeartbeatStatus::SyncMetadata | HeartbeatStatus::RevokePending => {
                self.accept_common(&call, resp, &confirmed);
            }
            HeartbeatStatus::FencedMemberEpoch
            | HeartbeatStatus::UnknownMemberId
            | HeartbeatStatus::InvalidRequest
            | HeartbeatStatus::UnsupportedProtocol => {
                if self.leaving {
                    self.crash(); // nothing is held for us any more: the leave is over
                    return;
                }
                self.owned.clear();
                self.giving_up.clear();
                self.epoch = 0;
                self.renewed_at = i64::MIN / 2;
                if resp.metadata_version > 0 {
                    self.metadata_version = resp.metadata_version;
                }
            }
        }
    }

    fn accept_common(&mut self, call: &Call, resp: &HeartbeatResponse, confirmed: &[u32]) {
        if resp.metadata_version > 0 {
            self.metadata_version = resp.metadata_version;
        }
        match self.style {
            Style::Spring => {
                for s in confirmed {
                    if self.giving_up.get(s) == Some(&0) {
                        self.giving_up.remove(s);
                    }
                }
            }
            Style::Python => self.giving_up.clear(),
        }
        self.renewed_at = self.renewed_at.max(call.sent_at);
    }
}

fn shard_set(resp: &HeartbeatResponse) -> ShardSet {
    resp.assignment
        .assigned_shards
        .iter()
        .map(|s| s.shard_index)
        .collect()
}
