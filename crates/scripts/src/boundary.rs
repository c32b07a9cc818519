//! The read of a shard's routing boundary as the SDK consumer makes it after every read (pipelined with
//! its XREADGROUP: the routing key lies in the stream's slot) and the coordinator's store too.

use redis::Value;

use crate::error::ScriptError;
use crate::guarded_append::unexpected;

/// `HMGET <routingKey> floor switchId scale`: a shard's routing boundary. Decode the reply with
/// [`BoundaryFields::from_value`].
pub fn read_boundary(routing_key: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("HMGET");
    cmd.arg(routing_key)
        .arg("floor")
        .arg("switchId")
        .arg("scale");
    cmd
}

/// The routing key's fields as [`read_boundary`] returns them (None: absent). The protocol's
/// `ShardBoundary::from_fields` gives them meaning.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoundaryFields {
    pub floor: Option<String>,
    pub switch_id: Option<String>,
    pub scale: Option<String>,
}

impl BoundaryFields {
    /// Decodes the reply of [`read_boundary`].
    pub fn from_value(v: &Value) -> Result<BoundaryFields, ScriptError> {
        let (floor, switch_id, scale): (Option<String>, Option<String>, Option<String>) =
            redis::from_redis_value_ref(v)
                .map_err(|e| unexpected(format!("routing boundary {e}")))?;
        Ok(BoundaryFields {
            floor,
            switch_id,
            scale,
        })
    }
}
