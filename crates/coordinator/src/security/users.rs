//! The user directory: configured users with their Argon2id hashes, roles and scopes, plus the bootstrap
//! admin (all roles, unrestricted). Tokens name a user, and roles and scopes are looked up here on every
//! (uncached) check — so removing a user or changing roles takes effect for existing tokens too.

use super::config::ApiConfig;
use super::password;
use super::roles::Roles;
use super::scope::Scopes;
use std::collections::HashMap;

#[derive(Debug, Clone)]
pub struct User {
    pub username: String,
    pub password_hash: String,
    pub roles: Roles,
    pub scopes: Scopes,
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
                    scopes: Scopes::parse(&u.stream_prefixes).unwrap_or_default(),
                },
            );
        }
        if let Some(hash) = admin_hash {
            users.insert(
                api.admin_username.clone(),
                User {
                    username: api.admin_username.clone(),
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

    /// Checks a username and password (Argon2id, off the async threads). Takes as long for unknown users.
    pub async fn verify(&self, username: &str, password: &str) -> Option<&User> {
        let user = self.users.get(username);
        let ok =
            password::verify_blocking(password.to_owned(), user.map(|u| u.password_hash.clone()))
                .await;
        if ok { user } else { None }
    }
}
