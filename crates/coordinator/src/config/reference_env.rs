//! The reference implementation's environment variables, so that a deployment written for it starts rsc.
//!
//! The reference is a Spring Boot application: it reads `SPRING_DATA_REDIS_*`, `SERVER_PORT`, its own
//! `coordinator.*` properties through Spring's relaxed binding (`COORDINATOR_STORE_TYPE`, and the
//! dash-less spellings such as `COORDINATOR_MEMBERLEASETTL`), and a few placeholders
//! (`REDIS_STREAM_COORDINATOR_ADMIN_PASSWORD`). `ROWS` says for each what it means here: an rsc key
//! (with its value translated: Spring durations, the Redis address parts composed into one URL, the
//! listen address), nothing (one WARN line naming the variable and why), or something rsc cannot do
//! (start-up fails naming the variable). rsc's own spelling of a key wins over a reference variable for the
//! same key, with a WARN line. Nothing here logs a value: only variable and key names.

use super::{Overrides, env_name, known_keys, parse_env_scalar};
use figment::value::{Dict, Value};
use std::collections::{BTreeMap, BTreeSet};
mod table;
mod values;

use table::{
    ListenPart, MAPPING_FIELDS, Meaning, NODE_MAPPINGS, ROWS, RedisPart, matches, spellings,
};
pub use values::spring_duration;
use values::{database, host_port, userinfo};

/// A value for an rsc key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    /// Read as an environment variable's text is (`true`/`false`, integers, else a string).
    Text(String),
    List(Vec<String>),
    Map(BTreeMap<String, String>),
}

/// What the reference's variables amount to. `settings` may hold secrets: never log it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Translation {
    /// rsc dotted key → value, and the reference variables it came from.
    pub settings: BTreeMap<String, (Setting, Vec<String>)>,
    /// One line per reference variable that means nothing here or was overruled by rsc's own spelling.
    pub warnings: Vec<String>,
    /// The `COORDINATOR_*` variables this table handled (rsc's own loader skips them).
    pub consumed: BTreeSet<String>,
}

impl Translation {
    /// The settings as a configuration document (`coordinator.…` nested).
    pub fn document(&self) -> Dict {
        let mut root = Dict::new();
        for (key, (setting, _)) in &self.settings {
            let value = match setting {
                Setting::Text(t) => parse_env_scalar(t),
                Setting::List(l) => Value::from(l.clone()),
                Setting::Map(m) => {
                    let d: Dict = m
                        .iter()
                        .map(|(k, v)| (k.clone(), Value::from(v.clone())))
                        .collect();
                    Value::from(d)
                }
            };
            super::insert_path(&mut root, key, value);
        }
        root
    }

    /// One line saying which reference variables set which rsc keys (names only), if any did.
    pub fn summary(&self) -> Option<String> {
        (!self.settings.is_empty()).then(|| {
            self.settings
                .iter()
                .map(|(key, (_, from))| format!("{} → {key}", from.join(" + ")))
                .collect::<Vec<_>>()
                .join(", ")
        })
    }

    fn set(&mut self, key: &str, setting: Setting, from: Vec<String>) {
        if let Some((_, earlier)) = self.settings.get(key) {
            self.warnings.push(format!(
                "reference environment variable {} ignored: {} already sets {key}; set only one",
                from.join(", "),
                earlier.join(", ")
            ));
            return;
        }
        self.settings.insert(key.to_owned(), (setting, from));
    }
}

