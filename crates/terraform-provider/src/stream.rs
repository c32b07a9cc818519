//! `rsc_stream`: a stream and its shard count. Create → `POST /coord/v1/streams/{p}` (which also creates
//! the stream's default consumer group, named like the prefix); a change of `shard_count` → an online scale
//! in place (both directions: rsc scales in without losing records), waiting until the migration is accepted,
//! or converged with `wait_for_convergence`; read → the stream's groups (a stream exists while it has one);
//! delete → the default group, refused while other groups exist (Terraform destroys the
//! `rsc_consumer_group`s that reference the stream first); the shard streams and their records stay in Redis,
//! and a later create of the prefix chooses with `existing_records` (REFUSE, ADOPT, PURGE) what to do with
//! them. Import with the prefix (a stream that has groups; records alone are not a stream).

use crate::api::{Api, Shared};
use crate::count::Count;
use crate::crud;
use crate::diag;
use crate::managed::{self, Managed, Planned};
use crate::schema::{
    Timeouts, attr, block, known, optional_computed_bool, optional_string, required_string,
    settle_flag, timeouts_block,
};
use crate::wait;
use async_trait::async_trait;
use rsc_protocol::existing_records::ExistingRecords;
use rsc_protocol::validate;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tf_provider::schema::{AttributeConstraint, AttributeType, Schema};
use tf_provider::value::{self, Value, ValueEmpty};
use tf_provider::{AttributePath, Diagnostics, Resource};

/// Default wait for a scale to be accepted (and converged when asked).
const UPDATE_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// The resource's state and configuration.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StreamState {
    #[serde(default)]
    pub id: Value<String>,
    #[serde(default)]
    pub stream_prefix: Value<String>,
    #[serde(default)]
    pub shard_count: Value<Count>,
    #[serde(default)]
    pub reason: Value<String>,
    #[serde(default)]
    pub wait_for_convergence: Value<bool>,
    #[serde(default)]
    pub force_destroy: Value<bool>,
    #[serde(default)]
    pub existing_records: Value<String>,
    #[serde(default, with = "value::serde_as_vec")]
    pub timeouts: Value<Timeouts>,
}

impl StreamState {
    fn prefix(&self) -> &str {
        known(&self.stream_prefix).unwrap_or("")
    }

    fn update_timeout(&self) -> Result<Duration, String> {
        let own = match &self.timeouts {
            Value::Value(t) => known(&t.update).map(str::to_owned),
            _ => None,
        };
        wait::timeout(own.as_deref(), UPDATE_TIMEOUT)
    }
}

/// Checks a configuration the way the coordinator would, so that bad values fail at plan time.
pub fn check_prefix(diags: &mut Diagnostics, prefix: &Value<String>) {
    if let Some(p) = known(prefix)
        && let Err(e) = validate::validate_stream_prefix(p)
    {
        diag::invalid(diags, "stream_prefix", &e);
    }
}

fn check_reason(diags: &mut Diagnostics, reason: &Value<String>) {
    if let Some(r) = known(reason)
        && let Err(e) = validate::validate_text("reason", r, true)
    {
        diag::invalid(diags, "reason", &e);
    }
}

/// The checks of a configuration that can only fail one way: at plan time (values from variables are only
/// known then), before anything is sent.
fn check_stream(diags: &mut Diagnostics, config: &StreamState) {
    check_prefix(diags, &config.stream_prefix);
    if let Value::Value(n) = config.shard_count {
        match n.whole("shard_count") {
            Ok(n) => {
                if let Err(e) = validate::validate_shard_count("initialShardCount", n, 1) {
                    diag::invalid(diags, "shard_count", &e);
                }
            }
            Err(e) => diag::error(
                diags,
                format!("{}: {e}", diag::INVALID_REQUEST),
                format!("{e}. Nothing was sent."),
                AttributePath::new("shard_count"),
            ),
        }
    }
    check_reason(diags, &config.reason);
    if let Some(choice) = known(&config.existing_records)
        && ExistingRecords::parse(choice).is_none()
    {
        diag::error(
            diags,
            format!("existing_records: {choice:?} is not a choice"),
            "existing_records is REFUSE (the default), ADOPT (keep the records an earlier stream of this prefix \
             left, and consume what was not read) or PURGE (delete them).",
            AttributePath::new("existing_records"),
        );
    }
}

