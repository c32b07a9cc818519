//! Validation of names and numbers that arrive from clients and operators.
//!
//! Names end up inside Redis keys (see [`crate::names`]), so a name that is blank, huge, carries
//! invisible characters, or contains the hash-tag characters `{`/`}` would produce keys that are
//! confusing, collide, or land in an unexpected cluster slot. Each rule fails with a
//! [`ValidationError`] that names the wire field (e.g. `streamPrefix`) and says what to fix, so the
//! API can answer 400 with a useful message.

use crate::wire::HeartbeatRequest;
use thiserror::Error;

/// Longest stream prefix, consumer group or member id, in UTF-8 bytes.
pub const MAX_ID_LEN: usize = 200;

/// Largest shard count. A Redis Cluster has 16384 hash slots and each shard stream lives in one
/// slot, so more shards than slots cannot spread load any further.
pub const MAX_SHARD_COUNT: u32 = 16384;

/// Longest free text (`requestedBy`, `reason`), in UTF-8 bytes.
pub const MAX_TEXT_LEN: usize = 1024;

/// The largest epoch or version rsc hands out, and so the largest a client may report (`memberEpoch`,
/// `metadataVersion`, `observedMetadataVersion`, `minimumMetadataVersion`): 2^53 − 1, the largest integer
/// every JSON client represents exactly. A report above it is refused with 400 rather than recorded as
/// rollback evidence (a recreate would have to start above it), and the state machine never increments an
/// epoch past it (`rsc_group::model::incremented`), so neither clients nor `i64` ever see it wrap.
pub const MAX_EPOCH: i64 = (1 << 53) - 1;

/// Wire field name of the stream prefix.
pub const STREAM_PREFIX: &str = "streamPrefix";
/// Wire field name of the consumer group.
pub const CONSUMER_GROUP: &str = "consumerGroup";
/// Wire field name of the member id.
pub const MEMBER_ID: &str = "memberId";

/// A rejected input value. The message starts with the wire field name.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ValidationError {
    /// The value is empty or only whitespace.
    #[error("{field}: must not be blank")]
    Blank {
        /// The wire name of the field.
        field: &'static str,
    },

    /// The value is longer than the field allows.
    #[error("{field}: must be at most {max} bytes of UTF-8 (got {actual})")]
    TooLong {
        /// The wire name of the field.
        field: &'static str,
        /// The longest value allowed, in UTF-8 bytes.
        max: usize,
        /// The value's length, in UTF-8 bytes.
        actual: usize,
    },

    /// The value starts or ends with whitespace.
    #[error("{field}: must not start or end with whitespace")]
    SurroundingWhitespace {
        /// The wire name of the field.
        field: &'static str,
    },

    /// The value contains a control character (or, for text shown to operators, a line separator or bidi
    /// override).
    #[error("{field}: must not contain control characters (found U+{code:04X})")]
    ControlCharacter {
        /// The wire name of the field.
        field: &'static str,
        /// The first offending character's code point.
        code: u32,
    },

    /// The value contains `{` or `}`, which would change the Redis Cluster slot of the keys built from it.
    #[error("{field}: must not contain '{{' or '}}' (Redis Cluster hash-tag characters)")]
    HashTagCharacter {
        /// The wire name of the field.
        field: &'static str,
    },

    /// A consumer group contains `:`, which would make the group tag ambiguous.
    #[error(
        "{field}: must not contain ':' (the group tag '{{<streamPrefix>:<consumerGroup>}}' must stay unambiguous)"
    )]
    Colon {
        /// The wire name of the field.
        field: &'static str,
    },

    /// A number outside its allowed range.
    #[error("{field}: must be between {min} and {max} (got {actual})")]
    OutOfRange {
        /// The wire name of the field.
        field: &'static str,
        /// The smallest value allowed.
        min: i64,
        /// The largest value allowed.
        max: i64,
        /// The value sent.
        actual: i64,
    },

    /// Any other field rule of a request body; `field` is the field's path, e.g.
    /// `revokingShards[shard 3].inFlight`.
    #[error("{field}: {rule}")]
    Field {
        /// The path of the field in the body.
        field: String,
        /// The rule the value broke, in words (e.g. `must be at least 0`).
        rule: String,
    },
}

impl ValidationError {
    /// The wire name of the rejected field.
    pub fn field(&self) -> &str {
        match self {
            ValidationError::Blank { field }
            | ValidationError::TooLong { field, .. }
            | ValidationError::SurroundingWhitespace { field }
            | ValidationError::ControlCharacter { field, .. }
            | ValidationError::HashTagCharacter { field }
            | ValidationError::Colon { field }
            | ValidationError::OutOfRange { field, .. } => field,
            ValidationError::Field { field, .. } => field,
        }
    }

    fn field_rule(field: impl Into<String>, rule: impl Into<String>) -> Self {
        ValidationError::Field {
            field: field.into(),
            rule: rule.into(),
        }
    }
}

/// Checks a stream prefix (`streamPrefix`). It may contain `:`.
pub fn validate_stream_prefix(value: &str) -> Result<(), ValidationError> {
    validate_name(STREAM_PREFIX, value)
}

