//! The user directory: configured users with their Argon2id hashes, roles and scopes, plus the bootstrap
//! admin (all roles, unrestricted). Tokens name a user, and roles and scopes are looked up here on every
//! (uncached) check — so removing a user or changing roles takes effect for existing tokens too.

use super::config::ApiConfig;
use super::password::Phc;
use super::roles::Roles;
use super::scope::Scopes;
use super::verifier::Verifier;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct User {
    pub username: String,
    pub password_hash: String,
    pub roles: Roles,
    pub scopes: Scopes,
    /// The hash, parsed once (None if unparsable: such a user can never sign in).
    pub phc: Option<Arc<Phc>>,
}

#[derive(Debug, Clone, Default)]
pub struct Directory {
    users: HashMap<String, User>,
}

impl Directory {
    /// Builds the directory from validated configuration and the resolved admin hash (None = no admin).
    pub fn build(api: &ApiConfig, admin_hash: Option<String>) -> Directory {
        let mut users = HashMap::new();
        for u in &api.users {
            users.insert(
                u.username.clone(),
                User {
                    username: u.username.clone(),
                    password_hash: u.password_hash.clone(),
                    roles: Roles::from_names(&u.roles),
                    // Configuration validation refuses such patterns at start-up; should one reach this
                    // point anyway, the user may touch no stream (never every stream).
                    scopes: Scopes::parse(&u.stream_prefixes).unwrap_or_else(|_| Scopes::none()),
                    phc: Phc::parse(&u.password_hash).map(Arc::new),
                },
            );
        }
        if let Some(hash) = admin_hash {
            users.insert(
                api.admin_username.clone(),
                User {
                    username: api.admin_username.clone(),
                    phc: Phc::parse(&hash).map(Arc::new),
                    password_hash: hash,
                    roles: Roles::all(),
                    scopes: Scopes::unrestricted(),
                },
            );
        }
        Directory { users }
    }

    pub fn get(&self, username: &str) -> Option<&User> {
        self.users.get(username)
    }

    /// The most Argon2 memory (1 KiB blocks) any user's hash needs.
    pub fn max_memory_blocks(&self) -> usize {
        self.users
            .values()
            .filter_map(|u| u.phc.as_ref().map(|p| p.memory_blocks()))
            .max()
            .unwrap_or(0)
    }

    /// Checks a username and password (Argon2id, in `client`'s turn of `verifier`). Takes as long for
    /// unknown users.
    pub async fn verify(
        &self,
        verifier: &Verifier,
        client: &str,
        username: &str,
        password: &str,
    ) -> Option<&User> {
        let user = self.users.get(username);
        let phc = user.and_then(|u| u.phc.clone());
        let ok = verifier.verify(client, password.to_owned(), phc).await;
        if ok { user } else { None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::config::UserConfig;

    #[test]
    fn a_user_whose_scope_does_not_parse_may_touch_no_stream() {
        // Validation refuses these patterns at start-up; the directory must still fail closed if one slips by.
        let api = ApiConfig {
            users: vec![UserConfig {
                username: "team-a".into(),
                password_hash: "plain".into(),
                roles: vec!["WRITE".into()],
                stream_prefixes: vec!["team-a-*".into(), "a*b".into()],
            }],
            ..ApiConfig::default()
        };
        let directory = Directory::build(&api, None);
        let user = directory
            .get("team-a")
            .expect("the user is in the directory");
        assert!(user.scopes.is_restricted());
        for prefix in ["team-a-x", "a*b", "axb", "orders", ""] {
            assert!(!user.scopes.allows(prefix), "{prefix} allowed");
        }
    }
}
