//! `rsc login` and `rsc logout`: a bearer token from `POST /coord/v1/auth/login`, stored for the deployment
//! that answered (by the cluster id its coordinators share, `credentials.rs`) with its expiry, and revoked
//! with `POST /coord/v1/auth/revoke`. Login says which URL answered (the first of a fail-over list may be down).
//!
//! The password is read without echo from the terminal (rpassword), or as one line from stdin with
//! `--password-stdin`; it is sent once and never stored or printed.

use super::credentials::{self, ClusterLogin, CredentialsFile, StoredToken, normalise};
use super::stored_login::{self, LoginKey};
use super::{Failure, Output, Session, Target, client, now_ms, print_json};
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
    // The URL that answered the login, and the deployment it belongs to (asked there first).
    let answered = normalise(&anonymous.client.current_url());
    let cluster_id = anonymous.client.get_json(&[]).await.ok().and_then(|index| {
        index
            .get("clusterId")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let token = StoredToken {
        username: username.clone(),
        access_token: token,
        expires_at_ms: now_ms() + expires_in * 1000,
    };
    let path = credentials::path()?;
    let mut file = CredentialsFile::load(&path)?;
    // Logins stored by URL for these coordinators are replaced by this one.
    for url in args.target.coordinator.iter().chain([&answered]) {
        file.coordinators.remove(&normalise(url));
    }
    match &cluster_id {
        Some(id) => {
            let login = file
                .clusters
                .entry(id.clone())
                .or_insert_with(|| ClusterLogin {
                    token: token.clone(),
                    urls: Vec::new(),
                });
            login.token = token;
            login.add_url(&answered);
        }
        None => {
            file.coordinators.insert(answered.clone(), token);
        }
    }
    file.save(&path)?;
    let expires_at = super::s(&answer, "expiresAt").to_owned();
    let roles = answer.get("roles").cloned().unwrap_or(Value::Null);
    let cluster_note = cluster_id
        .as_deref()
        .map(|id| format!(" (cluster {id}: the login serves every replica of it)"))
        .unwrap_or_default();
    match args.target.output {
        Output::Json => print_json(&json!({
            "coordinator": answered, "clusterId": cluster_id, "username": username, "expiresAt": expires_at,
            "roles": roles, "credentialsFile": path.display().to_string(),
        })),
        Output::Text => sayln!(
            "Logged in to {answered}{cluster_note} as {username} (roles {}); the token expires at {expires_at} and \
             is stored in {}",
            roles_text(&roles),
            path.display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn logout(args: LogoutArgs) -> Result<ExitCode, Failure> {
    let Some(found) = stored_login::find(&args.target).await? else {
        return Err(Failure::new(format!(
            "no login is stored for {}: nothing to log out of",
            args.target.coordinator.join(",")
        )));
    };
    let stored = found.token.clone();
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
    let path = credentials::path()?;
    let mut file = CredentialsFile::load(&path)?;
    match &found.key {
        LoginKey::Cluster(id) => {
            file.clusters.remove(id);
        }
        LoginKey::Url(url) => {
            file.coordinators.remove(url);
        }
    }
    file.save(&path)?;
    let what = found.key.describe();
    match args.target.output {
        Output::Json => {
            print_json(&json!({"coordinator": what, "username": stored.username, "token": note}))
        }
        Output::Text => sayln!("Logged out of {what} ({}): token {note}", stored.username),
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
