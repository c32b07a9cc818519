//! rsc-faults: the multi-process fault-injection suite.
//!
//! The orchestrator (the modules below, started by `tests/faults.rs`) runs a real `redis-server` (AOF,
//! `appendfsync always`), two `rsc serve` replicas, several consumer processes and one producer process
//! (the `rsc-fault-worker` binary of this crate), injects a seeded schedule of faults during traffic, and
//! then checks what the processes wrote into their **ownership logs** (one JSON-lines file per process incarnation, see [`log`]):
//!
//! - every published sequence number was acknowledged at least once;
//! - the stream is ordered (`ordering: KEY`, `FAULTS_ORDERING=NONE` for an unordered run): no record of a key
//!   reached a handler for the first time before an earlier record of its key ([`order`]), across its
//!   scales and every other fault;
//! - no two read intervals of one shard overlap ([`check`], reasoning below);
//! - the group converged after every fault (checked by the orchestrator through the monitoring API).
//!
//! # What "no two read intervals overlap" means here
//!
//! The promise is that at no instant two consumers *read* one shard (issue XREADGROUP/XAUTOCLAIM for it).
//! A consumer logs `read_started`/`read_stopped` from the SDK's `ReadStarted`/`ReadStopped` events, whose
//! contract is: no read of the shard by this member happens before `at` of the start or after `at` of the
//! stop. All processes run on one machine, so their CLOCK_REALTIME timestamps are comparable. Each
//! *incarnation* (process) of a member is its own reader: a member restarted under the same id must not
//! overlap its previous life either. An interval is therefore the logged one, except:
//!
//! - **SIGKILL**: the process stops instantly, so an interval still open when the orchestrator killed it
//!   ends at the kill time (taken by the orchestrator after the process was reaped, so it is late,
//!   never early). A blocking read the dead process had sent ends when Redis sees the socket close.
//! - **SIGSTOP/SIGCONT**: a stopped process issues nothing, but a blocking read it sent before the stop
//!   can still be served by Redis while it is stopped — for at most as long as its assignment lease: the
//!   SDK never lets a blocking read outlast the lease, and the lease is counted from the *send* of the last
//!   accepted heartbeat. We log accepted heartbeats when their response is applied (later than the send),
//!   so `last accepted heartbeat logged before the stop + lease` is an upper bound of when that
//!   incarnation could still be reading. (The SDK emits the heartbeat event before it hands the renewed
//!   lease to its read loops, so no read issued before the stop can rely on a renewal logged after it.) After SIGCONT it checks its lease before every read, and the
//!   `read_stopped` it then logs (late, at resume) is not the end of its reading: the part of the interval
//!   between that bound and the SIGCONT is cut out, everything else stays. If the bound lies after the
//!   SIGCONT nothing is cut. One more piece goes: when that late `read_stopped` says the lease had lapsed
//!   and no entry of the shard reached the handler between the SIGCONT and it, the span between them is
//!   not reading either (the loop issues no read without lease left and hands no entry over once it ran
//!   out; a read answered during the pause stays pending for the next owner). A delivery there keeps the
//!   span, and [`check::deliveries_after_lease`] reports any delivery later than the lease anyway. Intervals never crossing a pause are taken exactly as logged — in particular a
//!   consumer cut off from the coordinators (proxy) must log its own stop before anybody else starts.
//!
//! This is stricter than the coordinator's view (which only knows leases): a logged interval that outlives
//! the lease in a live process is caught, not excused. It cannot see a read the SDK would issue outside
//! its own logged interval; that would be an SDK bug the events themselves hide.
//!
//! # Modules
//!
//! - [`settings`]: the suite's timings, shard bounds, fault kinds and the environment's choices;
//! - [`process`]: signals, the `rsc` binary under test, the `rsc serve` replicas;
//! - [`worker`]: one worker process lifetime (consumer or producer incarnation) and its log;
//! - [`run`]: the run (every process it started), its fault schedule, fault injection, the final drain;
//! - [`converge`]: the convergence check through the monitoring API and the bounded wait after a fault;
//! - [`backlog`]: what Redis says is left for the group;
//! - [`suite`]: the whole run, end checks and report, as the test calls it;
//! - [`log`], [`check`], [`rng`]: the ownership log, the checks over it, the seeded generator;
//! - [`order`]: the per-key order check over the logs (the suite's stream is ordered, `ordering: KEY`);
//! - `bin/rsc-fault-worker.rs`: the consumer and producer process.
// Test support (publish = false): unwrap/expect allowed; process.rs sends signals through libc, the one
// item allowed unsafe code.
#![deny(unsafe_code)]

pub mod backlog;
pub mod check;
pub mod converge;
pub mod log;
pub mod order;
pub mod process;
pub mod rng;
pub mod run;
pub mod settings;
pub mod suite;
pub mod worker;

/// The consumer group (and stream prefix) the suite uses.
pub const STREAM: &str = "faults";
