//! Counting the commands a Redis server has executed, for tests that pin down round trips.
//!
//! The hot-path contract ("a heartbeat is exactly one Redis command") is checked against the
//! server's own bookkeeping: `INFO commandstats` before and after, with `CONFIG RESETSTAT` to start
//! from zero. The stats connection skips the client library's `CLIENT SETINFO` handshake so that it
//! adds nothing to the counts except the `INFO` calls themselves (an `INFO` is counted after its
//! reply is built, so it shows up in the *next* snapshot as `info`).

use std::collections::BTreeMap;

use redis::IntoConnectionInfo;

/// Calls per command from `INFO commandstats`, keyed by the name Redis reports (`evalsha`,
/// `script|load`, `client|setinfo`, …). Panics if the server cannot be reached.
pub async fn command_calls(url: &str) -> BTreeMap<String, u64> {
    let mut conn = connect(url).await;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("INFO commandstats on {url} failed: {e}"));
    parse_commandstats(&info)
}

/// `CONFIG RESETSTAT`: zeroes the command counters. Panics if the server cannot be reached.
pub async fn reset_stats(url: &str) {
    let mut conn = connect(url).await;
    let () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("CONFIG RESETSTAT on {url} failed: {e}"));
}

async fn connect(url: &str) -> redis::aio::MultiplexedConnection {
    let info = url
        .into_connection_info()
        .unwrap_or_else(|e| panic!("bad redis url {url}: {e}"));
    let settings = info.redis_settings().clone().set_skip_set_lib_name();
    let client = redis::Client::open(info.set_redis_settings(settings))
        .unwrap_or_else(|e| panic!("bad redis url {url}: {e}"));
    client
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"))
}

/// Parses lines like `cmdstat_evalsha:calls=100,usec=812,usec_per_call=8.12,…`.
fn parse_commandstats(info: &str) -> BTreeMap<String, u64> {
    let mut calls = BTreeMap::new();
    for line in info.lines() {
        let Some(rest) = line.trim().strip_prefix("cmdstat_") else {
            continue;
        };
        let Some((name, fields)) = rest.split_once(':') else {
            continue;
        };
        let count = fields
            .split(',')
            .find_map(|field| field.strip_prefix("calls="))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(count) = count {
            calls.insert(name.to_string(), count);
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commandstats_lines() {
        let info = "# Commandstats\r\n\
            cmdstat_evalsha:calls=100,usec=812,usec_per_call=8.12,rejected_calls=0,failed_calls=1\r\n\
            cmdstat_script|load:calls=1,usec=40,usec_per_call=40.00,rejected_calls=0,failed_calls=0\r\n\
            garbage line\r\n";
        let calls = parse_commandstats(info);
        assert_eq!(calls.get("evalsha"), Some(&100));
        assert_eq!(calls.get("script|load"), Some(&1));
        assert_eq!(calls.len(), 2);
    }
}
