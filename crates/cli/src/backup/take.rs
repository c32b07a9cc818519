//! `rsc backup`: reads every record that defines a group or stream — the group index, each indexed group's
//! metadata hash and each stream's record — and writes them to a checksummed file (`file.rs`), mode 0600,
//! with an HMAC of its content when `--key-file` names a key.
//!
//! Consistency: a group adopts what its stream record says (shard count, migrations), so a group and its
//! stream record are read as a pair that matches. Per stream: read the stream record, then each of its
//! groups, then the stream record again; if its revision moved in between, read them all again (at most
//! `ATTEMPTS` times). Groups of different streams are independent and read one stream at a time. Leases,
//! progress, tokens, rate-limit windows and the audit streams are not backed up (docs/operations.md,
//! "Backup and restore", says why).

use clap::Args;
use rsc_store::Keyspace;
use rsc_store::{GroupName, IndexEntry, StoredGroup};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use super::file::{self, Content, SavedGroup, SavedHash, SavedIndexEntry};
use super::{Failure, Output, RedisArgs, connect, redact, store_failure};

/// Reads of one stream and its groups before giving up on a stream record that keeps moving.
const ATTEMPTS: usize = 20;

#[derive(Args, Debug)]
pub struct BackupArgs {
    #[command(flatten)]
    pub redis: RedisArgs,
    /// The file to write (written beside it first, then renamed, so a failed backup leaves no half file).
    #[arg(short = 'f', long = "file", required_unless_present = "output_file")]
    pub file: Option<PathBuf>,
    /// Deprecated spelling of `-f/--file` (elsewhere `-o` is the output format); still works, with a note.
    #[arg(
        short = 'o',
        long = "output-file",
        hide = true,
        conflicts_with = "file"
    )]
    pub output_file: Option<PathBuf>,
    /// A file holding a secret key (at least 32 bytes, mode 0600): the backup then carries an HMAC of its
    /// content, and `rsc restore --key-file` with the same key detects any edit.
    #[arg(long, env = "RSC_BACKUP_KEY_FILE")]
    pub key_file: Option<PathBuf>,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value = "text")]
    pub output: Output,
}