/// Checks a consumer group (`consumerGroup`). Unlike a prefix it must not contain `:`: the group
/// tag is `{<streamPrefix>:<consumerGroup>}`, and with a `:` allowed on both sides the prefix
/// `a:b` with group `c` and the prefix `a` with group `b:c` would share keys.
pub fn validate_consumer_group(value: &str) -> Result<(), ValidationError> {
    validate_name(CONSUMER_GROUP, value)?;
    if value.contains(':') {
        return Err(ValidationError::Colon {
            field: CONSUMER_GROUP,
        });
    }
    Ok(())
}

/// Checks a member id (`memberId`).
pub fn validate_member_id(value: &str) -> Result<(), ValidationError> {
    validate_name(MEMBER_ID, value)
}

/// Wire field name of the static member identity.
pub const GROUP_INSTANCE_ID: &str = "groupInstanceId";

/// Checks a static member identity (`groupInstanceId`): 1 to [`MAX_ID_LEN`] bytes of ASCII letters,
/// digits, `.`, `_` and `-` (a Kubernetes pod name fits; so does the SDK's `<id>-m<n>` for several members in
/// one process).
pub fn validate_group_instance_id(value: &str) -> Result<(), ValidationError> {
    if value.is_empty() {
        return Err(ValidationError::Blank {
            field: GROUP_INSTANCE_ID,
        });
    }
    if value.len() > MAX_ID_LEN {
        return Err(ValidationError::TooLong {
            field: GROUP_INSTANCE_ID,
            max: MAX_ID_LEN,
            actual: value.len(),
        });
    }
    if let Some(c) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(ValidationError::field_rule(
            GROUP_INSTANCE_ID,
            format!(
                "may contain only ASCII letters, digits, '.', '_' and '-' (found {:?})",
                c
            ),
        ));
    }
    Ok(())
}

/// Checks a shard count in `min..=MAX_SHARD_COUNT` and returns it as `u32`.
pub fn validate_shard_count(field: &'static str, n: i64, min: i64) -> Result<u32, ValidationError> {
    let max = i64::from(MAX_SHARD_COUNT);
    let out_of_range = ValidationError::OutOfRange {
        field,
        min,
        max,
        actual: n,
    };
    if n < min || n > max {
        return Err(out_of_range);
    }
    // A negative `min` lets a negative `n` through the range check; it is still not a count.
    u32::try_from(n).map_err(|_| out_of_range)
}

/// Checks a reported epoch or version: at least `min`, at most [`MAX_EPOCH`].
pub fn validate_observed(
    field: &'static str,
    value: i64,
    min: i64,
) -> Result<i64, ValidationError> {
    if value < min || value > MAX_EPOCH {
        return Err(ValidationError::OutOfRange {
            field,
            min,
            max: MAX_EPOCH,
            actual: value,
        });
    }
    Ok(value)
}

/// Checks free text such as `requestedBy` or `reason`: not blank when `required`, and at most
/// [`MAX_TEXT_LEN`] bytes.
pub fn validate_text(
    field: &'static str,
    value: &str,
    required: bool,
) -> Result<(), ValidationError> {
    if required && value.trim().is_empty() {
        return Err(ValidationError::Blank { field });
    }
    check_len(field, value, MAX_TEXT_LEN)
}

/// Whether an audited change request must say why (`reason`): most must; creating a stream need not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A blank or missing `reason` is refused.
    Required,
    /// `reason` may be missing or blank; when given it is still length-checked.
    Optional,
}

/// Checks who asks for an audited change and why (`requestedBy`, required; `reason` as `reason` says),
/// as every admin change request carries them, and gives both back (missing ones as `""`).
pub fn validate_attribution<'a>(
    requested_by: Option<&'a str>,
    reason: Option<&'a str>,
    rule: Reason,
) -> Result<(&'a str, &'a str), ValidationError> {
    let requested_by = requested_by.unwrap_or("");
    validate_text("requestedBy", requested_by, true)?;
    let reason = reason.unwrap_or("");
    validate_text("reason", reason, rule == Reason::Required)?;
    Ok((requested_by, reason))
}

/// Checks that text shown to operators (a member's client name and version) holds no control character
/// (C0, DEL, C1), line or paragraph separator, or bidi override (U+202A–U+202E, U+2066–U+2069): such text
/// could drive or garble an operator's terminal (issue #32, finding 5).
pub fn validate_printable(field: &'static str, value: &str) -> Result<(), ValidationError> {
    match value.chars().find(|c| {
        c.is_control()
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    }) {
        Some(c) => Err(ValidationError::ControlCharacter {
            field,
            code: u32::from(c),
        }),
        None => Ok(()),
    }
}

/// Longest free-text field of a shard progress report, in bytes.
pub const MAX_PROGRESS_FIELD_LEN: usize = 512;

