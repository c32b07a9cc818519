//! Resetting a consumer group's position (rsc's addition to coord/v1): the body of
//! `POST /coord/v1/streams/{p}/groups/{g}/offsets/reset` and its answer, one plan row per shard.

use serde::{Deserialize, Serialize};

/// Where a reset moves the group's position on each shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ResetTo {
    /// Before the first record: every record still in the shard stream is read again.
    Earliest,
    /// After the last record: everything not yet read is skipped.
    Latest,
    /// Before the first record appended at or after `value`, an RFC 3339 time (not in the future).
    Datetime,
    /// At the stream id `value` (`<ms>-<seq>` or `<ms>`): records after it are read next.
    Id,
    /// By `shift` records from each shard's current position: negative reads the last `-shift` delivered
    /// records again, positive skips the next `shift`; clamped at the stream's ends.
    Shift,
}

impl ResetTo {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ResetTo::Earliest => "EARLIEST",
            ResetTo::Latest => "LATEST",
            ResetTo::Datetime => "DATETIME",
            ResetTo::Id => "ID",
            ResetTo::Shift => "SHIFT",
        }
    }
}

/// `POST …/groups/{g}/offsets/reset`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OffsetResetRequest {
    /// Required: EARLIEST, LATEST, DATETIME, ID or SHIFT.
    #[serde(default)]
    pub to: Option<ResetTo>,
    /// DATETIME: an RFC 3339 time, not in the future; ID: a stream id; absent otherwise.
    #[serde(default)]
    pub value: Option<String>,
    /// SHIFT only (required with it): how many records to move each shard's position by, from -10,000 to
    /// 10,000 and not 0 — negative moves back (those records are read again), positive forward (skipped).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = -10000, maximum = 10000))]
    pub shift: Option<i64>,
    /// The shards to reset (each once, below the group's shard count); absent: every shard.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<u32>>))]
    pub shards: Option<Vec<i64>>,
    /// Only compute the plan; change nothing.
    #[serde(default)]
    pub dry_run: Option<bool>,
    /// Proceed although the group still lists members, provided every one of their leases has lapsed in
    /// Redis (stopped processes the reconciler has not expired yet). Never overrides a live lease.
    #[serde(default)]
    pub force: Option<bool>,
    /// Who asks (required; recorded in the audit log).
    #[serde(default)]
    pub requested_by: Option<String>,
    /// Why (required; recorded in the audit log and the coordinator's log).
    #[serde(default)]
    pub reason: Option<String>,
}

impl super::AdminBody for OffsetResetRequest {
    const FIELDS: &'static [&'static str] = &[
        "to",
        "value",
        "shift",
        "shards",
        "dryRun",
        "force",
        "requestedBy",
        "reason",
    ];
}

/// Which way a shard's position moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ResetDirection {
    /// Forward: the records in between are skipped, and pending entries up to the new id acknowledged.
    Skip,
    /// Backward: the records in between are read again; pending entries are kept.
    Reread,
    /// The position does not move.
    Unchanged,
}

/// One shard of a reset plan (or of the reset done).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardReset {
    /// The shard.
    pub shard_index: u32,
    /// Its shard stream's key.
    pub stream_key: String,
    /// The group's last-delivered id on the shard stream before the reset (`0-0`: nothing delivered).
    pub current_id: String,
    /// The last-delivered id the reset sets: the next read returns the records after it.
    pub new_id: String,
    /// Which way the position moves.
    pub direction: ResetDirection,
    /// Records after `currentId` up to `newId` that the group will not read (SKIP).
    pub records_skipped: i64,
    /// Records after `newId` up to `currentId` that the group will read again (REREAD).
    pub records_reread: i64,
    /// The count stopped at the cap (`countCap` of the answer): there are at least that many.
    pub count_capped: bool,
    /// SHIFT only: the shard had fewer records than asked for on that side of its position, so the new id
    /// is the stream's end (`0-0`, or its last id) and the count says how many records were actually moved.
    #[serde(default)]
    pub clamped: bool,
    /// The group's pending entries on the shard before the reset.
    pub pending_before: i64,
    /// Pending entries the reset acknowledges (SKIP: every entry up to the new id).
    pub pending_acknowledged: i64,
    /// Pending entries after the reset (a dry run: what they would be).
    pub pending_after: i64,
}

/// The answer of `POST …/offsets/reset`: the plan per shard, applied unless `dryRun`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct OffsetResetResponse {
    /// The stream.
    pub stream_prefix: String,
    /// The consumer group.
    pub consumer_group: String,
    /// The target asked for.
    pub to: ResetTo,
    /// The target's value (DATETIME, ID), as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The shift asked for (SHIFT), as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shift: Option<i64>,
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Whether the positions were changed (false for a dry run).
    pub applied: bool,
    /// Records skipped or re-read are counted up to this many per shard.
    pub count_cap: i64,
    /// One row per shard reset, by shard index.
    pub shards: Vec<ShardReset>,
    /// What the caller should know beyond the rows (e.g. a member that joined while the reset ran).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// What an offset reset that stopped partway had done (the `incompleteReset` of a 409
/// `OFFSET_RESET_INCOMPLETE` answer). Nothing is rolled back: each shard is in exactly one of the three lists,
/// so an operator can verify the moved ones and reset the others (`shards`) — for `SHIFT` only those not
/// moved, or the moved ones would shift twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct IncompleteReset {
    /// The shards whose position was moved, each row as applied (`currentId` → `newId`, pending entries
    /// acknowledged), in the order they were moved.
    pub moved: Vec<ShardReset>,
    /// The shard being moved when the reset stopped on a Redis failure: its `XGROUP SETID` or `XACK` may or
    /// may not have taken effect (read its position back: `GET …/offsets`). None when the reset stopped
    /// between two shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_doubt: Option<ShardReset>,
    /// The shards the reset did not touch: their position is what it was before the request.
    pub not_moved: Vec<u32>,
    /// Why it stopped, in words (the hold vanished, Redis failed, …).
    pub cause: String,
}
