//! `rsc demo --scale 4,8,…`: scaling the demo stream while it runs, one migration at a time.
//!
//! Every `--scale-every` seconds the next count is asked for (with `--quiesce`, asking for producer quiesce,
//! `producerQuiesce`, so routing switches only once the demo's producer has paused and finished its publishes
//! in flight, or at the timeout). A stream has one migration at a time, so before the next scale the driver
//! waits until the previous one has ended in every group (an ordered scale ends once its gates opened: the
//! children's parents drained), saying on stderr what it waits for.

use rsc_client::{AdminClient, CoordinatorClient};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a demo scale waits for producers to quiesce before switching anyway.
pub const QUIESCE_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a running migration is looked at.
const POLL: Duration = Duration::from_millis(250);

/// The demo's scales: the targets still to go, and how they are asked for.
pub struct ScalePlan {
    pub stream: String,
    pub targets: Vec<u32>,
    pub every: Duration,
    pub quiesce: bool,
}

/// Scales the stream through the plan; prints each step on stderr. Returns when the last migration ended (or
/// was refused), or, once `stop` is set, when the migration under way (if any) has ended.
pub async fn scale_through(coord: CoordinatorClient, plan: ScalePlan, stop: Arc<AtomicBool>) {
    let admin = AdminClient::new(coord, "rsc demo");
    let stream = &plan.stream;
    for target in plan.targets {
        let next = Instant::now() + plan.every;
        while Instant::now() < next {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            tokio::time::sleep(POLL.min(next.saturating_duration_since(Instant::now()))).await;
        }
        let (reason, quiesce) = if plan.quiesce {
            ("rsc demo --scale --quiesce", Some(QUIESCE_TIMEOUT))
        } else {
            ("rsc demo --scale", None)
        };
        let started = Instant::now();
        let answer = match admin
            .scale_stream_quiesced(stream, target, reason, quiesce)
            .await
        {
            Ok(a) => a,
            Err(e) => {
                eprintln!("rsc demo: scale of {stream} to {target} shards refused: {e}");
                continue;
            }
        };
        let quiesced = if plan.quiesce {
            " (producers quiesced)"
        } else {
            ""
        };
        eprintln!("rsc demo: scaled {stream} to {target} shards{quiesced}");
        for m in &answer.answer.migrations {
            let group = m.consumer_group.as_deref().unwrap_or(stream);
            wait_until_ended(&admin, stream, group, &m.resharding_id, target).await;
        }
        eprintln!(
            "rsc demo: migration of {stream} to {target} shards ended in every group after {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
}

/// Waits until migration `id` of `group` has ended, saying what it is at whenever its state changes and
/// every 15 s otherwise.
async fn wait_until_ended(admin: &AdminClient, stream: &str, group: &str, id: &str, target: u32) {
    let mut said: Option<(String, Instant)> = None;
    loop {
        match admin.migration(stream, group, id).await {
            Ok(m) if is_terminal(&m.state) => {
                if m.state != "DEPRECATED" {
                    eprintln!(
                        "rsc demo: migration {id} to {target} shards ended {}",
                        m.state
                    );
                }
                return;
            }
            Ok(m) => {
                let due = said.as_ref().is_none_or(|(state, at)| {
                    *state != m.state || at.elapsed() >= Duration::from_secs(15)
                });
                if due {
                    eprintln!(
                        "rsc demo: migration {id} of group {group} is {}{}",
                        m.state,
                        hint(&m.state)
                    );
                    said = Some((m.state, Instant::now()));
                }
            }
            Err(e) => {
                if said
                    .as_ref()
                    .is_none_or(|(_, at)| at.elapsed() >= Duration::from_secs(15))
                {
                    eprintln!("rsc demo: cannot read migration {id}: {e}");
                    said = Some((String::new(), Instant::now()));
                }
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// What a migration in `state` waits for, as the demo's reader should know it.
fn hint(state: &str) -> &'static str {
    match state {
        "ACTIVE" => {
            " (members taking in the new assignment; on an ordered stream, child shards wait for their parents to be consumed up to the switch)"
        }
        "DRAINING" => {
            " (a scale-in's removed shards are consumed, and count as drained only from coordinator.streams.drain-grace, 60 s by default, after the switch)"
        }
        _ => "",
    }
}

fn is_terminal(state: &str) -> bool {
    matches!(
        state,
        "DEPRECATED" | "ROLLED_BACK" | "FORCE_COMPLETED" | "ABORTED"
    )
}
