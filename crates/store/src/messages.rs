//! Reading records of a shard stream, page by page (`XRANGE` / `XREVRANGE` with an exclusive cursor), for
//! the message browser. Read-only; one round trip per page. Field values that are not UTF-8 are shown
//! with replacement characters (the browser displays text, it never writes records back).

use redis::Value;

use crate::error::StoreError;
use crate::shard::Shard;
use crate::store::Store;

/// One record of a stream: its id and its field/value pairs in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRecord {
    pub id: String,
    pub fields: Vec<(String, String)>,
}

/// Which way a page walks the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageDirection {
    /// Oldest first (`XRANGE`).
    Forward,
    /// Newest first (`XREVRANGE`).
    Backward,
}

/// The largest stream id (`u64::MAX-u64::MAX`); nothing lies after it.
const MAX_ID: (u64, u64) = (u64::MAX, u64::MAX);

impl Store {
    /// Up to `count` records of the shard's stream strictly after (`Forward`) or before (`Backward`) the
    /// record id `cursor` (`None`: from the start or from the end). A stream that does not exist reads as
    /// empty. `cursor` is a parsed `ms-seq` id.
    pub async fn shard_records(
        &self,
        shard: &Shard,
        direction: PageDirection,
        cursor: Option<(u64, u64)>,
        count: usize,
    ) -> Result<Vec<StreamRecord>, StoreError> {
        let (cmd, from, to) = match (direction, cursor) {
            (PageDirection::Forward, None) => ("XRANGE", "-".to_owned(), "+".to_owned()),
            (PageDirection::Forward, Some(c)) if c == MAX_ID => return Ok(Vec::new()),
            (PageDirection::Forward, Some((ms, seq))) => {
                ("XRANGE", format!("({ms}-{seq}"), "+".to_owned())
            }
            (PageDirection::Backward, None) => ("XREVRANGE", "+".to_owned(), "-".to_owned()),
            (PageDirection::Backward, Some((0, 0))) => return Ok(Vec::new()),
            (PageDirection::Backward, Some((ms, seq))) => {
                ("XREVRANGE", format!("({ms}-{seq}"), "-".to_owned())
            }
        };
        let reply: Value = redis::cmd(cmd)
            .arg(shard.stream_key())
            .arg(from)
            .arg(to)
            .arg("COUNT")
            .arg(count)
            .query_async(&mut self.connection())
            .await?;
        decode_records(&reply)
    }
}

fn decode_records(reply: &Value) -> Result<Vec<StreamRecord>, StoreError> {
    let unexpected = |what: &str| StoreError::UnexpectedReply {
        detail: format!("XRANGE: {what}"),
    };
    let Value::Array(entries) = reply else {
        return match reply {
            Value::Nil => Ok(Vec::new()),
            _ => Err(unexpected("not an array of entries")),
        };
    };
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let Value::Array(parts) = entry else {
            return Err(unexpected("an entry is not [id, fields]"));
        };
        let [id, fields] = parts.as_slice() else {
            return Err(unexpected("an entry is not [id, fields]"));
        };
        let id = text(id).ok_or_else(|| unexpected("an entry id is not a string"))?;
        let pairs = match fields {
            Value::Array(flat) => flat
                .chunks(2)
                .filter(|kv| kv.len() == 2)
                .map(|kv| {
                    (
                        text(&kv[0]).unwrap_or_default(),
                        text(&kv[1]).unwrap_or_default(),
                    )
                })
                .collect(),
            Value::Map(map) => map
                .iter()
                .map(|(k, v)| (text(k).unwrap_or_default(), text(v).unwrap_or_default()))
                .collect(),
            Value::Nil => Vec::new(),
            _ => return Err(unexpected("entry fields are not a list")),
        };
        out.push(StreamRecord { id, fields: pairs });
    }
    Ok(out)
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}
