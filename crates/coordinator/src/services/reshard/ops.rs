//! Resharding operations: scale a stream, scale one group (compatibility), and end a migration (rollback /
//! force-complete). Each checks its request and the groups here, then drives the core's flow
//! (`ScaleFlow`, `EndFlow`) and answers with what it came to.

use super::perform::Performer;
use super::quiesce;
use super::views::migration_state_in_groups;
use crate::domain_error::{BadReshard, CoordError, CorrectionOpen, MigrationBusy, StreamNotFound};
use crate::http::views::migration_response;
use crate::runtime::cache::GroupName;
use crate::runtime::coordinator::Resharding;
use rsc_group::migration::MigrationError;
use rsc_group::model::MigrationState;
use rsc_group::replica::reshard::ReshardError;
use rsc_group::replica::reshard::end::{EndFlow, EndOutcome};
use rsc_group::replica::reshard::scale::{ScaleFlow, ScaleOutcome};
use rsc_group::reshard::record::ScaleRequest as Scale;
use rsc_protocol::validate;
use rsc_protocol::wire::resharding::{MigrationResponse, ScaleResponse};
use rsc_protocol::wire::{MigrationActionRequest, ScaleRequest};

/// A scale request's fields, checked.
struct Checked {
    target: u32,
    requested_by: String,
    reason: String,
    quiesce_timeout: Option<i64>,
}

/// Checks a scale request's body (each refusal names its field).
fn checked(req: &ScaleRequest) -> Result<Checked, CoordError> {
    let target = match req.target_shard_count {
        Some(n) => validate::validate_shard_count(
            "targetShardCount",
            n,
            rsc_protocol::bounds::TARGET_SHARD_COUNT.min(),
        )?,
        None => {
            return Err(BadReshard::TargetRequired.into());
        }
    };
    let (requested_by, reason) = validate::validate_attribution(
        req.requested_by.as_deref(),
        req.reason.as_deref(),
        validate::Reason::Required,
    )?;
    Ok(Checked {
        target,
        requested_by: requested_by.to_owned(),
        reason: reason.to_owned(),
        quiesce_timeout: quiesce::requested_timeout(req)?,
    })
}

impl Resharding<'_> {
    /// `POST /coord/v1/streams/{p}/scale`: scales every group of the stream together.
    pub async fn scale_stream(
        &self,
        prefix: &str,
        req: &ScaleRequest,
    ) -> Result<ScaleResponse, CoordError> {
        let Checked {
            target,
            requested_by,
            reason,
            quiesce_timeout,
        } = checked(req)?;
        let groups = self.stream_groups(prefix).await?;
        if groups.is_empty() {
            return Err(StreamNotFound::Scale {
                stream: prefix.to_owned(),
            }
            .into());
        }
        let mut loaded = Vec::new();
        for name in &groups {
            let c = self.require_group(name).await?;
            self.durability().ensure_mutable(&c.group)?;
            if c.group.metadata_correction.is_some() {
                return Err(CorrectionOpen::Scale {
                    group: name.consumer_group.clone(),
                }
                .into());
            }
            loaded.push(c);
        }
        let scale = Scale {
            resharding_id: format!("reshard-{}", uuid::Uuid::new_v4()),
            target,
            requested_by,
            reason,
            quiesce_timeout_ms: quiesce_timeout,
        };
        let names: Vec<String> = groups.iter().map(|g| g.consumer_group.clone()).collect();
        let mut p = Performer::on(prefix);
        let (mut flow, first) = ScaleFlow::start(
            prefix,
            scale,
            names,
            loaded[0].group.shard_count,
            &self.settings(),
        );
        match self.drive(&mut p, &mut flow, first).await {
            Ok(ScaleOutcome::Noop(noop)) => {
                let noops = vec![noop; groups.len()];
                Ok(self.scale_response(prefix, target, &groups, &noops))
            }
            Ok(ScaleOutcome::Scaled {
                migration,
                switched,
            }) => {
                tracing::info!(stream = ?prefix, id = ?migration.resharding_id, from = migration.from_shard_count, to = target, "scale activated");
                Ok(self.scale_response(prefix, target, &groups, &switched.per_group))
            }
            Err(ReshardError::InProgress(m)) => Err(MigrationBusy::Scale {
                id: m.resharding_id.clone(),
                from: m.from_shard_count,
                to: m.to_shard_count,
                state: m.state,
                in_groups: migration_state_in_groups(&m, &loaded),
            }
            .into()),
            Err(e) => Err(p.error(e)),
        }
    }

    /// `POST …/groups/{g}/scale` (compatibility): the stream-level scale, answered with this group's migration.
    pub async fn scale_group(
        &self,
        name: &GroupName,
        req: &ScaleRequest,
    ) -> Result<Option<MigrationResponse>, CoordError> {
        // The body first: a bad one is refused whether or not the group exists.
        checked(req)?;
        self.require_group(name).await?;
        let mut migrations = self
            .scale_stream(&name.stream_prefix, req)
            .await?
            .migrations;
        let mine = migrations
            .iter()
            .position(|m| m.consumer_group.as_deref() == Some(name.consumer_group.as_str()))
            .unwrap_or(0);
        Ok((mine < migrations.len()).then(|| migrations.swap_remove(mine)))
    }

    /// Rollback (contract #10) or force-complete of the stream's active migration, applied to every group.
    pub async fn end_migration(
        &self,
        name: &GroupName,
        id: &str,
        req: &MigrationActionRequest,
        end: MigrationState,
    ) -> Result<MigrationResponse, CoordError> {
        let (requested_by, reason) = validate::validate_attribution(
            req.requested_by.as_deref(),
            req.reason.as_deref(),
            validate::Reason::Required,
        )?;
        let group = self.require_group(name).await?;
        self.durability().ensure_mutable(&group.group)?;
        let prefix = &name.stream_prefix;
        let mut p = Performer::on(prefix);
        p.requested = Some((requested_by.to_owned(), reason.to_owned()));
        let (mut flow, first) = EndFlow::start(prefix, (*group.group).clone(), id, end, reason);
        match self.drive(&mut p, &mut flow, first).await {
            Ok(EndOutcome::Repeat(m)) => return Ok(migration_response(&m)),
            Ok(EndOutcome::Ended) => {}
            Err(e) => return Err(p.error(e)),
        }
        let g = self.require_group(name).await?;
        match g.group.migration(id) {
            Some(m) => Ok(migration_response(m)),
            None => {
                let s = self.load_stream(prefix).await?;
                let m =
                    s.and_then(|s| s.record.history.into_iter().find(|m| m.resharding_id == id));
                m.map(|m| migration_response(&m))
                    .ok_or_else(|| MigrationError::NotFound(id.to_owned()).into())
            }
        }
    }
}
