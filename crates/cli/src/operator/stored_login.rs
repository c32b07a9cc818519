//! Which stored login (`credentials.rs`) a command uses for its `--coordinator` URLs: the deployment's login
//! when one of the URLs is known to belong to it; else a login stored by URL for one of them (older files,
//! coordinators that name no cluster id); else the login of the deployment the coordinators say they belong to
//! (`GET /` answers its cluster id, no credentials needed), which is then remembered for the URL that answered.
//! So a login through one replica serves every replica of that deployment, in any fail-over list, and never
//! another deployment's coordinators.

use super::credentials::{self, CredentialsFile, StoredToken, normalise};
use super::{Failure, Target, client};
use rsc_client::Auth;

/// Where a found login is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginKey {
    /// By the deployment's cluster id.
    Cluster(String),
    /// By a coordinator URL.
    Url(String),
}

impl LoginKey {
    /// For messages: `cluster <id>` or the URL.
    pub fn describe(&self) -> String {
        match self {
            LoginKey::Cluster(id) => format!("cluster {id}"),
            LoginKey::Url(url) => url.clone(),
        }
    }
}

/// A stored login and where it is stored.
#[derive(Debug, Clone)]
pub struct Found {
    pub token: StoredToken,
    pub key: LoginKey,
}

/// The stored login for `target`, if there is one (see the module comment).
pub async fn find(target: &Target) -> Result<Option<Found>, Failure> {
    let path = credentials::path()?;
    let mut file = CredentialsFile::load(&path)?;
    if let Some(id) = file.cluster_of_urls(&target.coordinator) {
        let token = file.clusters[&id].token.clone();
        return Ok(Some(Found {
            token,
            key: LoginKey::Cluster(id),
        }));
    }
    if let Some(url) = file.url_login(&target.coordinator) {
        let token = file.coordinators[&url].clone();
        return Ok(Some(Found {
            token,
            key: LoginKey::Url(url),
        }));
    }
    if file.clusters.is_empty() {
        return Ok(None);
    }
    let Some((id, answered)) = ask_cluster_id(target).await else {
        return Ok(None);
    };
    let Some(login) = file.clusters.get_mut(&id) else {
        return Ok(None);
    };
    login.add_url(&answered);
    let token = login.token.clone();
    file.save(&path)?;
    Ok(Some(Found {
        token,
        key: LoginKey::Cluster(id),
    }))
}

/// The cluster id the coordinators at `target` answer on `GET /` (no credentials), and the URL that answered;
/// None when none answers or it names no cluster id (an older coordinator, or one whose Redis is down).
pub async fn ask_cluster_id(target: &Target) -> Option<(String, String)> {
    let client = client(target, Auth::None).ok()?;
    let index = client.get_json(&[]).await.ok()?;
    let id = index.get("clusterId")?.as_str()?.to_owned();
    Some((id, normalise(&client.current_url())))
}
