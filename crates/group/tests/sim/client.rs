//! A simulated consumer process: the SDK's own model of the member protocol (`rsc_member::Membership`,
//! which `rsc_client::Consumer` runs) driven on the simulation's clock, plus what the SDK's runtime adds
//! around it. One heartbeat call at a time; a call tries the replica that last answered, and on a timeout
//! or a refused connection sends the *same* request to the next replica (each replica once per call), so
//! the coordinator may see it twice; only the answer to the call in progress is applied — an answer that
//! arrives after the call timed out, a duplicate answer, or one addressed to a previous process of the
//! same member id is dropped, like the SDK dropping an abandoned HTTP exchange. The client lease runs from
//! the *send* of the last accepted heartbeat (invariant 4): no shard is read once it has run out.
//!
//! Two reporting styles over the same membership: Spring-style is the SDK as it is (a shard given up is
//! reported DRAINING while its local work lasts — `drain_rounds` requests — then REVOKED until an answer
//! confirms it); Python-style is a client whose work stops at once and which leaves given-up shards out of
//! its report (its requests are the membership's with `revokingShards` emptied).
//!
//! A static consumer (`instance`: its `groupInstanceId`) is a process that gets a new member id on every
//! start (`<base>.p<process>`, as a pod gets a new IP) and keeps its instance id; its rolling restart is a
//! temporary leave (epoch -2). Two consumers may be given the same instance id (a misconfiguration the
//! coordinator must refuse).

use super::{CLIENT_LEASE_MS, HEARTBEAT_TIMEOUT_MS, TIMING};
use rsc_group::model::ShardSet;
use rsc_member::{Applied, LocalShard, Membership, Outgoing};
use rsc_protocol::ordering::ShardBoundary;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatResponse, RuntimeConsumerCapacity};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

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
    /// The member id of the current process.
    pub id: String,
    /// The id this consumer was created with (a static consumer's processes derive theirs from it).
    pub base: String,
    /// Static membership: the `groupInstanceId` every process of this consumer sends.
    pub instance: Option<String>,
    pub style: Style,
    /// Incremented on every (re)start; answers to an older process are ignored.
    pub process: u64,
    pub running: bool,
    /// Cut off from every replica until then (keeps running and reading until its lease runs out).
    pub partitioned_until: i64,
    /// Cut off from one replica until then.
    pub cut_from: Option<(usize, i64)>,
    /// The member's protocol state, its lease judged on the simulation's clock ([`at`]).
    pub membership: Membership<Duration>,
    /// Spring-style: shards draining in the membership, with how many more requests report them DRAINING
    /// before their local work is over.
    drain_left: BTreeMap<u32, u8>,
    /// Appended to request ids: ids stay unique across processes of one member id.
    request_tag: String,
    pub next_heartbeat: i64,
    /// A graceful leave has begun (and the member had joined).
    pub leaving: bool,
    /// The replica that answered last.
    pub sticky: usize,
    pub call: Option<Call>,
    pub stale_answers: u64,
    /// Spring-style: how many requests report a given-up shard DRAINING (a slow consumer takes many, and
    /// is fenced at the rebalance timeout).
    pub drain_rounds: u8,
    /// A rolling restart: a new process starts as soon as this one's graceful leave is over.
    pub restart_when_left: bool,
}

/// The simulation's time (ms, never negative) as the instant a [`Membership`] judges its lease by.
pub fn at(now: i64) -> Duration {
    Duration::from_millis(u64::try_from(now).unwrap_or(0))
}

impl Client {
    pub fn new(
        base: &str,
        instance: Option<&str>,
        style: Style,
        process: u64,
        sticky: usize,
        now: i64,
    ) -> Self {
        let id = match instance {
            Some(_) => format!("{base}.p{process}"),
            None => base.to_owned(),
        };
        let membership =
            Membership::new_with_clock(&id, Duration::from_millis(CLIENT_LEASE_MS as u64));
        let membership = match instance {
            Some(i) => membership.with_group_instance_id(i),
            None => membership,
        };
        Client {
            id,
            base: base.to_owned(),
            instance: instance.map(str::to_owned),
            style,
            process,
            running: true,
            partitioned_until: 0,
            cut_from: None,
            membership,
            drain_left: BTreeMap::new(),
            request_tag: format!("-p{process}"),
            next_heartbeat: now,
            leaving: false,
            sticky,
            call: None,
            stale_answers: 0,
            drain_rounds: 1,
            restart_when_left: false,
        }
    }

