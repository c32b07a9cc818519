//! The steady load of `rsc bench reshard`: one SDK producer publishing `--rate` records/s, one batch every
//! 10 ms. The load is open-loop: each batch is its own task, started on its tick whether or not earlier
//! batches returned, so batches held by a producer quiesce are all counted (a closed loop would start
//! only one batch per pause and hide the others). Each batch's start (wall clock) and latency are kept.

use super::measure::{self, Sample};
use rsc_client::{Producer, Record};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};

/// Batches in flight at most; a tick waits for a free slot beyond that (Redis or the coordinator stalled).
const MAX_IN_FLIGHT: usize = 10_000;

/// What the load publishes.
pub struct Workload {
    /// Written to every record as `run`, so the handlers count only this trial's records.
    pub run_id: String,
    pub rate: u32,
    /// Distinct keys (`k-<n % keys>`).
    pub keys: u64,
}

/// A running load.
pub struct Load {
    stop: Arc<AtomicBool>,
    task: JoinHandle<()>,
    samples: Arc<Mutex<Vec<Sample>>>,
    errors: Arc<AtomicU64>,
    first_error: Arc<Mutex<Option<String>>>,
}

/// What the load did, once stopped.
pub struct Published {
    pub samples: Vec<Sample>,
    pub errors: u64,
    pub first_error: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Load {
    /// Starts publishing through `producer`.
    pub fn start(producer: Arc<Producer>, work: Workload) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let errors = Arc::new(AtomicU64::new(0));
        let first_error = Arc::new(Mutex::new(None));
        let task = tokio::spawn(publish_loop(
            producer,
            work,
            stop.clone(),
            samples.clone(),
            errors.clone(),
            first_error.clone(),
        ));
        Load {
            stop,
            task,
            samples,
            errors,
            first_error,
        }
    }

    /// Stops starting batches and waits (at most `bound`) for those in flight; a batch still running then
    /// is abandoned and not counted.
    pub async fn stop(mut self, bound: Duration) -> Published {
        self.stop.store(true, Ordering::Relaxed);
        if tokio::time::timeout(bound, &mut self.task).await.is_err() {
            // Dropping the loop's JoinSet aborts the batches still in flight.
            self.task.abort();
            let _ = (&mut self.task).await;
        }
        Published {
            samples: std::mem::take(&mut *lock(&self.samples)),
            errors: self.errors.load(Ordering::Relaxed),
            first_error: lock(&self.first_error).take(),
        }
    }
}

async fn publish_loop(
    producer: Arc<Producer>,
    work: Workload,
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    errors: Arc<AtomicU64>,
    first_error: Arc<Mutex<Option<String>>>,
) {
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut batches = JoinSet::new();
    let mut tick = tokio::time::interval(Duration::from_millis(1000 / measure::TICKS_PER_SEC));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut n, mut i) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let len = measure::batch_len(work.rate, i);
        i += 1;
        if len == 0 {
            continue;
        }
        let Ok(slot) = slots.clone().acquire_owned().await else {
            break;
        };
        let start_ns = measure::wall_ns();
        let started = Instant::now();
        let pub_ns = start_ns.to_string();
        let records: Vec<Record> = (n..n + len)
            .map(|k| {
                Record::new(measure::record_key(k, work.keys))
                    .field("run", &work.run_id)
                    .field("pub_ns", &pub_ns)
            })
            .collect();
        n += len;
        let producer = producer.clone();
        let (samples, errors, first_error) = (samples.clone(), errors.clone(), first_error.clone());
        batches.spawn(async move {
            let result = producer.publish_batch(&records).await;
            let latency = started.elapsed();
            drop(slot);
            match result {
                Ok(_) => lock(&samples).push(Sample { start_ns, latency }),
                Err(e) => {
                    errors.fetch_add(1, Ordering::Relaxed);
                    lock(&first_error).get_or_insert_with(|| e.to_string());
                }
            }
        });
        while batches.try_join_next().is_some() {}
    }
    while batches.join_next().await.is_some() {}
}
