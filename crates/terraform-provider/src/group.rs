//! `rsc_consumer_group`: one consumer group of a stream. Create → `POST …/streams/{p}/groups/{g}` (the group
//! adopts the stream's shard count); read → the group (one deleted outside Terraform is planned for
//! creation again); destroy → `DELETE …/groups/{g}`, which the coordinator refuses while members are active
//! unless `force_destroy`. Computed: `metadata_version`, `shard_count`. Import with `<prefix>/<group>`.

use crate::api::{Api, Shared};
use crate::crud;
use crate::diag;
use crate::managed::{self, Managed, Planned};
use crate::schema::{
    block, computed_number, computed_string, known, optional_computed_bool, optional_string,
    required_string, settle_flag,
};
use crate::stream::check_prefix;
use async_trait::async_trait;
use rsc_protocol::validate;
use rsc_protocol::wire::GroupResponse;
use serde::{Deserialize, Serialize};
use tf_provider::schema::Schema;
use tf_provider::value::{Value, ValueEmpty};
use tf_provider::{AttributePath, Diagnostics, Resource};

/// The resource's state and configuration.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GroupState {
    #[serde(default)]
    pub id: Value<String>,
    #[serde(default)]
    pub stream_prefix: Value<String>,
    #[serde(default)]
    pub consumer_group: Value<String>,
    #[serde(default)]
    pub force_destroy: Value<bool>,
    #[serde(default)]
    pub reason: Value<String>,
    #[serde(default)]
    pub metadata_version: Value<i64>,
    #[serde(default)]
    pub shard_count: Value<i64>,
}

impl GroupState {
    fn names(&self) -> (String, String) {
        (
            known(&self.stream_prefix).unwrap_or("").to_owned(),
            known(&self.consumer_group).unwrap_or("").to_owned(),
        )
    }

    fn fill(&mut self, g: &GroupResponse) {
        self.id = Value::Value(format!("{}/{}", g.stream_prefix, g.consumer_group));
        self.metadata_version = Value::Value(g.metadata_version);
        self.shard_count = Value::Value(i64::from(g.shard_count));
    }
}

/// Checks a consumer group name the way the coordinator would.
pub fn check_group(diags: &mut Diagnostics, group: &Value<String>) {
    if let Some(g) = known(group)
        && let Err(e) = validate::validate_consumer_group(g)
    {
        diag::invalid(diags, "consumer_group", &e);
    }
}

/// The checks the coordinator would make, at plan time (values from other resources or variables may only
/// be known then), before anything is sent.
fn check_config(diags: &mut Diagnostics, config: &GroupState) {
    check_prefix(diags, &config.stream_prefix);
    check_group(diags, &config.consumer_group);
    if let (Some(p), Some(g)) = (known(&config.stream_prefix), known(&config.consumer_group))
        && p == g
    {
        diag::error(
            diags,
            format!("{g:?} is the stream's default group"),
            default_group_detail(p),
            AttributePath::new("consumer_group"),
        );
    }
    if let Some(r) = known(&config.reason)
        && let Err(e) = validate::validate_text("reason", r, true)
    {
        diag::invalid(diags, "reason", &e);
    }
}

/// Why the default group (named like its stream) is not an `rsc_consumer_group`: it is the stream itself.
fn default_group_detail(prefix: &str) -> String {
    format!(
        "The group named like the stream ({prefix}) is created and deleted with the stream: manage it as an \
         rsc_stream (terraform import rsc_stream.NAME {prefix}). As an rsc_consumer_group, removing the resource \
         would delete the stream."
    )
}

/// `force_destroy` has a default (see [`settle_flag`]); `config` is `None` where there is none (read).
fn default_flags(state: &mut GroupState, config: Option<&GroupState>) {
    let null = Value::Null;
    settle_flag(
        &mut state.force_destroy,
        config.map_or(&null, |c| &c.force_destroy),
    );
}

pub struct GroupResource {
    shared: Shared,
}

impl GroupResource {
    pub fn new(shared: Shared) -> Self {
        GroupResource { shared }
    }
}

impl Managed for GroupState {
    const NAMING: &'static [&'static str] = &["stream_prefix", "consumer_group"];

    fn what(&self) -> String {
        let (p, g) = self.names();
        format!("consumer group {g:?} of stream {p:?}")
    }

    fn read_attribute() -> &'static str {
        "consumer_group"
    }

    fn differs(&self, other: &Self, attribute: &str) -> bool {
        match attribute {
            "stream_prefix" => self.stream_prefix != other.stream_prefix,
            _ => self.consumer_group != other.consumer_group,
        }
    }

    fn check(&self, diags: &mut Diagnostics) {
        check_config(diags, self);
    }

    fn settle_flags(&mut self, config: Option<&Self>) {
        default_flags(self, config);
    }

    fn plan_computed(&mut self, planned: Planned) {
        if planned == Planned::InPlace {
            return;
        }
        self.id = match (planned, &self.stream_prefix, &self.consumer_group) {
            (Planned::Create, Value::Value(p), Value::Value(g)) => Value::Value(format!("{p}/{g}")),
            _ => Value::Unknown,
        };
        self.metadata_version = Value::Unknown;
        self.shard_count = Value::Unknown;
    }

    async fn fetch(
        &self,
        api: &Api,
        _diags: &mut Diagnostics,
    ) -> Result<Option<Self>, rsc_client::ClientError> {
        let (p, g) = self.names();
        let Some(found) = api.admin.group(&p, &g).await? else {
            tracing::info!(stream = %p, group = %g, "consumer group not found: it will be planned for creation");
            return Ok(None);
        };
        let mut next = self.clone();
        next.fill(&found);
        default_flags(&mut next, None);
        Ok(Some(next))
    }
}