/// Translates the reference's variables in `env`. `flags` are the command line's overrides, which (like
/// rsc's own variables) win over them. Fails, naming the variable, on a value that cannot be translated or
/// a setting rsc cannot honour.
pub fn translate(env: &BTreeMap<String, String>, flags: &Overrides) -> Result<Translation, String> {
    let own: BTreeSet<String> = known_keys().iter().map(|k| env_name(k)).collect();
    let mut out = Translation::default();
    let mut redis: BTreeMap<RedisPart, Vec<(String, String)>> = BTreeMap::new();
    let mut listen: Vec<(ListenPart, String, String)> = Vec::new();
    let mut tls: Vec<&str> = Vec::new();
    let mut mappings: BTreeMap<usize, BTreeMap<&'static str, (String, String)>> = BTreeMap::new();
    for (name, raw) in env {
        if own.contains(name) || name == super::redis_options::NODE_MAP_ENV {
            continue;
        }
        if let Some((index, field)) = node_mapping(name) {
            out.consumed.insert(name.clone());
            mappings
                .entry(index)
                .or_default()
                .insert(field, (name.clone(), raw.clone()));
            continue;
        }
        let Some(row) = ROWS.iter().find(|r| matches(r, name)) else {
            continue;
        };
        if name.starts_with("COORDINATOR_") {
            out.consumed.insert(name.clone());
        }
        match row.meaning {
            Meaning::Key(key) => {
                own_or_set(&mut out, env, flags, key, name, Setting::Text(raw.clone()))
            }
            Meaning::Duration(key) => {
                let ms = spring_duration(raw)
                    .map_err(|e| format!("environment variable {name}: {e}"))?;
                own_or_set(
                    &mut out,
                    env,
                    flags,
                    key,
                    name,
                    Setting::Text(format!("{ms}ms")),
                );
            }
            Meaning::Millis(key) => {
                let ms: u64 = raw.trim().parse().map_err(|_| {
                    format!("environment variable {name}: must be a number of milliseconds")
                })?;
                own_or_set(
                    &mut out,
                    env,
                    flags,
                    key,
                    name,
                    Setting::Text(format!("{ms}ms")),
                );
            }
            Meaning::Redis(part) => redis
                .entry(part)
                .or_default()
                .push((name.clone(), raw.clone())),
            Meaning::Listen(part) => listen.push((part, name.clone(), raw.clone())),
            Meaning::StoreType => {
                if !raw.trim().eq_ignore_ascii_case("redis") {
                    return Err(format!(
                        "environment variable {name}={:?}: rsc keeps its state in Redis only; set it to redis or remove it",
                        raw.trim()
                    ));
                }
            }
            Meaning::ServerTls => tls.push(name),
            Meaning::Nothing(why) => out.warnings.push(format!(
                "reference environment variable {name} has no meaning in rsc and is ignored: {why}"
            )),
            Meaning::Refused(why) => return Err(format!("environment variable {name}: {why}")),
        }
    }
    server_tls(&mut out, env, &tls)?;
    listen_address(&mut out, env, flags, &listen)?;
    redis_address(&mut out, env, flags, &redis)?;
    node_map(&mut out, env, mappings)?;
    Ok(out)
}

/// rsc's own names for a key: its `COORDINATOR_*` variable, and the `RSC_*` variable or flag some keys have.
fn own_names(key: &str, flags: &Overrides) -> Vec<String> {
    let mut names = vec![env_name(key)];
    match key {
        "coordinator.listen" => {
            names.push("RSC_LISTEN".into());
            if flags.listen.is_some() {
                names.push("--listen".into());
            }
        }
        "coordinator.redis-url" => {
            names.push("RSC_REDIS_URL".into());
            if flags.redis_url.is_some() {
                names.push("--redis-url".into());
            }
        }
        "coordinator.api.admin-password" => names.push("RSC_ADMIN_PASSWORD".into()),
        _ => {}
    }
    names
}

/// The first of rsc's own names for `key` that is set, if any.
fn own_set(env: &BTreeMap<String, String>, flags: &Overrides, key: &str) -> Option<String> {
    own_names(key, flags)
        .into_iter()
        .find(|n| n.starts_with("--") || env.contains_key(n))
}

fn overruled(out: &mut Translation, names: &[String], own: &str) {
    out.warnings.push(format!(
        "reference environment variable {} ignored: rsc's own {own} is set too and wins",
        names.join(", ")
    ));
}

fn own_or_set(
    out: &mut Translation,
    env: &BTreeMap<String, String>,
    flags: &Overrides,
    key: &str,
    name: &str,
    setting: Setting,
) {
    match own_set(env, flags, key) {
        Some(own) => overruled(out, &[name.to_owned()], &own),
        None => out.set(key, setting, vec![name.to_owned()]),
    }
}

