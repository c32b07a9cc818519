//! Running the real `rsc` binary as an operator would in the CLI tests: its own credentials directory,
//! none of the caller's credentials, optional standard input, and the whole output for failure messages.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `rsc <args>` against `url` with its own credentials directory and none of the caller's credentials.
pub fn rsc(url: &str, config_dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rsc"));
    cmd.args(args)
        .env("RSC_COORDINATOR", url)
        .env("RSC_CONFIG_DIR", config_dir)
        .env_remove("RSC_TOKEN")
        .env_remove("RSC_USERNAME")
        .env_remove("RSC_PASSWORD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("rsc starts");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

/// The exit code, standard output and standard error, for an assertion's message.
pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
