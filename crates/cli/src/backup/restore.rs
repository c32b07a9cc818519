//! `rsc restore`: writes a backup (`file.rs`) back, following the runbook's durability rules.
//!
//! Everything is checked before anything is written: the file (format, version, checksum, and with
//! `--key-file` its HMAC), its key prefix against `--key-prefix`, every document with the API's rules
//! (`checks.rs`: ranges, shard limits, invariants, index entries that match groups of the file), every key's
//! name (rebuilt from the names in the file with `rsc_protocol::names`), and every live key it would replace. Live metadata
//! whose revision or metadataVersion (a stream record: routingVersion) is higher than the backup's, or that
//! differs at the same revision, is refused unless `--force`; with `--force` the restore says what will
//! follow. Then, in order: the shard streams and Redis consumer groups the restored groups route to are
//! provisioned where missing (empty: their data is not in a backup), the stream records are written, then
//! the groups (each in one script that checks the key is still as it was checked, clears the group's leases
//! and progress and leases its live members for `--member-lease-ttl-ms`, so the members that held shards
//! keep them and no shard is handed to another reader while a client-side lease may still run), then the
//! index entries. A key that changed after the check stops the restore with an error naming it.

use clap::Args;
use rsc_group::model::Group;
use rsc_group::stream::StreamRecord;
use rsc_store::Keyspace;
use rsc_store::{GroupName, RestoreOutcome, RestoredHash, Store, StoredGroup};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use super::file::{self, Content, SavedGroup, SavedHash};
use super::{Failure, Output, RedisArgs, connect, redact, store_failure};

/// About how many entries the change feed keeps (the coordinator's default `coordinator.cluster.change-feed-length`).
const CHANGE_FEED_LENGTH: u32 = 10_000;

#[derive(Args, Debug)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub redis: RedisArgs,
    /// The backup file to restore.
    #[arg(
        short = 'f',
        long = "file",
        visible_short_alias = 'i',
        visible_alias = "input-file"
    )]
    pub input_file: PathBuf,
    /// Restore only this group (`<streamPrefix>/<consumerGroup>`), with its stream record; repeatable.
    #[arg(long = "group", value_name = "S/G")]
    pub groups: Vec<String>,
    /// Replace live metadata that is newer than the backup (disaster recovery; see docs/operations.md, "Backup and restore").
    #[arg(long)]
    pub force: bool,
    /// Lease given to every live member of a restored group, in ms: at least the coordinator's
    /// coordinator.member-lease-ttl (default 15 s), so a member's shards stay its own while its client-side
    /// lease may still run.
    #[arg(long, default_value_t = 15_000)]
    pub member_lease_ttl_ms: i64,
    /// The key file the backup was taken with (`rsc backup --key-file`): its HMAC must match.
    #[arg(long, env = "RSC_BACKUP_KEY_FILE")]
    pub key_file: Option<PathBuf>,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value = "text")]
    pub output: Output,
}

/// One key to write, decided in the check phase.
struct Planned<'a> {
    saved: Saved<'a>,
    /// The live revision the key must still be at (None: absent).
    expect_current: Option<u64>,
    /// Already identical in Redis: nothing to write.
    unchanged: bool,
}