/// The flags with a default (see [`settle_flag`]); `config` is `None` where there is no configuration
/// (read, import).
fn default_flags(state: &mut StreamState, config: Option<&StreamState>) {
    let null = Value::Null;
    settle_flag(
        &mut state.wait_for_convergence,
        config.map_or(&null, |c| &c.wait_for_convergence),
    );
    settle_flag(
        &mut state.force_destroy,
        config.map_or(&null, |c| &c.force_destroy),
    );
}

/// The whole shard count a create or scale sends, or a diagnostic on `shard_count`.
fn known_count(diags: &mut Diagnostics, count: &Value<Count>) -> Option<i64> {
    let Value::Value(n) = count else {
        diag::error(
            diags,
            "shard_count must be known to create or scale a stream",
            "",
            AttributePath::new("shard_count"),
        );
        return None;
    };
    match n.whole("shard_count") {
        Ok(n) => Some(n),
        Err(e) => {
            diag::error(
                diags,
                e,
                "Nothing was sent.",
                AttributePath::new("shard_count"),
            );
            None
        }
    }
}

pub struct StreamResource {
    shared: Shared,
}

impl StreamResource {
    /// Waits for the scale `answer` to settle, reads back what the coordinator routes with, and reports a
    /// wait that failed (naming what holds the migration).
    async fn settle(
        &self,
        diags: &mut Diagnostics,
        api: &Api,
        answer: &rsc_client::admin::ScaleAnswer,
        planned: StreamState,
        private_state: ValueEmpty,
        limit: Duration,
    ) -> Option<(StreamState, ValueEmpty)> {
        let prefix = planned.prefix().to_owned();
        let converge = planned.wait_for_convergence == Value::Value(true);
        let waited = wait::scale_settled(api, answer, converge, limit).await;
        let mut state = planned;
        // Read back what the coordinator now routes with, whatever the wait said.
        match refresh(api, &mut state).await {
            Ok(_) => {}
            Err(e) => diag::read(
                diags,
                &format!("stream {prefix:?} after the scale"),
                &e,
                "shard_count",
            ),
        }
        if let Err(e) = waited {
            diag::error(
                diags,
                format!("scale of stream {prefix:?} not settled"),
                e,
                AttributePath::new("shard_count"),
            );
        }
        Some((state, private_state))
    }
}

impl StreamResource {
    pub fn new(shared: Shared) -> Self {
        StreamResource { shared }
    }
}

