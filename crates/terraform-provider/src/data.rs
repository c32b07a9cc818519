//! Data sources `rsc_stream` and `rsc_consumer_group`: read-only views for configurations that only look
//! (a READ principal is enough). A stream or group that does not exist is an error naming it. `rsc_stream` also
//! reads the stream's state (`GET /coord/v1/streams/{p}/describe`): its length per shard and each group's lag.

use crate::api::Shared;
use crate::diag;
use crate::group::check_group;
use crate::schema::{attr, block, computed_number, computed_string, known, required_string};
use crate::stream::check_prefix;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tf_provider::schema::{AttributeConstraint, AttributeType, Schema};
use tf_provider::value::{Value, ValueEmpty};
use tf_provider::{AttributePath, DataSource, Diagnostics};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StreamView {
    #[serde(default)]
    pub id: Value<String>,
    #[serde(default)]
    pub stream_prefix: Value<String>,
    #[serde(default)]
    pub shard_count: Value<i64>,
    #[serde(default)]
    pub consumer_groups: Value<Vec<Value<String>>>,
    #[serde(default)]
    pub routing_version: Value<i64>,
    #[serde(default)]
    pub total_length: Value<i64>,
    #[serde(default)]
    pub shard_lengths: Value<Vec<Value<i64>>>,
    #[serde(default)]
    pub group_lags: Value<BTreeMap<String, Value<i64>>>,
}

pub struct StreamData {
    shared: Shared,
}

impl StreamData {
    pub fn new(shared: Shared) -> Self {
        StreamData { shared }
    }
}

#[async_trait]
impl DataSource for StreamData {
    type State<'a> = StreamView;
    type ProviderMetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        Some(Schema {
            version: 1,
            block: block(
                "An existing rsc stream: its shard count, consumer groups, routing version, and its records now \
                 (length per shard, each group's lag).",
                vec![
                    ("id", computed_string("The stream prefix.")),
                    ("stream_prefix", required_string("The stream prefix.")),
                    ("shard_count", computed_number("The stream's shard count.")),
                    (
                        "consumer_groups",
                        attr(
                            AttributeType::List(Box::new(AttributeType::String)),
                            AttributeConstraint::Computed,
                            "The stream's live consumer groups, sorted.",
                        ),
                    ),
                    (
                        "routing_version",
                        computed_number(
                            "The stream's routing version (bumped by every routing switch and rollback; 0 before \
                             its stream record exists).",
                        ),
                    ),
                    (
                        "total_length",
                        computed_number("Records in every shard stream together, when read."),
                    ),
                    (
                        "shard_lengths",
                        attr(
                            AttributeType::List(Box::new(AttributeType::Number)),
                            AttributeConstraint::Computed,
                            "Records per shard stream, by shard index (0 for a shard stream not created yet).",
                        ),
                    ),
                    (
                        "group_lags",
                        attr(
                            AttributeType::Map(Box::new(AttributeType::Number)),
                            AttributeConstraint::Computed,
                            "Each group's lag (records not yet delivered, summed over its shards); a group whose \
                             lag Redis cannot tell is left out.",
                        ),
                    ),
                ],
            ),
        })
    }

    async fn validate<'a>(&self, diags: &mut Diagnostics, config: Self::State<'a>) -> Option<()> {
        check_prefix(diags, &config.stream_prefix);
        Some(())
    }

    async fn read<'a>(
        &self,
        diags: &mut Diagnostics,
        config: Self::State<'a>,
        _meta: Self::ProviderMetaState<'a>,
    ) -> Option<Self::State<'a>> {
        let api = self.shared.get(diags)?;
        let prefix = known(&config.stream_prefix)?.to_owned();
        let groups = match api.admin.stream_groups(&prefix).await {
            Ok(g) => g,
            Err(e) => {
                diag::read(diags, &format!("stream {prefix:?}"), &e, "stream_prefix");
                return None;
            }
        };
        let Some(first) = groups
            .iter()
            .find(|g| g.consumer_group == prefix)
            .or(groups.first())
        else {
            diag::error(
                diags,
                format!("STREAM_NOT_FOUND: stream {prefix:?} does not exist"),
                "No live consumer group uses this stream prefix (GET /coord/v1/monitoring/groups).",
                AttributePath::new("stream_prefix"),
            );
            return None;
        };
        // The stream's state as it is now: lengths and lags (GET …/describe, READ).
        let described = match api.admin.describe_stream(&prefix).await {
            Ok(Some(d)) => d,
            Ok(None) => {
                diag::error(
                    diags,
                    format!("STREAM_NOT_FOUND: stream {prefix:?} does not exist"),
                    "No live consumer group uses this stream prefix (GET /coord/v1/monitoring/groups).",
                    AttributePath::new("stream_prefix"),
                );
                return None;
            }
            Err(e) => {
                diag::read(diags, &format!("stream {prefix:?}"), &e, "stream_prefix");
                return None;
            }
        };
        Some(StreamView {
            routing_version: Value::Value(described.routing_version.unwrap_or(0)),
            total_length: Value::Value(described.total_length),
            shard_lengths: Value::Value(
                described
                    .shards
                    .iter()
                    .filter(|s| s.shard < described.shard_count)
                    .map(|s| Value::Value(s.length))
                    .collect(),
            ),
            group_lags: Value::Value(
                described
                    .groups
                    .iter()
                    .filter_map(|g| Some((g.consumer_group.clone(), Value::Value(g.lag?))))
                    .collect(),
            ),
            id: Value::Value(prefix.clone()),
            stream_prefix: Value::Value(prefix),
            shard_count: Value::Value(i64::from(first.shard_count)),
            consumer_groups: Value::Value(
                groups
                    .iter()
                    .map(|g| Value::Value(g.consumer_group.clone()))
                    .collect(),
            ),
        })
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GroupView {
    #[serde(default)]
    pub id: Value<String>,
    #[serde(default)]
    pub stream_prefix: Value<String>,
    #[serde(default)]
    pub consumer_group: Value<String>,
    #[serde(default)]
    pub state: Value<String>,
    #[serde(default)]
    pub metadata_version: Value<i64>,
    #[serde(default)]
    pub group_epoch: Value<i64>,
    #[serde(default)]
    pub shard_count: Value<i64>,
    #[serde(default)]
    pub active_resharding_id: Value<String>,
}

