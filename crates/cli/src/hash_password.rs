//! `rsc hash-password`: reads a password from stdin (the first line) and prints its Argon2id PHC string for
//! `coordinator.api.users[].password-hash` or `coordinator.api.admin-password-hash`. The password is never
//! taken from the command line, so it does not end up in shell history or the process list.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

/// Shortest password accepted.
pub const MIN_LEN: usize = 8;

pub fn run() -> ExitCode {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("Password (will be echoed; pipe it in to avoid that): ");
        let _ = std::io::stderr().flush();
    }
    let mut line = String::new();
    if let Err(e) = stdin.lock().read_line(&mut line) {
        eprintln!("rsc: cannot read the password from stdin: {e}");
        return ExitCode::from(2);
    }
    match hash_line(&line) {
        Ok(hash) => {
            println!("{hash}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rsc: {e}");
            ExitCode::from(2)
        }
    }
}

/// Hashes one input line (without its line ending).
pub fn hash_line(line: &str) -> Result<String, String> {
    let password = line.strip_suffix('\n').unwrap_or(line);
    let password = password.strip_suffix('\r').unwrap_or(password);
    if password.chars().count() < MIN_LEN {
        return Err(format!(
            "the password must be at least {MIN_LEN} characters; pipe it in, e.g. \
             `printf '%s' \"$PW\" | rsc hash-password`"
        ));
    }
    rsc_coordinator::security::password::hash(password)
}
