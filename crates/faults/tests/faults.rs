//! The fault-injection end-to-end run: real processes, a seeded schedule of faults during
//! traffic, and end checks over the ownership logs and Redis. See the `rsc_faults` crate documentation for
//! what the read-interval invariant means under SIGKILL and SIGSTOP; the harness lives in its modules.
//!
//! Started here: `redis-server` (AOF, `appendfsync always`), two `rsc serve` replicas, per consumer a
//! loopback proxy in front of each replica, `FAULTS_CONSUMERS` (3) consumer processes and one producer
//! process. Faults: SIGKILL a consumer (restarted under the same member id), SIGSTOP/SIGCONT a consumer and
//! a coordinator, SIGKILL a coordinator (restarted on its port), restart Redis (graceful or SIGKILL), proxy
//! latency and connection cuts, a scale-out and a scale-in during traffic. After each fault heals, the
//! group must converge (bounded wait), and that time is reported.
//!
//! Default (CI): each fault kind once, in the order of one fixed seed (`CI_SEED`). Long run:
//! `FAULTS_DURATION_SECS=600` keeps drawing faults until then, from a seed taken from the clock. `FAULTS_SEED=<n>` replays a schedule (the seed is printed); the report is
//! printed (use `-- --nocapture`) and the run directory with every log is kept when the run fails.
//!
//! `rsc` is the binary built next to this test (`target/<profile>/rsc`, built by `cargo test --workspace`)
//! or `RSC_BIN`; the test refuses a binary older than the sources it is built from.

use std::path::Path;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_survive_kills_pauses_restarts_cuts_and_scaling_without_overlap_or_loss() {
    rsc_faults::suite::run_suite(Path::new(env!("CARGO_BIN_EXE_rsc-fault-worker"))).await;
}
