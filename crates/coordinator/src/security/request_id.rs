//! The request id: read from `X-Request-Id` (falling back to `X-Correlation-Id`, then `X-Amzn-Trace-Id`, as
//! the contract does), generated (UUID v7) when absent, recorded in audit records and echoed in the
//! `X-Request-Id` response header. An id that is too long or not printable ASCII is refused with 400.

use crate::http::error::ApiError;
use axum::http::HeaderMap;

pub const HEADER: &str = "x-request-id";
const FALLBACKS: [&str; 3] = [HEADER, "x-correlation-id", "x-amzn-trace-id"];
pub const MAX_LEN: usize = 200;

pub fn read(headers: &HeaderMap) -> Result<String, ApiError> {
    for name in FALLBACKS {
        let Some(v) = headers.get(name) else {
            continue;
        };
        let text = v.to_str().unwrap_or("\u{7f}").trim();
        if text.is_empty() {
            continue;
        }
        if text.len() > MAX_LEN || !text.bytes().all(|b| b.is_ascii_graphic() || b == b' ') {
            return Err(ApiError::invalid(format!(
                "header {name}: must be at most {MAX_LEN} printable ASCII characters"
            )));
        }
        return Ok(text.to_owned());
    }
    Ok(uuid::Uuid::now_v7().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fallbacks_in_order_and_generates_when_absent() {
        let mut h = HeaderMap::new();
        h.insert("x-amzn-trace-id", "Root=1-abc".parse().unwrap());
        assert_eq!(read(&h).unwrap(), "Root=1-abc");
        h.insert("x-correlation-id", "corr-1".parse().unwrap());
        assert_eq!(read(&h).unwrap(), "corr-1");
        h.insert("x-request-id", "req-1".parse().unwrap());
        assert_eq!(read(&h).unwrap(), "req-1");
        let generated = read(&HeaderMap::new()).unwrap();
        assert_eq!(generated.len(), 36);
        assert_ne!(generated, read(&HeaderMap::new()).unwrap());
        h.insert("x-request-id", "x".repeat(MAX_LEN + 1).parse().unwrap());
        assert!(read(&h).unwrap_err().message.contains("x-request-id"));
    }
}
