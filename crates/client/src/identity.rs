//! Default member identity: which name a consumer uses as its member id and Redis consumer name.
//!
//! Like the reference clients (coord/v1 contract): the pod IP (`POD_IP`, `MY_POD_IP`, `KUBERNETES_POD_IP`,
//! `STATUS_POD_IP`), else the host name (`HOSTNAME`, then `/etc/hostname`), else a random id; sanitised to
//! `[A-Za-z0-9._-]`. With logical concurrency N > 1 the members are `<id>-m0 … <id>-m{N-1}`.
//! Two processes on one host must be given distinct ids explicitly (the host name alone is then shared).

/// The environment variables holding a pod IP, in the order they are consulted.
const POD_IP_VARS: [&str; 4] = ["POD_IP", "MY_POD_IP", "KUBERNETES_POD_IP", "STATUS_POD_IP"];

/// The default member id of this process, derived from `lookup` (an environment reader) and `hostname_file`.
pub(crate) fn derive(
    lookup: impl Fn(&str) -> Option<String>,
    hostname_file: Option<String>,
) -> String {
    let from_env = POD_IP_VARS
        .iter()
        .chain(["HOSTNAME"].iter())
        .filter_map(|v| lookup(v))
        .map(|v| sanitize(&v))
        .find(|v| !v.is_empty());
    from_env
        .or_else(|| {
            hostname_file
                .map(|h| sanitize(&h))
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| format!("member-{}", uuid::Uuid::new_v4().simple()))
}

/// The default member id of this process (see the module docs).
///
/// ```
/// let id = rsc_client::default_member_id();
/// assert!(!id.is_empty());
/// assert!(id.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)));
/// ```
pub fn default_member_id() -> String {
    derive(
        |k| std::env::var(k).ok(),
        std::fs::read_to_string("/etc/hostname").ok(),
    )
}

/// Keeps `[A-Za-z0-9._-]`, replacing anything else with `-`, trimmed of surrounding whitespace.
pub(crate) fn sanitize(raw: &str) -> String {
    raw.trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Member ids for `concurrency` logical members sharing `base`.
pub(crate) fn member_ids(base: &str, concurrency: usize) -> Vec<String> {
    if concurrency <= 1 {
        vec![base.to_owned()]
    } else {
        (0..concurrency).map(|i| format!("{base}-m{i}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_ip_wins_then_hostname_then_file() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            derive(env(&[("POD_IP", "10.0.0.7"), ("HOSTNAME", "h")]), None),
            "10.0.0.7"
        );
        assert_eq!(
            derive(env(&[("STATUS_POD_IP", "10.1.1.1")]), None),
            "10.1.1.1"
        );
        assert_eq!(derive(env(&[("HOSTNAME", "web 1")]), None), "web-1");
        assert_eq!(derive(env(&[]), Some("box\n".into())), "box");
        assert!(derive(env(&[]), None).starts_with("member-"));
    }

    #[test]
    fn concurrency_suffixes() {
        assert_eq!(member_ids("pod", 1), vec!["pod"]);
        assert_eq!(member_ids("pod", 3), vec!["pod-m0", "pod-m1", "pod-m2"]);
    }
}
