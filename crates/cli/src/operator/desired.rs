//! Declarative desired state for `rsc plan` / `rsc apply`: the TOML file format and the pure comparison
//! with what the coordinator reports. No I/O here.
//!
//! ```toml
//! [[stream]]
//! prefix = "orders"
//! shards = 8
//! groups = ["orders", "billing"]
//! # groups to delete, by name; one with live members also needs `force = true`
//! absent_groups = ["legacy"]
//! force = false
//! ```
//!
//! Only what the file names is changed: a stream or group it does not mention is left alone (and `plan`
//! says so). Streams are never deleted (scale to 0 shards to remove every shard stream).

use rsc_protocol::validate::{self, MAX_SHARD_COUNT};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::fmt;

/// The whole file.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Desired {
    #[serde(default)]
    pub stream: Vec<DesiredStream>,
}

/// One `[[stream]]` table.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DesiredStream {
    pub prefix: String,
    pub shards: i64,
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default)]
    pub absent_groups: Vec<String>,
    /// Delete `absent_groups` even while members are live.
    #[serde(default)]
    pub force: bool,
}

/// A group as the coordinator reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentGroup {
    pub stream_prefix: String,
    pub consumer_group: String,
    pub shard_count: u32,
    pub live_members: u64,
    pub active_migration: Option<String>,
}

/// One change `apply` makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A new stream with its first group (`POST …/streams/{p}/groups/{g}` with `initialShardCount`).
    CreateStream {
        prefix: String,
        shards: u32,
        group: String,
    },
    CreateGroup {
        prefix: String,
        group: String,
    },
    Scale {
        prefix: String,
        from: u32,
        to: u32,
    },
    DeleteGroup {
        prefix: String,
        group: String,
        force: bool,
        live_members: u64,
    },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::CreateStream {
                prefix,
                shards,
                group,
            } => write!(
                f,
                "+ create stream {prefix} ({shards} shards) with group {prefix}/{group}"
            ),
            Change::CreateGroup { prefix, group } => write!(f, "+ create group {prefix}/{group}"),
            Change::Scale { prefix, from, to } => write!(f, "~ scale {prefix} {from} -> {to}"),
            Change::DeleteGroup {
                prefix,
                group,
                live_members,
                ..
            } => {
                write!(f, "- delete group {prefix}/{group}")?;
                if *live_members > 0 {
                    write!(f, " ({live_members} live members, force = true)")?;
                }
                Ok(())
            }
        }
    }
}

/// What `plan` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub changes: Vec<Change>,
    /// Groups the coordinator has that the file does not mention (left alone).
    pub untouched: Vec<String>,
    /// Why a change cannot be made (apply refuses to start).
    pub problems: Vec<String>,
    /// Facts worth knowing (e.g. a migration in progress).
    pub notes: Vec<String>,
}

/// Parses and checks a desired-state file. Errors name the line (TOML's own messages do) or the stream.
pub fn parse(text: &str) -> Result<Desired, String> {
    let desired: Desired = toml::from_str(text).map_err(|e| {
        // One line: where, and what (TOML's own rendering spans several lines with a snippet).
        let line = e
            .span()
            .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
        let what = e.message().trim().replace('\n', " ");
        match line {
            Some(l) => format!("line {l}: {what}"),
            None => what,
        }
    })?;
    // Every problem of the file at once, not the first only: fixing one to meet the next is a slow loop.
    let mut problems = Vec::new();
    let mut prefixes = BTreeSet::new();
    for s in &desired.stream {
        let at = format!("stream {:?}", s.prefix);
        if let Err(e) = validate::validate_stream_prefix(&s.prefix) {
            problems.push(format!("{at}: prefix: {e}"));
        }
        if !prefixes.insert(s.prefix.clone()) {
            problems.push(format!("{at} is listed twice"));
        }
        if s.shards < 1 || s.shards > i64::from(MAX_SHARD_COUNT) {
            problems.push(format!(
                "{at}: shards = {} is out of range; give a whole number from 1 to {MAX_SHARD_COUNT}",
                s.shards
            ));
        }
        let mut names = BTreeSet::new();
        for g in s.groups.iter().chain(&s.absent_groups) {
            if let Err(e) = validate::validate_consumer_group(g) {
                problems.push(format!("{at}: group {g:?}: {e}"));
            }
            if !names.insert(g) {
                problems.push(format!(
                    "{at}: group {g:?} is listed twice (groups and absent_groups together)"
                ));
            }
        }
        if s.groups.is_empty() {
            problems.push(format!("{at}: list at least one consumer group in groups"));
        }
    }
    match problems.len() {
        0 => Ok(desired),
        1 => Err(problems.remove(0)),
        n => Err(format!("{n} problems: {}", problems.join("; "))),
    }
}

