//! The read and plan plumbing `rsc_stream` and `rsc_consumer_group` share (as `crud.rs` shares their
//! deletes): a read maps what the coordinator holds onto state the same way (gone → planned for creation,
//! a failed read → a diagnostic naming the resource, state kept), and a plan checks the configuration the
//! way the coordinator would, settles the flags with a default and plans the computed attributes, replacing
//! the resource when an attribute that names it changes. Each resource says only what differs:
//! [`Managed`].

use crate::api::{Api, Shared};
use crate::diag;
use tf_provider::{AttributePath, Diagnostics};

/// What a plan does to the resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Planned {
    /// It is created.
    Create,
    /// It is destroyed and created again (an attribute that names it changed).
    Replace,
    /// It is changed in place.
    InPlace,
}

/// A resource state as the shared read and plan see it.
pub trait Managed: Sized {
    /// The attributes that name the resource: a change of one replaces it.
    const NAMING: &'static [&'static str];

    /// The resource in words, for diagnostics (`stream "p"`, `consumer group "g" of stream "p"`).
    fn what(&self) -> String;

    /// The attribute a failed read points at.
    fn read_attribute() -> &'static str;

    /// Whether naming attribute `attribute` differs between `self` and `other`.
    fn differs(&self, other: &Self, attribute: &str) -> bool;

    /// The checks the coordinator would make, as diagnostics.
    fn check(&self, diags: &mut Diagnostics);

    /// Settles the flags with a default from `config` (None where there is no configuration: read, import).
    fn settle_flags(&mut self, config: Option<&Self>);

    /// Plans the computed attributes.
    fn plan_computed(&mut self, planned: Planned);

    /// Reads the resource as the coordinator holds it into a copy of `self` (flags settled); Ok(None) when
    /// it is gone (logged, and warned about where the coordinator holds something of it still).
    async fn fetch(
        &self,
        api: &Api,
        diags: &mut Diagnostics,
    ) -> Result<Option<Self>, rsc_client::ClientError>;
}

/// `read`: the resource as the coordinator holds it; None when it is gone (Terraform plans its creation);
/// `state` unchanged, with a diagnostic, when it could not be read.
pub async fn read<S: Managed>(shared: &Shared, diags: &mut Diagnostics, state: S) -> Option<S> {
    let Some(api) = shared.get(diags) else {
        return Some(state);
    };
    match state.fetch(&api, diags).await {
        Ok(found) => found,
        Err(e) => {
            diag::read(diags, &state.what(), &e, S::read_attribute());
            Some(state)
        }
    }
}

/// `plan_create`: the configuration checked, flags settled, computed attributes planned.
pub fn plan_create<S: Managed>(diags: &mut Diagnostics, proposed: S, config: &S) -> S {
    proposed.check(diags);
    let mut planned = proposed;
    planned.settle_flags(Some(config));
    planned.plan_computed(Planned::Create);
    planned
}

/// `plan_update`: as [`plan_create`], with the naming attributes that changed (each one replaces the
/// resource).
pub fn plan_update<S: Managed>(
    diags: &mut Diagnostics,
    prior: &S,
    proposed: S,
    config: &S,
) -> (S, Vec<AttributePath>) {
    proposed.check(diags);
    let replace: Vec<AttributePath> = S::NAMING
        .iter()
        .filter(|a| prior.differs(&proposed, a))
        .map(|a| AttributePath::new(*a))
        .collect();
    let mut planned = proposed;
    planned.settle_flags(Some(config));
    planned.plan_computed(if replace.is_empty() {
        Planned::InPlace
    } else {
        Planned::Replace
    });
    (planned, replace)
}
