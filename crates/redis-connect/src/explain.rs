//! A failed connection over TLS, said in terms of what to check: the CA, the server's name, or a server
//! that does not speak TLS on that port. rustls' own wording is kept after the hint.
//!
//! A plain-text Redis behind a `rediss://` address reads the TLS client hello as the start of an inline
//! command and waits for a line end that does not come (redis-server 7 looks for it only up to the first
//! NUL byte, which the hello has in its first bytes), so the handshake times out; a server that answers
//! `-ERR …` instead shows up in rustls as a corrupt message of an invalid content type. [`connect_hint`]
//! says the same for both.

/// The hint for a server that does not speak TLS on the port.
const NOT_TLS: &str = "the server did not answer TLS: is it a plain-text Redis port? Use its TLS port (redis-server --tls-port), or redis:// without TLS options";

/// The hint for a TLS handshake that got no answer at all within the connect timeout.
const NO_TLS_ANSWER: &str = "the server did not answer the TLS handshake: is it a plain-text Redis port (use its TLS port, redis-server --tls-port, or redis:// without TLS options), or is it overloaded?";

/// What to check when connecting failed with `err`: [`tls_hint`], and over TLS (`over_tls`) a timeout
/// too, which is what a plain-text Redis that waits for the rest of a "command" looks like.
pub fn connect_hint(err: &redis::RedisError, over_tls: bool) -> Option<&'static str> {
    tls_hint(err).or_else(|| (over_tls && is_timeout(err)).then_some(NO_TLS_ANSWER))
}

/// A failed connection to `address` said with what to check (the redis error's own text after it), or
/// `None` when it is no failure [`connect_hint`] recognises.
pub fn explain_connect(address: &str, err: &redis::RedisError, over_tls: bool) -> Option<String> {
    connect_hint(err, over_tls)
        .map(|hint| format!("TLS connection to {address} failed: {hint} ({err})"))
}

fn is_timeout(err: &redis::RedisError) -> bool {
    if err.is_timeout() {
        return true;
    }
    let text = err.to_string().to_ascii_lowercase();
    text.contains("timed out") || text.contains("timeout")
}

/// The error text, with a hint in front when it is a TLS failure this crate recognises.
pub fn explain(err: &redis::RedisError) -> String {
    let text = err.to_string();
    match tls_hint(err) {
        Some(hint) => format!("{hint} ({text})"),
        None => text,
    }
}

/// What to check when `err` is a TLS failure this crate recognises; `None` for anything else.
pub fn tls_hint(err: &redis::RedisError) -> Option<&'static str> {
    let text = err.to_string().to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| text.contains(w));
    if has(&[
        "unknownissuer",
        "unknown issuer",
        "badsignature",
        "bad signature",
    ]) {
        Some(
            "the server's TLS certificate does not verify against the CA file (or the system's trust store)",
        )
    } else if has(&["notvalidforname", "not valid for name"]) {
        Some(
            "the server's TLS certificate does not name the host in the address (server-name verification is always on)",
        )
    } else if has(&[
        "invalidcontenttype",
        "corrupt message",
        "invalidmessage",
        "invalid message",
    ]) {
        Some(NOT_TLS)
    } else if has(&["certificaterequired", "certificate required"]) {
        Some("the server requires a client certificate: give the certificate and key files")
    } else if has(&["expired"]) {
        Some("a TLS certificate has expired")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(kind: std::io::ErrorKind, text: &str) -> redis::RedisError {
        redis::RedisError::from(std::io::Error::new(kind, text.to_owned()))
    }

    #[test]
    fn a_timeout_is_a_tls_hint_only_over_tls() {
        let timeout = io(std::io::ErrorKind::TimedOut, "connection timed out");
        assert!(connect_hint(&timeout, false).is_none());
        let text = explain_connect("rediss://127.0.0.1:6380", &timeout, true).expect("a hint");
        assert!(text.contains("127.0.0.1:6380"), "{text}");
        assert!(text.contains("plain-text Redis port"), "{text}");
    }

    #[test]
    fn a_corrupt_message_means_no_tls_on_the_port() {
        let err = io(
            std::io::ErrorKind::InvalidData,
            "received corrupt message of type InvalidContentType",
        );
        let text = explain_connect("rediss://127.0.0.1:6379", &err, true).expect("a hint");
        assert!(text.contains("did not answer TLS"), "{text}");
        assert!(
            connect_hint(&io(std::io::ErrorKind::ConnectionRefused, "refused"), true).is_none()
        );
    }
}
