//! The routing boundary of a shard stream, for guarded publish (ordered resharding).
//!
//! Each shard stream has a routing key beside it in its own slot (`rsc_protocol::names::shard_routing_key`)
//! holding the lowest routing version an SDK producer may append with (`floor`) and the shard's switch point
//! for it (`switchId`: its last id when the boundary was raised). When a scale switches routing the
//! coordinator raises it on every shard, old and new ([`Store::raise_routing_floor`]), and annotates the
//! switch (`scale`: its counts and whether the stream is ordered). SDK producers append through
//! [`guarded_append`](rsc_scripts::guarded_append): a producer whose routing is older than the boundary is refused, writes nothing,
//! refreshes its routing and retries on the right shard; one whose routing is newer raises the boundary
//! itself first, so the switch point splits the shard exactly into records routed before and after the
//! switch, whoever learnt of it first, but never above the shard's `ceiling`, the highest routing version the
//! coordinator published for the stream ([`Store::raise_routing_ceilings`], written before the stream record
//! that publishes a version), so a made-up version cannot stop the other producers. SDK consumers read the boundary after every read ([`read_boundary`])
//! to fence themselves between a switch and the heartbeat answer that reflects it. Plain XADD clients bypass
//! the script; [`Store::appends_after_switch`] counts what they appended to a shard after the switch
//! (entries added minus guarded appends: two counters, no scan).
//!
//! The SDK builds its appends with [`guarded_append`](rsc_scripts::guarded_append) and sends them on its own data-plane connection: that
//! script, the switch-point step it shares with the raise of the boundary, and the boundary's read live in
//! `rsc-scripts` (crates/scripts), which the SDK depends on instead of this crate; they are re-exported here.

use crate::shard::Shard;
use std::sync::LazyLock;

use redis::{Script, Value};
use rsc_scripts::{BoundaryFields, read_boundary};

use crate::error::StoreError;
use crate::store::Store;

static RAISE_ROUTING_FLOOR: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{}{}",
        rsc_scripts::SWITCH_POINT,
        include_str!("lua/raise_routing_floor.lua")
    ))
});
static RAISE_ROUTING_CEILING: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/raise_routing_ceiling.lua")));
static APPENDS_AFTER_SWITCH: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/appends_after_switch.lua")));

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
    pub async fn ensure_routing_key(&self, shard: &Shard) -> Result<(), StoreError> {
        let routing_key = &shard.routing_key();
        let _: i64 = redis::cmd("HSETNX")
            .arg(routing_key)
            .arg("provisioned")
            .arg(1)
            .query_async(&mut self.connection())
            .await?;
        Ok(())
    }

    /// Raises the boundary of `shard` to `floor` if it is lower, recording the switch point, and
    /// annotates the switch with `scale` (the protocol's `BoundaryScale::encode`; "" for none) when the
    /// boundary then stands at `floor`. Returns the boundary as it now stands.
    pub async fn raise_routing_floor(
        &self,
        shard: &Shard,
        floor: i64,
        scale: &str,
    ) -> Result<RaisedBoundary, StoreError> {
        let (stream_key, routing_key) = (&shard.stream_key(), &shard.routing_key());
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

    /// Raises the routing ceiling of each of `shards`' boundaries to `version` (raise_routing_ceiling.lua): before a
    /// stream record publishes `version`, so producers holding it may raise boundaries to it and no higher.
    pub async fn raise_routing_ceilings(
        &self,
        shards: &[Shard],
        version: i64,
    ) -> Result<(), StoreError> {
        let mut conn = self.connection();
        for shard in shards {
            let _: i64 = RAISE_ROUTING_CEILING
                .key(shard.routing_key())
                .arg(version)
                .invoke_async(&mut conn)
                .await?;
        }
        Ok(())
    }

    /// The routing boundary of a shard as a consumer reads it ([`read_boundary`]).
    pub async fn routing_boundary(&self, shard: &Shard) -> Result<BoundaryFields, StoreError> {
        let routing_key = &shard.routing_key();
        let v: Value = read_boundary(routing_key)
            .query_async(&mut self.connection())
            .await?;
        Ok(BoundaryFields::from_value(&v)?)
    }

    /// The shard's switch point and what was appended after it; None when no boundary was ever raised.
    pub async fn appends_after_switch(
        &self,
        shard: &Shard,
    ) -> Result<Option<SwitchPoint>, StoreError> {
        let (stream_key, routing_key) = (&shard.stream_key(), &shard.routing_key());
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
