//! Picking a free loopback port for a test server.
//!
//! The kernel chooses a free port when we bind port 0; we read it and release it again so that
//! `redis-server` can bind it. Another process may grab it in between, so callers retry startup on
//! a bind failure. Cluster nodes also need `port + 10000` (the cluster bus) to be free.

use std::net::{Ipv4Addr, TcpListener};

/// Highest client port whose cluster bus port (`port + 10000`) still fits in a u16.
const MAX_CLUSTER_PORT: u16 = u16::MAX - 10_000;

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    for _ in 0..100 {
        if let Ok(port) = bind_any() {
            return port;
        }
    }
    panic!("could not find a free loopback port after 100 attempts");
}

/// A port that was free a moment ago together with its cluster bus port `port + 10000`.
pub(crate) fn free_cluster_port() -> u16 {
    for _ in 0..200 {
        let Ok(port) = bind_any() else { continue };
        if port > MAX_CLUSTER_PORT {
            continue;
        }
        // Hold the client port while probing the bus port, so the pair is checked together.
        let Ok(held) = TcpListener::bind((Ipv4Addr::LOCALHOST, port)) else {
            continue;
        };
        let bus_free = TcpListener::bind((Ipv4Addr::LOCALHOST, port + 10_000)).is_ok();
        drop(held);
        if bus_free {
            return port;
        }
    }
    panic!("could not find a free loopback port pair (port, port+10000) after 200 attempts");
}

fn bind_any() -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}