/// Spring's server TLS (on when any `SERVER_SSL_*` is set, unless `SERVER_SSL_ENABLED=false`).
fn server_tls(
    out: &mut Translation,
    env: &BTreeMap<String, String>,
    names: &[&str],
) -> Result<(), String> {
    let Some(first) = names.first() else {
        return Ok(());
    };
    let disabled = names
        .iter()
        .find(|n| n.ends_with("_SSL_ENABLED"))
        .is_some_and(|n| env[*n].trim().eq_ignore_ascii_case("false"));
    if !disabled {
        return Err(format!(
            "environment variable {first}: rsc's API does not terminate TLS and will not serve plain HTTP in its place; \
             put a TLS proxy in front of rsc and remove the SERVER_SSL_* variables"
        ));
    }
    for n in names {
        out.warnings.push(format!(
            "reference environment variable {n} has no meaning in rsc and is ignored: server TLS is off"
        ));
    }
    Ok(())
}

/// `SERVER_PORT` / `SERVER_ADDRESS` → `coordinator.listen`. Like Spring, a port alone listens on every
/// interface, and an address alone on port 8080.
fn listen_address(
    out: &mut Translation,
    env: &BTreeMap<String, String>,
    flags: &Overrides,
    parts: &[(ListenPart, String, String)],
) -> Result<(), String> {
    if parts.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = parts.iter().map(|(_, n, _)| n.clone()).collect();
    if let Some(own) = own_set(env, flags, "coordinator.listen") {
        overruled(out, &names, &own);
        return Ok(());
    }
    let mut host = "0.0.0.0".to_owned();
    let mut port = 8080u16;
    for (part, name, raw) in parts {
        match part {
            ListenPart::Port => {
                port = raw.trim().parse().map_err(|_| {
                    format!("environment variable {name}: must be a port number (1-65535)")
                })?
            }
            ListenPart::Address => host = raw.trim().to_owned(),
        }
    }
    out.set(
        "coordinator.listen",
        Setting::Text(host_port(&host, port)),
        names,
    );
    Ok(())
}

