//! Metric handles kept for the per-request paths: a heartbeat counts itself by group and status, every HTTP
//! request by route and method, every Redis call by operation. Looking a series up in its `Family` means
//! building its label set (owned strings) first; here each series' handle is built once and found again by
//! reference, so a steady heartbeat allocates nothing for its metrics. A handle shares its value with the
//! family's series (`Counter` and `Histogram` are handles to shared atomics), so the exposition is the same.

use super::Labels;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

/// Values of the bounded `method` label, in a fixed order.
pub(super) const METHODS: [&str; 8] = [
    "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "OTHER",
];

/// The index of a method in [`METHODS`] (anything else is `OTHER`).
pub(super) fn method_index(method: &str) -> usize {
    METHODS[..7].iter().position(|m| *m == method).unwrap_or(7)
}

/// Looks `key` up under a read lock, creating its entry under the write lock on a miss; says whether it was
/// created by this call.
fn get_or_insert<K, V>(
    map: &RwLock<HashMap<K, Arc<V>>>,
    key: &K::Borrowed,
    make: impl FnOnce() -> (K, V),
) -> Option<(Arc<V>, bool)>
where
    K: Owned,
{
    if let Some(v) = map.read().ok()?.get(key) {
        return Some((v.clone(), false));
    }
    let mut w = map.write().ok()?;
    let (k, v) = make();
    let mut created = false;
    let v = w
        .entry(k)
        .or_insert_with(|| {
            created = true;
            Arc::new(v)
        })
        .clone();
    Some((v, created))
}

/// A key type looked up by a borrowed form.
trait Owned: Eq + std::hash::Hash + std::borrow::Borrow<Self::Borrowed> {
    type Borrowed: Eq + std::hash::Hash + ?Sized;
}

impl Owned for String {
    type Borrowed = str;
}

impl Owned for &'static str {
    type Borrowed = &'static str;
}

/// `heartbeat_total{stream,group,status}` handles by stream, group and status (created on first use).
#[derive(Debug, Default)]
pub(super) struct HeartbeatCounters {
    by_stream: RwLock<HashMap<String, Arc<GroupCounters>>>,
}

/// One stream's groups and their counters.
type GroupCounters = RwLock<HashMap<String, Arc<StatusCounters>>>;

/// One group's heartbeat counters, one slot per status in `HeartbeatStatus::ALL` order.
type StatusCounters = [OnceLock<Counter>; rsc_protocol::wire::HeartbeatStatus::ALL.len()];

impl HeartbeatCounters {
    /// Counts one heartbeat of `stream`/`group` with the status at `index` (`label`: its label value).
    /// Returns true the first time the group is counted (since it was last forgotten).
    pub(super) fn inc(
        &self,
        family: &Family<Labels, Counter>,
        stream: &str,
        group: &str,
        index: usize,
        label: &str,
    ) -> bool {
        let Some((groups, _)) = get_or_insert(&self.by_stream, stream, || {
            (stream.to_owned(), RwLock::new(HashMap::new()))
        }) else {
            return false;
        };
        let Some((statuses, new_group)) = get_or_insert(&groups, group, || {
            (group.to_owned(), std::array::from_fn(|_| OnceLock::new()))
        }) else {
            return false;
        };
        statuses[index]
            .get_or_init(|| {
                family
                    .get_or_create(&vec![
                        ("stream", stream.to_owned()),
                        ("group", group.to_owned()),
                        ("status", label.to_owned()),
                    ])
                    .clone()
            })
            .inc();
        new_group
    }

    /// Forgets the handles of a group whose series were removed (a later heartbeat of a group created again
    /// under its name makes new ones).
    pub(super) fn forget(&self, stream: &str, group: &str) {
        let groups = self
            .by_stream
            .read()
            .ok()
            .and_then(|m| m.get(stream).cloned());
        if let Some(groups) = groups
            && let Ok(mut g) = groups.write()
        {
            g.remove(group);
        }
    }
}

/// `api_request_total{method,route,status}` and `api_request_duration_seconds{method,route}` handles by
/// route template.
#[derive(Debug, Default)]
pub(super) struct RouteSeries {
    by_route: RwLock<HashMap<String, Arc<RouteHandles>>>,
}

#[derive(Debug, Default)]
struct RouteHandles {
    durations: [OnceLock<Histogram>; METHODS.len()],
    requests: RwLock<HashMap<(usize, u16), Counter>>,
}

impl RouteSeries {
    /// Counts one request of `route` answered with `status` after `seconds`.
    pub(super) fn observe(
        &self,
        requests: &Family<Labels, Counter>,
        durations: &Family<Labels, Histogram, fn() -> Histogram>,
        (method, route, status, seconds): (usize, &str, u16, f64),
    ) {
        let Some((h, _)) = get_or_insert(&self.by_route, route, || {
            (route.to_owned(), RouteHandles::default())
        }) else {
            return;
        };
        let labels = |with_status: bool| {
            let mut l: Labels = vec![
                ("method", METHODS[method].to_owned()),
                ("route", route.to_owned()),
            ];
            if with_status {
                l.push(("status", status.to_string()));
            }
            l
        };
        let counter = h
            .requests
            .read()
            .ok()
            .and_then(|m| m.get(&(method, status)).cloned());
        let counter = match counter {
            Some(c) => c,
            None => {
                let c = requests.get_or_create(&labels(true)).clone();
                if let Ok(mut m) = h.requests.write() {
                    m.insert((method, status), c.clone());
                }
                c
            }
        };
        counter.inc();
        h.durations[method]
            .get_or_init(|| durations.get_or_create(&labels(false)).clone())
            .observe(seconds);
    }
}

/// `redis_command_duration_seconds{operation}` handles by operation (a fixed set of names).
#[derive(Debug, Default)]
pub(super) struct OperationSeries {
    by_operation: RwLock<HashMap<&'static str, Arc<Histogram>>>,
}

impl OperationSeries {
    /// Observes one Redis operation's latency.
    pub(super) fn observe(
        &self,
        family: &Family<Labels, Histogram, fn() -> Histogram>,
        operation: &'static str,
        seconds: f64,
    ) {
        if let Some((h, _)) = get_or_insert(&self.by_operation, &operation, || {
            (
                operation,
                family
                    .get_or_create(&vec![("operation", operation.to_owned())])
                    .clone(),
            )
        }) {
            h.observe(seconds);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_index_their_label_and_the_rest_is_other() {
        assert_eq!(METHODS[method_index("POST")], "POST");
        assert_eq!(METHODS[method_index("OPTIONS")], "OPTIONS");
        assert_eq!(METHODS[method_index("BREW")], "OTHER");
    }

    #[test]
    fn a_cached_handle_counts_into_the_familys_series() {
        let family = Family::<Labels, Counter>::default();
        let counters = HeartbeatCounters::default();
        assert!(
            counters.inc(&family, "s", "g", 0, "OK"),
            "first of the group"
        );
        for _ in 0..2 {
            assert!(!counters.inc(&family, "s", "g", 0, "OK"));
        }
        let labels: Labels = vec![
            ("stream", "s".into()),
            ("group", "g".into()),
            ("status", "OK".into()),
        ];
        assert_eq!(family.get_or_create(&labels).get(), 3);
        // After the series is removed and the handles forgotten, counting starts a new series.
        family.remove(&labels);
        counters.forget("s", "g");
        counters.inc(&family, "s", "g", 0, "OK");
        assert_eq!(family.get_or_create(&labels).get(), 1);
    }
}
