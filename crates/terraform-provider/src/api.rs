//! The configured connection to the coordinator, shared by the provider and its resources: Terraform
//! configures the provider once per run, after the resources exist, so they hold a handle that the
//! provider's `configure` fills.

use crate::diag;
use rsc_client::AdminClient;
use std::sync::{Arc, RwLock};
use tf_provider::Diagnostics;

/// What every resource needs to talk to the coordinator.
#[derive(Clone)]
pub struct Api {
    pub admin: AdminClient,
    /// The reason sent when a resource sets none.
    pub default_reason: String,
}

impl Api {
    /// The resource's own `reason` when set, else the provider's default.
    pub fn reason(&self, own: Option<&str>) -> String {
        own.filter(|r| !r.is_empty())
            .map(str::to_owned)
            .unwrap_or_else(|| self.default_reason.clone())
    }
}

/// The handle filled by `configure`.
#[derive(Clone, Default)]
pub struct Shared(Arc<RwLock<Option<Api>>>);

impl Shared {
    pub fn set(&self, api: Api) {
        if let Ok(mut slot) = self.0.write() {
            *slot = Some(api);
        }
    }

    /// The configured API, or an error diagnostic when the provider was not configured.
    pub fn get(&self, diags: &mut Diagnostics) -> Option<Api> {
        let api = self.0.read().ok().and_then(|slot| slot.clone());
        if api.is_none() {
            diag::root_error(
                diags,
                "the rsc provider is not configured (its configuration failed, or it is used before Terraform configured it)",
                "",
            );
        }
        api
    }
}
