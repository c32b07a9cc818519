//! The client address of a request: the socket peer, or — only when the peer is a configured trusted proxy —
//! the nearest untrusted address in `X-Forwarded-For`. A client cannot spoof its address by sending the
//! header itself.

use axum::http::HeaderMap;
use std::net::IpAddr;

#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Vec<(IpAddr, u8)>);

impl TrustedProxies {
    /// Parses `IP` or `IP/len` entries.
    pub fn parse(entries: &[String]) -> Result<TrustedProxies, String> {
        let mut out = Vec::new();
        for e in entries {
            let (ip, len) = match e.trim().split_once('/') {
                Some((ip, len)) => (ip, Some(len)),
                None => (e.trim(), None),
            };
            let ip: IpAddr = ip
                .parse()
                .map_err(|_| format!("{e:?} is not an IP address or CIDR range"))?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let len = match len {
                None => max,
                Some(l) => l
                    .parse::<u8>()
                    .ok()
                    .filter(|l| *l <= max)
                    .ok_or_else(|| format!("{e:?} has a bad prefix length"))?,
            };
            out.push((ip, len));
        }
        Ok(TrustedProxies(out))
    }

    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|(net, len)| in_range(ip, *net, *len))
    }

    /// The client address for audit records and login throttling.
    pub fn client_addr(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> String {
        let Some(peer) = peer else {
            return "unknown".to_owned();
        };
        if !self.trusts(peer) {
            return peer.to_string();
        }
        let hops: Vec<IpAddr> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|s| s.trim().parse::<IpAddr>().ok())
            .collect();
        // Walk from the nearest hop outwards; the first address we do not trust is the client.
        hops.iter()
            .rev()
            .find(|ip| !self.trusts(**ip))
            .or(hops.first())
            .unwrap_or(&peer)
            .to_string()
    }
}

fn in_range(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let mask = if len == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(len))
            };
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(len))
            };
            u128::from(a) & mask == u128::from(b) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xff(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", v.parse().unwrap());
        h
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let p = TrustedProxies::parse(&["10.0.0.0/8".into(), "127.0.0.1".into()]).unwrap();
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        assert_eq!(p.client_addr(ip("192.0.2.7"), &xff("1.2.3.4")), "192.0.2.7");
        assert_eq!(p.client_addr(ip("10.1.2.3"), &xff("1.2.3.4")), "1.2.3.4");
        assert_eq!(
            p.client_addr(ip("127.0.0.1"), &xff("6.6.6.6, 1.2.3.4, 10.0.0.9")),
            "1.2.3.4"
        );
        assert_eq!(p.client_addr(ip("10.1.2.3"), &HeaderMap::new()), "10.1.2.3");
        assert!(TrustedProxies::parse(&["10.0.0.0/33".into()]).is_err());
        assert!(TrustedProxies::parse(&["nope".into()]).is_err());
    }
}
