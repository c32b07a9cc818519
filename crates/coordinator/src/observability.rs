//! What the coordinator tells about itself: Prometheus [`metrics`], the counters kept while it works
//! ([`stats`]) and the Grafana data routes' rows ([`grafana`]).

pub mod grafana;
pub mod metrics;
pub mod stats;
