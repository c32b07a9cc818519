//! The runtime every service shares: the [`coordinator`] (store, clock, group cache) with `load` and
//! `commit`, the group [`cache`] with the invariant facts kept beside a cached aggregate ([`kept_facts`]), the
//! [`clock`], the Redis Cluster topology ([`cluster`]), and the rate
//! [`history`] each replica keeps of the streams whose groups it owns, and the key names messages show
//! ([`shown_keys`]).

pub mod cache;
pub mod clock;
pub mod cluster;
pub mod coordinator;
pub mod history;
pub mod kept_facts;
pub mod shown_keys;
