//! The run: every process it started, its fault schedule, fault injection, and the final drain.

use crate::STREAM;
use crate::backlog::{Backlog, redis_backlog};
use crate::check::Accounting;
use crate::log::now_ns;
use crate::process::{rsc_binary, send_signal, start_rsc, wait_stopped};
use crate::rng::Rng;
use crate::settings::{
    ADMIN_PASSWORD, ALL_FAULTS, CLIENT_LEASE, DRAIN_TIMEOUT, Fault, INITIAL_SHARDS, KEYS,
    MAX_SHARDS, MIN_SHARDS, Settings,
};
use crate::worker::Worker;
use rsc_client::{AdminClient, CoordinatorClient, CreateStream, Credentials};
use rsc_protocol::ordering::Ordering;
use rsc_testkit::{LoopbackProxy, RedisServer, RscProcess};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The faults a scale is combined with, one of them drawn per scale: injected while its migration runs.
const DURING_SCALE: [Fault; 4] = [
    Fault::KillConsumer,
    Fault::PauseConsumer,
    Fault::KillCoordinator,
    Fault::RestartRedis,
];

pub struct FaultRecord {
    pub kind: Fault,
    pub detail: String,
    pub converged_after: Option<Duration>,
}

pub struct Run {
    pub settings: Settings,
    pub rng: Rng,
    pub dir: PathBuf,
    /// The `rsc-fault-worker` binary.
    pub worker_bin: PathBuf,
    pub redis: RedisServer,
    pub coordinators: Vec<RscProcess>,
    /// Per consumer slot: one proxy per coordinator.
    pub proxies: Vec<Vec<LoopbackProxy>>,
    /// Per consumer slot: its incarnations, the last one live.
    pub consumers: Vec<Vec<Worker>>,
    pub producer: Option<Worker>,
    pub http: reqwest::Client,
    pub shards: u32,
    pub redis_restarts: usize,
    pub faults: Vec<FaultRecord>,
    pub failures: Vec<String>,
}

impl Run {
    /// What Redis says is left for the group on the current shards (`backlog.rs`).
    pub async fn redis_backlog(&self) -> Result<Backlog, String> {
        redis_backlog(&self.redis.url(), self.shards).await
    }

