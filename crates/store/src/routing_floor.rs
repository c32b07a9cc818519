//! The routing boundary of a shard stream, for guarded publish (ordered resharding).
//!
//! Each shard stream has a routing key beside it in its own slot (`rsc_protocol::names::shard_routing_key`)
//! holding the lowest routing version an SDK producer may append with (`floor`) and the shard's switch point
//! for it (`switchId`: its last id when the boundary was raised). When a scale switches routing the
//! coordinator raises it on every shard, old and new ([`Store::raise_routing_floor`]), and annotates the
//! switch (`scale`: its counts and whether the stream is ordered). SDK producers append through
//! [`guarded_append`]: a producer whose routing is older than the boundary is refused, writes nothing,
//! refreshes its routing and retries on the right shard; one whose routing is newer raises the boundary
//! itself first, so the switch point splits the shard exactly into records routed before and after the
//! switch, whoever learnt of it first, but never above the shard's `ceiling`, the highest routing version the
//! coordinator published for the stream ([`Store::raise_routing_ceilings`], written before the stream record
//! that publishes a version), so a made-up version cannot stop the other producers. SDK consumers read the boundary after every read ([`read_boundary`])
//! to fence themselves between a switch and the heartbeat answer that reflects it. Plain XADD clients bypass
//! the script; [`Store::appends_after_switch`] counts what they appended to a shard after the switch
//! (entries added minus guarded appends: two counters, no scan).
//!
//! The SDK builds its appends with [`guarded_append`] and sends them on its own data-plane connection, so the
//! script text stays here with every other script (`lua/guarded_append.lua`). It is sent with EVAL, whole,
//! so it works in pipelines, on every cluster node and after a Redis restart without a NOSCRIPT round trip.

use std::sync::LazyLock;

use redis::{Script, Value};

use crate::error::StoreError;
use crate::store::Store;

const GUARDED_APPEND: &str = concat!(
    include_str!("lua/switch_point.lua"),
    include_str!("lua/guarded_append.lua")
);
static RAISE_ROUTING_FLOOR: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/switch_point.lua"),
        include_str!("lua/raise_routing_floor.lua")
    ))
});
static RAISE_ROUTING_CEILING: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/raise_routing_ceiling.lua")));
static APPENDS_AFTER_SWITCH: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/appends_after_switch.lua")));

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
    pub fn from_value(v: &Value) -> Result<AppendReply, StoreError> {
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

fn unexpected(detail: String) -> StoreError {
    StoreError::UnexpectedReply {
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

/// `HMGET <routingKey> floor switchId scale`: a shard's routing boundary as the SDK consumer reads it after
/// a read (pipelined with it: the key lies in the stream's slot). Decode the reply with
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
    pub fn from_value(v: &Value) -> Result<BoundaryFields, StoreError> {
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

/// A boundary as [`Store::raise_routing_floor`] left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaisedBoundary {
    /// This call raised it (false: it already stood at or above the floor asked for).
    pub raised: bool,
    /// The boundary now: the floor asked for, or a later switch's.
    pub floor: i64,
    /// The switch point recorded for `floor`.
    pub switch_id: String,
}

/// What a shard received since its boundary was last raised ([`Store::appends_after_switch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchPoint {
    /// The boundary: the routing version of the switch.
    pub floor: i64,
    /// The stream's last id when the boundary was raised (`0-0`: empty or missing then).
    pub switch_id: String,
    /// Entries appended after the switch point.
    pub appended: i64,
    /// Of those, appends through guarded publish.
    pub guarded: i64,
}

impl SwitchPoint {
    /// Appends after the switch that bypassed guarded publish (plain XADD).
    pub fn plain_appends(&self) -> i64 {
        (self.appended - self.guarded).max(0)
    }
}

impl Store {
    /// Creates a shard's routing key (no boundary raised) when it is missing. Guarded publish names the
    /// stream and this key; while Redis Cluster migrates their slot, a script whose keys are not all on one
    /// side is refused with TRYAGAIN until the migration ends. When both exist they move together (the
    /// slot's keys go in one MIGRATE), so producers ride out the migration through ASK.
    pub async fn ensure_routing_key(&self, routing_key: &str) -> Result<(), StoreError> {
        let _: i64 = redis::cmd("HSETNX")
            .arg(routing_key)
            .arg("provisioned")
            .arg(1)
            .query_async(&mut self.connection())
            .await?;
        Ok(())
    }

    /// Raises the boundary of shard `stream_key` to `floor` if it is lower, recording the switch point, and
    /// annotates the switch with `scale` (the protocol's `BoundaryScale::encode`; "" for none) when the
    /// boundary then stands at `floor`. Returns the boundary as it now stands.
    pub async fn raise_routing_floor(
        &self,
        stream_key: &str,
        routing_key: &str,
        floor: i64,
        scale: &str,
    ) -> Result<RaisedBoundary, StoreError> {
        let (raised, floor, switch_id): (i64, i64, String) = RAISE_ROUTING_FLOOR
            .key(stream_key)
            .key(routing_key)
            .arg(floor)
            .arg(scale)
            .invoke_async(&mut self.connection())
            .await?;
        Ok(RaisedBoundary {
            raised: raised == 1,
            floor,
            switch_id,
        })
    }

    /// Raises the routing ceiling of each of `routing_keys` to `version` (raise_routing_ceiling.lua): before a
    /// stream record publishes `version`, so producers holding it may raise boundaries to it and no higher.
    pub async fn raise_routing_ceilings(
        &self,
        routing_keys: &[String],
        version: i64,
    ) -> Result<(), StoreError> {
        let mut conn = self.connection();
        for key in routing_keys {
            let _: i64 = RAISE_ROUTING_CEILING
                .key(key)
                .arg(version)
                .invoke_async(&mut conn)
                .await?;
        }
        Ok(())
    }

    /// The routing boundary of a shard as a consumer reads it ([`read_boundary`]).
    pub async fn routing_boundary(&self, routing_key: &str) -> Result<BoundaryFields, StoreError> {
        let v: Value = read_boundary(routing_key)
            .query_async(&mut self.connection())
            .await?;
        BoundaryFields::from_value(&v)
    }

    /// The shard's switch point and what was appended after it; None when no boundary was ever raised.
    pub async fn appends_after_switch(
        &self,
        stream_key: &str,
        routing_key: &str,
    ) -> Result<Option<SwitchPoint>, StoreError> {
        let reply: Option<(i64, String, i64, i64)> = APPENDS_AFTER_SWITCH
            .key(stream_key)
            .key(routing_key)
            .invoke_async(&mut self.connection())
            .await?;
        Ok(
            reply.map(|(floor, switch_id, appended, guarded)| SwitchPoint {
                floor,
                switch_id,
                appended,
                guarded,
            }),
        )
    }
}