/// Compares the desired state with the coordinator's groups.
pub fn plan(desired: &Desired, current: &[CurrentGroup]) -> Plan {
    let mut plan = Plan::default();
    let mut named = BTreeSet::new();
    for s in &desired.stream {
        let shards = s.shards as u32;
        let groups: Vec<&CurrentGroup> = current
            .iter()
            .filter(|g| g.stream_prefix == s.prefix)
            .collect();
        let exists = |name: &str| groups.iter().any(|g| g.consumer_group == name);
        for g in s.groups.iter().chain(&s.absent_groups) {
            named.insert((s.prefix.clone(), g.clone()));
        }
        match groups.first() {
            None => {
                plan.changes.push(Change::CreateStream {
                    prefix: s.prefix.clone(),
                    shards,
                    group: s.groups[0].clone(),
                });
                for g in &s.groups[1..] {
                    plan.changes.push(Change::CreateGroup {
                        prefix: s.prefix.clone(),
                        group: g.clone(),
                    });
                }
                continue;
            }
            Some(first) => {
                if first.shard_count != shards {
                    plan.changes.push(Change::Scale {
                        prefix: s.prefix.clone(),
                        from: first.shard_count,
                        to: shards,
                    });
                    if let Some(id) = &first.active_migration {
                        plan.problems.push(format!(
                            "stream {:?} has migration {id} in progress: a scale is refused until it completes \
                             (or is rolled back); run plan again then",
                            s.prefix
                        ));
                    }
                } else if let Some(id) = &first.active_migration {
                    plan.notes
                        .push(format!("stream {:?}: migration {id} in progress", s.prefix));
                }
            }
        }
        for g in s.groups.iter().filter(|g| !exists(g)) {
            plan.changes.push(Change::CreateGroup {
                prefix: s.prefix.clone(),
                group: g.clone(),
            });
        }
        for g in &s.absent_groups {
            let Some(cur) = groups.iter().find(|c| &c.consumer_group == g) else {
                continue;
            };
            if cur.live_members > 0 && !s.force {
                plan.problems.push(format!(
                    "group {}/{g} has {} live members: deleting it needs force = true in stream {:?}",
                    s.prefix, cur.live_members, s.prefix
                ));
            }
            plan.changes.push(Change::DeleteGroup {
                prefix: s.prefix.clone(),
                group: g.clone(),
                force: s.force,
                live_members: cur.live_members,
            });
        }
    }
    for g in current {
        if !named.contains(&(g.stream_prefix.clone(), g.consumer_group.clone())) {
            plan.untouched
                .push(format!("{}/{}", g.stream_prefix, g.consumer_group));
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(p: &str, g: &str, shards: u32, live: u64) -> CurrentGroup {
        CurrentGroup {
            stream_prefix: p.into(),
            consumer_group: g.into(),
            shard_count: shards,
            live_members: live,
            active_migration: None,
        }
    }

    const ORDERS: &str =
        "[[stream]]\nprefix = \"orders\"\nshards = 8\ngroups = [\"orders\", \"billing\"]\n";

    #[test]
    fn a_new_stream_is_created_with_its_first_group_then_the_others() {
        let d = parse(ORDERS).unwrap();
        let p = plan(&d, &[group("payments", "payments", 4, 0)]);
        let lines: Vec<String> = p.changes.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "+ create stream orders (8 shards) with group orders/orders",
                "+ create group orders/billing"
            ]
        );
        assert_eq!(p.untouched, ["payments/payments"]);
        assert!(p.problems.is_empty());
    }

    #[test]
    fn a_different_shard_count_is_a_scale_and_an_equal_state_is_no_change() {
        let d = parse(ORDERS).unwrap();
        let now = [
            group("orders", "orders", 4, 2),
            group("orders", "billing", 4, 0),
        ];
        let p = plan(&d, &now);
        assert_eq!(
            p.changes
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["~ scale orders 4 -> 8"]
        );
        let same = [
            group("orders", "orders", 8, 2),
            group("orders", "billing", 8, 0),
        ];
        assert_eq!(plan(&d, &same), Plan::default());
    }

    #[test]
    fn deleting_a_group_with_live_members_needs_force() {
        let text = format!("{ORDERS}absent_groups = [\"legacy\"]\n");
        let d = parse(&text).unwrap();
        let now = [
            group("orders", "orders", 8, 0),
            group("orders", "billing", 8, 0),
            group("orders", "legacy", 8, 3),
        ];
        let p = plan(&d, &now);
        assert_eq!(p.problems.len(), 1, "{p:?}");
        assert!(p.problems[0].contains("force = true"));
        let forced = parse(&format!("{text}force = true\n")).unwrap();
        let p = plan(&forced, &now);
        assert!(p.problems.is_empty());
        assert_eq!(
            p.changes
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["- delete group orders/legacy (3 live members, force = true)"]
        );
    }

    #[test]
    fn bad_files_are_refused_with_the_line_or_the_stream_named() {
        let unknown =
            parse("[[stream]]\nprefix = \"o\"\nshard = 8\ngroups = [\"o\"]\n").unwrap_err();
        assert!(
            unknown.contains("line 3") && unknown.contains("shard"),
            "{unknown}"
        );
        let zero = parse("[[stream]]\nprefix = \"o\"\nshards = 0\ngroups = [\"o\"]\n").unwrap_err();
        assert!(
            zero.contains("shards = 0") && zero.contains("16384"),
            "{zero}"
        );
        let big =
            parse("[[stream]]\nprefix = \"o\"\nshards = 20000\ngroups = [\"o\"]\n").unwrap_err();
        assert!(big.contains("out of range"), "{big}");
        let colon =
            parse("[[stream]]\nprefix = \"o\"\nshards = 2\ngroups = [\"a:b\"]\n").unwrap_err();
        assert!(colon.contains("\"a:b\""), "{colon}");
        let twice = parse(&format!("{ORDERS}{ORDERS}")).unwrap_err();
        assert!(twice.contains("twice"), "{twice}");
    }

    #[test]
    fn every_problem_of_a_file_is_reported_at_once() {
        let all = parse(
            "[[stream]]\nprefix = \"o\"\nshards = 0\ngroups = [\"a:b\"]\n\
             [[stream]]\nprefix = \"p\"\nshards = 2\ngroups = []\n",
        )
        .unwrap_err();
        assert!(all.starts_with("3 problems: "), "{all}");
        for part in ["shards = 0", "\"a:b\"", "stream \"p\": list at least one"] {
            assert!(all.contains(part), "{part} missing from {all}");
        }
    }
}
