//! Redis URLs with their secrets taken out, for every message that names one (issue #32, finding 10: `rsc
//! serve` printed `redis://user:PASSWORD@…` when Redis refused the password or was down). [`redact_url`]
//! replaces the password of `redis://user:password@host` (and the lone user-info part of
//! `redis://password@host`, which Redis takes as the password) by `***`; [`scrub`] does that to every
//! occurrence of a URL in a text, and to the bare password too, wherever a library quoted it.
//! [`with_password`] puts a password given apart (`RSC_REDIS_PASSWORD`, a password file) into a URL, so it
//! need not be on a command line where `ps` shows it.

/// `url` with its password (or a lone user-info part, which is the password) replaced by `***`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    let (userinfo, host) = (&rest[..at], &rest[at..]);
    let redacted = match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:***"),
        None => "***".to_owned(),
    };
    format!("{scheme}://{redacted}{host}")
}

/// The secret of a URL: its password, or a lone user-info part.
fn secret_of(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    let userinfo = &rest[..at];
    Some(userinfo.split_once(':').map_or(userinfo, |(_, pw)| pw))
}

/// `text` with every one of `urls` redacted, and their passwords (three characters or more) as well.
pub fn scrub<'a>(text: &str, urls: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = text.to_owned();
    for url in urls {
        out = out.replace(url, &redact_url(url));
        if let Some(secret) = secret_of(url)
            && secret.len() >= 3
        {
            out = out.replace(secret, "***");
        }
    }
    out
}

/// `url` (or a cluster node's `host:port`, taken as `redis://host:port`, or `rediss://` with `tls`) with
/// `password` as its password, percent-encoded; a URL that already carries a password keeps its own.
pub fn with_password(url: &str, password: &str, tls: bool) -> String {
    let url = crate::seed_url(url, tls);
    let Some((scheme, rest)) = url.split_once("://") else {
        return url;
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let encoded = percent_encode(password);
    match rest[..authority_end].rfind('@') {
        Some(at) if rest[..at].contains(':') => url.clone(),
        Some(at) => format!("{scheme}://{}:{encoded}{}", &rest[..at], &rest[at..]),
        None => format!("{scheme}://:{encoded}@{rest}"),
    }
}

/// Every byte but RFC 3986's unreserved characters as `%XX`.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_taken_out_of_urls_and_texts() {
        assert_eq!(
            redact_url("redis://app:s3cret@redis:6379/0"),
            "redis://app:***@redis:6379/0"
        );
        assert_eq!(
            redact_url("rediss://s3cret@redis:6379"),
            "rediss://***@redis:6379"
        );
        assert_eq!(redact_url("redis://redis:6379"), "redis://redis:6379");
        assert_eq!(redact_url("redis://a:p@ss@h:1"), "redis://a:***@h:1");
        let url = "redis://app:hunter22@127.0.0.1:1";
        let text = format!("Redis at {url} refused: WRONGPASS for app/hunter22");
        let clean = scrub(&text, [url]);
        assert!(!clean.contains("hunter22"), "{clean}");
        assert!(clean.contains("redis://app:***@127.0.0.1:1"), "{clean}");
    }

    #[test]
    fn a_password_given_apart_goes_into_the_url() {
        assert_eq!(
            with_password("redis://h:1/0", "p@ss:w/rd", false),
            "redis://:p%40ss%3Aw%2Frd@h:1/0"
        );
        assert_eq!(
            with_password("redis://app@h:1", "pw", false),
            "redis://app:pw@h:1"
        );
        assert_eq!(with_password("h:1", "pw", false), "redis://:pw@h:1");
        assert_eq!(with_password("h:1", "pw", true), "rediss://:pw@h:1");
        assert_eq!(
            with_password("redis://a:own@h:1", "pw", false),
            "redis://a:own@h:1"
        );
        let client = redis::Client::open(with_password("redis://h:1", "p@ss:w/rd", false)).unwrap();
        assert_eq!(
            client.get_connection_info().redis_settings().password(),
            Some("p@ss:w/rd")
        );
    }
}
