//! Configured HTTP headers: literal values, validated, never printed.
//!
//! Values arrive already expanded (configuration expands `${VAR}` once); they
//! are never expanded again here. Names and values are validated as HTTP
//! headers, headers the transport owns are refused, and every value is
//! redacted in `Debug`, `Display` and errors.

use std::fmt;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::secret::SecretString;

/// Headers the Streamable HTTP transport sets itself; configuring them is an error.
pub const TRANSPORT_OWNED: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "last-event-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
];

/// The prefix of the headers MCP 2026-07-28 mirrors from tool arguments:
/// the transport sets those too.
pub const PARAM_PREFIX: &str = "mcp-param-";

/// Headers about one hop or a proxy, not the server: configuring them would let a
/// configuration smuggle framing (`transfer-encoding`, `te`, `trailer`), change the
/// connection (`connection`, `keep-alive`, `upgrade`, `expect`) or hand a proxy
/// credential to the server (`proxy-authorization`).
pub const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "expect",
];

/// Why a configured header was refused. Never carries the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// The name is not a valid HTTP header name (a token).
    #[error("header name {0:?} is not a valid HTTP header name")]
    InvalidName(String),
    /// The value has bytes HTTP forbids (CR, LF, NUL or other controls).
    #[error(
        "header `{0}` has a value with characters HTTP does not allow (CR, LF, NUL or controls)"
    )]
    InvalidValue(String),
    /// The transport sets this header itself.
    #[error("header `{0}` is set by the transport and cannot be configured")]
    TransportOwned(String),
    /// The header concerns one hop or a proxy, not the server.
    #[error("header `{0}` is hop-by-hop or for a proxy and cannot be configured")]
    HopByHop(String),
    /// The same header was configured twice.
    #[error("header `{0}` is configured more than once")]
    Duplicate(String),
}

/// Validated headers sent on every request of one server.
#[derive(Clone, Default)]
pub struct HttpHeaders {
    map: HeaderMap,
}

impl HttpHeaders {
    /// Validates `headers` (name, literal value) and marks every value sensitive.
    pub fn new(headers: &[(String, SecretString)]) -> Result<HttpHeaders, HeaderError> {
        let mut map = HeaderMap::with_capacity(headers.len());
        for (name, value) in headers {
            let parsed = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| HeaderError::InvalidName(name.clone()))?;
            if TRANSPORT_OWNED.contains(&parsed.as_str())
                || parsed.as_str().starts_with(PARAM_PREFIX)
            {
                return Err(HeaderError::TransportOwned(parsed.as_str().to_string()));
            }
            if HOP_BY_HOP.contains(&parsed.as_str()) {
                return Err(HeaderError::HopByHop(parsed.as_str().to_string()));
            }
            let mut v = HeaderValue::from_str(value.expose())
                .map_err(|_| HeaderError::InvalidValue(parsed.as_str().to_string()))?;
            v.set_sensitive(true);
            if map.insert(parsed.clone(), v).is_some() {
                return Err(HeaderError::Duplicate(parsed.as_str().to_string()));
            }
        }
        Ok(HttpHeaders { map })
    }

    /// The headers to send.
    pub fn map(&self) -> &HeaderMap {
        &self.map
    }

    /// The configured names (lower case), for display.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(HeaderName::as_str)
    }

    /// True when nothing is configured.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl fmt::Debug for HttpHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.names().map(|n| (n, "[redacted]")))
            .finish()
    }
}

impl fmt::Display for HttpHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: Vec<String> = self.names().map(|n| format!("{n}: [redacted]")).collect();
        f.write_str(&shown.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(name: &str, value: &str) -> (String, SecretString) {
        (name.to_string(), SecretString::new(value))
    }

    #[test]
    fn accepts_sensitive_headers_as_literals_and_redacts_them() {
        let secret = "Bearer tok-${NOT_EXPANDED}-9f8e";
        let headers = HttpHeaders::new(&[
            h("Authorization", secret),
            h("X-Api-Key", "k-123456"),
            h("Cookie", "a=b"),
        ])
        .unwrap();
        assert_eq!(
            headers.map()["authorization"],
            secret,
            "kept literally, never expanded"
        );
        let shown = format!("{headers:?} {headers} {headers:#?}");
        assert!(
            !shown.contains("tok-") && !shown.contains("k-123456") && !shown.contains("a=b"),
            "{shown}"
        );
        assert!(shown.contains("authorization: [redacted]"), "{shown}");
        assert!(headers.map()["x-api-key"].is_sensitive());
    }

    #[test]
    fn refuses_bad_names_values_and_owned_headers() {
        assert!(matches!(
            HttpHeaders::new(&[h("Bad Name", "v")]),
            Err(HeaderError::InvalidName(_))
        ));
        assert!(matches!(
            HttpHeaders::new(&[h("", "v")]),
            Err(HeaderError::InvalidName(_))
        ));
        for bad in ["a\r\nInjected: 1", "a\nb", "nul\0byte"] {
            let e = HttpHeaders::new(&[h("X-Ok", bad)]).unwrap_err();
            assert_eq!(e, HeaderError::InvalidValue("x-ok".into()));
            assert!(!e.to_string().contains(bad));
        }
        for owned in [
            "Accept",
            "content-type",
            "Mcp-Session-Id",
            "Last-Event-ID",
            "Host",
            "Content-Length",
        ] {
            assert!(
                matches!(
                    HttpHeaders::new(&[h(owned, "x")]),
                    Err(HeaderError::TransportOwned(_))
                ),
                "{owned}"
            );
        }
        for hop in [
            "Connection",
            "TE",
            "Upgrade",
            "Expect",
            "Trailer",
            "Keep-Alive",
            "Transfer-Encoding",
            "Proxy-Authorization",
        ] {
            assert_eq!(
                HttpHeaders::new(&[h(hop, "x")]).unwrap_err(),
                HeaderError::HopByHop(hop.to_ascii_lowercase()),
                "{hop}"
            );
        }
        assert!(matches!(
            HttpHeaders::new(&[h("X-A", "1"), h("x-a", "2")]),
            Err(HeaderError::Duplicate(_))
        ));
    }
}
