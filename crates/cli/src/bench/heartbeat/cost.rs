//! What a `rsc bench heartbeat` run costs: each replica's CPU and memory read from /proc (the process
//! found by its listening port), Redis commands and script time from INFO commandstats, Redis CPU from
//! INFO cpu.

use super::*;

/// One command's counters in `INFO commandstats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct CmdStat {
    pub(super) calls: u64,
    /// Microseconds Redis spent executing it (for a script: the whole script, its inner commands included).
    pub(super) usec: u64,
}

/// `INFO commandstats` as command → counters.
pub(super) async fn commandstats(conn: &mut rsc_client::DataConn) -> Result<CommandStats, String> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .map_err(|e| format!("INFO commandstats: {e}"))?;
    Ok(parse_commandstats(&info))
}

pub(super) fn parse_commandstats(info: &str) -> CommandStats {
    let mut out = BTreeMap::new();
    for line in info.lines() {
        let Some(rest) = line.trim().strip_prefix("cmdstat_") else {
            continue;
        };
        let Some((name, fields)) = rest.split_once(':') else {
            continue;
        };
        let field = |key: &str| {
            fields
                .split(',')
                .find_map(|f| f.strip_prefix(key))
                .and_then(|c| c.parse::<u64>().ok())
        };
        if let Some(calls) = field("calls=") {
            let usec = field("usec=").unwrap_or(0);
            out.insert(name.to_string(), CmdStat { calls, usec });
        }
    }
    out
}

/// CPU seconds the Redis server has used (`used_cpu_user + used_cpu_sys` of `INFO cpu`).
pub(super) async fn redis_cpu_seconds(conn: &mut rsc_client::DataConn) -> Result<f64, String> {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(conn)
        .await
        .map_err(|e| format!("INFO cpu: {e}"))?;
    parse_redis_cpu(&info).ok_or_else(|| "INFO cpu has no used_cpu_user/used_cpu_sys".to_owned())
}

pub(super) fn parse_redis_cpu(info: &str) -> Option<f64> {
    let get = |key: &str| {
        info.lines()
            .find_map(|l| l.trim().strip_prefix(key)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    Some(get("used_cpu_user")? + get("used_cpu_sys")?)
}

/// utime+stime of a process in seconds, from `/proc/<pid>/stat`.
pub(crate) fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_cpu_ticks(&stat).map(|t| t as f64 / clock_ticks_per_sec())
}

pub(super) fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    // Fields after "(comm)": state is field 3, utime field 14, stime field 15.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Resident memory of a process in MiB (VmRSS from `/proc/<pid>/status`).
pub(super) fn resident_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_vm_rss_kib(&status).map(|kib| kib as f64 / 1024.0)
}

pub(super) fn parse_vm_rss_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub(super) fn clock_ticks_per_sec() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|t| *t > 0.0)
        .unwrap_or(100.0)
}

/// The coordinator's PID: the flag, or the single process `pgrep -f "rsc serve"` finds.
/// The coordinator's process: `--coordinator-pid`, else the process listening on the `--coordinator` URL's
/// port (a listening socket in /proc/net/tcp{,6}, matched to a process by the socket inode among its fds), so
/// several coordinators on one machine are told apart.
pub(crate) fn find_coordinator_pid(
    flag: Option<u32>,
    coordinator_url: &str,
) -> Result<u32, String> {
    if let Some(p) = flag {
        return Ok(p);
    }
    let port = url_port(coordinator_url)
        .ok_or_else(|| format!("no port in {coordinator_url}; pass --coordinator-pid"))?;
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            inodes.extend(listening_inodes(&text, port));
        }
    }
    if inodes.is_empty() {
        return Err(format!(
            "no listening socket on port {port} in /proc/net/tcp; pass --coordinator-pid"
        ));
    }
    let mut pids = Vec::new();
    let procs = std::fs::read_dir("/proc").map_err(|e| format!("/proc: {e}"))?;
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let owns = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|target| {
                socket_inode(&target.to_string_lossy()).is_some_and(|i| inodes.contains(&i))
            })
        });
        if owns {
            pids.push(pid);
        }
    }
    match pids.as_slice() {
        [p] => Ok(*p),
        [] => Err(format!(
            "no readable process owns the socket listening on port {port}; pass --coordinator-pid"
        )),
        _ => Err(format!(
            "several processes share the socket listening on port {port} ({pids:?}); pass --coordinator-pid"
        )),
    }
}

