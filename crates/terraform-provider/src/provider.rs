//! The provider block: where the coordinator is (`endpoint`, env `RSC_COORDINATOR`), who the provider is
//! (`username` + `password`, env `RSC_USERNAME`/`RSC_PASSWORD`, or `token`, env `RSC_TOKEN`), and what its
//! changes say (`requested_by`, default "terraform"; `default_reason`). `configure` checks the credentials
//! with one read (`GET /coord/v1/monitoring/session`), so wrong ones fail the plan, not the apply.

use crate::api::{Api, Shared};
use crate::data::{GroupData, StreamData};
use crate::diag;
use crate::group::GroupResource;
use crate::schema::{attr, block, known, optional_string};
use crate::stream::StreamResource;
use async_trait::async_trait;
use rsc_client::{AdminClient, Auth, ClientError, CoordinatorClient, Credentials};
use rsc_protocol::validate;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use tf_provider::schema::{AttributeConstraint, AttributeType, Schema};
use tf_provider::value::{Value, ValueEmpty};
use tf_provider::{AttributePath, Diagnostics, DynamicDataSource, DynamicResource, Provider};

/// `requestedBy` when the configuration sets none.
pub const DEFAULT_REQUESTED_BY: &str = "terraform";
/// `reason` when neither the resource nor the provider sets one.
pub const DEFAULT_REASON: &str = "applied by Terraform";

/// The provider block. Not `Debug`: it holds the password and token.
#[derive(Serialize, Deserialize, Default)]
pub struct Config {
    #[serde(default)]
    pub endpoint: Value<Vec<Value<String>>>,
    #[serde(default)]
    pub username: Value<String>,
    #[serde(default)]
    pub password: Value<String>,
    #[serde(default)]
    pub token: Value<String>,
    #[serde(default)]
    pub requested_by: Value<String>,
    #[serde(default)]
    pub default_reason: Value<String>,
}

/// The rsc provider.
#[derive(Default)]
pub struct RscProvider {
    shared: Shared,
}

