//! "Member X heartbeats with …": a request built from what the member knows, changed as the test says,
//! decided on the stored group at the mock time (`heartbeat::decide`) and persisted as the coordinator would
//! (nothing, a conditional renewal, or a compare-and-set with its lease conditions). The member then learns
//! from its answer what a member of the SDK's model would.

use super::Context;
use super::answer::{Answered, Persisted};
use rsc_group::heartbeat::{Outcome, decide};
use rsc_protocol::wire::{
    HeartbeatRequest, HeartbeatStatus, RevokeState, RevokingShardReport, RuntimeConsumerCapacity,
    ShardId,
};

/// A heartbeat about to be sent.
pub struct Heartbeat<'c> {
    ctx: &'c mut Context,
    path: String,
    req: HeartbeatRequest,
}

impl<'c> Heartbeat<'c> {
    pub(super) fn new(ctx: &'c mut Context, member: &str) -> Self {
        let view = ctx.views.get(member).cloned().unwrap_or_default();
        let req = HeartbeatRequest {
            protocol_version: 1,
            request_id: ctx.request_id(member),
            member_id: member.to_owned(),
            member_name: None,
            client_name: None,
            client_version: None,
            group_instance_id: view.instance.clone(),
            member_epoch: view.epoch,
            metadata_version: view.metadata_version,
            runtime_consumer_capacity: RuntimeConsumerCapacity {
                runtime_max_concurrency: 1,
                available_concurrency: 1,
            },
            owned_shards: view.assigned.iter().map(|s| ShardId::new(*s)).collect(),
            revoking_shards: Vec::new(),
            shard_progress: Vec::new(),
        };
        Heartbeat {
            ctx,
            path: member.to_owned(),
            req,
        }
    }

    /// A join: epoch 0, owning nothing.
    pub fn joins(mut self) -> Self {
        self.req.member_epoch = 0;
        self.req.owned_shards.clear();
        self
    }

    /// A static member's join with `groupInstanceId` `instance`.
    pub fn joins_as(self, instance: &str) -> Self {
        let mut hb = self.joins();
        hb.req.group_instance_id = Some(instance.to_owned());
        hb
    }

    pub fn epoch(mut self, epoch: i64) -> Self {
        self.req.member_epoch = epoch;
        self
    }

    pub fn metadata_version(mut self, v: i64) -> Self {
        self.req.metadata_version = v;
        self
    }

    pub fn protocol_version(mut self, v: i64) -> Self {
        self.req.protocol_version = v;
        self
    }

    /// The request names this member in its body while the path names another.
    pub fn body_member(mut self, member: &str) -> Self {
        self.req.member_id = member.to_owned();
        self
    }

    /// Reports owning exactly `shards`.
    pub fn owning(mut self, shards: &[u32]) -> Self {
        self.req.owned_shards = shards.iter().map(|s| ShardId::new(*s)).collect();
        self
    }

    /// Reports `shards` as still being given up (DRAINING, one record in flight).
    pub fn draining(mut self, shards: &[u32]) -> Self {
        self.req
            .revoking_shards
            .extend(shards.iter().map(|s| RevokingShardReport {
                shard: ShardId::new(*s),
                state: RevokeState::Draining,
                in_flight: 1,
                acked_at: None,
            }));
        self
    }

    /// A graceful leave (epoch -1), owning nothing.
    pub fn leaves(mut self) -> Self {
        self.req.member_epoch = -1;
        self.req.owned_shards.clear();
        self
    }

    /// A static member's temporary leave (epoch -2).
    pub fn leaves_temporarily(mut self) -> Self {
        self.req.member_epoch = -2;
        self.req.owned_shards.clear();
        self
    }

    /// Sends it: decided on the stored group at the mock time and persisted as the coordinator would.
    pub fn send(self) -> Answered {
        let Heartbeat { ctx, path, req } = self;
        let writes = ctx.writes;
        let d = decide(Some(&ctx.group), &path, &req, ctx.now, &ctx.timing);
        let persisted = match &d.outcome {
            Outcome::Rejected { .. } => Persisted::Nothing,
            Outcome::Steady if ctx.renew(&req.member_id) => Persisted::Renewal,
            Outcome::Steady => Persisted::LeaseLapsed,
            Outcome::Write(t) if ctx.commit(t) => Persisted::Written,
            Outcome::Write(_) => Persisted::ConditionFailed,
        };
        let sent = matches!(
            persisted,
            Persisted::Nothing | Persisted::Renewal | Persisted::Written
        );
        if sent {
            learn(ctx, &req, &d.response);
        }
        Answered {
            request: req,
            response: d.response,
            signals: d.signals,
            persisted,
            wrote: ctx.writes > writes,
            stored: ctx.group.clone(),
        }
    }
}

/// What the member makes of its answer (the SDK's model, simplified: it reads what it is assigned).
fn learn(ctx: &mut Context, req: &HeartbeatRequest, resp: &rsc_protocol::wire::HeartbeatResponse) {
    let id = &req.member_id;
    match resp.status {
        HeartbeatStatus::Ok if req.member_epoch < 0 => {
            ctx.views.remove(id);
        }
        HeartbeatStatus::Ok | HeartbeatStatus::SyncMetadata | HeartbeatStatus::RevokePending => {
            let view = ctx.views.entry(id.clone()).or_default();
            view.epoch = resp.member_epoch;
            view.metadata_version = resp.metadata_version;
            view.assigned = resp
                .assignment
                .assigned_shards
                .iter()
                .map(|s| s.shard_index)
                .collect();
            view.instance.clone_from(&req.group_instance_id);
        }
        HeartbeatStatus::FencedMemberEpoch | HeartbeatStatus::UnknownMemberId => {
            // It rejoins with epoch 0, owning nothing.
            if let Some(view) = ctx.views.get_mut(id) {
                view.epoch = 0;
                view.assigned.clear();
            }
        }
        _ => {}
    }
}