pub async fn run(args: BackupArgs) -> Result<ExitCode, Failure> {
    let target = match (&args.file, &args.output_file) {
        (Some(f), _) => f.clone(),
        (None, Some(f)) => {
            eprintln!(
                "rsc backup: -o/--output-file is deprecated (elsewhere -o is the output format): use -f/--file"
            );
            f.clone()
        }
        (None, None) => return Err(Failure::new("give the file to write with -f/--file")),
    };
    let url = &args.redis.redis_url;
    let kp = &args.redis.key_prefix;
    let key = args
        .key_file
        .as_deref()
        .map(super::read_key_file)
        .transpose()?;
    let store = connect(url, kp).await?;
    let raw_index = store
        .backup_index_entries()
        .await
        .map_err(|e| store_failure("reading the group index", &e, url))?;

    let mut streams: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (key, value) in &raw_index {
        let entry: IndexEntry = serde_json::from_str(value).map_err(|e| {
            Failure::new(format!(
                "index entry {key} is unreadable ({e}); nothing written"
            ))
        })?;
        let expected = Keyspace::new(kp)
            .group(&entry.stream_prefix, &entry.consumer_group)
            .metadata;
        if *key != expected {
            return Err(Failure::new(format!(
                "index entry {key} names group {}/{} whose key is {expected}; nothing written",
                entry.stream_prefix, entry.consumer_group
            )));
        }
        streams
            .entry(entry.stream_prefix)
            .or_default()
            .push((entry.consumer_group, key.clone()));
    }

    let mut content = Content {
        index: raw_index
            .iter()
            .map(|(key, value)| SavedIndexEntry {
                key: key.clone(),
                value: value.clone(),
            })
            .collect(),
        ..Content::default()
    };
    for (prefix, groups) in &streams {
        let (record, saved) = read_stream(&store, prefix, groups, url).await?;
        content.streams.extend(record);
        content.groups.extend(saved);
    }
    // A LIVE entry whose metadata is gone (the group was deleted while this backup ran) is left out:
    // restored, it would name a group that does not exist, and `rsc restore` refuses such phantoms.
    let saved: std::collections::BTreeSet<String> =
        content.groups.iter().map(|g| g.key.clone()).collect();
    content.index.retain(|e| {
        saved.contains(&e.key)
            || serde_json::from_str::<IndexEntry>(&e.value)
                .is_ok_and(|entry| entry.state != rsc_store::IndexState::Live)
    });

    let created_at = now_rfc3339();
    let text = file::encode(kp, &created_at, &content, key.as_deref());
    write_file(&target, &text)?;

    let path = target.display().to_string();
    match args.output {
        Output::Json => println!(
            "{}",
            serde_json::json!({
                "file": path, "redis": redact(url), "keyPrefix": kp, "createdAt": created_at,
                "streams": content.streams.len(), "groups": content.groups.len(),
                "indexEntries": content.index.len(), "bytes": text.len(),
            })
        ),
        Output::Text => {
            println!(
                "backed up {} stream record(s), {} group(s), {} index entr{} of key prefix {kp} from {} to {path} ({} bytes)",
                content.streams.len(),
                content.groups.len(),
                content.index.len(),
                if content.index.len() == 1 { "y" } else { "ies" },
                redact(url),
                text.len()
            );
            for g in &content.groups {
                println!(
                    "  {}/{}  revision {}",
                    g.stream_prefix, g.consumer_group, g.revision
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One stream's record and its groups' metadata, read so that they match (see the module comment).
async fn read_stream(
    store: &rsc_store::Store,
    prefix: &str,
    groups: &[(String, String)],
    url: &str,
) -> Result<(Option<SavedHash>, Vec<SavedGroup>), Failure> {
    let record_key = store.keyspace().stream_record(prefix);
    let read_record = || async {
        store
            .stream_record_load(prefix)
            .await
            .map_err(|e| store_failure("reading a stream record", &e, url))
    };
    for _ in 0..ATTEMPTS {
        let before = read_record().await?;
        let mut saved = Vec::new();
        for (group, key) in groups {
            let stored = store
                .load(&GroupName::new(prefix, group))
                .await
                .map_err(|e| store_failure("reading group metadata", &e, url))?;
            // No metadata: a group still being created (its index entry alone is kept).
            if let Some(StoredGroup {
                aggregate,
                revision,
                updated_at,
                ..
            }) = stored
            {
                saved.push(SavedGroup {
                    key: key.clone(),
                    stream_prefix: prefix.to_owned(),
                    consumer_group: group.clone(),
                    revision,
                    updated_at,
                    document: aggregate,
                });
            }
        }
        let after = read_record().await?;
        if before.as_ref().map(|r| r.revision) == after.as_ref().map(|r| r.revision) {
            let record = after.map(|r| SavedHash {
                key: record_key.clone(),
                stream_prefix: prefix.to_owned(),
                revision: r.revision,
                updated_at: r.updated_at,
                document: r.aggregate,
            });
            return Ok((record, saved));
        }
    }
    Err(Failure::new(format!(
        "the stream record {record_key} kept changing during {ATTEMPTS} reads (a migration in progress?); \
         nothing written, try again"
    )))
}

/// Writes the file beside `path` first, then renames it: created afresh (never through a planted file or
/// symlink) and readable by its owner only (0600), since a backup shows every group's members and state.
fn write_file(path: &std::path::Path, text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    // A leftover of an interrupted backup (or anything planted there) is removed, not written through.
    let _ = std::fs::remove_file(&tmp);
    options
        .open(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Failure::new(format!("cannot write {}: {e}", path.display()))
        })
}

fn now_rfc3339() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    rsc_coordinator::runtime::clock::iso_ms(ms)
}