/// `SPRING_DATA_REDIS_*` → `coordinator.redis-url`, or `coordinator.redis-cluster-nodes` when cluster nodes
/// are given (Spring then ignores the URL, host and port too), and `coordinator.redis-connect-timeout`.
fn redis_address(
    out: &mut Translation,
    env: &BTreeMap<String, String>,
    flags: &Overrides,
    parts: &BTreeMap<RedisPart, Vec<(String, String)>>,
) -> Result<(), String> {
    let one = |part: RedisPart| parts.get(&part).and_then(|v| v.first()).cloned();
    if let Some(timeouts) = parts.get(&RedisPart::Timeout) {
        let mut longest = 0u64;
        for (name, raw) in timeouts {
            longest = longest.max(
                spring_duration(raw).map_err(|e| format!("environment variable {name}: {e}"))?,
            );
        }
        let names = timeouts.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        // rsc has one timeout for connecting and for each command: the longer of the reference's two.
        match own_set(env, flags, "coordinator.redis-connect-timeout") {
            Some(own) => overruled(out, &names, &own),
            None => out.set(
                "coordinator.redis-connect-timeout",
                Setting::Text(format!("{longest}ms")),
                names,
            ),
        }
    }
    let address: Vec<String> = parts
        .iter()
        .filter(|(p, _)| **p != RedisPart::Timeout)
        .flat_map(|(_, v)| v.iter().map(|(n, _)| n.clone()))
        .collect();
    if address.is_empty() {
        return Ok(());
    }
    let own = own_set(env, flags, "coordinator.redis-url")
        .or_else(|| own_set(env, flags, "coordinator.redis-cluster-nodes"));
    if let Some(own) = own {
        overruled(out, &address, &own);
        return Ok(());
    }
    let tls = match one(RedisPart::Ssl) {
        Some((name, raw)) => match raw.trim().to_ascii_lowercase().as_str() {
            "true" => true,
            "false" => false,
            _ => {
                return Err(format!(
                    "environment variable {name}: must be true or false"
                ));
            }
        },
        None => false,
    };
    let scheme = if tls { "rediss" } else { "redis" };
    let userinfo = userinfo(one(RedisPart::Username), one(RedisPart::Password));
    let mut ignored = Vec::new();
    let mut note_ignored = |part: RedisPart, why: &str| {
        if let Some((name, _)) = one(part) {
            ignored.push(format!("{name} ({why})"));
        }
    };
    let (key, setting) = if let Some((name, raw)) = one(RedisPart::ClusterNodes) {
        for part in [RedisPart::Url, RedisPart::Host, RedisPart::Port] {
            note_ignored(part, "cluster nodes are given");
        }
        note_ignored(RedisPart::Database, "a Redis Cluster has database 0 only");
        let mut nodes = Vec::new();
        for node in raw.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let (host, port) = node
                .rsplit_once(':')
                .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
                .ok_or_else(|| format!("environment variable {name}: {node:?} is not host:port"))?;
            nodes.push(format!(
                "{scheme}://{userinfo}{}",
                host_port(host.trim_matches(['[', ']']), port)
            ));
        }
        if nodes.is_empty() {
            return Err(format!("environment variable {name}: names no node"));
        }
        ("coordinator.redis-cluster-nodes", Setting::List(nodes))
    } else if let Some((_, raw)) = one(RedisPart::Url) {
        for part in [
            RedisPart::Host,
            RedisPart::Port,
            RedisPart::Username,
            RedisPart::Password,
        ] {
            note_ignored(part, "the URL says it");
        }
        let mut url = raw.trim().to_owned();
        if tls && let Some(rest) = url.strip_prefix("redis://") {
            url = format!("rediss://{rest}");
        }
        let has_path = url
            .split_once("://")
            .is_some_and(|(_, rest)| rest.contains('/'));
        if let Some(db) = database(one(RedisPart::Database))?
            && !has_path
        {
            url = format!("{url}/{db}");
        }
        ("coordinator.redis-url", Setting::Text(url))
    } else {
        let host = one(RedisPart::Host)
            .map_or_else(|| "localhost".to_owned(), |(_, h)| h.trim().to_owned());
        let port = match one(RedisPart::Port) {
            Some((name, raw)) => raw.trim().parse::<u16>().map_err(|_| {
                format!("environment variable {name}: must be a port number (1-65535)")
            })?,
            None => 6379,
        };
        let mut url = format!("{scheme}://{userinfo}{}", host_port(&host, port));
        if let Some(db) = database(one(RedisPart::Database))? {
            url = format!("{url}/{db}");
        }
        ("coordinator.redis-url", Setting::Text(url))
    };
    for i in ignored {
        out.warnings
            .push(format!("reference environment variable {i} is ignored"));
    }
    out.set(key, setting, address);
    Ok(())
}
/// `COORDINATOR_REDIS_CLUSTER_NODE_MAPPINGS_<i>_<FIELD>` (either spelling) → (i, field).
fn node_mapping(name: &str) -> Option<(usize, &'static str)> {
    spellings(NODE_MAPPINGS).iter().find_map(|list| {
        let rest = name.strip_prefix(list.as_str())?.strip_prefix('_')?;
        let (index, field) = rest.split_once('_')?;
        let index = index.parse().ok()?;
        let field = MAPPING_FIELDS
            .into_iter()
            .find(|f| spellings(f).iter().any(|s| s == field))?;
        Some((index, field))
    })
}

fn node_map(
    out: &mut Translation,
    env: &BTreeMap<String, String>,
    mappings: BTreeMap<usize, BTreeMap<&'static str, (String, String)>>,
) -> Result<(), String> {
    if mappings.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = mappings
        .values()
        .flat_map(|m| m.values().map(|(n, _)| n.clone()))
        .collect();
    if env.contains_key(super::redis_options::NODE_MAP_ENV) {
        overruled(out, &names, super::redis_options::NODE_MAP_ENV);
        return Ok(());
    }
    let mut map = BTreeMap::new();
    for (index, fields) in mappings {
        let get = |f: &str| fields.get(f).map(|(_, v)| v.trim().to_owned());
        let (Some(ah), Some(ap), Some(ch), Some(cp)) = (
            get("advertised-host"),
            get("advertised-port"),
            get("connect-host"),
            get("connect-port"),
        ) else {
            return Err(format!(
                "environment variables {NODE_MAPPINGS}[{index}] ({}): advertised-host, advertised-port, connect-host and connect-port are all needed",
                fields
                    .values()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        map.insert(format!("{ah}:{ap}"), format!("{ch}:{cp}"));
    }
    out.set(super::redis_options::NODE_MAP_KEY, Setting::Map(map), names);
    Ok(())
}

#[cfg(test)]
mod tests;
