//! `terraform-provider-rsc`: the Terraform provider of rsc (plugin protocol 6, source address `rsc/rsc`).
//! Terraform starts this binary and talks gRPC to it; it manages streams (`rsc_stream`) and consumer groups
//! (`rsc_consumer_group`) through the coordinator's HTTP API, and reads them for plans (data sources of the
//! same names). See docs/terraform.md.
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod api;
mod count;
mod crud;
mod data;
mod diag;
mod group;
mod log;
mod managed;
mod provider;
mod schema;
mod stream;
mod wait;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    log::init();
    // Terraform connects with mutual TLS; rustls has two crypto back-ends in this tree and must be told which.
    let _ = rustls::crypto::ring::default_provider().install_default();
    match tf_provider::serve("rsc", provider::RscProvider::default()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // Run by hand, or Terraform went away before the handshake: say so on one line.
            eprintln!("terraform-provider-rsc: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
