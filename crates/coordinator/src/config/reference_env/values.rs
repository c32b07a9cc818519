//! Value translation for the reference's variables: Spring durations, and the parts of a Redis URL.

use std::time::Duration;

/// `user:password@` (percent-encoded), `:password@`, or nothing.
pub(super) fn userinfo(
    user: Option<(String, String)>,
    password: Option<(String, String)>,
) -> String {
    match (user, password) {
        (None, None) => String::new(),
        (Some((_, u)), None) => format!("{}@", encode(&u)),
        (u, Some((_, p))) => format!(
            "{}:{}@",
            u.map_or_else(String::new, |(_, u)| encode(&u)),
            encode(&p)
        ),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters (the redis client decodes them).
pub(super) fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The database number, when one other than 0 is asked for.
pub(super) fn database(part: Option<(String, String)>) -> Result<Option<u32>, String> {
    let Some((name, raw)) = part else {
        return Ok(None);
    };
    let db: u32 = raw
        .trim()
        .parse()
        .map_err(|_| format!("environment variable {name}: must be a database number"))?;
    Ok((db != 0).then_some(db))
}

pub(super) fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A Spring `Duration` in milliseconds: a bare number (milliseconds), a number with a unit (`ns`, `us`,
/// `ms`, `s`, `m`, `h`, `d`), or ISO-8601 (`PT15S`, `P1DT2H`, `PT0.5S`).
pub fn spring_duration(raw: &str) -> Result<u64, String> {
    let t = raw.trim();
    let bad = || format!("{t:?} is not a duration; use e.g. 500ms, 15s, PT15S or milliseconds");
    if let Ok(ms) = t.parse::<u64>() {
        return Ok(ms);
    }
    let d = if t.starts_with(['P', 'p']) {
        iso_duration(&t[1..]).ok_or_else(bad)?
    } else {
        humantime::parse_duration(t).map_err(|_| bad())?
    };
    u64::try_from(d.as_millis()).map_err(|_| bad())
}

/// The part of an ISO-8601 duration after `P`: `[nD][T[nH][nM][n[.n]S]]`.
pub(super) fn iso_duration(text: &str) -> Option<Duration> {
    let upper = text.to_ascii_uppercase();
    let (date, time) = match upper.split_once('T') {
        Some((d, t)) if !t.is_empty() => (d.to_owned(), t.to_owned()),
        Some(_) => return None,
        None => (upper.clone(), String::new()),
    };
    let mut secs = 0f64;
    let mut any = false;
    for (part, units) in [
        (date, &[('D', 86_400f64)][..]),
        (time, &[('H', 3_600f64), ('M', 60f64), ('S', 1f64)][..]),
    ] {
        let mut rest = part.as_str();
        let mut allowed = units;
        while !rest.is_empty() {
            let end = rest.find(|c: char| c.is_ascii_alphabetic())?;
            let number: f64 = rest[..end].parse().ok().filter(|n: &f64| *n >= 0.0)?;
            let unit = rest[end..].chars().next()?;
            let at = allowed.iter().position(|(u, _)| *u == unit)?;
            secs += number * allowed[at].1;
            allowed = &allowed[at + 1..];
            rest = &rest[end + 1..];
            any = true;
        }
    }
    (any && secs.is_finite()).then(|| Duration::from_secs_f64(secs))
}
