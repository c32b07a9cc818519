//! The runtime every service shares: the [`coordinator`] (store, clock, group cache) with `load` and
//! `commit`, the group [`cache`], the [`clock`], the Redis Cluster topology ([`cluster`]), and the rate
//! [`history`] each replica keeps of the streams whose groups it owns.

pub mod cache;
pub mod clock;
pub mod cluster;
pub mod coordinator;
pub mod history;