/// The port of an `http://host:port/…` URL (80 or 443 by scheme when none is written).
pub(super) fn url_port(url: &str) -> Option<u16> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split('/').next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') && !port.contains(']') => port.parse().ok(),
        _ => match scheme {
            "https" => Some(443),
            _ => Some(80),
        },
    }
}

/// Inodes of the sockets listening (state 0A) on `port` in a /proc/net/tcp or tcp6 table.
pub(super) fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local_port = f.get(1)?.rsplit_once(':')?.1;
            let listening = *f.get(3)? == "0A";
            (listening && u16::from_str_radix(local_port, 16).ok()? == port)
                .then(|| f.get(9)?.parse().ok())
                .flatten()
        })
        .collect()
}

/// `socket:[12345]` → 12345.
pub(super) fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// What the heartbeats cost in Redis commands, from INFO commandstats before and after.
#[derive(Debug)]
pub(super) struct RedisCost {
    pub(super) commands_per_heartbeat: f64,
    pub(super) evalsha_per_heartbeat: f64,
    /// Microseconds Redis spent running scripts (EVALSHA/EVAL, inner commands included) per heartbeat.
    pub(super) script_usec_per_heartbeat: f64,
    pub(super) top: Vec<(String, u64)>,
}

/// `INFO commandstats` as command → counters.
pub(super) type CommandStats = BTreeMap<String, CmdStat>;

/// The Redis cost of the steady phase, or why it is unknown: no --redis-url, or a Redis that saw none of the
/// coordinator's heartbeat scripts (so not the coordinator's: a zero it did not measure).
pub(super) fn redis_cost(
    stats: Option<(&CommandStats, &CommandStats)>,
    heartbeats: u64,
    redis_url: Option<&str>,
) -> Result<RedisCost, String> {
    let Some((before, after)) = stats else {
        return Err("pass --redis-url with the coordinator's Redis to count them".to_owned());
    };
    let get = |stats: &CommandStats, name: &str| stats.get(name).copied().unwrap_or_default();
    let delta = |name: &str| {
        get(after, name)
            .calls
            .saturating_sub(get(before, name).calls)
    };
    let usec = |name: &str| get(after, name).usec.saturating_sub(get(before, name).usec);
    let scripts = delta("evalsha") + delta("eval");
    let script_usec = usec("evalsha") + usec("eval");
    if scripts == 0 {
        return Err(format!(
            "the Redis at {} ran no heartbeat script during the run: is it the coordinator's Redis?",
            redis_url.unwrap_or("--redis-url")
        ));
    }
    // Our own INFO call is excluded; everything else on this Redis in the window counts.
    let total: u64 = after
        .keys()
        .filter(|k| k.as_str() != "info")
        .map(|k| delta(k))
        .sum();
    let mut top: Vec<(String, u64)> = after
        .keys()
        .filter(|k| k.as_str() != "info")
        .map(|k| (k.clone(), delta(k)))
        .filter(|(_, d)| *d > 0)
        .collect();
    top.sort_by_key(|t| std::cmp::Reverse(t.1));
    Ok(RedisCost {
        commands_per_heartbeat: total as f64 / heartbeats as f64,
        evalsha_per_heartbeat: scripts as f64 / heartbeats as f64,
        script_usec_per_heartbeat: script_usec as f64 / heartbeats as f64,
        top,
    })
}
