//! `AdminClient`: typed calls of the coordinator's admin API (create a stream or group, scale, delete a
//! group) and the reads a tool needs to plan them (groups of a stream, one group, a migration, the session).
//!
//! Every mutation carries a fresh `X-Request-Id` (`<prefix>-<uuid>`), the client's `requestedBy` and the
//! caller's `reason`, as the runbook asks of automated changes, and returns the request id with its answer
//! or its error, so the caller can log it and find the audit record later
//! (`GET /coord/v1/monitoring/audit`). It is typed on top of [`CoordinatorClient::send_json`]: fail-over
//! between replica URLs and the same authentication.

use crate::coordinator::CoordinatorClient;
use crate::error::ClientError;
use reqwest::Method;
use rsc_protocol::existing_records::ExistingRecords;
use rsc_protocol::wire::{
    CreateStreamRequest, CreateStreamResponse, DeleteGroupRequest, GroupResponse, ScaleRequest,
};
use serde::{Deserialize, Serialize};
use std::fmt;

/// An admin client: the coordinator client plus who asks (`requestedBy`) and how request ids are named.
#[derive(Clone)]
pub struct AdminClient {
    coord: CoordinatorClient,
    requested_by: String,
    request_id_prefix: String,
}

/// A mutation that the coordinator accepted, with the request id it was sent under.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied<T> {
    /// The `X-Request-Id` the mutation was sent with: the key of its audit record.
    pub request_id: String,
    /// The coordinator's answer.
    pub answer: T,
}

/// A mutation that failed, with the request id it was sent under (absent from the audit only if the
/// request never reached a coordinator, or was refused before its handler).
#[derive(Debug)]
pub struct AdminError {
    /// The `X-Request-Id` the mutation was sent with.
    pub request_id: String,
    /// What went wrong.
    pub error: ClientError,
}

impl fmt::Display for AdminError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (request id {})", self.error, self.request_id)
    }
}

impl std::error::Error for AdminError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The answer to a scale (`POST /coord/v1/streams/{p}/scale`, 202).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleAnswer {
    /// The stream scaled.
    pub stream_prefix: String,
    /// The shard count requested.
    pub target_shard_count: u32,
    /// Every group of the stream, by name.
    #[serde(default)]
    pub affected_consumer_groups: Vec<String>,
    /// One migration per group, in the order of `affected_consumer_groups`.
    #[serde(default)]
    pub migrations: Vec<Migration>,
}

/// A migration as the scale answer and the migration view show it (only the fields tools act on).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Migration {
    /// The group the migration is of (absent where the answer is about one group anyway).
    #[serde(default)]
    pub consumer_group: Option<String>,
    /// The migration's id (`reshard-<uuid>`).
    pub resharding_id: String,
    /// The shard count before the scale.
    pub from_shard_count: u32,
    /// The shard count the scale moves to.
    pub to_shard_count: u32,
    /// `PREPARING`, `ACTIVE`, `DRAINING`, `DEPRECATED`, `ROLLED_BACK`, `FORCE_COMPLETED` or `ABORTED`.
    pub state: String,
    /// The stream's routing shard count (migration view only).
    #[serde(default)]
    pub routing_shard_count: Option<u32>,
    /// Whether every member of the group reports its target assignment (migration view only).
    #[serde(default)]
    pub consumers_converged: Option<bool>,
    /// Why the migration has not ended in this group, and the ways out (migration view only; none once
    /// it has ended).
    #[serde(default)]
    pub held_by: Option<MigrationHold>,
}

impl Migration {
    /// Routing has switched to the new shard count (the migration left PREPARING).
    pub fn accepted(&self) -> bool {
        self.state != "PREPARING"
    }

    /// The migration has ended in this group (completed, force-completed, rolled back or aborted).
    pub fn ended(&self) -> bool {
        !matches!(self.state.as_str(), "PREPARING" | "ACTIVE" | "DRAINING")
    }
}

/// The migration view's `heldBy`: why a migration waits in one group.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationHold {
    /// The group that holds the migration.
    pub consumer_group: String,
    /// `NO_LIVE_CONSUMER`, `DRAINING`, `DRAIN_GRACE`, `PRODUCER_QUIESCE`, `PREPARING`, `CONSUMERS_CONVERGING`
    /// or `FINISHING`.
    pub reason: String,
    /// The reason in a sentence, naming the group, the records and the shards.
    pub detail: String,
    /// Records of this group on the removed shards that are unread or delivered and unacknowledged.
    #[serde(default)]
    pub unread_records: i64,
    /// What an operator can do about it.
    #[serde(default)]
    pub ways_out: Vec<WayOut>,
}

