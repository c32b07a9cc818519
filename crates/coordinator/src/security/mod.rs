//! Security and governance: who may call what, and a record of every admin mutation.
//!
//! - [`config`]: the `coordinator.api.*` / `coordinator.audit.*` keys. [`roles`], [`scope`], [`principal`].
//! - [`password`] (Argon2id), [`users`] (the directory), [`bootstrap`] (the admin password, never a default),
//!   [`verifier`] (where Argon2 checks run: bounded memory, a fair turn per client address).
//! - [`credentials`] (the Authorization header), [`tokens`] (opaque tokens in Redis), [`cache`] (short
//!   in-process cache of verified credentials), [`authn`] (turning credentials into a principal).
//! - [`window`] (Redis fixed-window counters), [`rate_limit`] (admin mutations), [`throttle`] (sign-ins:
//!   atomic reservations, growing delays per username and address).
//! - [`request_id`], [`proxies`] (client address), [`audit`] (records, Redis stream, query).
//! - [`browser`]: what a browser may make the API do (JSON bodies only, no cross-site mutations, the Basic
//!   challenge only to Basic requests).
//! - [`guard`]: the one middleware every route passes, driven by the route table's `Access` and
//!   `audit_action`. The security endpoints' handlers (login, token revocation, session, audit read) are in
//!   `api/auth.rs`; they call the logic here.

pub mod access;
pub mod audit;
pub mod authn;
pub mod bootstrap;
pub mod browser;
pub mod cache;
pub mod config;
pub mod credentials;
pub mod guard;
pub mod password;
pub mod principal;
pub mod proxies;
pub mod rate_limit;
pub mod request_id;
pub mod roles;
pub mod scope;
mod service;
pub mod throttle;
pub mod tokens;
pub mod users;
pub mod verifier;
pub mod window;

use crate::domain_error::{BadConfig, CoordError};
use rsc_store::Store;
use std::sync::Arc;

/// Everything the guard and the security handlers need, shared by all requests of one replica. Its parts
/// are private: outside this module it is used through its methods (`authn.rs`, `service.rs`).
pub struct Security {
    config: config::ApiConfig,
    coordinator_id: String,
    directory: users::Directory,
    verifier: verifier::Verifier,
    admin_source: Option<bootstrap::AdminSource>,
    tokens: tokens::TokenStore,
    cache: cache::CredentialCache,
    limits: rate_limit::RateLimiter,
    throttle: throttle::LoginThrottle,
    audit: audit::AuditLog,
    proxies: proxies::TrustedProxies,
}

impl Security {
    /// Where the admin password came from (configured, stored in Redis, generated at first start).
    pub fn admin_source(&self) -> Option<bootstrap::AdminSource> {
        self.admin_source
    }

    /// Builds the security layer: resolves (or bootstraps) the admin password against Redis.
    /// `coordinator_id` is this replica's id; `store` names the keys under the deployment's key prefix.
    pub async fn start(
        api: &config::ApiConfig,
        audit_config: &config::AuditConfig,
        coordinator_id: &str,
        store: &Store,
    ) -> Result<Arc<Security>, CoordError> {
        let admin = bootstrap::admin_hash(api, store).await?;
        let admin_source = admin.as_ref().map(|(_, s)| *s);
        let proxies = proxies::TrustedProxies::parse(&api.trusted_proxies)
            .map_err(|cause| BadConfig::TrustedProxies { cause })?;
        let directory = users::Directory::build(api, admin.map(|(h, _)| h));
        let verifier = verifier::Verifier::new(verifier::PERMITS, directory.max_memory_blocks());
        let security = Arc::new(Security {
            config: api.clone(),
            coordinator_id: coordinator_id.to_owned(),
            directory,
            verifier,
            admin_source,
            tokens: tokens::TokenStore::new(store.clone()),
            cache: cache::CredentialCache::new(
                api.credential_cache_ttl.0,
                api.credential_cache_size,
            ),
            limits: rate_limit::RateLimiter::new(store.clone(), api.rate_limit.clone()),
            throttle: throttle::LoginThrottle::new(store.clone(), api.login_throttle.clone()),
            audit: audit::AuditLog::new(store.clone(), audit_config),
            proxies,
        });
        spawn_audit_flush(Arc::downgrade(&security), audit_config.rejection_window.0);
        Ok(security)
    }
}

/// Writes the summaries of ended rejection windows even when no further refusal comes to trigger it; stops
/// when the security layer is dropped (the server stopped).
fn spawn_audit_flush(security: std::sync::Weak<Security>, window: std::time::Duration) {
    let every = (window / 4).clamp(
        std::time::Duration::from_millis(250),
        std::time::Duration::from_secs(5),
    );
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(sec) = security.upgrade() else { break };
            sec.audit.flush_ended(now_ms()).await;
        }
    });
}

/// Epoch milliseconds of the local clock (token lifetimes; Redis enforces them again with PXAT).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