impl Managed for StreamState {
    const NAMING: &'static [&'static str] = &["stream_prefix"];

    fn what(&self) -> String {
        format!("stream {:?}", self.prefix())
    }

    fn read_attribute() -> &'static str {
        "stream_prefix"
    }

    fn differs(&self, other: &Self, _attribute: &str) -> bool {
        self.stream_prefix != other.stream_prefix
    }

    fn check(&self, diags: &mut Diagnostics) {
        check_stream(diags, self);
    }

    fn settle_flags(&mut self, config: Option<&Self>) {
        default_flags(self, config);
    }

    fn plan_computed(&mut self, _planned: Planned) {
        self.id = self.stream_prefix.clone();
    }

    async fn fetch(
        &self,
        api: &Api,
        diags: &mut Diagnostics,
    ) -> Result<Option<Self>, rsc_client::ClientError> {
        let mut next = self.clone();
        default_flags(&mut next, None);
        if !refresh(api, &mut next).await? {
            tracing::info!(stream = %self.prefix(), "stream not found: it will be planned for creation");
            if let Ok(others) = api.admin.stream_groups(self.prefix()).await
                && !others.is_empty()
            {
                diag::root_warning(
                    diags,
                    format!(
                        "stream {:?} lost its default group {:?} outside Terraform",
                        self.prefix(),
                        self.prefix()
                    ),
                    format!(
                        "Its groups {} remain; the plan creates the default group again.",
                        others
                            .iter()
                            .map(|g| g.consumer_group.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
            return Ok(None);
        }
        // A scale this configuration asked for (its target is the count in state) that has not ended is an
        // unfinished change: state keeps the count the stream still drains from, so the next plan shows it
        // instead of "No changes". One started elsewhere is drift: the routing count stays.
        match unfinished_migration(api, self.prefix()).await {
            Ok(unfinished) if !unfinished.is_empty() => {
                let m = &unfinished[0];
                if self.shard_count == Value::Value(Count::from(m.to_shard_count)) {
                    next.shard_count = Value::Value(Count::from(m.from_shard_count));
                }
                diag::root_warning(
                    diags,
                    format!(
                        "stream {:?}: the scale from {} to {} shards (migration {}) has not ended",
                        self.prefix(),
                        m.from_shard_count,
                        m.to_shard_count,
                        m.resharding_id
                    ),
                    holds_text(api, self.prefix(), &unfinished).await,
                );
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(stream = %self.prefix(), error = %e, "migrations not read")
            }
        }
        Ok(Some(next))
    }
}

/// Reads the stream's shard count into `state`; `Ok(false)` when the stream does not exist.
async fn refresh(api: &Api, state: &mut StreamState) -> Result<bool, rsc_client::ClientError> {
    let prefix = state.prefix().to_owned();
    let groups = api.admin.stream_groups(&prefix).await?;
    // The stream is its default group (named like the prefix): without it the resource does not exist, even
    // while other groups keep the stream record (deleted out of band: drift, planned as a create that brings
    // the default group back).
    let Some(g) = groups.iter().find(|g| g.consumer_group == prefix) else {
        return Ok(false);
    };
    state.shard_count = Value::Value(Count::from(g.shard_count));
    state.id = Value::Value(prefix);
    Ok(true)
}

/// The stream's migration that has not ended in some group: the groups that still take part, each with
/// its migration (PREPARING, ACTIVE or DRAINING there).
async fn unfinished_migration(
    api: &Api,
    prefix: &str,
) -> Result<Vec<rsc_client::admin::Migration>, rsc_client::ClientError> {
    let groups = api.admin.stream_groups(prefix).await?;
    Ok(groups
        .into_iter()
        .filter_map(|g| {
            let m = g.active_migration?;
            matches!(m.state.as_str(), "PREPARING" | "ACTIVE" | "DRAINING").then(|| {
                rsc_client::admin::Migration {
                    consumer_group: Some(g.consumer_group.clone()),
                    resharding_id: m.resharding_id,
                    from_shard_count: m.from_shard_count,
                    to_shard_count: m.to_shard_count,
                    state: m.state,
                    routing_shard_count: None,
                    consumers_converged: None,
                    held_by: None,
                }
            })
        })
        .collect())
}

/// Why each group's part of `migrations` has not ended (the migration view's `heldBy`), one line each.
async fn holds_text(
    api: &Api,
    prefix: &str,
    migrations: &[rsc_client::admin::Migration],
) -> String {
    let mut lines = Vec::new();
    for m in migrations {
        let group = m.consumer_group.as_deref().unwrap_or(prefix);
        match api.admin.migration(prefix, group, &m.resharding_id).await {
            Ok(seen) => match seen.held_by {
                Some(h) => lines.push(h.to_string()),
                None => lines.push(format!("group {group:?}: {}", seen.state)),
            },
            Err(e) => lines.push(format!("group {group:?}: not read ({e})")),
        }
    }
    lines.join("\n")
}

#[async_trait]
impl Resource for StreamResource {
    type State<'a> = StreamState;
    type PrivateState<'a> = ValueEmpty;
    type ProviderMetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        let mut b = block(
            "A stream of rsc: its prefix and shard count. Creating it creates its default consumer group, named like the prefix.",
            vec![
                (
                    "id",
                    attr(
                        AttributeType::String,
                        AttributeConstraint::Computed,
                        "The stream prefix.",
                    ),
                ),
                (
                    "stream_prefix",
                    required_string(
                        "The stream prefix (shard streams are <prefix>:<n>). Changing it replaces the stream.",
                    ),
                ),
                (
                    "shard_count",
                    attr(
                        AttributeType::Number,
                        AttributeConstraint::Required,
                        "Shards of the stream (1–16384). A change scales online, in place, in both directions.",
                    ),
                ),
                (
                    "reason",
                    optional_string(
                        "reason sent with this stream's changes (default: the provider's default_reason).",
                    ),
                ),
                (
                    "wait_for_convergence",
                    optional_computed_bool(
                        "After a scale, wait until every group's consumers converged, not only until the migration is accepted (default false).",
                    ),
                ),
                (
                    "force_destroy",
                    optional_computed_bool(
                        "Destroy the default consumer group even while members are active (default false).",
                    ),
                ),
                (
                    "existing_records",
                    optional_string(
                        "At creation only: what to do with shard streams (and their records) an earlier stream of this prefix left in Redis — destroying a stream keeps them. REFUSE (default) fails naming them; ADOPT keeps them and consumes what was not read; PURGE deletes them first.",
                    ),
                ),
            ],
        );
        b.blocks.insert("timeouts".into(), timeouts_block());
        Some(Schema {
            version: 1,
            block: b,
        })
    }

    async fn validate<'a>(&self, diags: &mut Diagnostics, config: Self::State<'a>) -> Option<()> {
        check_stream(diags, &config);
        if let Value::Value(t) = &config.timeouts
            && let Err(e) = wait::timeout(known(&t.update), Duration::ZERO)
        {
            diag::error(
                diags,
                "invalid timeout",
                e,
                AttributePath::new("timeouts").index(0).attribute("update"),
            );
        }
        Some(())
    }

    async fn read<'a>(
        &self,
        diags: &mut Diagnostics,
        state: Self::State<'a>,
        private_state: Self::PrivateState<'a>,
        _meta: Self::ProviderMetaState<'a>,
    ) -> Option<(Self::State<'a>, Self::PrivateState<'a>)> {
        managed::read(&self.shared, diags, state)
            .await
            .map(|next| (next, private_state))
    }

    async fn plan_create<'a>(
        &self,
        diags: &mut Diagnostics,
        proposed: Self::State<'a>,
        config: Self::State<'a>,
        _meta: Self::ProviderMetaState<'a>,
    ) -> Option<(Self::State<'a>, Self::PrivateState<'a>)> {
        let planned = managed::plan_create(diags, proposed, &config);
        Some((planned, ValueEmpty::default()))
    }

    async fn plan_update<'a>(
        &self,
        diags: &mut Diagnostics,
        prior: Self::State<'a>,
        proposed: Self::State<'a>,
        config: Self::State<'a>,
        prior_private: Self::PrivateState<'a>,
        _meta: Self::ProviderMetaState<'a>,
    ) -> Option<(Self::State<'a>, Self::PrivateState<'a>, Vec<AttributePath>)> {
        let (planned, replace) = managed::plan_update(diags, &prior, proposed, &config);
        Some((planned, prior_private, replace))
    }

    async fn plan_destroy<'a>(
        &self,
        _diags: &mut Diagnostics,
        _prior: Self::State<'a>,
        prior_private: Self::PrivateState<'a>,
        _meta: Self::ProviderMetaState<'a>,
    ) -> Option<Self::PrivateState<'a>> {
        Some(prior_private)
    }

    async fn create<'a>(
        &self,
        diags: &mut Diagnostics,
        planned: Self::State<'a>,
        config: Self::State<'a>,
        private_state: Self::PrivateState<'a>,
        _meta: Self::ProviderMetaState<'a>,
    ) -> Option<(Self::State<'a>, Self::PrivateState<'a>)> {
        let api = self.shared.get(diags)?;
        let mut planned = planned;
        default_flags(&mut planned, Some(&config));
        let prefix = planned.prefix().to_owned();
        let count = known_count(diags, &planned.shard_count)?;
        let count = match validate::validate_shard_count("initialShardCount", count, 1) {
            Ok(c) => c,
            Err(e) => {
                diag::invalid(diags, "shard_count", &e);
                return None;
            }
        };
        let reason = api.reason(known(&planned.reason));
        // The stream record kept by other groups while its default group is gone: create that group again.
        if let Ok(groups) = api.admin.stream_groups(&prefix).await
            && !groups.is_empty()
            && !groups.iter().any(|g| g.consumer_group == prefix)
        {
            return match api
                .admin
                .create_group(&prefix, &prefix, None, &reason)
                .await
            {
                Ok(done) => {
                    tracing::info!(request_id = %done.request_id, stream = %prefix, "created the stream's default group again");
                    let mut state = planned;
                    state.id = Value::Value(prefix.clone());
                    state.shard_count = Value::Value(Count::from(done.answer.shard_count));
                    Some((state, private_state))
                }
                Err(e) => {
                    crud::failed(
                        diags,
                        &e,
                        &format!("create the default group of stream {prefix:?}"),
                        "stream_prefix",
                    );
                    None
                }
            };
        }
        let existing = known(&planned.existing_records).and_then(ExistingRecords::parse);
        match api
            .admin
            .create_stream_over(&prefix, count, &reason, existing)
            .await
        {
            Ok(done) => {
                tracing::info!(request_id = %done.request_id, stream = %prefix, shard_count = count, %reason, "created stream");
                let mut state = planned;
                state.id = Value::Value(prefix);
                state.shard_count = Value::Value(Count::from(done.answer.shard_count));
                Some((state, private_state))
            }
            Err(e) => {
                crud::failed(
                    diags,
                    &e,
                    &format!("create stream {prefix:?}"),
                    "stream_prefix",
                );
                if e.error.error_code() == Some("STREAM_PREFIX_ALREADY_EXISTS") {
                    // A stream with groups can be imported; records alone (a stream destroyed earlier) cannot:
                    // there is nothing to import, and existing_records says what to do with them.
                    let managed = api
                        .admin
                        .stream_groups(&prefix)
                        .await
                        .is_ok_and(|g| !g.is_empty());
                    if managed {
                        crud::import_hint(diags, "the stream already exists", &prefix);
                    } else {
                        diag::root_warning(
                            diags,
                            "records of an earlier stream of this prefix are still in Redis",
                            "Destroying a stream keeps its shard streams. Set existing_records = \"ADOPT\" on this \
                             rsc_stream to keep them and consume what was not read, or \"PURGE\" to delete them, \
                             and apply again.",
                        );
                    }
                }
                None
            }
        }
    }

    async fn update<'a>(
        &self,
        diags: &mut Diagnostics,
        prior: Self::State<'a>,
        planned: Self::State<'a>,
        config: Self::State<'a>,
        private_state: Self::PrivateState<'a>,
        _meta: Self::ProviderMetaState<'a>,
    ) -> Option<(Self::State<'a>, Self::PrivateState<'a>)> {
        let api = self.shared.get(diags)?;
        let mut planned = planned;
        default_flags(&mut planned, Some(&config));
        let prefix = planned.prefix().to_owned();
        if planned.shard_count == prior.shard_count {
            return Some((planned, private_state)); // only provider-side settings changed
        }
        let Some(target) = known_count(diags, &planned.shard_count) else {
            return Some((prior, private_state));
        };
        let target = match validate::validate_shard_count("targetShardCount", target, 1) {
            Ok(t) => t,
            Err(e) => {
                diag::invalid(diags, "shard_count", &e);
                return Some((prior, private_state));
            }
        };
        let limit = match planned.update_timeout() {
            Ok(l) => l,
            Err(e) => {
                diag::error(
                    diags,
                    "invalid timeout",
                    e,
                    AttributePath::new("timeouts").index(0).attribute("update"),
                );
                return Some((prior, private_state));
            }
        };
        let reason = api.reason(known(&planned.reason));
        // The same scale already under way (an earlier apply that did not see it end): wait for it again
        // instead of asking for it twice.
        let under_way = match unfinished_migration(&api, &prefix).await {
            Ok(m) if m.iter().all(|m| m.to_shard_count == target) && !m.is_empty() => Some(m),
            _ => None,
        };
        if let Some(migrations) = under_way {
            tracing::info!(stream = %prefix, target, "the scale is already under way: waiting for it");
            let answer = rsc_client::admin::ScaleAnswer {
                stream_prefix: prefix.clone(),
                target_shard_count: target,
                affected_consumer_groups: migrations
                    .iter()
                    .filter_map(|m| m.consumer_group.clone())
                    .collect(),
                migrations,
            };
            return self
                .settle(diags, &api, &answer, planned, private_state, limit)
                .await;
        }
        let answer = match api.admin.scale_stream(&prefix, target, &reason).await {
            Ok(done) => {
                tracing::info!(request_id = %done.request_id, stream = %prefix, target, %reason,
                    groups = ?done.answer.affected_consumer_groups, "scale accepted by the coordinator");
                done.answer
            }
            Err(e) => {
                tracing::warn!(request_id = %e.request_id, stream = %prefix, error = %e.error, "scale refused");
                diag::mutation(
                    diags,
                    &format!("scale stream {prefix:?} to {target} shards"),
                    &e,
                    "shard_count",
                );
                return Some((prior, private_state)); // nothing changed: keep the old count in state
            }
        };
        self.settle(diags, &api, &answer, planned, private_state, limit)
            .await
    }

    async fn destroy<'a>(
        &self,
        diags: &mut Diagnostics,
        state: Self::State<'a>,
        _private_state: Self::PrivateState<'a>,
        _meta: Self::ProviderMetaState<'a>,
    ) -> Option<()> {
        let api = self.shared.get(diags)?;
        let prefix = state.prefix().to_owned();
        let groups = match api.admin.stream_groups(&prefix).await {
            Ok(g) => g,
            Err(e) => {
                diag::read(
                    diags,
                    &format!("the groups of stream {prefix:?}"),
                    &e,
                    "stream_prefix",
                );
                return None;
            }
        };
        let others: Vec<&str> = groups
            .iter()
            .map(|g| g.consumer_group.as_str())
            .filter(|g| *g != prefix)
            .collect();
        if !others.is_empty() {
            diag::error(
                diags,
                format!(
                    "stream {prefix:?} still has consumer groups: {}",
                    others.join(", ")
                ),
                "A stream is deleted with its last group. Destroy its rsc_consumer_group resources in the same plan \
                 (they reference the stream, so Terraform destroys them first) or delete those groups first.",
                AttributePath::new("stream_prefix"),
            );
            return None;
        }
        if groups.is_empty() {
            return Some(()); // already gone
        }
        // The stream is its default group: deleting that group (its last) deletes the stream.
        let force = state.force_destroy == Value::Value(true);
        let what = format!("stream {prefix:?}");
        crud::delete_group(&api, diags, &prefix, &prefix, force, &what).await
    }

    async fn import<'a>(
        &self,
        diags: &mut Diagnostics,
        id: String,
    ) -> Option<(Self::State<'a>, Self::PrivateState<'a>)> {
        if let Err(e) = validate::validate_stream_prefix(&id) {
            diag::root_error(
                diags,
                format!("invalid import id {id:?}"),
                format!("An rsc_stream is imported by its stream prefix: {e}"),
            );
            return None;
        }
        let mut state = StreamState {
            id: Value::Value(id.clone()),
            stream_prefix: Value::Value(id),
            ..Default::default()
        };
        default_flags(&mut state, None);
        Some((state, ValueEmpty::default()))
    }
}
