//! The runtime every service shares: the [`coordinator`] (store, clock, group cache) with `load` and
//! `commit`, the group [`cache`], the [`clock`], and the Redis Cluster topology ([`cluster`]).

pub mod cache;
pub mod clock;
pub mod cluster;
pub mod coordinator;
