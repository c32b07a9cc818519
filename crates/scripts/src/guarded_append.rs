//! Guarded publish: the SDK producer's append to a shard stream, refused when its routing is older than the
//! shard's routing boundary (`lua/guarded_append.lua`, with the switch-point step prepended).
//!
//! It is sent with EVAL, whole, so it works in pipelines, on every cluster node and after a Redis restart
//! without a NOSCRIPT round trip.

use redis::Value;

use crate::error::ScriptError;

const GUARDED_APPEND: &str = concat!(
    include_str!("lua/switch_point.lua"),
    include_str!("lua/guarded_append.lua")
);

/// The answer to one [`guarded_append`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppendReply {
    /// Appended with this entry id.
    Appended(String),
    /// The stream does not exist (a stale route, e.g. to a retired shard): nothing written.
    StreamMissing,
    /// The producer's routing version is below the shard's boundary `floor`: nothing written.
    StaleRouting { floor: i64 },
    /// The producer's routing version is above the highest the coordinator published for the stream
    /// (`ceiling`): a made-up version, refused so it cannot move the boundary; nothing written.
    AheadOfRouting { ceiling: i64 },
}

impl AppendReply {
    /// Decodes the script's reply.
    pub fn from_value(v: &Value) -> Result<AppendReply, ScriptError> {
        let text = |v: &Value| match v {
            Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
            Value::SimpleString(s) => Some(s.clone()),
            _ => None,
        };
        match v {
            Value::Nil => Ok(AppendReply::StreamMissing),
            Value::Array(items)
                if items.len() == 2 && text(&items[0]).as_deref() == Some("stale") =>
            {
                match &items[1] {
                    Value::Int(floor) => Ok(AppendReply::StaleRouting { floor: *floor }),
                    other => Err(unexpected(format!("boundary {other:?}"))),
                }
            }
            Value::Array(items)
                if items.len() == 2 && text(&items[0]).as_deref() == Some("ahead") =>
            {
                match &items[1] {
                    Value::Int(ceiling) => Ok(AppendReply::AheadOfRouting { ceiling: *ceiling }),
                    other => Err(unexpected(format!("ceiling {other:?}"))),
                }
            }
            other => text(other)
                .map(AppendReply::Appended)
                .ok_or_else(|| unexpected(format!("reply {other:?}"))),
        }
    }
}

/// An [`ScriptError::UnexpectedReply`] of guarded publish (the boundary's read shares the wording).
pub(crate) fn unexpected(detail: String) -> ScriptError {
    ScriptError::UnexpectedReply {
        detail: format!("guarded append: {detail}"),
    }
}

/// `EVAL guarded_append.lua 2 <streamKey> <routingKey> <routingVersion> <maxLen or ''> f v …`: an XADD
/// NOMKSTREAM refused when `routing_version` is below the shard's boundary. Decode with
/// [`AppendReply::from_value`].
pub fn guarded_append<'a>(
    stream_key: &str,
    routing_key: &str,
    routing_version: i64,
    max_len: Option<u64>,
    fields: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(GUARDED_APPEND)
        .arg(2)
        .arg(stream_key)
        .arg(routing_key)
        .arg(routing_version);
    match max_len {
        Some(n) => cmd.arg(n),
        None => cmd.arg(""),
    };
    for (f, v) in fields {
        cmd.arg(f).arg(v);
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_carries_the_switch_point_step_and_the_replies_decode() {
        assert!(GUARDED_APPEND.starts_with(crate::SWITCH_POINT));
        assert_eq!(
            AppendReply::from_value(&Value::Nil),
            Ok(AppendReply::StreamMissing)
        );
        let stale = Value::Array(vec![Value::BulkString(b"stale".to_vec()), Value::Int(7)]);
        assert_eq!(
            AppendReply::from_value(&stale),
            Ok(AppendReply::StaleRouting { floor: 7 })
        );
        let ahead = Value::Array(vec![Value::SimpleString("ahead".to_owned()), Value::Int(9)]);
        assert_eq!(
            AppendReply::from_value(&ahead),
            Ok(AppendReply::AheadOfRouting { ceiling: 9 })
        );
        assert_eq!(
            AppendReply::from_value(&Value::BulkString(b"1-0".to_vec())),
            Ok(AppendReply::Appended("1-0".to_owned()))
        );
        let wrong = AppendReply::from_value(&Value::Int(1)).expect_err("an integer is no reply");
        assert!(
            wrong
                .to_string()
                .starts_with("unexpected reply from Redis: guarded append:")
        );
    }
}
