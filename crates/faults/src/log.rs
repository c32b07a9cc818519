//! The ownership log: one JSON object per line, written by each worker process incarnation and read back by
//! the orchestrator (incrementally while the run goes on, fully at the end).
//!
//! Every line is written with one `write(2)` on an unbuffered file, so it reaches the kernel before the
//! worker goes on: a SIGKILLed worker loses nothing it logged (the page cache outlives the process; the
//! suite never crashes the machine, so no fsync is needed). Timestamps are CLOCK_REALTIME in nanoseconds.

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// One ownership-log line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Line {
    /// The process started (first line of every file).
    Boot {
        member: String,
        pid: u32,
        at_ns: u64,
    },
    /// A read loop for `shard` started (SDK `ReadStarted`).
    ReadStarted {
        shard: u32,
        at_ns: u64,
        reclaim: bool,
    },
    /// A read loop for `shard` ended (SDK `ReadStopped`).
    ReadStopped {
        shard: u32,
        at_ns: u64,
        lease_expired: bool,
    },
    /// A heartbeat was answered; `accepted` when the answer renewed the assignment lease.
    Heartbeat {
        at_ns: u64,
        status: String,
        accepted: bool,
    },
    /// The assignment lease ran out.
    LeaseExpired { at_ns: u64 },
    /// The handler got an entry.
    Got {
        seq: u64,
        shard: u32,
        id: String,
        reclaimed: bool,
        at_ns: u64,
    },
    /// XACK answered (`removed`: it removed the entry from the pending list).
    Acked {
        seq: u64,
        shard: u32,
        id: String,
        removed: bool,
        at_ns: u64,
    },
    /// XACK kept failing; the entry stays pending for whoever owns the shard next.
    AckFailed { seq: u64, shard: u32, error: String },
    /// The producer published `seq` (XADD answered with `id`).
    Published {
        seq: u64,
        shard: u32,
        id: String,
        at_ns: u64,
    },
    /// The process is exiting after SIGTERM.
    Shutdown { at_ns: u64, clean: bool },
}

/// Now, CLOCK_REALTIME in nanoseconds.
pub fn now_ns() -> u64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970");
    u64::try_from(d.as_nanos()).expect("nanoseconds fit u64 until 2554")
}

/// Failures reading or writing a log.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: not a log line ({source}): {text}")]
    Parse {
        path: PathBuf,
        line: usize,
        text: String,
        source: serde_json::Error,
    },
}

/// Appends lines to one log file; shared by the tasks of a worker.
pub struct LogWriter {
    path: PathBuf,
    file: Mutex<File>,
}

impl LogWriter {
    /// Creates (or truncates) the file.
    pub fn create(path: &Path) -> Result<LogWriter, LogError> {
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(path)
            .map_err(|source| LogError::Io {
                path: path.to_owned(),
                source,
            })?;
        Ok(LogWriter {
            path: path.to_owned(),
            file: Mutex::new(file),
        })
    }

    /// Writes one line with a single write call. A failure aborts the worker: a silent gap in the log would
    /// make the end checks meaningless.
    pub fn write(&self, line: &Line) {
        let mut text = serde_json::to_string(line).expect("log lines serialise");
        text.push('\n');
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = file.write_all(text.as_bytes()) {
            eprintln!("cannot write {}: {e}", self.path.display());
            std::process::abort();
        }
    }
}

/// Reads a log incrementally: each [`LogTail::poll`] returns the complete lines written since the last.
pub struct LogTail {
    path: PathBuf,
    offset: u64,
    carry: Vec<u8>,
    line_no: usize,
}

impl LogTail {
    pub fn new(path: &Path) -> LogTail {
        LogTail {
            path: path.to_owned(),
            offset: 0,
            carry: Vec::new(),
            line_no: 0,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// New complete lines (a missing file has none yet).
    pub fn poll(&mut self) -> Result<Vec<Line>, LogError> {
        let io = |source| LogError::Io {
            path: self.path.clone(),
            source,
        };
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(e)),
        };
        file.seek(SeekFrom::Start(self.offset)).map_err(io)?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf).map_err(io)?;
        self.offset += buf.len() as u64;
        self.carry.extend_from_slice(&buf);
        let mut out = Vec::new();
        while let Some(pos) = self.carry.iter().position(|b| *b == b'\n') {
            let raw: Vec<u8> = self.carry.drain(..=pos).collect();
            self.line_no += 1;
            let text = String::from_utf8_lossy(&raw[..raw.len() - 1]).into_owned();
            let line = serde_json::from_str(&text).map_err(|source| LogError::Parse {
                path: self.path.clone(),
                line: self.line_no,
                text,
                source,
            })?;
            out.push(line);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_the_tail_returns_only_complete_new_lines() {
        let dir = std::env::temp_dir().join(format!("rsc-faults-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.jsonl");
        let w = LogWriter::create(&path).unwrap();
        let mut tail = LogTail::new(&path);
        assert!(tail.poll().unwrap().is_empty());
        let a = Line::ReadStarted {
            shard: 3,
            at_ns: 5,
            reclaim: true,
        };
        w.write(&a);
        assert_eq!(tail.poll().unwrap(), vec![a]);
        // A half-written line is kept until its newline arrives.
        let b = Line::LeaseExpired { at_ns: 9 };
        let text = serde_json::to_string(&b).unwrap();
        let (head, rest) = text.split_at(4);
        w.file.lock().unwrap().write_all(head.as_bytes()).unwrap();
        assert!(tail.poll().unwrap().is_empty());
        w.file
            .lock()
            .unwrap()
            .write_all(format!("{rest}\n").as_bytes())
            .unwrap();
        assert_eq!(tail.poll().unwrap(), vec![b]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
