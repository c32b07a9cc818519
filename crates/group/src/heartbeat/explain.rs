//! The `message` of a heartbeat answer that is not OK: what the decision means for the member and what it
//! should do, in words, written from the same facts the rules decided on (the request, the group as the
//! replica holds it, the timing). Off the hot path: steady and accepted heartbeats are `OK` and carry none.
//!
//! One fact is not the group's: when the group is unknown, whether its stream exists. [`explain`] then
//! returns [`Explanation::GroupUnknown`], the shell reads the stream record once and [`missing_group`]
//! writes the message from what it found.

use crate::model::{Group, HoldReason, MemberState};
use crate::timing::Timing;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatResponse, HeartbeatStatus};
use rsc_protocol::{PROTOCOL_VERSION_MAX, PROTOCOL_VERSION_MIN};

/// The message of an answer, or what the shell must find out first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Explanation {
    /// The message.
    Text(String),
    /// The group is unknown to this replica: look up its stream, then [`missing_group`].
    GroupUnknown,
}

/// What one read of a missing group's stream record found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamLookup {
    /// The stream exists (without this group).
    Exists,
    /// The stream does not exist either.
    Missing,
    /// The record could not be read; the error, in words.
    Failed(String),
}

const REJOIN: &str =
    "stop reading every shard and send the next heartbeat with memberEpoch 0 to rejoin";

/// The message of `response`, the answer to `req` sent for member `member_id` (the path's id) of group
/// `stream`/`group_name`, whose aggregate this replica holds as `group` (None: it holds none).
pub fn explain(
    stream: &str,
    group_name: &str,
    member_id: &str,
    req: &HeartbeatRequest,
    response: &HeartbeatResponse,
    group: Option<&Group>,
    timing: &Timing,
) -> Explanation {
    let ttl = human_ms(timing.member_lease_ttl_ms);
    let m = member_id;
    let member = group.and_then(|g| g.members.get(member_id));
    let text = match response.status {
        HeartbeatStatus::Ok => String::new(),
        HeartbeatStatus::UnsupportedProtocol => format!(
            "protocolVersion {} is not supported: this coordinator speaks {PROTOCOL_VERSION_MIN}..={PROTOCOL_VERSION_MAX}; \
             use a client that speaks it",
            req.protocol_version,
        ),
        HeartbeatStatus::InvalidRequest if req.member_id != member_id => format!(
            "the body's memberId {:?} differs from the path's {m:?}; send the same id in both",
            req.member_id
        ),
        HeartbeatStatus::InvalidRequest if req.member_epoch == -2 => "memberEpoch -2 is not valid without a \
            groupInstanceId: -2 is a static member's temporary leave; send the member's groupInstanceId with it, \
            or leave with -1"
            .to_owned(),
        HeartbeatStatus::InvalidRequest => format!(
            "memberEpoch {} is not valid: send 0 to join, -1 to leave (-2 to leave temporarily, with a \
             groupInstanceId), or the memberEpoch of the last answer",
            req.member_epoch
        ),
        HeartbeatStatus::FencedInstanceId => {
            let instance = req.group_instance_id.as_deref().unwrap_or_default();
            let holder = group
                .and_then(|g| g.active_instance(instance))
                .map(|h| h.member_id.clone());
            match holder {
                Some(h) => format!(
                    "groupInstanceId {instance:?} is held by the live member {h:?}; a second process with the \
                     same static identity is refused: give each process its own groupInstanceId, or wait until \
                     {h:?} leaves or its lease ({ttl}) lapses (then this member's join takes over its reserved \
                     shards); nothing was stored"
                ),
                None => format!(
                    "groupInstanceId {instance:?} is held by another live member; give each process its own \
                     groupInstanceId, or join again once that member has left or its lease ({ttl}) has lapsed"
                ),
            }
        }
        HeartbeatStatus::UnknownMemberId => match group {
            Some(_) => format!(
                "member {m:?} is not in group {stream}/{group_name} (it was never there with this epoch, it was \
                 forgotten after it expired or left, or the group was recreated); {REJOIN}"
            ),
            None => return Explanation::GroupUnknown,
        },
        HeartbeatStatus::FencedMemberEpoch => match member.map(|mm| mm.state) {
            Some(MemberState::Expired) => format!(
                "member {m:?} expired: no heartbeat of it was accepted for longer than the member lease \
                 ({ttl}), so its shards were released to other members; {REJOIN}"
            ),
            Some(MemberState::Fenced) => {
                let why = group
                    .and_then(|g| g.holds.iter().find(|h| h.member_id == m))
                    .map(|h| &h.reason);
                let why = match why {
                    Some(HoldReason::RebalanceTimeout) => format!(
                        "it did not release the shards taken from it within the rebalance timeout ({})",
                        human_ms(timing.rebalance_timeout_ms)
                    ),
                    Some(HoldReason::OwnershipReportOutsideGrants) => {
                        "it reported reading shards it had not been given".to_owned()
                    }
                    _ => "it did not release revoked shards in time, or reported shards it had not been \
                          given"
                        .to_owned(),
                };
                format!("member {m:?} was fenced: {why}; {REJOIN}")
            }
            Some(MemberState::Leaving) if req.member_epoch >= 0 => format!(
                "member {m:?} has left the group (its memberEpoch -1 was accepted); {REJOIN}"
            ),
            Some(_) if req.member_epoch < 0 => format!(
                "this leave (memberEpoch {}, metadataVersion {}) is older than the current incarnation of \
                 member {m:?}: it came from an earlier process with this id and was ignored",
                req.member_epoch, req.metadata_version
            ),
            Some(_) => format!(
                "memberEpoch {} belongs to an earlier incarnation of member {m:?}: a process joined with \
                 this id since; {REJOIN} (give every process its own member id)",
                req.member_epoch
            ),
            None => format!("member {m:?} was fenced; {REJOIN}"),
        },
        HeartbeatStatus::Retry => format!(
            "the coordinator could not complete this heartbeat now (Redis unavailable, or the group kept \
             changing); nothing changed and the member's lease was not renewed: keep only the shards already \
             being read, stop them if no heartbeat is accepted within the lease ({ttl}), and retry after \
             heartbeatIntervalMs"
        ),
        HeartbeatStatus::SyncMetadata => format!(
            "the member reported metadataVersion {} / memberEpoch {}, ahead of what Redis holds \
             (metadataVersion {}): the group's metadata appears to have rolled back and is being corrected; \
             keep reading only the assignedShards already being read, start none, and report \
             metadataVersion {} next",
            req.metadata_version, req.member_epoch, response.metadata_version, response.metadata_version
        ),
        HeartbeatStatus::RevokePending => "a metadata-correction round is open: shards that move must be \
            released first; keep reading only assignedShards, start no new shard, and keep heartbeating"
            .to_owned(),
    };
    Explanation::Text(text)
}