    /// A new process under the same member id (the old one is gone); a static consumer's new process has
    /// a new member id and the same instance id.
    pub fn restart(&mut self, now: i64) {
        let (stale, rounds) = (self.stale_answers, self.drain_rounds);
        *self = Client::new(
            &self.base,
            self.instance.as_deref(),
            self.style,
            self.process + 1,
            self.sticky,
            now,
        );
        self.stale_answers = stale;
        self.drain_rounds = rounds;
    }

    /// The process dies: reading stops with it.
    pub fn crash(&mut self) {
        self.running = false;
        self.call = None;
    }

    /// Shards this process reads right now.
    pub fn readable(&self, now: i64) -> ShardSet {
        if self.running {
            self.membership.readable(at(now))
        } else {
            ShardSet::new()
        }
    }

    pub fn reachable(&self, replica: usize, now: i64) -> bool {
        self.partitioned_until <= now && self.cut_from.is_none_or(|(r, u)| r != replica || u <= now)
    }

    /// A graceful leave; `temporary`: a static consumer's restart (epoch -2, its target stays reserved).
    pub fn begin_leave(&mut self, now: i64, temporary: bool) {
        if self.leaving || !self.running {
            return;
        }
        if temporary {
            self.membership.begin_temporary_leave();
        } else {
            self.membership.begin_leave();
        }
        if self.membership.left() {
            self.crash(); // never joined: nothing to give back
            return;
        }
        self.leaving = true;
        self.track_drains();
        self.next_heartbeat = now;
    }

    /// After the membership changed: Python-style work stops at once; Spring-style work on a shard given
    /// up lasts `drain_rounds` requests.
    fn track_drains(&mut self) {
        match self.style {
            Style::Python => self.membership.drained_all(),
            Style::Spring => {
                let draining = self.membership.draining();
                self.drain_left.retain(|s, _| draining.contains(s));
                for &s in draining {
                    self.drain_left.entry(s).or_insert(self.drain_rounds);
                }
            }
        }
    }

    fn request(&mut self) -> HeartbeatRequest {
        let mut req = self.membership.request(
            Outgoing {
                capacity: RuntimeConsumerCapacity {
                    runtime_max_concurrency: 1,
                    available_concurrency: 1,
                },
                request_id_suffix: &self.request_tag,
                acked_at: None,
            },
            |_| LocalShard::default(),
        );
        match self.style {
            Style::Python => req.revoking_shards.clear(),
            Style::Spring => {
                // This request reported each of them DRAINING once more.
                for n in self.drain_left.values_mut() {
                    *n = n.saturating_sub(1);
                }
                let done: Vec<u32> = self
                    .drain_left
                    .iter()
                    .filter(|(_, n)| **n == 0)
                    .map(|(s, _)| *s)
                    .collect();
                for s in done {
                    self.drain_left.remove(&s);
                    self.membership.drained(s);
                }
            }
        }
        req
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
                "t={now} {} p{} -> r{} {} epoch {} owned {:?} draining {:?} released {:?}",
                self.id,
                self.process,
                self.sticky,
                req.request_id,
                req.member_epoch,
                self.membership.owned(),
                self.drain_left,
                self.membership.released()
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
        // As the SDK does: the answer's interval (shorter when the coordinator asks for an acknowledgement).
        self.next_heartbeat = now + (resp.heartbeat_interval_ms - jitter).max(1);
        match self.membership.on_response(at(call.sent_at), resp) {
            Applied::Retry => {
                self.next_heartbeat = now + (TIMING.heartbeat_interval_ms / 2).max(50);
            }
            // The leave is complete, or nothing is held for us any more: the process ends.
            Applied::Left => self.crash(),
            Applied::Accepted | Applied::Reset(_) => self.track_drains(),
        }
    }

    /// Ordered streams: the read fence this process honours on `shard`, as the SDK does — the one the
    /// answers set, or the one the shard's routing boundary implies until the answers reflect its switch.
    pub fn fence_for(&self, shard: u32, boundary: Option<&ShardBoundary>) -> Option<String> {
        self.membership.fences().fence_for(shard, boundary)
    }
}
