//! A failed connection over TLS, said in terms of what to check: the CA, the server's name, or a server
//! that does not speak TLS on that port. rustls' own wording is kept after the hint.

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
        Some(
            "the server did not answer with TLS: is this a plain-text Redis port? Use the TLS port, or redis:// without TLS options",
        )
    } else if has(&["certificaterequired", "certificate required"]) {
        Some("the server requires a client certificate: give the certificate and key files")
    } else if has(&["expired"]) {
        Some("a TLS certificate has expired")
    } else {
        None
    }
}
