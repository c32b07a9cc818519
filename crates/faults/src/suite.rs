//! The whole suite: start-up, the fault loop, the drain, the end checks over the logs and Redis, and the
//! report. The test (`tests/faults.rs`) calls [`run_suite`] with the worker binary's path.

use crate::backlog::Backlog;
use crate::check::{self, Incarnation};
use crate::order;
use crate::run::{FaultRecord, Run};
use crate::settings::{ALL_FAULTS, CLIENT_LEASE, KEYS, Settings};
use crate::worker::Worker;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

/// Runs the fault-injection suite with the settings from the environment; panics with every failure
/// (seed, replay hint, kept log directory) when a check fails.
pub async fn run_suite(worker_bin: &Path) {
    let settings = Settings::from_env();
    let seed = settings.seed;
    println!(
        "faults: seed {seed} (replay with FAULTS_SEED={seed}), {} consumers, {} records/s, {}",
        settings.consumers,
        settings.rate,
        if settings.duration.is_zero() {
            "each fault once".to_owned()
        } else {
            format!("faults for {:?}", settings.duration)
        }
    );
    let wall = Instant::now();
    let mut run = Run::start(settings, worker_bin).await;
    run.converge("start-up").await;

    let mut plan = run.schedule();
    let fault_phase = Instant::now();
    let mut step = 0;
    while run.failures.is_empty() {
        let kind = if step < plan.len() {
            plan[step]
        } else if fault_phase.elapsed() < run.settings.duration {
            let k = ALL_FAULTS[run.rng.index(ALL_FAULTS.len())];
            plan.push(k);
            k
        } else {
            break;
        };
        step += 1;
        // Traffic between faults.
        run.sleep_ms(200, 1000).await;
        let detail = run.inject(kind).await;
        println!("fault {step}: {detail}");
        let converged_after = run.converge(&detail).await;
        run.faults.push(FaultRecord {
            kind,
            detail,
            converged_after,
        });
    }

    let acc = run.drain().await;
    let lease_ns = CLIENT_LEASE.as_nanos() as u64;
    let incarnations: Vec<Incarnation> = run
        .consumers
        .iter()
        .flatten()
        .map(Worker::incarnation)
        .collect();
    let intervals: Vec<check::ReadInterval> = incarnations
        .iter()
        .flat_map(|i| check::intervals(i, lease_ns))
        .collect();
    let overlaps = check::overlaps(&intervals);
    let outside: Vec<(String, Vec<check::DeliveryAt>)> = incarnations
        .iter()
        .map(|i| {
            (
                i.name.clone(),
                check::deliveries_outside_intervals(i, lease_ns),
            )
        })
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let after_lease: Vec<(String, Vec<check::DeliveryAt>)> = incarnations
        .iter()
        .map(|i| (i.name.clone(), check::deliveries_after_lease(i, lease_ns)))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let double: Vec<(String, Vec<(u32, u64)>)> = incarnations
        .iter()
        .map(|i| (i.name.clone(), check::double_loops(i)))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let backlog = run.redis_backlog().await;
    let first = order::first_deliveries(&incarnations);
    let disorder = order::violations(acc.published.keys().copied(), &first, KEYS);

    // The report.
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for f in &run.faults {
        *by_kind.entry(format!("{:?}", f.kind)).or_default() += 1;
    }
    let longest = run
        .faults
        .iter()
        .filter_map(|f| f.converged_after.map(|d| (d, f.detail.as_str())))
        .max();
    let cut = intervals
        .iter()
        .filter(|i| i.pieces != [(i.start_ns, i.end_ns)])
        .count();
    println!("---- fault-injection report (seed {seed}) ----");
    println!("wall time              {:.1?}", wall.elapsed());
    println!("faults injected        {} {by_kind:?}", run.faults.len());
    println!(
        "messages               published {}, acked {}, acked by a killed process before its log line {}, delivered more than once {}",
        acc.published.len(),
        acc.published
            .keys()
            .filter(|s| acc.acked.contains(s))
            .count(),
        acc.acked_unlogged().len(),
        acc.duplicates()
    );
    println!(
        "read intervals         {} ({} shard hand-overs, {} shortened by a pause), overlaps {}",
        intervals.len(),
        check::handovers(&intervals),
        cut,
        overlaps.len()
    );
    println!(
        "per-key order          {} stream, {KEYS} keys, {} records of a key first handled before an earlier one",
        if run.settings.ordered {
            "ordered"
        } else {
            "unordered"
        },
        disorder.len()
    );
    println!("redis at the end       {backlog:?}");
    match longest {
        Some((d, what)) => println!("longest convergence    {d:.1?} after \"{what}\""),
        None => println!("longest convergence    -"),
    }
    for f in &run.faults {
        println!(
            "  {:<18} converged {:>8}  {}",
            format!("{:?}", f.kind),
            f.converged_after
                .map_or("NEVER".to_owned(), |d| format!("{d:.1?}")),
            f.detail
        );
    }

    let mut failures = run.failures.clone();
    failures.extend(overlaps.iter().take(10).map(|o| format!("overlap: {o}")));
    if overlaps.len() > 10 {
        failures.push(format!("… {} overlaps in all", overlaps.len()));
    }
    let missing = acc.missing();
    if !missing.is_empty() {
        failures.push(format!(
            "{} published records never acknowledged, first: {:?}",
            missing.len(),
            missing
                .iter()
                .take(10)
                .map(|s| (s, &acc.published[s]))
                .collect::<Vec<_>>()
        ));
    }
    if run.settings.ordered && !disorder.is_empty() {
        failures.push(format!(
            "per-key order: {} records of a key first handled before an earlier one, first: {:?}",
            disorder.len(),
            &disorder[..disorder.len().min(5)]
        ));
    }
    if !backlog.as_ref().is_ok_and(Backlog::is_empty) {
        failures.push(format!("Redis at the end: {backlog:?}"));
    }
    for (name, list) in &double {
        failures.push(format!(
            "{name} ran two read loops of one shard at once {} times, first (shard, at ns): {:?}",
            list.len(),
            &list[..list.len().min(5)]
        ));
    }
    for (name, list) in &outside {
        failures.push(format!(
            "{name} handled {} entries outside its read intervals, first (seq, shard, at): {:?}",
            list.len(),
            &list[..list.len().min(5)]
        ));
    }
    for (name, list) in &after_lease {
        failures.push(format!(
            "{name} handled {} entries after its assignment lease ran out, first (seq, shard, at): {:?}",
            list.len(),
            &list[..list.len().min(5)]
        ));
    }
    if run.faults.len() < ALL_FAULTS.len() && run.failures.is_empty() {
        failures.push(format!("only {} faults ran", run.faults.len()));
    }
    if failures.is_empty() {
        let _ = std::fs::remove_dir_all(&run.dir);
    } else {
        panic!(
            "fault-injection run failed (seed {seed}; replay with FAULTS_SEED={seed}; logs kept in {}):\n{}",
            run.dir.display(),
            failures.join("\n")
        );
    }
}