enum Saved<'a> {
    Stream(&'a SavedHash),
    Group(&'a SavedGroup, Box<Group>),
}

pub async fn run(args: RestoreArgs) -> Result<ExitCode, Failure> {
    let url = &args.redis.redis_url;
    let kp = &args.redis.key_prefix;
    if args.member_lease_ttl_ms <= 0 {
        return Err(Failure::new("--member-lease-ttl-ms must be positive"));
    }
    let text = std::fs::read_to_string(&args.input_file)
        .map_err(|e| Failure::new(format!("cannot read {}: {e}", args.input_file.display())))?;
    let key = args
        .key_file
        .as_deref()
        .map(super::read_key_file)
        .transpose()?;
    let (header, content) = file::decode(&text, key.as_deref())?;
    if header.key_prefix != *kp {
        return Err(Failure::new(format!(
            "the backup is of key prefix {:?}, this restore writes under {kp:?}; pass --key-prefix {:?} if \
             the coordinator uses that prefix",
            header.key_prefix, header.key_prefix
        )));
    }
    // The whole file is checked, whatever --group selects: a file with one forged record is not trusted.
    super::checks::check_content(kp, &content).map_err(|e| {
        Failure::new(format!(
            "the backup does not hold valid metadata: {e}; nothing written"
        ))
    })?;
    let content = select(&content, &args.groups)?;
    check_names(kp, &content)?;

    let store = connect(url, kp).await?;
    let mut plan: Vec<Planned> = Vec::new();
    let mut refusals: Vec<String> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    for s in &content.streams {
        let backup = StreamRecord::from_json(&s.document)
            .map_err(|e| Failure::new(format!("stream record {} in the backup: {e}", s.key)))?;
        let live = read_live(&store, &s.key, &s.stream_prefix, None, url).await?;
        let newer = live.as_ref().and_then(|l| {
            let rec = StreamRecord::from_json(&l.aggregate).ok();
            let routing = rec.map(|r| r.routing_version).unwrap_or(i64::MAX);
            newer_than(
                l,
                s.revision,
                &s.document,
                "routingVersion",
                routing,
                backup.routing_version,
            )
        });
        judge(&s.key, newer, args.force, &mut refusals, &mut warnings);
        plan.push(planned(
            Saved::Stream(s),
            live.as_ref(),
            s.revision,
            &s.document,
        ));
    }
    for g in &content.groups {
        let backup = Group::from_json(&g.document)
            .map_err(|e| Failure::new(format!("group {} in the backup: {e}", g.key)))?;
        let live = read_live(
            &store,
            &g.key,
            &g.stream_prefix,
            Some(&g.consumer_group),
            url,
        )
        .await?;
        let newer = live.as_ref().and_then(|l| {
            let mv = Group::from_json(&l.aggregate)
                .map(|a| a.metadata_version)
                .unwrap_or(i64::MAX);
            newer_than(
                l,
                g.revision,
                &g.document,
                "metadataVersion",
                mv,
                backup.metadata_version,
            )
        });
        judge(&g.key, newer, args.force, &mut refusals, &mut warnings);
        let unchanged = live
            .as_ref()
            .is_some_and(|l| l.revision == g.revision && l.aggregate == g.document);
        plan.push(Planned {
            expect_current: live.as_ref().map(|l| l.revision),
            unchanged,
            saved: Saved::Group(g, Box::new(backup)),
        });
    }
    if let Some(first) = refusals.first() {
        return Err(Failure::new(format!(
            "{first}{}; nothing written. Restoring an older backup over newer metadata is disaster recovery: \
             re-run with --force to replace it (clients that saw the newer version will raise rollback suspicion)",
            if refusals.len() > 1 {
                format!(" (and {} more)", refusals.len() - 1)
            } else {
                String::new()
            }
        )));
    }
    let shard_keys = shard_streams(&plan);
    for (key, shard, _) in &shard_keys {
        store
            .shard_stream_info(shard)
            .await
            .map_err(|e| store_failure(&format!("shard stream {key} cannot be used"), &e, url))?;
    }
    if args.output == Output::Text {
        for w in &warnings {
            println!("WARNING: {w}");
        }
    }

    // Write phase.
    for (key, shard, group) in &shard_keys {
        store
            .shard_provision(shard, group)
            .await
            .map_err(|e| store_failure(&format!("provisioning {key}"), &e, url))?;
        store
            .ensure_routing_key(shard)
            .await
            .map_err(|e| store_failure(&format!("provisioning {key}"), &e, url))?;
    }
    let mut written = Vec::new();
    let mut unchanged = Vec::new();
    for p in &plan {
        let (key, outcome) = match &p.saved {
            _ if p.unchanged => {
                unchanged.push(key_of(&p.saved).to_owned());
                continue;
            }
            Saved::Stream(s) => (
                &s.key,
                store
                    .restore_stream_record(
                        &s.stream_prefix,
                        &hash(p, s.revision, &s.document, &s.updated_at),
                    )
                    .await,
            ),
            Saved::Group(g, aggregate) => {
                // The check phase saw that `g.key` is this group's metadata key under the key prefix.
                let name = GroupName::new(&g.stream_prefix, &g.consumer_group);
                let live: Vec<String> = aggregate
                    .members
                    .values()
                    .filter(|m| m.state.is_live())
                    .map(|m| m.member_id.clone())
                    .collect();
                let record = hash(p, g.revision, &g.document, &g.updated_at);
                (
                    &g.key,
                    store
                        .restore_group(&name, &record, args.member_lease_ttl_ms, &live)
                        .await,
                )
            }
        };
        match outcome.map_err(|e| store_failure(&format!("restoring {key}"), &e, url))? {
            RestoreOutcome::Restored { .. } => {
                written.push(key.clone());
                // Tell the replica that owns it (the change feed, as every coordinator write does): its
                // deadlines are those of the restored state. A lost notice is found by the owner's sweep.
                let (prefix, group) = match &p.saved {
                    Saved::Stream(s) => (s.stream_prefix.as_str(), ""),
                    Saved::Group(g, _) => (g.stream_prefix.as_str(), g.consumer_group.as_str()),
                };
                let _ = store
                    .change_publish(CHANGE_FEED_LENGTH, prefix, group)
                    .await;
            }
            RestoreOutcome::Changed { current } => {
                return Err(Failure::new(format!(
                    "{key} changed after it was checked (now at revision {}): a coordinator is writing; \
                     restored so far: {}; stop the writers and re-run",
                    current.unwrap_or_else(|| "none".into()),
                    if written.is_empty() {
                        "nothing".to_owned()
                    } else {
                        written.join(", ")
                    }
                )));
            }
        }
    }
    for e in &content.index {
        store
            .restore_index_entry(&e.key, &e.value)
            .await
            .map_err(|err| store_failure("writing the group index", &err, url))?;
    }

    match args.output {
        Output::Json => println!(
            "{}",
            json!({
                "redis": redact(url), "keyPrefix": kp, "backupCreatedAt": header.created_at,
                "written": written, "unchanged": unchanged, "indexEntries": content.index.len(),
                "shardStreamsChecked": shard_keys.len(), "forced": warnings,
            })
        ),
        Output::Text => {
            println!(
                "restored {} key(s) ({} already identical) and {} index entr{} of key prefix {kp} into {} from \
                 the backup taken {}",
                written.len(),
                unchanged.len(),
                content.index.len(),
                if content.index.len() == 1 { "y" } else { "ies" },
                redact(url),
                header.created_at
            );
            for k in &written {
                println!("  restored {k}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn key_of<'a>(s: &'a Saved<'a>) -> &'a str {
    match s {
        Saved::Stream(s) => &s.key,
        Saved::Group(g, _) => &g.key,
    }
}

fn hash<'a>(
    p: &Planned,
    revision: u64,
    document: &'a str,
    updated_at: &'a str,
) -> RestoredHash<'a> {
    RestoredHash {
        expect_current: p.expect_current,
        revision,
        aggregate: document,
        updated_at,
    }
}

fn planned<'a>(
    saved: Saved<'a>,
    live: Option<&StoredGroup>,
    revision: u64,
    document: &str,
) -> Planned<'a> {
    let unchanged = live.is_some_and(|l| l.revision == revision && l.aggregate == document);
    Planned {
        expect_current: live.map(|l| l.revision),
        unchanged,
        saved,
    }
}

/// What Redis holds now for the record `key` of the backup (its names: stream `prefix`, and `group` for a
/// group's metadata).
async fn read_live(
    store: &Store,
    key: &str,
    prefix: &str,
    group: Option<&str>,
    url: &str,
) -> Result<Option<StoredGroup>, Failure> {
    let read = match group {
        Some(g) => store.load(&GroupName::new(prefix, g)).await,
        None => store.stream_record_load(prefix).await,
    };
    read.map_err(|e| {
        store_failure(
            &format!(
                "the live {key} cannot be read (delete it by hand if it is damaged, then restore)"
            ),
            &e,
            url,
        )
    })
}

/// Why live metadata must not be replaced without --force, if it must not.
fn newer_than(
    live: &StoredGroup,
    revision: u64,
    document: &str,
    version_name: &str,
    live_version: i64,
    backup_version: i64,
) -> Option<String> {
    if live.revision > revision {
        Some(format!(
            "revision {} is newer than the backup's {revision}",
            live.revision
        ))
    } else if live_version > backup_version {
        Some(format!(
            "{version_name} {live_version} is newer than the backup's {backup_version}"
        ))
    } else if live.revision == revision && live.aggregate != document {
        Some(format!(
            "revision {revision} holds other contents than the backup"
        ))
    } else {
        None
    }
}

fn judge(
    key: &str,
    newer: Option<String>,
    force: bool,
    refusals: &mut Vec<String>,
    warnings: &mut Vec<String>,
) {
    if let Some(why) = newer {
        if force {
            warnings.push(format!(
                "{key}: live {why}; --force replaces it with the backup. Members and producers that saw the \
                 newer version will report it and the coordinator will raise rollback suspicion for the group \
                 (admin mutations fail closed until an operator repairs or dismisses it), by design"
            ));
        } else {
            refusals.push(format!("live {key}: {why}"));
        }
    }
}

/// The content narrowed to `--group` selections (all of it when none is given).
fn select(content: &Content, wanted: &[String]) -> Result<Content, Failure> {
    if wanted.is_empty() {
        return Ok(content.clone());
    }
    let mut pairs = BTreeSet::new();
    for w in wanted {
        let (s, g) = w
            .split_once('/')
            .filter(|(s, g)| !s.is_empty() && !g.is_empty())
            .ok_or_else(|| {
                Failure::new(format!(
                    "--group {w:?}: expected <streamPrefix>/<consumerGroup>"
                ))
            })?;
        if !content
            .groups
            .iter()
            .any(|x| x.stream_prefix == s && x.consumer_group == g)
        {
            return Err(Failure::new(format!(
                "--group {w}: the backup holds no such group"
            )));
        }
        pairs.insert((s.to_owned(), g.to_owned()));
    }
    let groups: Vec<SavedGroup> = content
        .groups
        .iter()
        .filter(|g| pairs.contains(&(g.stream_prefix.clone(), g.consumer_group.clone())))
        .cloned()
        .collect();
    let keys: BTreeSet<&str> = groups.iter().map(|g| g.key.as_str()).collect();
    let prefixes: BTreeSet<&str> = groups.iter().map(|g| g.stream_prefix.as_str()).collect();
    Ok(Content {
        streams: content
            .streams
            .iter()
            .filter(|s| prefixes.contains(s.stream_prefix.as_str()))
            .cloned()
            .collect(),
        index: content
            .index
            .iter()
            .filter(|e| keys.contains(e.key.as_str()))
            .cloned()
            .collect(),
        groups,
    })
}

/// Every key in the file must be the one its names give under `kp`.
fn check_names(kp: &str, content: &Content) -> Result<(), Failure> {
    let wrong = |key: &str, expected: String| {
        Failure::new(format!(
            "the backup names {key} where {expected} was expected; nothing written"
        ))
    };
    for s in &content.streams {
        let expected = Keyspace::new(kp).stream_record(&s.stream_prefix);
        if s.key != expected {
            return Err(wrong(&s.key, expected));
        }
    }
    for g in &content.groups {
        rsc_protocol::validate::validate_stream_prefix(&g.stream_prefix)
            .and_then(|()| rsc_protocol::validate::validate_consumer_group(&g.consumer_group))
            .map_err(|e| Failure::new(format!("group {} in the backup: {e:?}", g.key)))?;
        let expected = Keyspace::new(kp)
            .group(&g.stream_prefix, &g.consumer_group)
            .metadata;
        if g.key != expected {
            return Err(wrong(&g.key, expected));
        }
    }
    Ok(())
}

/// The shard streams (and Redis consumer group) each restored group routes to or still drains.
fn shard_streams(plan: &[Planned]) -> Vec<(String, rsc_store::Shard, String)> {
    let mut out = BTreeSet::new();
    let upto = |prefix: &str| {
        plan.iter()
            .find_map(|p| match &p.saved {
                Saved::Stream(s) if s.stream_prefix == prefix => {
                    StreamRecord::from_json(&s.document).ok()
                }
                _ => None,
            })
            .map(|r| r.provisioned_upto())
            .unwrap_or(0)
    };
    for p in plan {
        if let Saved::Group(g, aggregate) = &p.saved {
            let mut shards: BTreeSet<u32> =
                (0..aggregate.shard_count.max(upto(&g.stream_prefix))).collect();
            shards.extend(aggregate.draining_shards.iter().copied());
            for s in shards {
                out.insert((
                    rsc_store::Keyspace::shard_stream(&g.stream_prefix, s),
                    rsc_store::Shard::new(g.stream_prefix.as_str(), s),
                    g.consumer_group.clone(),
                ));
            }
        }
    }
    out.into_iter().collect()
}
