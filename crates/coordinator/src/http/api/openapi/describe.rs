//! Each operation's `description`: what it does (its summary, and more where there is more to say), who may
//! call it (its access level from the route table, with the roles that grant it, and its audit action) and
//! which error codes each of its error statuses carries (from the error catalogue,
//! `rsc_protocol::errors::ErrorCode`), so a reader of the document or of a generated client needs no other
//! page to know when a call is refused.

use super::Access;
use super::operations::Operation;
use super::{RouteSpec, access_name};
use rsc_protocol::errors::{ErrorCode, http_status_name};

/// The description of `spec`'s operation, answering the error statuses `statuses`.
pub fn description(spec: &RouteSpec, op: &Operation, statuses: &[u16]) -> String {
    let mut out = format!("{}.", op.summary.trim_end_matches('.'));
    if let Some(more) = details(spec.operation_id) {
        out.push(' ');
        out.push_str(more);
    }
    out.push_str(&format!(
        "\n\n**Access:** `{}` — {}.",
        access_name(spec.access),
        who(spec.access)
    ));
    if let Some(action) = spec.audit_action {
        out.push_str(&format!(" Audited as `{action}`."));
    }
    if statuses.is_empty() {
        out.push_str("\n\n**Errors:** none of its own.");
        return out;
    }
    let errors: Vec<String> = statuses
        .iter()
        .map(|&status| {
            if let Some((_, schema, _)) = op.own_error_bodies.iter().find(|(c, _, _)| *c == status)
            {
                return format!("{status} (its `{schema}` body)");
            }
            let codes: Vec<String> = codes(spec.operation_id, spec.access, status)
                .iter()
                .map(|c| format!("`{}`", c.as_str()))
                .collect();
            if codes.is_empty() {
                format!("{status} {}", http_status_name(status))
            } else {
                format!("{status} {}", codes.join(", "))
            }
        })
        .collect();
    out.push_str(&format!("\n\n**Errors:** {}.", errors.join("; ")));
    out
}

/// Who may call an operation of `access`.
fn who(access: Access) -> &'static str {
    match access {
        Access::Public => "anyone, without credentials",
        Access::Authenticated => "any authenticated caller, whatever its roles",
        Access::Member => {
            "a caller with MEMBER (or ADMIN) when `coordinator.api.authenticate-members` is on; anyone otherwise"
        }
        other => crate::security::guard::needed_roles(other),
    }
}

/// The error codes operation `operation_id` of `access` may answer with `status`: the catalogue's codes of
/// that status, without those only a member's heartbeat can meet, or only the offset reset.
fn codes(operation_id: &str, access: Access, status: u16) -> Vec<ErrorCode> {
    ErrorCode::ALL
        .iter()
        .copied()
        .filter(|c| c.http_status() == status)
        .filter(|c| *c != ErrorCode::OffsetResetIncomplete || operation_id == "resetGroupOffsets")
        .filter(|c| {
            access == Access::Member
                || !matches!(
                    c,
                    ErrorCode::MemberOwnedByAnotherPrincipal
                        | ErrorCode::InstanceOwnedByAnotherPrincipal
                        | ErrorCode::TooManyMembers
                )
        })
        .collect()
}

/// What there is to say about an operation beyond its summary.
fn details(operation_id: &str) -> Option<&'static str> {
    Some(match operation_id {
        "createStreamGroup" => {
            "Creates the shard streams `<streamPrefix>:0…` with the Redis consumer group on each, and the \
             group's coordinator metadata. `existingRecords` says what to do with shard streams an earlier \
             stream of the prefix left."
        }
        "createCoordinatorGroup" => {
            "The compatibility create: the group reads the stream's existing shards from their beginning."
        }
        "deleteCoordinatorGroup" => {
            "Removes the group's coordinator metadata, never its streams; refused while members are active \
             unless `force`."
        }
        "resetGroupOffsets" => {
            "Moves the group's last-delivered id on each shard stream (or the `shards` listed); refused while \
             the group has live members. Pending entries up to a forward position are acknowledged, kept on a \
             backward one. `dryRun` answers the plan without changing anything. A reset that stops after \
             moving some shards answers 409 `OFFSET_RESET_INCOMPLETE` with `incompleteReset` (the shards \
             moved, from which id to which, the one in doubt, those not moved); nothing is rolled back."
        }
        "scaleStreamShards" | "startGroupResharding" => {
            "Starts a resharding migration of the stream to `targetShardCount` shards (0 drains and removes \
             every shard); with `producerQuiesce` routing switches once producers have stopped publishing or \
             at its timeout."
        }
        "rollbackReshardingMigration" => {
            "Returns routing to the shards before the scale, while the migration allows it."
        }
        "forceCompleteReshardingMigration" => {
            "Ends a migration that waits on members or records that will not come."
        }
        "sendConsumerHeartbeat" => {
            "The member protocol: reports what the member owns and revokes, and answers what it may read. \
             Protocol outcomes are statuses of a 200 answer; only a malformed request is a 4xx."
        }
        "getProducerRoutingMetadata" => {
            "The shard count and every shard's stream key: a producer hashes a record's key over them."
        }
        "getStreamShardMessages" => {
            "Walks a shard stream's records with an exclusive cursor; `fromId`/`fromTime` jump, `field`/\
             `search` keep matching records within a bounded scan (`scanLimit` records, `scanMaxBytes` bytes), \
             and the answer says how much was scanned."
        }
        "getMergedStreamMessages" => {
            "Each shard reads at most one page; the cursor holds every shard's position. `field`/`search` \
             scan every shard in time order within one shared bound (`scanLimit` records, `scanMaxBytes` \
             bytes in total); the answer says how much was scanned and the cursor holds each shard's last \
             record scanned."
        }
        "recreateGroupLifecycle" => {
            "Starts the group again as a new lifecycle above every version clients may have seen (after \
             metadata was lost or rolled back)."
        }
        "dismissRollbackSuspicion" => {
            "Clears a metadata-rollback suspicion an operator has reviewed, unless new evidence arrived."
        }
        "loginCoordinatorApi" => "Answers a bearer token for the user's username and password.",
        "listAuditRecords" => {
            "Records of a principal scoped to some streams are limited to those streams."
        }
        _ => return None,
    })
}
