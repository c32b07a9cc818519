//! The operator verbs of `rsc`: they talk to the coordinator over coord/v1 with the SDK's HTTP client
//! (fail-over across `--coordinator URL,URL…`), print human tables by default and `--output json` for
//! scripts, and fail with one line on stderr and a non-zero exit. A password is never echoed or stored.
//!
//! Credentials, in order: `RSC_TOKEN`; `RSC_USERNAME` + `RSC_PASSWORD` (a login per invocation); the token
//! `rsc login` stored for the deployment the coordinator URLs belong to (`stored_login.rs`).
//!
//! - `login.rs`: `rsc login`, `rsc logout`;
//! - `show.rs`: `rsc health`, `groups`, `describe`, `version`, `upgrade-check`; `describe_stream.rs`:
//!   `rsc describe <stream>` (a stream as a whole);
//! - `change.rs`: `rsc scale`, `rollback`, `force-complete` (with `--wait` progress);
//! - `offsets.rs`: `rsc offsets reset` (plan, confirm, apply); `produce.rs`: `rsc produce` (one record through
//!   the SDK's guarded append);
//! - `messages.rs`: `rsc messages` (a shard's records: page, jump, bounded search);
//! - `pending.rs`: `rsc pending` (a group's pending entries, entry by entry);
//! - `audit.rs`: `rsc audit` (with `--follow`);
//! - `desired.rs` (the file format, pure) and `apply.rs`: `rsc plan`, `rsc apply`;
//! - `table.rs`: plain-text tables; `terminal.rs`: everything printed is escaped for the terminal (`say!`,
//!   `sayln!`, `esayln!`).

#[macro_use]
pub mod terminal;
pub mod apply;
pub mod attribution;
pub mod audit;
pub mod change;
pub mod credentials;
pub mod describe_stream;
pub mod desired;
pub mod durability;
pub mod login;
pub mod messages;
pub mod offsets;
pub mod pending;
pub mod produce;
pub mod show;
pub mod stored_login;
pub mod table;
pub mod upgrade_check;

use clap::{Args, ValueEnum};
use rsc_client::{Auth, ClientError, CoordinatorClient, Credentials, Method};
use serde_json::Value;
use std::process::ExitCode;
use std::time::Duration;

/// Where the coordinator is and how to print: every operator verb takes these.
#[derive(Args, Debug, Clone)]
pub struct Target {
    /// Coordinator URL(s), comma-separated; the next is tried when one does not answer.
    #[arg(
        long,
        env = "RSC_COORDINATOR",
        default_value = "http://127.0.0.1:8080",
        value_delimiter = ','
    )]
    pub coordinator: Vec<String>,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// How results are printed (every operator verb, and backup, restore and doctor).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Human-readable tables and lines.
    Text,
    /// JSON on stdout, for scripts.
    Json,
}

/// An operator verb's failure: one line for stderr, and the exit code.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub code: u8,
}

impl Failure {
    pub fn new(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: 1,
        }
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Failure::new(message)
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::new(message)
    }
}

/// Runs an async verb on a current-thread runtime and turns its outcome into an exit code; a failure is one
/// line on stderr, `rsc <verb>: <what went wrong>`.
pub fn run<F>(verb: &str, fut: F) -> ExitCode
where
    F: std::future::Future<Output = Result<ExitCode, Failure>>,
{
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            esayln!("rsc {verb}: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(fut) {
        Ok(code) => code,
        Err(f) => {
            let line = f.message.split_whitespace().collect::<Vec<_>>().join(" ");
            esayln!("rsc {verb}: {line}");
            ExitCode::from(f.code)
        }
    }
}

/// A connection to the coordinator with the credentials resolved.
pub struct Session {
    pub client: CoordinatorClient,
    pub target: Target,
    /// Who the credentials name (for `requestedBy`), when known.
    pub username: Option<String>,
    /// Where the credentials came from, for error messages.
    source: CredentialSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CredentialSource {
    None,
    EnvToken,
    EnvPassword,
    Stored,
}

/// How long one HTTP request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

impl Session {
    /// Connects with the first credentials found (see the module comment).
    pub async fn open(target: &Target) -> Result<Session, Failure> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let (auth, username, source) = if let Some(token) = env("RSC_TOKEN") {
            (
                Auth::Bearer(token),
                env("RSC_USERNAME"),
                CredentialSource::EnvToken,
            )
        } else if let (Some(u), Some(p)) = (env("RSC_USERNAME"), env("RSC_PASSWORD")) {
            (
                Auth::Login(Credentials::new(u.clone(), p)),
                Some(u),
                CredentialSource::EnvPassword,
            )
        } else {
            match stored_token(target).await? {
                Some(t) => (
                    Auth::Bearer(t.access_token),
                    Some(t.username),
                    CredentialSource::Stored,
                ),
                None => (Auth::None, None, CredentialSource::None),
            }
        };
        Ok(Session {
            client: client(target, auth)?,
            target: target.clone(),
            username,
            source,
        })
    }

    /// `GET` a JSON document at `path` (segments below the base URL).
    pub async fn get(&self, segments: &[&str], query: &[(&str, String)]) -> Result<Value, Failure> {
        self.client
            .send_json(Method::GET, segments, query, None, None)
            .await
            .map_err(|e| self.failure(e))
    }