pub struct GroupData {
    shared: Shared,
}

impl GroupData {
    pub fn new(shared: Shared) -> Self {
        GroupData { shared }
    }
}

#[async_trait]
impl DataSource for GroupData {
    type State<'a> = GroupView;
    type ProviderMetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        Some(Schema {
            version: 1,
            block: block(
                "An existing consumer group of an rsc stream.",
                vec![
                    ("id", computed_string("<stream_prefix>/<consumer_group>.")),
                    ("stream_prefix", required_string("The stream prefix.")),
                    ("consumer_group", required_string("The group's name.")),
                    (
                        "state",
                        computed_string("The group's state (e.g. STABLE, RECONCILING)."),
                    ),
                    (
                        "metadata_version",
                        computed_number("The group's metadata version."),
                    ),
                    ("group_epoch", computed_number("The group's epoch.")),
                    (
                        "shard_count",
                        computed_number("The stream's shard count, as the group routes."),
                    ),
                    (
                        "active_resharding_id",
                        computed_string("The migration in progress, if any (null otherwise)."),
                    ),
                ],
            ),
        })
    }

    async fn validate<'a>(&self, diags: &mut Diagnostics, config: Self::State<'a>) -> Option<()> {
        check_prefix(diags, &config.stream_prefix);
        check_group(diags, &config.consumer_group);
        Some(())
    }

    async fn read<'a>(
        &self,
        diags: &mut Diagnostics,
        config: Self::State<'a>,
        _meta: Self::ProviderMetaState<'a>,
    ) -> Option<Self::State<'a>> {
        let api = self.shared.get(diags)?;
        let p = known(&config.stream_prefix)?.to_owned();
        let g = known(&config.consumer_group)?.to_owned();
        match api.admin.group(&p, &g).await {
            Ok(Some(r)) => Some(GroupView {
                id: Value::Value(format!("{p}/{g}")),
                stream_prefix: Value::Value(p),
                consumer_group: Value::Value(g),
                state: Value::Value(r.state),
                metadata_version: Value::Value(r.metadata_version),
                group_epoch: Value::Value(r.group_epoch),
                shard_count: Value::Value(i64::from(r.shard_count)),
                active_resharding_id: r.active_migration.map(|m| m.resharding_id).into(),
            }),
            Ok(None) => {
                diag::error(
                    diags,
                    format!("GROUP_NOT_FOUND: consumer group {g:?} of stream {p:?} does not exist"),
                    "GET /coord/v1/streams/{p}/groups/{g} answered 404.",
                    AttributePath::new("consumer_group"),
                );
                None
            }
            Err(e) => {
                diag::read(
                    diags,
                    &format!("consumer group {g:?} of stream {p:?}"),
                    &e,
                    "consumer_group",
                );
                None
            }
        }
    }
}