    /// Starts Redis, two coordinators, the stream, the consumers (behind their proxies) and the producer;
    /// `worker_bin` is the `rsc-fault-worker` binary.
    pub async fn start(settings: Settings, worker_bin: &Path) -> Run {
        let dir = std::env::temp_dir().join(format!(
            "rsc-faults-{}-{}",
            settings.seed,
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let bin = rsc_binary();
        let redis = RedisServer::builder()
            .appendonly(true)
            .args(["--appendfsync", "always"])
            .start();
        let coordinators = vec![
            start_rsc(&bin, &redis.url(), &dir, "rsc-a"),
            start_rsc(&bin, &redis.url(), &dir, "rsc-b"),
        ];
        let coord = CoordinatorClient::builder([coordinators[0].url(), coordinators[1].url()])
            .credentials(Some(Credentials::new("admin", ADMIN_PASSWORD)))
            .request_timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        let created = coord
            .create_stream(STREAM, INITIAL_SHARDS, "faults")
            .await
            .unwrap();
        assert!(matches!(created, CreateStream::Created(_)));
        if settings.ordered {
            AdminClient::new(coord.clone(), "faults")
                .set_stream_ordering(STREAM, Ordering::Key, "fault suite: ordered scales")
                .await
                .unwrap();
        }
        let mut run = Run {
            rng: Rng::new(settings.seed),
            settings,
            worker_bin: worker_bin.to_owned(),
            dir,
            redis,
            coordinators,
            proxies: Vec::new(),
            consumers: Vec::new(),
            producer: None,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .unwrap(),
            shards: INITIAL_SHARDS,
            redis_restarts: 0,
            faults: Vec::new(),
            failures: Vec::new(),
        };
        for slot in 0..run.settings.consumers {
            let mut proxies = Vec::new();
            for c in &run.coordinators {
                proxies.push(LoopbackProxy::start(c.port()).await);
            }
            run.proxies.push(proxies);
            let w = run.spawn_consumer(slot, 1);
            run.consumers.push(vec![w]);
        }
        let mut args = vec!["producer".to_owned()];
        for c in &run.coordinators {
            args.extend(["--coordinator".to_owned(), c.url()]);
        }
        args.extend([
            "--stream".into(),
            STREAM.into(),
            "--redis-url".into(),
            run.redis.url(),
            "--rate".into(),
            run.settings.rate.to_string(),
            "--keys".into(),
            KEYS.to_string(),
        ]);
        run.producer = Some(Worker::spawn(
            &run.worker_bin,
            &args,
            "producer",
            1,
            &run.dir,
        ));
        run
    }

    pub fn spawn_consumer(&self, slot: usize, index: usize) -> Worker {
        let member = format!("c{}", slot + 1);
        let mut args = vec!["consumer".to_owned(), "--member".into(), member.clone()];
        for p in &self.proxies[slot] {
            args.extend(["--coordinator".to_owned(), p.url()]);
        }
        args.extend([
            "--stream".into(),
            STREAM.into(),
            "--redis-url".into(),
            self.redis.url(),
            "--lease-ms".into(),
            CLIENT_LEASE.as_millis().to_string(),
        ]);
        Worker::spawn(&self.worker_bin, &args, &member, index, &self.dir)
    }

    pub fn live(&mut self, slot: usize) -> &mut Worker {
        self.consumers[slot]
            .last_mut()
            .expect("a consumer slot has a worker")
    }

    pub async fn sleep_ms(&mut self, lo: u64, hi: u64) -> Duration {
        let d = Duration::from_millis(self.rng.range(lo, hi));
        tokio::time::sleep(d).await;
        d
    }

    pub async fn inject(&mut self, kind: Fault) -> String {
        let slot = self.rng.index(self.consumers.len());
        let member = format!("c{}", slot + 1);
        match kind {
            Fault::KillConsumer => {
                self.live(slot).kill();
                let down = self.sleep_ms(0, 1500).await;
                let index = self.consumers[slot].len() + 1;
                let w = self.spawn_consumer(slot, index);
                self.consumers[slot].push(w);
                format!("SIGKILL {member}, restarted after {down:?}")
            }
            Fault::PauseConsumer => {
                let pid = self.live(slot).pid();
                send_signal(pid, libc::SIGSTOP);
                wait_stopped(pid);
                let stopped = now_ns();
                let held = self.sleep_ms(500, 4500).await;
                let continued = now_ns();
                send_signal(pid, libc::SIGCONT);
                self.live(slot).pauses.push((stopped, continued));
                format!("SIGSTOP {member} for {held:?}")
            }
            Fault::PauseCoordinator => {
                let c = self.rng.index(self.coordinators.len());
                let pid = self.coordinators[c].pid().expect("running");
                send_signal(pid, libc::SIGSTOP);
                let held = self.sleep_ms(500, 4000).await;
                send_signal(pid, libc::SIGCONT);
                format!("SIGSTOP coordinator {c} for {held:?}")
            }
            Fault::KillCoordinator => {
                let c = self.rng.index(self.coordinators.len());
                self.coordinators[c].kill();
                let down = self.sleep_ms(200, 2000).await;
                tokio::task::block_in_place(|| self.coordinators[c].restart());
                format!("SIGKILL coordinator {c}, restarted after {down:?}")
            }
            Fault::RestartRedis => {
                self.redis_restarts += 1;
                let crash = self.rng.range(0, 1) == 1;
                if crash {
                    self.redis.kill();
                    let down = self.sleep_ms(0, 1000).await;
                    tokio::task::block_in_place(|| self.redis.restart());
                    format!("SIGKILL redis, restarted after {down:?}")
                } else {
                    tokio::task::block_in_place(|| self.redis.restart());
                    "redis graceful restart".to_owned()
                }
            }
            Fault::ProxyLatency => {
                let latency = Duration::from_millis(self.rng.range(100, 900));
                for p in &self.proxies[slot] {
                    p.set_latency(latency);
                }
                let held = self.sleep_ms(1000, 4000).await;
                for p in &self.proxies[slot] {
                    p.set_latency(Duration::ZERO);
                }
                format!("{latency:?} latency for {member} during {held:?}")
            }
            Fault::ProxyCut => {
                for p in &self.proxies[slot] {
                    p.cut();
                }
                let held = self.sleep_ms(500, 4500).await;
                for p in &self.proxies[slot] {
                    p.heal();
                }
                format!("{member} cut off from the coordinators for {held:?}")
            }
            Fault::ScaleOut | Fault::ScaleIn => {
                let target = if kind == Fault::ScaleOut {
                    (self.shards + self.rng.range(1, 3) as u32).min(MAX_SHARDS)
                } else {
                    self.shards
                        .saturating_sub(self.rng.range(1, 2) as u32)
                        .max(MIN_SHARDS)
                };
                if let Err(e) = self.scale(target).await {
                    self.failures.push(e.clone());
                    return e;
                }
                let from = self.shards;
                self.shards = target;
                // A second fault while the migration runs (an ordered one waits for its parents to drain).
                let during = DURING_SCALE[self.rng.index(DURING_SCALE.len())];
                self.sleep_ms(0, 500).await;
                let also = Box::pin(self.inject(during)).await;
                format!("scale {from} → {target} shards; during it: {also}")
            }
        }
    }

    pub async fn scale(&self, target: u32) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut last = String::new();
        while Instant::now() < deadline {
            for c in &self.coordinators {
                let r = self
                    .http
                    .post(format!("{}/coord/v1/streams/{STREAM}/scale", c.url()))
                    .basic_auth("admin", Some(ADMIN_PASSWORD))
                    .json(&json!({"targetShardCount": target, "requestedBy": "faults", "reason": "fault suite"}))
                    .send()
                    .await;
                match r {
                    Ok(r) if r.status().is_success() => return Ok(()),
                    Ok(r) => {
                        last = format!("{}: {}", r.status(), r.text().await.unwrap_or_default())
                    }
                    Err(e) => last = e.to_string(),
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(format!("scale to {target} refused: {last}"))
    }

    pub fn schedule(&mut self) -> Vec<Fault> {
        let mut kinds = ALL_FAULTS.to_vec();
        self.rng.shuffle(&mut kinds);
        // The scale-in follows the scale-out, so it shrinks below the initial count only sometimes.
        kinds.retain(|k| *k != Fault::ScaleIn);
        let out = kinds.iter().position(|k| *k == Fault::ScaleOut).unwrap();
        let at = self.rng.range(out as u64 + 1, kinds.len() as u64) as usize;
        kinds.insert(at, Fault::ScaleIn);
        kinds
    }

    /// Stops the producer, waits until every published record was acknowledged (logs) and Redis shows
    /// nothing pending and no lag, then stops the consumers gracefully.
    pub async fn drain(&mut self) -> Accounting {
        let producer = self.producer.as_mut().unwrap();
        if !producer.terminate(Duration::from_secs(15)) {
            self.failures
                .push("the producer did not exit cleanly on SIGTERM".into());
        }
        let producer = self.producer.as_mut().unwrap();
        producer.poll();
        let started = Instant::now();
        let mut acc;
        loop {
            acc = self.accounting();
            let backlog = self.redis_backlog().await;
            if acc.missing().is_empty() && backlog.as_ref().is_ok_and(Backlog::is_empty) {
                break;
            }
            if started.elapsed() > DRAIN_TIMEOUT {
                self.failures.push(format!(
                    "not drained after {DRAIN_TIMEOUT:?}: {} published records without an ack \
                     (first: {:?}); Redis: {backlog:?}",
                    acc.missing().len(),
                    acc.missing()
                        .iter()
                        .take(10)
                        .map(|s| (s, &acc.published[s]))
                        .collect::<Vec<_>>()
                ));
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if let Some(why) = self.not_converged().await {
            self.failures
                .push(format!("not converged after the drain: {why}"));
        }
        for slot in 0..self.consumers.len() {
            let w = self.live(slot);
            if !w.terminate(Duration::from_secs(20)) {
                let name = w.name.clone();
                self.failures
                    .push(format!("{name} did not leave cleanly on SIGTERM"));
            }
            self.live(slot).poll();
        }
        self.accounting()
    }

    pub fn accounting(&mut self) -> Accounting {
        let mut acc = Accounting::default();
        let producer = self.producer.as_mut().unwrap();
        producer.poll();
        acc.add_producer(&producer.lines);
        for slot in &mut self.consumers {
            for w in slot.iter_mut() {
                w.poll();
                acc.add_consumer(&w.incarnation());
            }
        }
        acc
    }
}
