//! `rsc login` and `rsc logout`: a bearer token from `POST /coord/v1/auth/login`, stored per coordinator
//! URL with its expiry (`credentials.rs`), and revoked with `POST /coord/v1/auth/revoke`.
//!
//! The password is read without echo from the terminal (rpassword), or as one line from stdin with
//! `--password-stdin`; it is sent once and never stored or printed.

use super::credentials::{self, CredentialsFile, StoredToken};
use super::{Failure, Output, Session, Target, client, credentials_key, now_ms, print_json};
use clap::Args;
use rsc_client::{Auth, Method};
use serde_json::{Value, json};
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct LoginArgs {
    #[command(flatten)]
    pub target: Target,
    /// The user to log in as (default: RSC_USERNAME, else asked on the terminal).
    #[arg(long)]
    pub username: Option<String>,
    /// Read the password as one line from stdin instead of asking for it.
    #[arg(long)]
    pub password_stdin: bool,
}

#[derive(Args, Debug)]
pub struct LogoutArgs {
    #[command(flatten)]
    pub target: Target,
}

pub async fn login(args: LoginArgs) -> Result<ExitCode, Failure> {
    let username = match args
        .username
        .clone()
        .or_else(|| std::env::var("RSC_USERNAME").ok().filter(|u| !u.is_empty()))
    {
        Some(u) => u,
        None if std::io::stdin().is_terminal() && !args.password_stdin => ask("Username: ")?,
        None => {
            return Err(Failure::new(
                "no username: pass --username (or set RSC_USERNAME)",
            ));
        }
    };
    let password = if args.password_stdin {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the password from stdin: {e}"))?;
        line.trim_end_matches(['\r', '\n']).to_owned()
    } else if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("Password for {username}: "))
            .map_err(|e| format!("cannot read the password: {e}"))?
    } else {
        return Err(Failure::new(
            "no terminal to ask for the password on: pipe it with --password-stdin",
        ));
    };
    if password.is_empty() {
        return Err(Failure::new("the password is empty"));
    }
    let anonymous = Session {
        client: client(&args.target, Auth::None)?,
        target: args.target.clone(),
        username: Some(username.clone()),
        source: super::CredentialSource::None,
    };
    let body = json!({"username": username, "password": password});
    let answer = anonymous
        .client
        .send_json(
            Method::POST,
            &["coord", "v1", "auth", "login"],
            &[],
            Some(&body),
            None,
        )
        .await
        .map_err(|e| match e {
            rsc_client::ClientError::Unauthorized { .. } => Failure::new(format!(
                "login refused for {username:?}: wrong username or password (or too many failed attempts: \
                 wait and retry)"
            )),
            other => anonymous.failure(other),
        })?;
    let token = answer
        .get("accessToken")
        .and_then(Value::as_str)
        .ok_or("the login answer has no accessToken")?
        .to_owned();
    let expires_in = answer
        .get("expiresInSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let path = credentials::path()?;
    let mut file = CredentialsFile::load(&path)?;
    let key = credentials_key(&args.target);
    file.coordinators.insert(
        key.clone(),
        StoredToken {
            username: username.clone(),
            access_token: token,
            expires_at_ms: now_ms() + expires_in * 1000,
        },
    );
    file.save(&path)?;
    let expires_at = super::s(&answer, "expiresAt").to_owned();
    let roles = answer.get("roles").cloned().unwrap_or(Value::Null);
    match args.target.output {
        Output::Json => print_json(&json!({
            "coordinator": key, "username": username, "expiresAt": expires_at, "roles": roles,
            "credentialsFile": path.display().to_string(),
        })),
        Output::Text => sayln!(
            "Logged in to {key} as {username} (roles {}); the token expires at {expires_at} and is stored in {}",
            roles_text(&roles),
            path.display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn logout(args: LogoutArgs) -> Result<ExitCode, Failure> {
    let path = credentials::path()?;
    let mut file = CredentialsFile::load(&path)?;
    let key = credentials_key(&args.target);
    let Some(stored) = file.coordinators.get(&key).cloned() else {
        return Err(Failure::new(format!(
            "no token is stored for {key}: nothing to log out of"
        )));
    };
    let session = Session {
        client: client(&args.target, Auth::Bearer(stored.access_token.clone()))?,
        target: args.target.clone(),
        username: Some(stored.username.clone()),
        source: super::CredentialSource::Stored,
    };
    let revoked = session
        .client
        .send_json(
            Method::POST,
            &["coord", "v1", "auth", "revoke"],
            &[],
            Some(&json!({})),
            None,
        )
        .await;
    // An expired or already revoked token is as good as revoked: forget it either way.
    let note = match revoked {
        Ok(_) => "revoked".to_owned(),
        Err(rsc_client::ClientError::Unauthorized { .. }) => {
            "already expired or revoked".to_owned()
        }
        Err(e) => return Err(session.failure(e)),
    };
    file.coordinators.remove(&key);
    file.save(&path)?;
    match args.target.output {
        Output::Json => {
            print_json(&json!({"coordinator": key, "username": stored.username, "token": note}))
        }
        Output::Text => sayln!("Logged out of {key} ({}): token {note}", stored.username),
    }
    Ok(ExitCode::SUCCESS)
}

fn roles_text(roles: &Value) -> String {
    roles
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

fn ask(prompt: &str) -> Result<String, Failure> {
    esay!("{prompt}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| format!("cannot read from the terminal: {e}"))?;
    let v = line.trim().to_owned();
    if v.is_empty() {
        return Err(Failure::new("no username given"));
    }
    Ok(v)
}
