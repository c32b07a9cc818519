//! A tiny blocking RESP client used only to manage test servers.
//!
//! Readiness polling, `CLUSTER INFO` and `SHUTDOWN` must work before (or without) an async runtime
//! and must not depend on the client library under test, so the few commands the test kit itself
//! sends go over a plain `std::net::TcpStream` (a Unix socket for a TLS-only server) with short timeouts.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// One reply from the server, reduced to what the test kit needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `+OK`, `$n` bulk strings and `:n` integers, as text.
    Text(String),
    /// `$-1` / `*-1`.
    Nil,
    /// `-ERR …`, with the message.
    Error(String),
    /// Any array (the test kit never needs its contents).
    Array,
}

/// Sends one command to `127.0.0.1:port` on a fresh connection and reads one reply.
///
/// Errors are plain strings: the callers only retry or put them into panic messages.
pub(crate) fn query(port: u16, args: &[&str], timeout: Duration) -> Result<Reply, String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream =
        TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| format!("set timeouts: {e}"))?;
    stream
        .write_all(&encode(args))
        .map_err(|e| format!("write to {addr}: {e}"))?;
    let mut reader = BufReader::new(stream);
    read_reply(&mut reader)
}

/// [`query`] over the Unix socket at `path` (a TLS-only server's plain-text administration).
pub(crate) fn query_unix(path: &Path, args: &[&str], timeout: Duration) -> Result<Reply, String> {
    let stream =
        UnixStream::connect(path).map_err(|e| format!("connect {}: {e}", path.display()))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| format!("set timeouts: {e}"))?;
    (&stream)
        .write_all(&encode(args))
        .map_err(|e| format!("write to {}: {e}", path.display()))?;
    let mut reader = BufReader::new(stream);
    read_reply(&mut reader)
}

/// Encodes a command as a RESP array of bulk strings.
fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn read_line(reader: &mut impl BufRead) -> Result<String, String> {
    let mut line = String::new();
    let n = reader
        .read_line(&mut line)
        .map_err(|e| format!("read: {e}"))?;
    if n == 0 {
        return Err("connection closed before a reply".to_string());
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

fn read_reply(reader: &mut impl BufRead) -> Result<Reply, String> {
    let line = read_line(reader)?;
    let (kind, rest) = line.split_at_checked(1).ok_or("empty reply line")?;
    match kind {
        "+" | ":" => Ok(Reply::Text(rest.to_string())),
        "-" => Ok(Reply::Error(rest.to_string())),
        "*" => Ok(if rest == "-1" {
            Reply::Nil
        } else {
            Reply::Array
        }),
        "$" => {
            let len: i64 = rest
                .parse()
                .map_err(|e| format!("bad bulk length {rest:?}: {e}"))?;
            let Ok(len) = usize::try_from(len) else {
                return Ok(Reply::Nil);
            };
            let mut buf = vec![0u8; len + 2];
            reader
                .read_exact(&mut buf)
                .map_err(|e| format!("read bulk: {e}"))?;
            buf.truncate(len);
            Ok(Reply::Text(String::from_utf8_lossy(&buf).into_owned()))
        }
        other => Err(format!("unexpected reply type {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_bulk_array() {
        assert_eq!(encode(&["PING"]), b"*1\r\n$4\r\nPING\r\n".to_vec());
    }

    #[test]
    fn parses_each_reply_kind() {
        let mut input: &[u8] = b"+PONG\r\n";
        assert_eq!(read_reply(&mut input), Ok(Reply::Text("PONG".into())));
        let mut input: &[u8] = b"-LOADING busy\r\n";
        assert_eq!(
            read_reply(&mut input),
            Ok(Reply::Error("LOADING busy".into()))
        );
        let mut input: &[u8] = b"$5\r\na\r\nbc\r\n";
        assert_eq!(read_reply(&mut input), Ok(Reply::Text("a\r\nbc".into())));
        let mut input: &[u8] = b"$-1\r\n";
        assert_eq!(read_reply(&mut input), Ok(Reply::Nil));
        let mut input: &[u8] = b":42\r\n";
        assert_eq!(read_reply(&mut input), Ok(Reply::Text("42".into())));
        let mut input: &[u8] = b"";
        assert!(read_reply(&mut input).is_err());
    }
}
