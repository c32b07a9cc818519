//! Decoding the replies of the store's Lua scripts.
//!
//! Every script answers with an array `{STATUS, now_ms, ...}`. Decoding is strict: anything else
//! becomes [`StoreError::UnexpectedReply`] instead of a guess, so a script and its caller can never
//! silently disagree.

use redis::Value;

use crate::error::StoreError;

/// A decoded script reply: a status word, the Redis time of the call, and the remaining values.
#[derive(Debug)]
pub(crate) struct ScriptReply {
    pub(crate) status: String,
    pub(crate) now_ms: i64,
    rest: Vec<Value>,
}

impl ScriptReply {
    pub(crate) fn parse(value: Value) -> Result<ScriptReply, StoreError> {
        let Value::Array(items) = value else {
            return Err(StoreError::unexpected(format!(
                "script reply is not an array: {value:?}"
            )));
        };
        let mut items = items.into_iter();
        let status = match items.next() {
            Some(v) => text(v)?,
            None => return Err(StoreError::unexpected("script reply is empty")),
        };
        let now_ms = match items.next() {
            Some(v) => int(v)?,
            None => {
                return Err(StoreError::unexpected(format!(
                    "script reply {status} has no time"
                )));
            }
        };
        Ok(ScriptReply {
            status,
            now_ms,
            rest: items.collect(),
        })
    }

    /// How many values follow the time.
    pub(crate) fn len(&self) -> usize {
        self.rest.len()
    }

    /// The integer after the time (index 0 = third element of the reply).
    pub(crate) fn int(&self, index: usize) -> Result<i64, StoreError> {
        match self.rest.get(index) {
            Some(v) => int(v.clone()),
            None => Err(self.missing(index)),
        }
    }

    /// The text after the time (index 0 = third element of the reply).
    pub(crate) fn text(&self, index: usize) -> Result<String, StoreError> {
        match self.rest.get(index) {
            Some(v) => text(v.clone()),
            None => Err(self.missing(index)),
        }
    }

    /// The current revision carried by a CONFLICT reply: `-1` means the group does not exist.
    pub(crate) fn conflict_revision(&self) -> Result<Option<u64>, StoreError> {
        let raw = self.int(0)?;
        if raw == -1 {
            return Ok(None);
        }
        u64::try_from(raw)
            .map(Some)
            .map_err(|_| StoreError::unexpected(format!("negative revision {raw} in CONFLICT")))
    }

    /// The outcome of a compare-and-set reply whose status is WRITTEN or CONFLICT (shared by the group and
    /// stream-record scripts); None for any other status, which the caller decodes itself.
    pub(crate) fn written_or_conflict(&self) -> Result<Option<crate::CasOutcome>, StoreError> {
        let now_ms = self.now_ms;
        match self.status.as_str() {
            "WRITTEN" => {
                let revision = u64::try_from(self.int(0)?).map_err(|_| {
                    StoreError::unexpected("negative revision in WRITTEN reply".to_string())
                })?;
                Ok(Some(crate::CasOutcome::Written { revision, now_ms }))
            }
            "CONFLICT" => Ok(Some(crate::CasOutcome::Conflict {
                current: self.conflict_revision()?,
                now_ms,
            })),
            _ => Ok(None),
        }
    }

    /// The error for a status the caller does not expect from this script.
    pub(crate) fn unknown_status(&self) -> StoreError {
        StoreError::unexpected(format!("unknown script status {:?}", self.status))
    }

    fn missing(&self, index: usize) -> StoreError {
        StoreError::unexpected(format!(
            "script reply {} lacks element {}",
            self.status,
            index + 3
        ))
    }
}

fn text(value: Value) -> Result<String, StoreError> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes)
            .map_err(|e| StoreError::unexpected(format!("script reply is not UTF-8: {e}"))),
        Value::SimpleString(s) => Ok(s),
        other => Err(StoreError::unexpected(format!(
            "expected text in script reply, got {other:?}"
        ))),
    }
}

fn int(value: Value) -> Result<i64, StoreError> {
    match value {
        Value::Int(n) => Ok(n),
        other => Err(StoreError::unexpected(format!(
            "expected an integer in script reply, got {other:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn parses_status_time_and_rest() {
        let reply = ScriptReply::parse(Value::Array(vec![
            bulk("CONFLICT"),
            Value::Int(1_700_000_000_123),
            Value::Int(7),
        ]))
        .expect("valid reply");
        assert_eq!(reply.status, "CONFLICT");
        assert_eq!(reply.now_ms, 1_700_000_000_123);
        assert_eq!(reply.conflict_revision().expect("revision"), Some(7));
        assert!(reply.text(0).is_err());
        assert!(reply.int(1).is_err());
    }

    #[test]
    fn minus_one_means_missing_group() {
        let reply = ScriptReply::parse(Value::Array(vec![
            bulk("CONFLICT"),
            Value::Int(5),
            Value::Int(-1),
        ]))
        .expect("valid reply");
        assert_eq!(reply.conflict_revision().expect("revision"), None);
    }

    #[test]
    fn rejects_malformed_replies() {
        for bad in [
            Value::Nil,
            Value::Int(1),
            Value::Array(vec![]),
            Value::Array(vec![bulk("OK")]),
            Value::Array(vec![Value::Int(1), Value::Int(2)]),
            Value::Array(vec![bulk("OK"), bulk("not a number")]),
            Value::Array(vec![Value::BulkString(vec![0xff]), Value::Int(2)]),
        ] {
            let err = ScriptReply::parse(bad).expect_err("malformed");
            assert!(matches!(err, StoreError::UnexpectedReply { .. }), "{err}");
        }
        let conflict = ScriptReply::parse(Value::Array(vec![
            bulk("CONFLICT"),
            Value::Int(5),
            Value::Int(-3),
        ]))
        .expect("valid shape");
        assert!(conflict.conflict_revision().is_err());
    }
}