/// How the provider authenticates, and which attribute a rejection points at.
struct Resolved {
    urls: Vec<String>,
    auth: Auth,
    auth_attr: &'static str,
    requested_by: String,
    default_reason: String,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl Config {
    /// Configuration first, then the environment. Errors are added to `diags` on their attribute.
    fn resolve(&self, diags: &mut Diagnostics) -> Option<Resolved> {
        let mut urls: Vec<String> = match &self.endpoint {
            Value::Value(list) => list
                .iter()
                .filter_map(|v| known(v).map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        if urls.is_empty() {
            urls = env("RSC_COORDINATOR")
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default();
        }
        if urls.is_empty() {
            diag::error(
                diags,
                "no coordinator endpoint",
                "Set endpoint = [\"http://…:8080\", …] in the provider block, or RSC_COORDINATOR (comma-separated URLs).",
                AttributePath::new("endpoint"),
            );
        }
        let token = known(&self.token).map(str::to_owned);
        let username = known(&self.username).map(str::to_owned);
        let password = known(&self.password).map(str::to_owned);
        if token.is_some() && (username.is_some() || password.is_some()) {
            diag::error(
                diags,
                "token and username/password are both set",
                "Give either token (a bearer token from POST /coord/v1/auth/login) or username and password.",
                AttributePath::new("token"),
            );
            return None;
        }
        let (auth, auth_attr) = if let Some(t) = token {
            (Auth::Bearer(t), "token")
        } else if let Some(u) = username {
            match password.or_else(|| env("RSC_PASSWORD")) {
                Some(p) => (Auth::Basic(Credentials::new(u, p)), "password"),
                None => {
                    diag::error(
                        diags,
                        "username without password",
                        "Set password (sensitive), or better RSC_PASSWORD in the environment, so it stays out of the configuration.",
                        AttributePath::new("password"),
                    );
                    return None;
                }
            }
        } else if password.is_some() {
            diag::error(
                diags,
                "password without username",
                "Set username (or RSC_USERNAME) too.",
                AttributePath::new("username"),
            );
            return None;
        } else if let Some(t) = env("RSC_TOKEN") {
            (Auth::Bearer(t), "")
        } else {
            match (env("RSC_USERNAME"), env("RSC_PASSWORD")) {
                (Some(u), Some(p)) => (Auth::Basic(Credentials::new(u, p)), ""),
                _ => {
                    diag::root_error(
                        diags,
                        "no credentials for the coordinator",
                        "Set username and password (or RSC_USERNAME and RSC_PASSWORD), or token (or RSC_TOKEN): \
                         a principal with READ plans, one with WRITE applies.",
                    );
                    return None;
                }
            }
        };
        let requested_by = known(&self.requested_by)
            .unwrap_or(DEFAULT_REQUESTED_BY)
            .to_owned();
        if let Err(e) = validate::validate_text("requestedBy", &requested_by, true) {
            diag::invalid(diags, "requested_by", &e);
        }
        let default_reason = known(&self.default_reason)
            .unwrap_or(DEFAULT_REASON)
            .to_owned();
        if let Err(e) = validate::validate_text("reason", &default_reason, true) {
            diag::invalid(diags, "default_reason", &e);
        }
        if !diags.errors.is_empty() {
            return None;
        }
        Some(Resolved {
            urls,
            auth,
            auth_attr,
            requested_by,
            default_reason,
        })
    }
}

fn attr_path(name: &str) -> AttributePath {
    if name.is_empty() {
        AttributePath::root()
    } else {
        AttributePath::new(name.to_owned())
    }
}

#[async_trait]
impl Provider for RscProvider {
    type Config<'a> = Config;
    type MetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        let mut sensitive_password = optional_string(
            "Password of username (sensitive; prefer RSC_PASSWORD in the environment: a value set here is kept in plan files).",
        );
        sensitive_password.sensitive = true;
        let mut sensitive_token = optional_string(
            "A bearer token from POST /coord/v1/auth/login, instead of username and password (sensitive; or RSC_TOKEN).",
        );
        sensitive_token.sensitive = true;
        Some(Schema {
            version: 1,
            block: block(
                "rsc: streams and consumer groups of a Redis Stream Coordinator.",
                vec![
                    (
                        "endpoint",
                        attr(
                            AttributeType::List(Box::new(AttributeType::String)),
                            AttributeConstraint::Optional,
                            "Coordinator replica URLs, tried in order on failure (or RSC_COORDINATOR, comma-separated).",
                        ),
                    ),
                    (
                        "username",
                        optional_string(
                            "Principal to log in as (or RSC_USERNAME). Plans need READ, applies WRITE.",
                        ),
                    ),
                    ("password", sensitive_password),
                    ("token", sensitive_token),
                    (
                        "requested_by",
                        optional_string(
                            "requestedBy of every change (default \"terraform\"); the audit records it.",
                        ),
                    ),
                    (
                        "default_reason",
                        optional_string(
                            "reason of a change whose resource sets none (default \"applied by Terraform\").",
                        ),
                    ),
                ],
            ),
        })
    }

    async fn validate<'a>(&self, diags: &mut Diagnostics, config: Self::Config<'a>) -> Option<()> {
        for (attr, field, v) in [
            ("requested_by", "requestedBy", &config.requested_by),
            ("default_reason", "reason", &config.default_reason),
        ] {
            if let Some(text) = known(v)
                && let Err(e) = validate::validate_text(field, text, true)
            {
                diag::invalid(diags, attr, &e);
            }
        }
        Some(())
    }

    async fn configure<'a>(
        &self,
        diags: &mut Diagnostics,
        _terraform_version: String,
        config: Self::Config<'a>,
    ) -> Option<()> {
        let resolved = config.resolve(diags)?;
        let coord = match CoordinatorClient::builder(resolved.urls.clone())
            .auth(resolved.auth)
            .build()
        {
            Ok(c) => c,
            Err(e) => {
                diag::error(
                    diags,
                    "invalid endpoint",
                    e.to_string(),
                    AttributePath::new("endpoint"),
                );
                return None;
            }
        };
        let admin =
            AdminClient::new(coord, resolved.requested_by.clone()).request_id_prefix("terraform");
        match admin.session().await {
            Ok(session) => {
                let user = session.username.clone().unwrap_or_default();
                tracing::info!(user = %user, roles = ?session.roles, urls = ?resolved.urls, requested_by = %resolved.requested_by, "rsc provider configured");
                let writes = session.roles.iter().any(|r| r == "WRITE" || r == "ADMIN");
                if !writes {
                    diag::root_warning(
                        diags,
                        format!(
                            "principal {user:?} cannot change anything (roles {:?})",
                            session.roles
                        ),
                        "It can plan against the coordinator's read APIs; an apply that changes something needs a principal with WRITE.",
                    );
                }
            }
            Err(e @ ClientError::Unauthorized { .. }) => {
                diag::error(
                    diags,
                    "UNAUTHORIZED: the coordinator rejected the provider's credentials",
                    format!(
                        "{e}. Check username/password (RSC_USERNAME/RSC_PASSWORD) or token (RSC_TOKEN)."
                    ),
                    attr_path(resolved.auth_attr),
                );
                return None;
            }
            Err(e @ ClientError::Unreachable(_)) => {
                diag::error(
                    diags,
                    "COORDINATOR_UNREACHABLE: no coordinator endpoint answered",
                    e.to_string(),
                    AttributePath::new("endpoint"),
                );
                return None;
            }
            Err(e) => {
                diag::read(
                    diags,
                    "the provider's session (GET /coord/v1/monitoring/session)",
                    &e,
                    "",
                );
                return None;
            }
        }
        self.shared.set(Api {
            admin,
            default_reason: resolved.default_reason,
        });
        Some(())
    }

    fn get_resources(
        &self,
        _diags: &mut Diagnostics,
    ) -> Option<HashMap<String, Box<dyn DynamicResource>>> {
        let mut map: HashMap<String, Box<dyn DynamicResource>> = HashMap::new();
        map.insert(
            "stream".into(),
            Box::new(StreamResource::new(self.shared.clone())),
        );
        map.insert(
            "consumer_group".into(),
            Box::new(GroupResource::new(self.shared.clone())),
        );
        Some(map)
    }

    fn get_data_sources(
        &self,
        _diags: &mut Diagnostics,
    ) -> Option<HashMap<String, Box<dyn DynamicDataSource>>> {
        let mut map: HashMap<String, Box<dyn DynamicDataSource>> = HashMap::new();
        map.insert(
            "stream".into(),
            Box::new(StreamData::new(self.shared.clone())),
        );
        map.insert(
            "consumer_group".into(),
            Box::new(GroupData::new(self.shared.clone())),
        );
        Some(map)
    }
}