/// The field rules of a heartbeat body that the API answers with HTTP 400 (everything else about a
/// heartbeat is answered with a heartbeat status). The path's names are checked separately.
pub fn validate_heartbeat_request(req: &HeartbeatRequest) -> Result<(), ValidationError> {
    let max_list = MAX_SHARD_COUNT as usize;
    if req.protocol_version < 1 {
        return Err(ValidationError::field_rule(
            "protocolVersion",
            "must be at least 1",
        ));
    }
    validate_text("requestId", &req.request_id, true)?;
    if req.request_id.len() > MAX_ID_LEN {
        return Err(ValidationError::field_rule(
            "requestId",
            format!("must be at most {MAX_ID_LEN} bytes"),
        ));
    }
    if req
        .member_name
        .as_ref()
        .is_some_and(|n| n.len() > MAX_ID_LEN)
    {
        return Err(ValidationError::field_rule(
            "memberName",
            format!("must be at most {MAX_ID_LEN} bytes"),
        ));
    }
    for (field, value) in [
        ("clientName", &req.client_name),
        ("clientVersion", &req.client_version),
        ("memberName", &req.member_name),
    ] {
        if let Some(v) = value {
            validate_text(field, v, false)?;
            validate_printable(field, v)?;
            if v.len() > MAX_ID_LEN {
                return Err(ValidationError::field_rule(
                    field,
                    format!("must be at most {MAX_ID_LEN} bytes"),
                ));
            }
        }
    }
    if let Some(id) = &req.group_instance_id {
        validate_group_instance_id(id)?;
    }
    if req.metadata_version < 0 {
        return Err(ValidationError::field_rule(
            "metadataVersion",
            "must be at least 0",
        ));
    }
    // Epochs and versions a member reports are rollback evidence: capped, so none can reach `i64::MAX`.
    // (An epoch below -1 is answered with the INVALID_REQUEST heartbeat status, as before.)
    for (field, v) in [
        ("memberEpoch", req.member_epoch),
        ("metadataVersion", req.metadata_version),
    ] {
        if v > MAX_EPOCH {
            return Err(ValidationError::field_rule(
                field,
                format!(
                    "must be at most {MAX_EPOCH} (2^53 - 1, the largest integer JSON clients represent \
                     exactly; got {v})"
                ),
            ));
        }
    }
    let cap = &req.runtime_consumer_capacity;
    if cap.runtime_max_concurrency < 1 {
        return Err(ValidationError::field_rule(
            "runtimeConsumerCapacity.runtimeMaxConcurrency",
            "must be at least 1",
        ));
    }
    if cap.available_concurrency < 0 {
        return Err(ValidationError::field_rule(
            "runtimeConsumerCapacity.availableConcurrency",
            "must be at least 0",
        ));
    }
    for (field, len) in [
        ("ownedShards", req.owned_shards.len()),
        ("revokingShards", req.revoking_shards.len()),
        ("shardProgress", req.shard_progress.len()),
    ] {
        if len > max_list {
            return Err(ValidationError::field_rule(
                field,
                format!("at most {max_list} entries"),
            ));
        }
    }
    if let Some(r) = req.revoking_shards.iter().find(|r| r.in_flight < 0) {
        return Err(ValidationError::field_rule(
            format!("revokingShards[shard {}].inFlight", r.shard.shard_index),
            "must be at least 0",
        ));
    }
    for p in &req.shard_progress {
        let shard = p.shard.shard_index;
        if p.pending_count < 0 {
            return Err(ValidationError::field_rule(
                format!("shardProgress[shard {shard}].pendingCount"),
                "must be at least 0",
            ));
        }
        for (field, v) in [
            ("streamKey", &p.stream_key),
            ("lastDeliveredId", &p.last_delivered_id),
            ("lastAckedId", &p.last_acked_id),
            ("updatedAt", &p.updated_at),
        ] {
            if v.as_ref().is_some_and(|s| s.len() > MAX_PROGRESS_FIELD_LEN) {
                return Err(ValidationError::field_rule(
                    format!("shardProgress[shard {shard}].{field}"),
                    format!("at most {MAX_PROGRESS_FIELD_LEN} bytes"),
                ));
            }
        }
    }
    Ok(())
}

/// The rules shared by all names that become part of Redis keys or consumer names.
fn validate_name(field: &'static str, value: &str) -> Result<(), ValidationError> {
    if value.trim().is_empty() {
        return Err(ValidationError::Blank { field });
    }
    check_len(field, value, MAX_ID_LEN)?;
    if value.trim() != value {
        return Err(ValidationError::SurroundingWhitespace { field });
    }
    // `char::is_control` covers the ASCII controls (U+0000..U+001F, U+007F) and the C1 controls
    // (U+0080..U+009F); none of them belongs in a key name.
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(ValidationError::ControlCharacter {
            field,
            code: u32::from(c),
        });
    }
    if value.contains(['{', '}']) {
        return Err(ValidationError::HashTagCharacter { field });
    }
    // A name is a path segment of the API: `.` and `..` would be resolved away by clients and proxies.
    if value == "." || value == ".." {
        return Err(ValidationError::field_rule(
            field,
            format!("must not be {value:?} (a path segment clients and proxies resolve away)"),
        ));
    }
    Ok(())
}

fn check_len(field: &'static str, value: &str, max: usize) -> Result<(), ValidationError> {
    if value.len() > max {
        return Err(ValidationError::TooLong {
            field,
            max,
            actual: value.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