#[async_trait]
impl Resource for GroupResource {
    type State<'a> = GroupState;
    type PrivateState<'a> = ValueEmpty;
    type ProviderMetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        Some(Schema {
            version: 1,
            block: block(
                "A consumer group of an rsc stream. It adopts the stream's shard count; scale with the rsc_stream.",
                vec![
                    ("id", computed_string("<stream_prefix>/<consumer_group>.")),
                    (
                        "stream_prefix",
                        required_string("The stream's prefix. Changing it replaces the group."),
                    ),
                    (
                        "consumer_group",
                        required_string(
                            "The group's name (no ':'). Changing it replaces the group.",
                        ),
                    ),
                    (
                        "force_destroy",
                        optional_computed_bool(
                            "Destroy the group even while members are active (default false: the coordinator refuses with GROUP_HAS_ACTIVE_MEMBERS).",
                        ),
                    ),
                    (
                        "reason",
                        optional_string(
                            "reason sent with this group's changes (default: the provider's default_reason).",
                        ),
                    ),
                    (
                        "metadata_version",
                        computed_number("The group's metadata version."),
                    ),
                    (
                        "shard_count",
                        computed_number("The stream's shard count, as the group routes."),
                    ),
                ],
            ),
        })
    }

    async fn validate<'a>(&self, diags: &mut Diagnostics, config: Self::State<'a>) -> Option<()> {
        check_config(diags, &config);
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
        let (p, g) = planned.names();
        let reason = api.reason(known(&planned.reason));
        match api.admin.create_group(&p, &g, None, &reason).await {
            Ok(done) => {
                tracing::info!(request_id = %done.request_id, stream = %p, group = %g, %reason, "created consumer group");
                let mut state = planned;
                state.fill(&done.answer);
                Some((state, private_state))
            }
            Err(e) => {
                crud::failed(
                    diags,
                    &e,
                    &format!("create consumer group {g:?} of stream {p:?}"),
                    "consumer_group",
                );
                if e.error.error_code() == Some("GROUP_ALREADY_EXISTS") {
                    crud::import_hint(
                        diags,
                        "the consumer group already exists",
                        &format!("{p}/{g}"),
                    );
                }
                None
            }
        }
    }

    async fn update<'a>(
        &self,
        diags: &mut Diagnostics,
        _prior: Self::State<'a>,
        planned: Self::State<'a>,
        config: Self::State<'a>,
        private_state: Self::PrivateState<'a>,
        _meta: Self::ProviderMetaState<'a>,
    ) -> Option<(Self::State<'a>, Self::PrivateState<'a>)> {
        // Only provider-side settings (force_destroy, reason) change in place; nothing to send.
        let _ = self.shared.get(diags)?;
        let mut planned = planned;
        default_flags(&mut planned, Some(&config));
        Some((planned, private_state))
    }

    async fn destroy<'a>(
        &self,
        diags: &mut Diagnostics,
        state: Self::State<'a>,
        _private_state: Self::PrivateState<'a>,
        _meta: Self::ProviderMetaState<'a>,
    ) -> Option<()> {
        let api = self.shared.get(diags)?;
        let (p, g) = state.names();
        let force = state.force_destroy == Value::Value(true);
        let what = format!("consumer group {g:?} of stream {p:?}");
        crud::delete_group(&api, diags, &p, &g, force, &what).await
    }

    async fn import<'a>(
        &self,
        diags: &mut Diagnostics,
        id: String,
    ) -> Option<(Self::State<'a>, Self::PrivateState<'a>)> {
        let parsed = id
            .rsplit_once('/')
            .ok_or_else(|| "it has no '/'".to_owned())
            .and_then(|(p, g)| {
                validate::validate_stream_prefix(p).map_err(|e| e.to_string())?;
                validate::validate_consumer_group(g).map_err(|e| e.to_string())?;
                Ok((p.to_owned(), g.to_owned()))
            });
        match parsed {
            Ok((p, g)) if p == g => {
                diag::root_error(
                    diags,
                    format!(
                        "{id:?} is the default group of stream {p:?}, not an rsc_consumer_group"
                    ),
                    default_group_detail(&p),
                );
                None
            }
            Ok((p, g)) => Some((
                GroupState {
                    id: Value::Value(id),
                    stream_prefix: Value::Value(p),
                    consumer_group: Value::Value(g),
                    force_destroy: Value::Value(false),
                    ..Default::default()
                },
                ValueEmpty::default(),
            )),
            Err(why) => {
                diag::root_error(
                    diags,
                    format!("invalid import id {id:?}"),
                    format!(
                        "An rsc_consumer_group is imported as <stream_prefix>/<consumer_group> (split at the last '/'): {why}"
                    ),
                );
                None
            }
        }
    }
}
