//! How the managed consumer uses the member protocol model, [`Membership`] (crate `rsc-member`, public
//! here as `rsc_client::Membership`): the member's name is its id, no shard counts as readable within
//! the read loops' own margin of the lease end ([`READ_LEASE_MARGIN`]), and every heartbeat carries a
//! random request-id tag (ids stay unique across restarts of one member id) and `ackedAt` from the wall
//! clock. A static member (`ConsumerConfig::group_instance_id`) sends its `groupInstanceId` with every
//! heartbeat and leaves temporarily (epoch -2) on shutdown. The protocol itself — statuses, reports, lease — is all in `Membership`.

use super::config::READ_LEASE_MARGIN;
use rsc_member::{LocalShard, Membership, Outgoing};
use rsc_protocol::wire::{HeartbeatRequest, RuntimeConsumerCapacity};
use std::time::Duration;

/// The membership of one managed-consumer member.
/// `group_instance_id`: the member's static identity, if it has one (`ConsumerConfig::group_instance_id`).
pub(crate) fn new_membership(
    member_id: &str,
    lease: Duration,
    group_instance_id: Option<&str>,
) -> Membership {
    let m = Membership::new(member_id, lease)
        .with_member_name(member_id)
        .with_client("rsc-client", env!("CARGO_PKG_VERSION"))
        .with_read_margin(READ_LEASE_MARGIN);
    match group_instance_id {
        Some(id) => m.with_group_instance_id(id),
        None => m,
    }
}

/// The next heartbeat of `m`. `local(shard)` gives the runtime's in-flight count and progress.
pub(crate) fn request(
    m: &mut Membership,
    capacity: RuntimeConsumerCapacity,
    local: impl Fn(u32) -> LocalShard,
) -> HeartbeatRequest {
    let tag = format!("-{}", short_random());
    let acked_at = now_iso();
    m.request(
        Outgoing {
            capacity,
            request_id_suffix: &tag,
            acked_at: Some(&acked_at),
        },
        local,
    )
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
