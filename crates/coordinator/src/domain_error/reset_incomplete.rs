//! 409 `OFFSET_RESET_INCOMPLETE`: an offset reset that stopped after it had moved some of its shards (its hold
//! vanished, or Redis failed midway). Nothing is rolled back — moving a shard back would be a second reset
//! nobody asked for — so the answer says exactly where each shard stands.

use rsc_protocol::wire::offsets::{IncompleteReset, ShardReset};

/// What an interrupted reset had done, and of which group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetIncomplete {
    /// The stream prefix.
    pub stream: String,
    /// The consumer group.
    pub group: String,
    /// The shards moved, in doubt and not moved, and why it stopped (the wire's `incompleteReset`).
    pub done: IncompleteReset,
}

fn moves(rows: &[ShardReset]) -> String {
    rows.iter()
        .map(|r| format!("{} ({} → {})", r.shard_index, r.current_id, r.new_id))
        .collect::<Vec<_>>()
        .join(", ")
}

fn list(shards: &[u32]) -> String {
    shards
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl std::fmt::Display for ResetIncomplete {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = &self.done;
        write!(
            f,
            "the offset reset of {}/{} stopped partway: {}. Moved: ",
            self.stream, self.group, d.cause
        )?;
        if d.moved.is_empty() {
            f.write_str("none")?;
        } else {
            write!(f, "shards {}", moves(&d.moved))?;
        }
        if let Some(r) = &d.in_doubt {
            write!(
                f,
                ". In doubt: shard {} ({} → {} may or may not have taken effect; read its position back)",
                r.shard_index, r.current_id, r.new_id
            )?;
        }
        if d.not_moved.is_empty() {
            f.write_str(". Not moved: none")?;
        } else {
            write!(f, ". Not moved: shards {}", list(&d.not_moved))?;
        }
        f.write_str(
            ". Nothing was rolled back; the reset's hold is gone, so stop the group's consumers again if any \
             started, check the positions (GET …/offsets), then reset what is left with \"shards\"",
        )?;
        let mut left = d.not_moved.clone();
        left.extend(d.in_doubt.as_ref().map(|r| r.shard_index));
        left.sort_unstable();
        if !left.is_empty() {
            write!(f, " ([{}]", list(&left))?;
            f.write_str("; with SHIFT, never the moved ones: they would shift twice)")?;
        }
        Ok(())
    }
}