/// One way out of a held migration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WayOut {
    /// `START_CONSUMER`, `WAIT`, `FORCE_COMPLETE` or `ROLLBACK`.
    pub action: String,
    /// How to do it: an `rsc` command where one exists.
    pub how: String,
    /// What it does to the records.
    pub effect: String,
}

impl fmt::Display for MigrationHold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "held by group {} ({}): {}",
            self.consumer_group, self.reason, self.detail
        )?;
        if !self.ways_out.is_empty() {
            let ways: Vec<String> = self
                .ways_out
                .iter()
                .map(|w| format!("{} ({})", w.how, w.effect))
                .collect();
            write!(f, ". Ways out: {}", ways.join("; "))?;
        }
        Ok(())
    }
}

/// `GET /coord/v1/monitoring/session`: who the credentials are.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// The principal's name.
    #[serde(default)]
    pub username: Option<String>,
    /// The principal's role names, sorted.
    #[serde(default)]
    pub roles: Vec<String>,
}

#[derive(Deserialize)]
struct GroupList {
    groups: Vec<GroupResponse>,
}

impl AdminClient {
    /// An admin client over `coord` whose mutations say `requestedBy: requested_by`. Request ids are named
    /// `rsc-<uuid>` unless [`AdminClient::request_id_prefix`] says otherwise.
    ///
    /// ```
    /// use rsc_client::{AdminClient, CoordinatorClient};
    /// let coord = CoordinatorClient::new(["http://127.0.0.1:8080"]).unwrap();
    /// let admin = AdminClient::new(coord, "deploy-bot").request_id_prefix("deploy");
    /// assert!(admin.new_request_id().starts_with("deploy-"));
    /// assert_eq!(admin.requested_by(), "deploy-bot");
    /// ```
    pub fn new(coord: CoordinatorClient, requested_by: impl Into<String>) -> Self {
        AdminClient {
            coord,
            requested_by: requested_by.into(),
            request_id_prefix: "rsc".into(),
        }
    }