/// UNKNOWN_MEMBER_ID because group `g` of stream `p` does not exist: whether the stream does (`stream`, one
/// read of its record), and how to create what is missing (an admin call; a heartbeat never creates
/// anything).
pub fn missing_group(p: &str, g: &str, stream: &StreamLookup) -> String {
    match stream {
        StreamLookup::Exists => format!(
            "stream {p:?} exists but has no consumer group {g:?}; an admin creates it with \
             POST /coord/v1/streams/{p}/groups/{g}, then members join with memberEpoch 0"
        ),
        StreamLookup::Missing if p == g => format!(
            "stream {p:?} does not exist; an admin creates it with POST /coord/v1/streams/{p} (its first \
             consumer group is named {p:?}), then members join with memberEpoch 0"
        ),
        StreamLookup::Missing => format!(
            "stream {p:?} does not exist; an admin creates it with its consumer group {g:?} with \
             POST /coord/v1/streams/{p}/groups/{g}, then members join with memberEpoch 0"
        ),
        StreamLookup::Failed(e) => format!(
            "consumer group {p}/{g} could not be read ({e}); a heartbeat never creates a group: check that \
             it exists (GET /coord/v1/streams/{p}/groups/{g})"
        ),
    }
}

/// The message of the answer to a heartbeat of group `p`/`g`, whose metadata cannot be read (`why`).
pub fn fails_closed(p: &str, g: &str, why: &str) -> String {
    format!(
        "group {p}/{g} fails closed: {why}; nothing is rebuilt from heartbeats, so keep retrying \
         with memberEpoch 0 until an operator repairs it"
    )
}

/// A duration in milliseconds as people write it (`15s`, `1m 30s`, `500ms`).
fn human_ms(ms: i64) -> String {
    humantime::format_duration(std::time::Duration::from_millis(ms.max(0).unsigned_abs()))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::{Explanation, StreamLookup, explain, missing_group};
    use crate::heartbeat::rejected_response;
    use crate::model::Group;
    use crate::timing::Timing;
    use rsc_protocol::wire::{HeartbeatRequest, HeartbeatStatus, RuntimeConsumerCapacity};

    fn req(member: &str, epoch: i64) -> HeartbeatRequest {
        HeartbeatRequest {
            protocol_version: rsc_protocol::PROTOCOL_VERSION_MAX,
            request_id: "r".to_owned(),
            member_id: member.to_owned(),
            member_name: None,
            client_name: None,
            client_version: None,
            group_instance_id: None,
            member_epoch: epoch,
            metadata_version: 0,
            owned_shards: vec![],
            revoking_shards: vec![],
            shard_progress: vec![],
            runtime_consumer_capacity: RuntimeConsumerCapacity {
                runtime_max_concurrency: 1,
                available_concurrency: 1,
            },
        }
    }

    #[test]
    fn an_unknown_group_is_explained_after_its_stream_is_looked_up() {
        let timing = Timing::default();
        let r = req("m", 3);
        let answer = rejected_response(&r, &timing, HeartbeatStatus::UnknownMemberId);
        assert_eq!(
            explain("o", "g", "m", &r, &answer, None, &timing),
            Explanation::GroupUnknown
        );
        assert_eq!(
            missing_group("o", "o", &StreamLookup::Missing),
            "stream \"o\" does not exist; an admin creates it with POST /coord/v1/streams/o (its first consumer \
             group is named \"o\"), then members join with memberEpoch 0"
        );
        let group = Group::new("o", "g", 2, 0, "life");
        let Explanation::Text(text) = explain("o", "g", "m", &r, &answer, Some(&group), &timing)
        else {
            panic!("a known group is explained at once");
        };
        assert!(
            text.starts_with("member \"m\" is not in group o/g ("),
            "{text}"
        );
    }

    #[test]
    fn a_retry_names_the_lease_in_words() {
        let timing = Timing::default();
        let r = req("m", 3);
        let answer = rejected_response(&r, &timing, HeartbeatStatus::Retry);
        let Explanation::Text(text) = explain("o", "g", "m", &r, &answer, None, &timing) else {
            panic!("RETRY needs no lookup");
        };
        let lease = humantime::format_duration(std::time::Duration::from_millis(
            timing.member_lease_ttl_ms.unsigned_abs(),
        ));
        assert!(
            text.contains(&format!("within the lease ({lease})")),
            "{text}"
        );
    }
}
