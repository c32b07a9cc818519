//! Waiting after a scale: until every affected group's migration is accepted (routing switched to the new
//! count, the migration left PREPARING) and, when asked (`wait_for_convergence`), until it has ended in every
//! group (consumers converged and removed shards drained). Polls the migration view with a bounded deadline
//! (the resource's `timeouts`); a timeout names the group that holds the migration, why, and the ways out
//! (the view's `heldBy`).

use crate::api::Api;
use rsc_client::admin::ScaleAnswer;
use std::time::{Duration, Instant};

/// Time between two polls.
const POLL: Duration = Duration::from_millis(250);

/// States after which a migration will never reach its target.
const GAVE_UP: [&str; 2] = ["ROLLED_BACK", "ABORTED"];

/// Parses a `timeouts` value (`30s`, `10m`, `1h30m`), or gives `default`.
pub fn timeout(value: Option<&str>, default: Duration) -> Result<Duration, String> {
    match value {
        None => Ok(default),
        Some(text) => match humantime::parse_duration(text.trim()) {
            Ok(d) if !d.is_zero() => Ok(d),
            Ok(_) => Err(format!(
                "{text:?} is zero; give a positive duration such as \"10m\""
            )),
            Err(e) => Err(format!(
                "{text:?} is not a duration ({e}); use e.g. \"30s\", \"10m\", \"1h30m\""
            )),
        },
    }
}

/// Waits until the scale `answer` is accepted by every group (and converged when `converge`), or `limit`
/// passes. The error says what was last seen.
pub async fn scale_settled(
    api: &Api,
    answer: &ScaleAnswer,
    converge: bool,
    limit: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    let target = answer.target_shard_count;
    loop {
        let mut pending = Vec::new();
        for m in &answer.migrations {
            if m.from_shard_count == m.to_shard_count {
                continue; // a no-op scale answers a synthetic migration: nothing to wait for
            }
            let group = m.consumer_group.as_deref().unwrap_or(&answer.stream_prefix);
            let seen = match api
                .admin
                .migration(&answer.stream_prefix, group, &m.resharding_id)
                .await
            {
                Ok(seen) => seen,
                Err(e) if e.is_retryable() => {
                    pending.push(format!("group {group:?}: {e}"));
                    continue;
                }
                Err(e) => {
                    return Err(format!(
                        "reading migration {} of group {group:?}: {e}",
                        m.resharding_id
                    ));
                }
            };
            if GAVE_UP.contains(&seen.state.as_str()) {
                return Err(format!(
                    "migration {} of group {group:?} ended {} before reaching {target} shards",
                    seen.resharding_id, seen.state
                ));
            }
            let accepted = seen.accepted() && seen.routing_shard_count.is_none_or(|n| n == target);
            let converged = !converge || (seen.consumers_converged == Some(true) && seen.ended());
            if !(accepted && converged) {
                pending.push(format!(
                    "group {group:?}: migration {} {} (routing {} shards, consumers converged: {}){}",
                    seen.resharding_id,
                    seen.state,
                    seen.routing_shard_count
                        .map_or("?".into(), |n| n.to_string()),
                    seen.consumers_converged
                        .map_or("?".into(), |c| c.to_string()),
                    seen.held_by
                        .as_ref()
                        .map_or(String::new(), |h| format!("; {h}")),
                ));
            }
        }
        if pending.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "timed out after {} waiting for the scale to {target} shards to be {}; last seen: {}",
                humantime::format_duration(limit),
                if converge {
                    "accepted and ended in every group"
                } else {
                    "accepted"
                },
                pending.join("; ")
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse_or_say_why() {
        assert_eq!(
            timeout(None, Duration::from_secs(5)).unwrap(),
            Duration::from_secs(5)
        );
        assert_eq!(
            timeout(Some("10m"), Duration::ZERO).unwrap(),
            Duration::from_secs(600)
        );
        assert_eq!(
            timeout(Some("1h30m"), Duration::ZERO).unwrap(),
            Duration::from_secs(5400)
        );
        assert!(
            timeout(Some("soon"), Duration::ZERO)
                .unwrap_err()
                .contains("not a duration")
        );
        assert!(
            timeout(Some("0s"), Duration::ZERO)
                .unwrap_err()
                .contains("zero")
        );
    }
}
