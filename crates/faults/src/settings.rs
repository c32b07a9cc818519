//! The run's settings: timings and shard bounds the suite uses, the fault kinds, and what the
//! environment chooses (`FAULTS_SEED`, `FAULTS_DURATION_SECS`, `FAULTS_CONSUMERS`, `FAULTS_RATE`,
//! `FAULTS_ORDERING`).

use std::time::{Duration, SystemTime};

pub const ADMIN_PASSWORD: &str = "faults-admin-password";
/// Coordinator timing: heartbeat 200 ms, member lease TTL 3 s.
pub const MEMBER_LEASE_TTL: Duration = Duration::from_secs(3);
/// Consumers' assignment lease: the TTL minus a 1.2 s margin.
pub const CLIENT_LEASE: Duration = Duration::from_millis(1800);
pub const INITIAL_SHARDS: u32 = 4;
pub const MAX_SHARDS: u32 = 8;
pub const MIN_SHARDS: u32 = 2;
/// Distinct routing keys the producer cycles through (`key-{seq % KEYS}`).
pub const KEYS: u64 = 97;
/// How long the group may take to converge after a fault heals.
pub const CONVERGENCE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the final drain (every published record acknowledged) may take.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    KillConsumer,
    PauseConsumer,
    PauseCoordinator,
    KillCoordinator,
    RestartRedis,
    ProxyLatency,
    ProxyCut,
    ScaleOut,
    ScaleIn,
}

pub const ALL_FAULTS: [Fault; 9] = [
    Fault::KillConsumer,
    Fault::PauseConsumer,
    Fault::PauseCoordinator,
    Fault::KillCoordinator,
    Fault::RestartRedis,
    Fault::ProxyLatency,
    Fault::ProxyCut,
    Fault::ScaleOut,
    Fault::ScaleIn,
];

pub struct Settings {
    pub seed: u64,
    /// 0: each fault once.
    pub duration: Duration,
    pub consumers: usize,
    pub rate: u64,
    /// The stream keeps per-key order across its scales (`ordering: KEY`, the default): the order check
    /// fails the run. `FAULTS_ORDERING=NONE`: at-least-once only; violations are reported, not failed.
    pub ordered: bool,
}

/// The schedule the CI-sized run uses: each fault kind once, including a consumer paused (3.7 s) past its
/// client lease, the case that was an open finding until the pause rule was understood (TESTING.md).
pub const CI_SEED: u64 = 1_796_050_501_562_180_087;

impl Settings {
    pub fn from_env() -> Settings {
        let num = |name: &str| {
            std::env::var(name).ok().map(|v| {
                v.parse::<u64>()
                    .unwrap_or_else(|_| panic!("{name} must be a number, got {v:?}"))
            })
        };
        let duration = Duration::from_secs(num("FAULTS_DURATION_SECS").unwrap_or(0));
        // The CI-sized run replays one fixed schedule (a CI failure is then always reproducible); long runs
        // draw new ones from the clock.
        let seed = num("FAULTS_SEED").unwrap_or_else(|| {
            if duration.is_zero() {
                CI_SEED
            } else {
                SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            }
        });
        Settings {
            seed,
            duration,
            consumers: num("FAULTS_CONSUMERS").unwrap_or(3).max(3) as usize,
            rate: num("FAULTS_RATE").unwrap_or(150),
            ordered: match std::env::var("FAULTS_ORDERING").as_deref() {
                Err(_) | Ok("KEY") => true,
                Ok("NONE") => false,
                Ok(other) => panic!("FAULTS_ORDERING must be KEY or NONE, got {other:?}"),
            },
        }
    }
}
