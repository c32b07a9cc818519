//! Convergence: the group as the monitoring API shows it, compared with the live consumers' logs, and the
//! bounded wait after each fault.

use crate::STREAM;
use crate::run::Run;
use crate::settings::{ADMIN_PASSWORD, CONVERGENCE_TIMEOUT};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

impl Run {
    /// GET a coordinator JSON view from whichever replica answers.
    pub async fn get(&self, path: &str) -> Result<Value, String> {
        let mut errors = Vec::new();
        for c in &self.coordinators {
            if c.pid().is_none() {
                continue;
            }
            let r = self
                .http
                .get(format!("{}{path}", c.url()))
                .basic_auth("admin", Some(ADMIN_PASSWORD))
                .send()
                .await;
            match r {
                Ok(r) if r.status().is_success() => {
                    return r.json().await.map_err(|e| e.to_string());
                }
                Ok(r) => errors.push(format!("{}: {}", c.url(), r.status())),
                Err(e) => errors.push(format!("{}: {e}", c.url())),
            }
        }
        Err(format!("GET {path}: {}", errors.join("; ")))
    }

    /// Why the group is not converged yet, or `None` when it is: the expected shard count with no
    /// migration, every shard targeted at exactly one live consumer, granted = reported = target, nothing
    /// revoking or held, no invariant violation, and each live consumer reading exactly its target.
    pub async fn not_converged(&mut self) -> Option<String> {
        for slot in &mut self.consumers {
            slot.last_mut().unwrap().poll();
        }
        let base = format!("/coord/v1/monitoring/streams/{STREAM}/groups/{STREAM}");
        let summary = match self.get(&base).await {
            Ok(v) => v,
            Err(e) => return Some(e),
        };
        if summary["shardCount"] != json!(self.shards) || !summary["activeMigration"].is_null() {
            return Some(format!(
                "shardCount {} (want {}), activeMigration {}",
                summary["shardCount"], self.shards, summary["activeMigration"]
            ));
        }
        let a = match self.get(&format!("{base}/assignments")).await {
            Ok(v) => v,
            Err(e) => return Some(e),
        };
        let live: BTreeSet<String> = self
            .consumers
            .iter()
            .map(|s| s.last().unwrap().member.clone())
            .collect();
        let shards = |v: &Value| -> BTreeSet<u32> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s["shardIndex"].as_u64().map(|n| n as u32))
                .collect()
        };
        let target: BTreeMap<String, BTreeSet<u32>> = a["targetAssignment"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(m, v)| (m.clone(), shards(v)))
            .collect();
        if target.keys().cloned().collect::<BTreeSet<_>>() != live {
            return Some(format!("target members {:?}, live {live:?}", target.keys()));
        }
        let mut all = BTreeSet::new();
        for (m, s) in &target {
            for x in s {
                if !all.insert(*x) {
                    return Some(format!("shard {x} targeted twice ({m})"));
                }
            }
            if shards(&a["grantedAssignments"][m]) != *s
                || shards(&a["currentAssignments"][m]) != *s
            {
                return Some(format!(
                    "{m}: target {s:?}, granted {}, current {}",
                    a["grantedAssignments"][m], a["currentAssignments"][m]
                ));
            }
        }
        if all != (0..self.shards).collect() {
            return Some(format!("targeted shards {all:?} of {}", self.shards));
        }
        for key in ["revokeProgress", "holds", "invariantViolations"] {
            let empty = match &a[key] {
                Value::Array(v) => v.is_empty(),
                Value::Object(o) => o.is_empty(),
                _ => false,
            };
            if !empty {
                return Some(format!("{key}: {}", a[key]));
            }
        }
        for slot in &self.consumers {
            let w = slot.last().unwrap();
            if w.open != target[&w.member] {
                return Some(format!(
                    "{} reads {:?}, target {:?}",
                    w.name, w.open, target[&w.member]
                ));
            }
        }
        None
    }

    /// Waits (bounded) until the group converged; records a failure if it does not.
    pub async fn converge(&mut self, after: &str) -> Option<Duration> {
        let started = Instant::now();
        let mut last = String::new();
        while started.elapsed() < CONVERGENCE_TIMEOUT {
            match self.not_converged().await {
                None => return Some(started.elapsed()),
                Some(why) => last = why,
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.failures.push(format!(
            "not converged {CONVERGENCE_TIMEOUT:?} after {after}: {last}"
        ));
        None
    }
}
