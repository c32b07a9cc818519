//! Resharding metrics updated where things happen: routing switches of quiesced scales by outcome (every
//! producer quiesced, or forced by the timeout), and per old shard the plain appends after a switch that
//! bypassed guarded publish (`unordered_appends_after_switch`, set by the reconciler's drain pass).
//!
//! Label values stay bounded: stream prefixes are validated names, outcomes a fixed pair, and shard series
//! are capped by `metrics.max-shard-series` by the caller.

use super::{Labels, Metrics};

/// The `outcome` label of a quiesced scale's switch.
pub fn quiesce_outcome_label(forced_by_timeout: bool) -> &'static str {
    if forced_by_timeout {
        "forced_by_timeout"
    } else {
        "all_quiesced"
    }
}

impl Metrics {
    /// Counts one routing switch of a scale with `producerQuiesce`.
    pub fn count_quiesce_switch(&self, stream: &str, forced_by_timeout: bool) {
        self.quiesce_switches
            .get_or_create(&vec![
                ("stream", stream.to_owned()),
                (
                    "outcome",
                    quiesce_outcome_label(forced_by_timeout).to_owned(),
                ),
            ])
            .inc();
    }

    /// Sets the plain appends after the latest switch on one old shard.
    pub fn set_unordered_appends(&self, stream: &str, shard: u32, appends: i64) {
        let labels: Labels = vec![("stream", stream.to_owned()), ("shard", shard.to_string())];
        self.unordered_appends.get_or_create(&labels).set(appends);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observability::stats::Stats;

    #[test]
    fn quiesce_switches_and_unordered_appends_are_exposed() {
        let m = Metrics::new();
        m.count_quiesce_switch("orders", false);
        m.count_quiesce_switch("orders", true);
        m.count_quiesce_switch("orders", true);
        m.set_unordered_appends("orders", 3, 7);
        let text = m.render(&Stats::default());
        for needle in [
            "redis_stream_coord_quiesce_switch_total{stream=\"orders\",outcome=\"all_quiesced\"} 1",
            "redis_stream_coord_quiesce_switch_total{stream=\"orders\",outcome=\"forced_by_timeout\"} 2",
            "redis_stream_coord_unordered_appends_after_switch{stream=\"orders\",shard=\"3\"} 7",
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
    }
}
