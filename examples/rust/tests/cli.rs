//! The examples' checks that need no coordinator: `--help` names each setting with its environment variable,
//! and a run without a password says which variable to set (exit 1) before it connects anywhere. The README
//! walk (`crates/cli/tests/readme.rs`) runs both against a real coordinator and Redis; this test is also what
//! makes `cargo test --workspace` build their binaries for it.

use std::process::{Command, Output};

fn run(binary: &str, args: &[&str]) -> Output {
    Command::new(binary)
        .args(args)
        .env_remove("RSC_PASSWORD")
        .env_remove("RSC_USERNAME")
        // a closed port: nothing may be reached
        .env("RSC_COORDINATOR", "http://127.0.0.1:9")
        .env("RSC_REDIS_URL", "redis://127.0.0.1:9")
        .output()
        .expect("run the example")
}

#[test]
fn help_names_every_setting_and_its_environment_variable() {
    for (binary, own) in [
        (env!("CARGO_BIN_EXE_orders-producer"), "--count"),
        (env!("CARGO_BIN_EXE_orders-consumer"), "--group"),
    ] {
        let out = run(binary, &["--help"]);
        assert!(out.status.success(), "{binary} --help: {out:?}");
        let help = String::from_utf8_lossy(&out.stdout);
        for word in [
            "RSC_COORDINATOR",
            "RSC_REDIS_URL",
            "RSC_USERNAME",
            "RSC_PASSWORD",
            "--stream",
            own,
        ] {
            assert!(
                help.contains(word),
                "{binary} --help does not name {word}:\n{help}"
            );
        }
    }
}

#[test]
fn without_a_password_each_example_says_what_to_set() {
    for binary in [
        env!("CARGO_BIN_EXE_orders-producer"),
        env!("CARGO_BIN_EXE_orders-consumer"),
    ] {
        let out = run(binary, &["--count", "1"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{binary}: {stderr}");
        assert!(
            stderr.contains("set RSC_PASSWORD") && !stderr.contains("panicked"),
            "{binary}: {stderr}"
        );
    }
}
