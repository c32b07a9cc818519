//! What Redis says about itself, for `rsc doctor`: `INFO` sections, `CONFIG GET`, server time, a bounded
//! `SCAN` of the keys under a prefix, and whether the connection's ACL user may delete a key
//! (`ACL WHOAMI` + `ACL DRYRUN`, Redis 7).
//!
//! Read-only: nothing here writes. `SCAN` walks one server; on a cluster connection it is refused (the
//! caller says the check was not made) because a cluster cursor is per node.

use std::collections::BTreeMap;

use crate::error::StoreError;
use crate::store::Store;

/// The answer of [`Store::acl_may_delete`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AclAnswer {
    /// `ACL DRYRUN` says the user may run `DEL` on the key.
    Allowed { user: String },
    /// `ACL DRYRUN` refuses, with Redis's reason.
    Denied { user: String, reason: String },
    /// This Redis cannot answer (no `ACL DRYRUN` before 7.0, or the user may not run ACL): the reason.
    Unknown { reason: String },
}

impl Store {
    /// One `INFO <section>` as field → value (lines `name:value`; comments and blank lines skipped).
    pub async fn info(&self, section: &str) -> Result<BTreeMap<String, String>, StoreError> {
        let text: String = redis::cmd("INFO")
            .arg(section)
            .query_async(&mut self.connection())
            .await?;
        Ok(text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .collect())
    }

    /// `CONFIG GET <name>`: the value, or None when the server has no such parameter.
    pub async fn config_value(&self, name: &str) -> Result<Option<String>, StoreError> {
        let pairs: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(name)
            .query_async(&mut self.connection())
            .await?;
        Ok(pairs
            .chunks(2)
            .find(|p| p.len() == 2 && p[0].eq_ignore_ascii_case(name))
            .map(|p| p[1].clone()))
    }

    /// The `layoutVersion` field of a group's metadata hash (`None`: no such field or key), for `rsc doctor`.
    pub async fn layout_version(&self, metadata_key: &str) -> Result<Option<String>, StoreError> {
        Ok(redis::cmd("HGET")
            .arg(metadata_key)
            .arg("layoutVersion")
            .query_async(&mut self.connection())
            .await?)
    }

    /// Up to `limit` keys matching `<prefix>:*` (one server; an error on a cluster connection).
    pub async fn keys_under(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        if self.connection().is_cluster() {
            return Err(StoreError::InvalidArgument {
                detail: "SCAN of a prefix is per node; not available on a cluster connection"
                    .into(),
            });
        }
        let pattern = format!("{}:*", escape_glob(prefix));
        let mut out = Vec::new();
        let mut cursor = "0".to_owned();
        loop {
            let (next, keys): (String, Vec<String>) = redis::cmd("SCAN")
                .arg(&cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(500)
                .query_async(&mut self.connection())
                .await?;
            out.extend(keys);
            if next == "0" || out.len() >= limit {
                out.truncate(limit);
                out.sort();
                out.dedup();
                return Ok(out);
            }
            cursor = next;
        }
    }

    /// Whether `user` (None: the connection's own, from `ACL WHOAMI`) may `DEL` `key`.
    pub async fn acl_may_delete(
        &self,
        user: Option<&str>,
        key: &str,
    ) -> Result<AclAnswer, StoreError> {
        let mut conn = self.connection();
        let user: String = match user {
            Some(u) => u.to_owned(),
            None => match redis::cmd("ACL").arg("WHOAMI").query_async(&mut conn).await {
                Ok(u) => u,
                Err(e) => {
                    return Ok(AclAnswer::Unknown {
                        reason: format!("ACL WHOAMI failed: {e}"),
                    });
                }
            },
        };
        let answer: redis::RedisResult<String> = redis::cmd("ACL")
            .arg("DRYRUN")
            .arg(&user)
            .arg("DEL")
            .arg(key)
            .query_async(&mut conn)
            .await;
        Ok(match answer {
            Ok(s) if s == "OK" => AclAnswer::Allowed { user },
            Ok(reason) => AclAnswer::Denied { user, reason },
            Err(e) => AclAnswer::Unknown {
                reason: format!("ACL DRYRUN failed: {e}"),
            },
        })
    }

    /// Every ACL user's name (`ACL USERS`).
    pub async fn acl_users(&self) -> Result<Vec<String>, StoreError> {
        Ok(redis::cmd("ACL")
            .arg("USERS")
            .query_async(&mut self.connection())
            .await?)
    }
}

/// `prefix` with the glob characters of `MATCH` escaped, so it matches itself only.
fn escape_glob(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len());
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(super::escape_glob("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
        assert_eq!(
            super::escape_glob("redis-stream:coord"),
            "redis-stream:coord"
        );
    }
}