    /// Names request ids `<prefix>-<uuid>`.
    pub fn request_id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.request_id_prefix = prefix.into();
        self
    }

    /// The `requestedBy` sent with every mutation.
    pub fn requested_by(&self) -> &str {
        &self.requested_by
    }

    /// The coordinator client underneath.
    pub fn coordinator(&self) -> &CoordinatorClient {
        &self.coord
    }

    /// A fresh request id (time-ordered, so the ids of one run sort in the order they were sent).
    pub fn new_request_id(&self) -> String {
        format!("{}-{}", self.request_id_prefix, uuid::Uuid::now_v7())
    }

    /// Who the credentials are (`GET /coord/v1/monitoring/session`, READ): a cheap check of credentials.
    pub async fn session(&self) -> Result<Session, ClientError> {
        self.get(&["coord", "v1", "monitoring", "session"]).await
    }

    /// `POST /coord/v1/streams/{p}`: the stream and its default consumer group (named `{p}`).
    pub async fn create_stream(
        &self,
        stream_prefix: &str,
        shard_count: u32,
        reason: &str,
    ) -> Result<Applied<CreateStreamResponse>, AdminError> {
        self.create_stream_over(stream_prefix, shard_count, reason, None)
            .await
    }

    /// `POST /coord/v1/streams/{p}` with `existingRecords`: what to do with shard streams an earlier stream
    /// of the prefix left in Redis (`None`: the coordinator's default, `REFUSE`).
    pub async fn create_stream_over(
        &self,
        stream_prefix: &str,
        shard_count: u32,
        reason: &str,
        existing_records: Option<ExistingRecords>,
    ) -> Result<Applied<CreateStreamResponse>, AdminError> {
        let body = CreateStreamRequest {
            initial_shard_count: Some(i64::from(shard_count)),
            ordering: None,
            requested_by: Some(self.requested_by.clone()),
            reason: Some(reason.to_owned()),
            existing_records,
        };
        self.mutate(
            Method::POST,
            &["coord", "v1", "streams", stream_prefix],
            &body,
        )
        .await
    }

    /// `POST /coord/v1/streams/{p}/groups/{g}`: a further consumer group (creating the stream when it does
    /// not exist; `shard_count` must then be given, or the coordinator's default is used).
    pub async fn create_group(
        &self,
        stream_prefix: &str,
        consumer_group: &str,
        shard_count: Option<u32>,
        reason: &str,
    ) -> Result<Applied<GroupResponse>, AdminError> {
        let body = CreateStreamRequest {
            initial_shard_count: shard_count.map(i64::from),
            ordering: None,
            requested_by: Some(self.requested_by.clone()),
            reason: Some(reason.to_owned()),
            existing_records: None,
        };
        let path = group_path(stream_prefix, consumer_group);
        self.mutate(Method::POST, &path, &body).await
    }

    /// `DELETE /coord/v1/streams/{p}/groups/{g}`: the group's coordinator metadata (never its streams);
    /// `force` deletes it while members are active. Answers the group as it was.
    pub async fn delete_group(
        &self,
        stream_prefix: &str,
        consumer_group: &str,
        force: bool,
        reason: &str,
    ) -> Result<Applied<GroupResponse>, AdminError> {
        let body = DeleteGroupRequest {
            requested_by: Some(self.requested_by.clone()),
            reason: Some(reason.to_owned()),
            force: force.then_some(true),
        };
        let path = group_path(stream_prefix, consumer_group);
        self.mutate(Method::DELETE, &path, &body).await
    }

    /// `POST /coord/v1/streams/{p}/scale`: every group of the stream moves to `target` shards.
    pub async fn scale_stream(
        &self,
        stream_prefix: &str,
        target: u32,
        reason: &str,
    ) -> Result<Applied<ScaleAnswer>, AdminError> {
        self.scale_stream_quiesced(stream_prefix, target, reason, None)
            .await
    }

    /// [`AdminClient::scale_stream`] with producer quiesce: routing switches once every producer seen in the
    /// coordinator's refresh window reported `quiesced`, or after `quiesce_timeout` (None: no quiesce).
    pub async fn scale_stream_quiesced(
        &self,
        stream_prefix: &str,
        target: u32,
        reason: &str,
        quiesce_timeout: Option<std::time::Duration>,
    ) -> Result<Applied<ScaleAnswer>, AdminError> {
        let body = ScaleRequest {
            target_shard_count: Some(i64::from(target)),
            requested_by: Some(self.requested_by.clone()),
            reason: Some(reason.to_owned()),
            deprecated_after: None,
            producer_quiesce: quiesce_timeout.map(|t| {
                rsc_protocol::wire::quiesce::ProducerQuiesceRequest {
                    timeout_ms: Some(i64::try_from(t.as_millis()).unwrap_or(i64::MAX)),
                }
            }),
        };
        self.mutate(
            Method::POST,
            &["coord", "v1", "streams", stream_prefix, "scale"],
            &body,
        )
        .await
    }

    /// `POST /coord/v1/streams/{p}/ordering` (rsc's addition): `KEY` keeps per-key order across scales.
    pub async fn set_stream_ordering(
        &self,
        stream_prefix: &str,
        ordering: rsc_protocol::ordering::Ordering,
        reason: &str,
    ) -> Result<Applied<rsc_protocol::wire::OrderingResponse>, AdminError> {
        let body = rsc_protocol::wire::OrderingRequest {
            ordering: Some(ordering),
            requested_by: Some(self.requested_by.clone()),
            reason: Some(reason.to_owned()),
        };
        self.mutate(
            Method::POST,
            &["coord", "v1", "streams", stream_prefix, "ordering"],
            &body,
        )
        .await
    }

    /// `POST …/groups/{g}/offsets/reset` (rsc's addition): moves the group's position on its shard streams
    /// as `request` says (`to` with its `value` or `shift`, `shards`, `dryRun`, `force`; its `requestedBy` is
    /// this client's and its `reason` is `reason`, which the coordinator requires); with `dryRun` only the
    /// plan comes back.
    pub async fn reset_offsets(
        &self,
        stream_prefix: &str,
        consumer_group: &str,
        request: &rsc_protocol::wire::offsets::OffsetResetRequest,
        reason: &str,
    ) -> Result<Applied<rsc_protocol::wire::offsets::OffsetResetResponse>, AdminError> {
        let body = rsc_protocol::wire::offsets::OffsetResetRequest {
            requested_by: Some(self.requested_by.clone()),
            reason: Some(reason.to_owned()),
            ..request.clone()
        };
        let mut path = group_path(stream_prefix, consumer_group);
        path.extend(["offsets", "reset"]);
        self.mutate(Method::POST, &path, &body).await
    }

    /// `GET /coord/v1/streams/{p}/groups/{g}`; `Ok(None)` when the coordinator answers 404.
    pub async fn group(
        &self,
        stream_prefix: &str,
        consumer_group: &str,
    ) -> Result<Option<GroupResponse>, ClientError> {
        not_found_is_none(self.get(&group_path(stream_prefix, consumer_group)).await)
    }

    /// The live groups of one stream (from `GET /coord/v1/monitoring/groups`), sorted by group name. Empty
    /// when the stream does not exist: a stream exists exactly while it has a group.
    pub async fn stream_groups(
        &self,
        stream_prefix: &str,
    ) -> Result<Vec<GroupResponse>, ClientError> {
        let list: GroupList = self.get(&["coord", "v1", "monitoring", "groups"]).await?;
        let mut groups: Vec<GroupResponse> = list
            .groups
            .into_iter()
            .filter(|g| g.stream_prefix == stream_prefix)
            .collect();
        groups.sort_by(|a, b| a.consumer_group.cmp(&b.consumer_group));
        Ok(groups)
    }

    /// `GET /coord/v1/streams/{p}/describe`: the stream as a whole (shards, groups side by side, rates);
    /// `Ok(None)` when the coordinator answers 404 (the stream has no live group).
    pub async fn describe_stream(
        &self,
        stream_prefix: &str,
    ) -> Result<Option<rsc_protocol::wire::describe::StreamDescribeResponse>, ClientError> {
        not_found_is_none(
            self.get(&["coord", "v1", "streams", stream_prefix, "describe"])
                .await,
        )
    }

    /// `GET …/groups/{g}/migrations/{id}`: one migration with its routing count and convergence.
    pub async fn migration(
        &self,
        stream_prefix: &str,
        consumer_group: &str,
        resharding_id: &str,
    ) -> Result<Migration, ClientError> {
        let mut path = group_path(stream_prefix, consumer_group);
        path.extend(["migrations", resharding_id]);
        self.get(&path).await
    }

    async fn get<T: serde::de::DeserializeOwned>(&self, path: &[&str]) -> Result<T, ClientError> {
        let value = self.coord.get_json(path).await?;
        serde_json::from_value(value).map_err(|e| {
            ClientError::Protocol(format!(
                "GET /{} answered a body that does not match the contract: {e}",
                path.join("/")
            ))
        })
    }

    async fn mutate<B: Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: Method,
        path: &[&str],
        body: &B,
    ) -> Result<Applied<T>, AdminError> {
        let request_id = self.new_request_id();
        let result = async {
            let body = serde_json::to_value(body).map_err(|e| {
                ClientError::Protocol(format!("cannot encode the request body: {e}"))
            })?;
            let answer = self
                .coord
                .send_json(method, path, &[], Some(&body), Some(&request_id))
                .await?;
            serde_json::from_value::<T>(answer).map_err(|e| {
                ClientError::Protocol(format!(
                    "/{} answered a body that does not match the contract: {e}",
                    path.join("/")
                ))
            })
        }
        .await;
        match result {
            Ok(answer) => Ok(Applied { request_id, answer }),
            Err(error) => Err(AdminError { request_id, error }),
        }
    }
}

