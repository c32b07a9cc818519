//! Stored bearer tokens of `rsc login`: `$RSC_CONFIG_DIR/credentials` (default `~/.config/rsc/credentials`),
//! a JSON object with one login per deployment, keyed by the cluster id its coordinators share (`GET /`
//! answers it), with the coordinator URLs seen to belong to it; a coordinator that names no cluster id has its
//! login keyed by URL. The file is created with mode 0600 in a 0700 directory and replaced atomically (write a
//! temporary file, then rename), so a reader never sees half a file and no other local user can read a token.
//! Passwords are never stored.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One stored token.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StoredToken {
    pub username: String,
    pub access_token: String,
    /// When the token stops working (Unix ms), as the coordinator said at login.
    pub expires_at_ms: i64,
}

/// A login to one deployment (every replica sharing its cluster id).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterLogin {
    #[serde(flatten)]
    pub token: StoredToken,
    /// Coordinator URLs that answered with this cluster id (normalised: no trailing slash).
    #[serde(default)]
    pub urls: Vec<String>,
}

impl ClusterLogin {
    /// Remembers `url` as one of this deployment's.
    pub fn add_url(&mut self, url: &str) {
        let url = normalise(url);
        if !self.urls.contains(&url) {
            self.urls.push(url);
        }
    }
}

/// Every stored login.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct CredentialsFile {
    /// By cluster id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub clusters: BTreeMap<String, ClusterLogin>,
    /// By coordinator URL: coordinators that name no cluster id, and files written by older `rsc`.
    #[serde(default)]
    pub coordinators: BTreeMap<String, StoredToken>,
}

/// A URL as logins are keyed: trimmed, without a trailing slash.
pub fn normalise(url: &str) -> String {
    url.trim().trim_end_matches('/').to_owned()
}

impl CredentialsFile {
    /// The cluster whose login lists one of `urls` (no network needed).
    pub fn cluster_of_urls(&self, urls: &[String]) -> Option<String> {
        let urls: Vec<String> = urls.iter().map(|u| normalise(u)).collect();
        self.clusters
            .iter()
            .find(|(_, login)| login.urls.iter().any(|u| urls.contains(u)))
            .map(|(id, _)| id.clone())
    }

    /// The URL-keyed login of one of `urls`, the first URL first.
    pub fn url_login(&self, urls: &[String]) -> Option<String> {
        urls.iter()
            .map(|u| normalise(u))
            .find(|u| self.coordinators.contains_key(u))
    }
}

/// Where the credentials file lives: `$RSC_CONFIG_DIR/credentials`, else `$HOME/.config/rsc/credentials`.
pub fn path() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("RSC_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("credentials"));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or("neither RSC_CONFIG_DIR nor HOME is set: set RSC_CONFIG_DIR to a directory for rsc's credentials")?;
    Ok(PathBuf::from(home)
        .join(".config")
        .join("rsc")
        .join("credentials"))
}

impl CredentialsFile {
    /// Reads the file; a missing file is an empty one.
    pub fn load(path: &Path) -> Result<Self, String> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                format!(
                    "{} is not a credentials file rsc can read ({e}); delete it and run rsc login",
                    path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// Writes the file with mode 0600 (its directory 0700), replacing it atomically.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let dir = path
            .parent()
            .ok_or_else(|| format!("{} has no parent directory", path.display()))?;
        create_private_dir(dir)?;
        let tmp = dir.join(".credentials.tmp");
        let json = serde_json::to_vec_pretty(self).map_err(|e| e.to_string())?;
        // A temporary file left by anyone (with looser permissions, or a symlink to elsewhere) is removed,
        // never reused or followed; the new one is created exclusively (issue #32, Low).
        match std::fs::remove_file(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("cannot remove {}: {e}", tmp.display()));
            }
            _ => {}
        }
        let mut f = private_file(&tmp)?;
        f.write_all(&json)
            .and_then(|()| f.sync_all())
            .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, path).map_err(|e| format!("cannot replace {}: {e}", path.display()))
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if dir.is_dir() {
        // An existing directory is tightened to the owner only.
        return std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot restrict {} to 0700: {e}", dir.display()));
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

#[cfg(unix)]
fn private_file(path: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> Result<std::fs::File, String> {
    std::fs::File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_file_is_private_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("credentials");
        let mut file = CredentialsFile::default();
        file.coordinators.insert(
            "http://127.0.0.1:8080".into(),
            StoredToken {
                username: "ops".into(),
                access_token: "t".into(),
                expires_at_ms: 42,
            },
        );
        file.save(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            let dmode = std::fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(dmode, 0o700);
        }
        let back = CredentialsFile::load(&path).unwrap();
        assert_eq!(back.coordinators, file.coordinators);
        assert!(
            CredentialsFile::load(&dir.path().join("missing"))
                .unwrap()
                .coordinators
                .is_empty()
        );
        std::fs::write(&path, b"{not json").unwrap();
        let err = CredentialsFile::load(&path).unwrap_err();
        assert!(err.contains("rsc login"), "{err}");
    }

    #[test]
    fn a_cluster_login_is_found_by_any_of_its_urls_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials");
        let mut file = CredentialsFile::default();
        let mut login = ClusterLogin {
            token: StoredToken {
                username: "ops".into(),
                access_token: "t".into(),
                expires_at_ms: 42,
            },
            urls: vec![],
        };
        login.add_url("http://a:8080/");
        login.add_url("http://a:8080");
        assert_eq!(login.urls, ["http://a:8080"]);
        file.clusters.insert("c-1".into(), login);
        file.save(&path).unwrap();
        let back = CredentialsFile::load(&path).unwrap();
        assert_eq!(back.clusters, file.clusters);
        let urls = |l: &[&str]| l.iter().map(|u| u.to_string()).collect::<Vec<_>>();
        assert_eq!(
            back.cluster_of_urls(&urls(&["http://b:1", "http://a:8080/"])),
            Some("c-1".to_owned())
        );
        assert_eq!(back.cluster_of_urls(&urls(&["http://b:1"])), None);
        // A file of an older rsc (logins by URL) still reads.
        std::fs::write(
            &path,
            br#"{"coordinators":{"http://a:8080":{"username":"ops","accessToken":"t","expiresAtMs":1}}}"#,
        )
        .unwrap();
        let old = CredentialsFile::load(&path).unwrap();
        assert!(old.clusters.is_empty());
        assert_eq!(
            old.url_login(&urls(&["http://a:8080/"])),
            Some("http://a:8080".to_owned())
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_temporary_file_is_neither_reused_nor_followed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("rsc");
        std::fs::create_dir(&home).unwrap();
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = home.join("credentials");
        let tmp = home.join(".credentials.tmp");
        // A symlink planted where the temporary file goes: its target must stay untouched.
        let target = dir.path().join("victim");
        std::fs::write(&target, b"keep me").unwrap();
        std::os::unix::fs::symlink(&target, &tmp).unwrap();
        CredentialsFile::default().save(&path).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dmode = std::fs::metadata(&home).unwrap().permissions().mode() & 0o777;
        assert_eq!(dmode, 0o700, "the directory is tightened");
        // A world-readable leftover is replaced by a private file.
        std::fs::write(&tmp, b"old").unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
        CredentialsFile::default().save(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
