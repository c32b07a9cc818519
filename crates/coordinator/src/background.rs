//! Work no request asks for: the [`reconciler`] (expiries, drains, migrations and every other deadline of
//! the groups a replica owns) and the [`metrics_refresh`] task that keeps `/metrics` current.

pub mod metrics_refresh;
pub mod reconciler;