fn group_path<'a>(stream_prefix: &'a str, consumer_group: &'a str) -> Vec<&'a str> {
    vec![
        "coord",
        "v1",
        "streams",
        stream_prefix,
        "groups",
        consumer_group,
    ]
}

fn not_found_is_none<T>(r: Result<T, ClientError>) -> Result<Option<T>, ClientError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(ClientError::Api { status: 404, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_fresh_and_prefixed() {
        let coord = CoordinatorClient::new(["http://127.0.0.1:1"]).unwrap();
        let admin = AdminClient::new(coord, "me").request_id_prefix("terraform");
        let a = admin.new_request_id();
        let b = admin.new_request_id();
        assert_ne!(a, b);
        assert!(a.starts_with("terraform-") && a.len() == "terraform-".len() + 36);
    }

    #[test]
    fn migration_accepted_once_routing_switched() {
        let m: Migration = serde_json::from_value(serde_json::json!({
            "reshardingId": "r", "fromShardCount": 4, "toShardCount": 8, "state": "PREPARING",
            "createdAt": "x", "routingShardCount": 4, "consumersConverged": false
        }))
        .unwrap();
        assert!(!m.accepted());
        let m = Migration {
            state: "ACTIVE".into(),
            ..m
        };
        assert!(m.accepted());
    }

    #[test]
    fn admin_error_names_the_request_id() {
        let e = AdminError {
            request_id: "terraform-1".into(),
            error: ClientError::Api {
                status: 409,
                error_code: Some("GROUP_HAS_ACTIVE_MEMBERS".into()),
                message: "group has active members (m1)".into(),
            },
        };
        assert_eq!(
            e.to_string(),
            "coordinator answered HTTP 409 GROUP_HAS_ACTIVE_MEMBERS: group has active members (m1) \
             (request id terraform-1)"
        );
    }
}
