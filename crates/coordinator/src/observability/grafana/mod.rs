//! The contract's Grafana data routes (`/coord/v1/monitoring/grafana/*`, §3.9): bare JSON arrays of flat rows
//! for Grafana's JSON API data source — groups, variable options (streams, consumer groups, shards), members,
//! shards, assignments and messages. Rows are built from the same views as the monitoring API (members,
//! assignments, offsets, the message browser), so they agree with it. A caller scoped to some streams sees
//! only those; naming another stream in the query is refused (403). Rates (`producedPerSecond`,
//! `consumedPerSecond`) are the rate history's (`runtime/history.rs`: over the last minute of this replica's
//! samples), `null` until it has two samples of the group.

mod cursor;
mod messages;
mod rows;

pub use messages::message_rows;
// The rows are coord/v1 wire types: rsc-protocol's wire/grafana.rs.
pub use rsc_protocol::wire::grafana::{
    GrafanaAssignmentRow, GrafanaGroupRow, GrafanaMemberRow, GrafanaMessageRow, GrafanaOption,
    GrafanaShardRow,
};

use crate::domain_error::{BadQuery, CoordError};
use crate::runtime::cache::GroupName;
use crate::runtime::coordinator::Coordinator;
use rsc_protocol::validate;
use rsc_store::IndexState;
use std::collections::BTreeMap;

/// Which streams the caller may see (`None`: all).
pub type Visible<'a> = &'a (dyn Fn(&str) -> bool + Sync);

/// A query's parameters.
pub type Params = BTreeMap<String, String>;

/// A non-blank parameter.
pub fn param<'a>(params: &'a Params, key: &str) -> Option<&'a str> {
    params.get(key).map(|v| v.trim()).filter(|v| !v.is_empty())
}

/// A required parameter: missing → 400 naming it (blank is "no rows" for the routes that allow it).
pub fn required<'a>(params: &'a Params, key: &str) -> Result<&'a str, CoordError> {
    match params.get(key) {
        None => Err(BadQuery::Required {
            key: key.to_owned(),
        }
        .into()),
        Some(v) => Ok(v.trim()),
    }
}

/// A group named in the query, validated.
pub fn group_name(prefix: &str, group: &str) -> Result<GroupName, CoordError> {
    validate::validate_stream_prefix(prefix)?;
    validate::validate_consumer_group(group)?;
    Ok(GroupName::new(prefix, group))
}

/// Live groups the caller may see, optionally of one stream and one group, sorted.
pub async fn groups(
    c: &Coordinator,
    visible: Visible<'_>,
    prefix: Option<&str>,
    group: Option<&str>,
) -> Result<Vec<GroupName>, CoordError> {
    let mut out: Vec<(String, String)> = c
        .index_entries()
        .await?
        .into_iter()
        .filter(|e| e.state == IndexState::Live && visible(&e.stream_prefix))
        .filter(|e| prefix.is_none_or(|p| p == e.stream_prefix))
        .filter(|e| group.is_none_or(|g| g == e.consumer_group))
        .map(|e| (e.stream_prefix, e.consumer_group))
        .collect();
    out.sort();
    out.dedup();
    Ok(out.iter().map(|(p, g)| GroupName::new(p, g)).collect())
}

/// `options/streams`: distinct prefixes, sorted.
pub async fn stream_options(
    c: &Coordinator,
    visible: Visible<'_>,
) -> Result<Vec<GrafanaOption>, CoordError> {
    let mut prefixes: Vec<String> = groups(c, visible, None, None)
        .await?
        .into_iter()
        .map(|g| g.stream_prefix)
        .collect();
    prefixes.dedup();
    Ok(prefixes
        .into_iter()
        .map(|p| GrafanaOption {
            text: p.clone(),
            value: p,
        })
        .collect())
}

/// `options/consumer-groups[?streamPrefix=]`.
pub async fn group_options(
    c: &Coordinator,
    visible: Visible<'_>,
    params: &Params,
) -> Result<Vec<GrafanaOption>, CoordError> {
    Ok(groups(c, visible, param(params, "streamPrefix"), None)
        .await?
        .into_iter()
        .map(|g| GrafanaOption {
            text: format!("{} / {}", g.stream_prefix, g.consumer_group),
            value: g.consumer_group,
        })
        .collect())
}

/// The one group both required parameters name; `None` when either is blank (the contract's `[]`).
pub fn one_group(params: &Params) -> Result<Option<GroupName>, CoordError> {
    let p = required(params, "streamPrefix")?;
    let g = required(params, "consumerGroup")?;
    if p.is_empty() || g.is_empty() {
        return Ok(None);
    }
    group_name(p, g).map(Some)
}

/// `options/shards?streamPrefix&consumerGroup`.
pub async fn shard_options(
    c: &Coordinator,
    params: &Params,
) -> Result<Vec<GrafanaOption>, CoordError> {
    let Some(name) = one_group(params)? else {
        return Ok(Vec::new());
    };
    let cached = c.require_group(&name).await?;
    Ok(cached
        .group
        .assignable_shards()
        .into_iter()
        .map(|i| GrafanaOption {
            text: format!(":{i}"),
            value: i.to_string(),
        })
        .collect())
}

/// The groups a filtering route covers: both, one or neither of streamPrefix / consumerGroup.
pub async fn filtered(
    c: &Coordinator,
    visible: Visible<'_>,
    params: &Params,
) -> Result<Vec<GroupName>, CoordError> {
    let prefix = param(params, "streamPrefix");
    let group = param(params, "consumerGroup");
    if let Some(p) = prefix {
        validate::validate_stream_prefix(p)?;
    }
    groups(c, visible, prefix, group).await
}

pub use rows::{assignment_rows, group_rows, member_rows, shard_rows};