    /// Sends a mutation with a fresh `X-Request-Id`; returns the answer and the id.
    pub async fn mutate(
        &self,
        method: Method,
        segments: &[&str],
        body: &Value,
    ) -> Result<(Value, String), Failure> {
        let request_id = format!("rsc-{}", uuid::Uuid::new_v4());
        let answer = self
            .client
            .send_json(method, segments, &[], Some(body), Some(&request_id))
            .await
            .map_err(|e| self.failure(e))?;
        Ok((answer, request_id))
    }

    /// One line that says what went wrong and what to do.
    pub fn failure(&self, e: ClientError) -> Failure {
        let urls = self.target.coordinator.join(",");
        let message = match &e {
            ClientError::Unauthorized { .. } => match self.source {
                CredentialSource::Stored => {
                    "the stored token was refused (expired or revoked): run rsc login".to_owned()
                }
                CredentialSource::EnvToken => "RSC_TOKEN was refused (expired or revoked)".to_owned(),
                CredentialSource::EnvPassword => {
                    "RSC_USERNAME/RSC_PASSWORD were refused by the coordinator".to_owned()
                }
                CredentialSource::None => {
                    "the coordinator needs credentials: run rsc login (or set RSC_TOKEN, or RSC_USERNAME and \
                     RSC_PASSWORD)"
                        .to_owned()
                }
            },
            ClientError::Forbidden { url } => format!(
                "forbidden: the principal{} may not do this ({url}); use one with the needed role",
                self.username
                    .as_deref()
                    .map(|u| format!(" {u:?}"))
                    .unwrap_or_default()
            ),
            ClientError::Unreachable(why) if why.contains("REDIS_UNAVAILABLE") => format!(
                "the coordinator at {urls} answered but cannot reach Redis (REDIS_UNAVAILABLE): start or \
                 repair Redis; `rsc health` shows the coordinator's components ({why})"
            ),
            ClientError::Unreachable(why) => {
                format!("no coordinator answered at {urls}: {why}")
            }
            ClientError::Api {
                status,
                error_code,
                message,
            } => {
                let code = error_code.as_deref().unwrap_or("ERROR");
                match rsc_hint(code) {
                    Some(hint) => format!("{code} (HTTP {status}): {message} — with rsc: {hint}"),
                    None => format!("{code} (HTTP {status}): {message}"),
                }
            }
            other => other.to_string(),
        };
        Failure::new(message)
    }

    /// `requestedBy` for a mutation: the flag, else the logged-in user, else `rsc`.
    pub fn requested_by(&self, flag: Option<&str>) -> String {
        flag.map(str::to_owned)
            .or_else(|| self.username.clone())
            .unwrap_or_else(|| "rsc".to_owned())
    }
}

/// The `rsc` verbs that answer an error code (the coordinator's message names API routes, for every client).
fn rsc_hint(code: &str) -> Option<&'static str> {
    Some(match code {
        "GROUP_NOT_FOUND" | "STREAM_NOT_FOUND" => {
            "rsc groups lists what exists; rsc apply -f FILE creates streams and groups"
        }
        "ACTIVE_MIGRATION_EXISTS" => {
            "rsc describe STREAM GROUP shows the migration; rsc rollback STREAM or rsc force-complete STREAM ends it"
        }
        "MIGRATION_ALREADY_ENDED" | "ROLLBACK_NOT_ALLOWED" => {
            "rsc describe STREAM GROUP shows the migration's state"
        }
        "METADATA_ROLLBACK_SUSPECTED" => {
            "rsc durability show STREAM GROUP, then rsc durability dismiss or recreate"
        }
        "OFFSET_RESET_INCOMPLETE" => {
            "rsc offsets reset STREAM GROUP … --dry-run shows where each shard stands now; reset the shards left with --shards"
        }
        "GROUP_HAS_ACTIVE_MEMBERS" => {
            "rsc describe STREAM GROUP lists them and their leases; in rsc apply's file, force = true deletes anyway"
        }
        _ => return None,
    })
}

/// A client for `target` with `auth`.
pub fn client(target: &Target, auth: Auth) -> Result<CoordinatorClient, Failure> {
    CoordinatorClient::builder(target.coordinator.clone())
        .auth(auth)
        .request_timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| Failure::new(e.to_string()))
}

/// The stored token for this coordinator, if one is stored; an expired one is an error that says what to do.
async fn stored_token(target: &Target) -> Result<Option<credentials::StoredToken>, Failure> {
    let Some(found) = stored_login::find(target).await? else {
        return Ok(None);
    };
    let t = found.token;
    if t.expires_at_ms <= now_ms() {
        return Err(Failure::new(format!(
            "the token stored for {} (user {:?}) expired at {}: run rsc login",
            found.key.describe(),
            t.username,
            rsc_coordinator::runtime::clock::iso_ms(t.expires_at_ms)
        )));
    }
    Ok(Some(t))
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Prints `value` as pretty JSON (for `--output json`).
pub fn print_json(value: &Value) {
    sayln!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
    );
}

/// A string field of a JSON object, or "" when absent.
pub fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A number field as text, or "" when absent or null.
pub fn n(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::Number(x)) => x.to_string(),
        Some(Value::String(x)) => x.clone(),
        _ => String::new(),
    }
}

/// Asks a yes/no question on the terminal; anything but `y`/`yes` is no. Without a terminal: no.
pub fn confirm(question: &str) -> bool {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return false;
    }
    esay!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
