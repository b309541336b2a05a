//! Who may talk to the HTTP endpoint: the DNS-rebinding checks (`Host` and
//! `Origin`) and the bearer token.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use axum::http::{HeaderMap, header};
use subtle::ConstantTimeEq;

/// The longest token file read.
const TOKEN_FILE_LIMIT: u64 = 4096;

/// A bearer token. Its value never appears in `Debug` or errors.
#[derive(Clone)]
pub struct BearerToken(String);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken([redacted])")
    }
}

/// Why a token file was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenFileError {
    /// It could not be read.
    #[error("cannot read the token file {}: {source}", .path.display())]
    Read {
        /// Which file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Others than its owner may read it.
    #[error("the token file {} has mode {mode:o}; it must be 0600 (chmod 600)", .path.display())]
    Permissions {
        /// Which file.
        path: std::path::PathBuf,
        /// Its mode.
        mode: u32,
    },
    /// It holds no token.
    #[error("the token file {} is empty", .path.display())]
    Empty {
        /// Which file.
        path: std::path::PathBuf,
    },
}

impl BearerToken {
    /// Reads a token from a 0600 regular file (surrounding whitespace trimmed).
    pub fn from_file(path: &Path) -> Result<BearerToken, TokenFileError> {
        let read = |source| TokenFileError::Read {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(read)?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(TokenFileError::Permissions {
                path: path.to_path_buf(),
                mode,
            });
        }
        let text = mcpvisor_auth::private_file::read_to_string(path, TOKEN_FILE_LIMIT)
            .map_err(|e| read(std::io::Error::other(e.to_string())))?
            .unwrap_or_default();
        let token = text.trim();
        if token.is_empty() {
            return Err(TokenFileError::Empty {
                path: path.to_path_buf(),
            });
        }
        Ok(BearerToken(token.to_string()))
    }

    /// A token from its value (for embedding hosts and tests).
    pub fn new(value: impl Into<String>) -> BearerToken {
        BearerToken(value.into())
    }

    /// Whether `headers` carry this token as `Authorization: Bearer …`.
    pub(crate) fn admits(&self, headers: &HeaderMap) -> bool {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return false;
        };
        let value = value.as_bytes();
        let Some(presented) = value
            .get(..7)
            .filter(|scheme| scheme.eq_ignore_ascii_case(b"bearer "))
            .map(|_| &value[7..])
        else {
            return false;
        };
        presented.ct_eq(self.0.as_bytes()).into()
    }
}

/// Whether `addr` is a loopback address.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// A host name or address that is this machine: `localhost`, 127.0.0.0/8, `[::1]`.
fn loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The host part of `host[:port]` or `[v6]:port`.
fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    authority.split(':').next().unwrap_or(authority)
}

/// Why a request was refused before it reached a session.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `Host` names another machine while the gateway listens on loopback.
    Host,
    /// `Origin` is neither loopback nor allowed.
    Origin,
    /// No valid bearer token.
    Token,
}

/// The DNS-rebinding and token checks, in that order.
pub(crate) fn check(
    headers: &HeaderMap,
    loopback: bool,
    allowed_origins: &[String],
    token: Option<&BearerToken>,
) -> Result<(), Refusal> {
    if loopback {
        // A page of another site resolved to 127.0.0.1 still names its own host.
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(host_of);
        if host.is_some_and(|h| !loopback_host(h)) {
            return Err(Refusal::Host);
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().map_err(|_| Refusal::Origin)?;
        let listed = allowed_origins.iter().any(|o| o == origin);
        let local = loopback
            && ["http://", "https://"]
                .iter()
                .find_map(|scheme| origin.strip_prefix(scheme))
                .is_some_and(|authority| loopback_host(host_of(authority)));
        if !listed && !local {
            return Err(Refusal::Origin);
        }
    }
    match token {
        Some(token) if !token.admits(headers) => Err(Refusal::Token),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn loopback_origins_pass_and_others_need_listing() {
        let ok = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://localhost:6274"),
        ]);
        assert_eq!(check(&ok, true, &[], None), Ok(()));
        let evil = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://evil.example"),
        ]);
        assert_eq!(check(&evil, true, &[], None), Err(Refusal::Origin));
        let listed = ["http://evil.example".to_string()];
        assert_eq!(check(&evil, true, &listed, None), Ok(()));
        let rebound = headers(&[("host", "evil.example:8080")]);
        assert_eq!(check(&rebound, true, &[], None), Err(Refusal::Host));
        let v6 = headers(&[("host", "[::1]:8080"), ("origin", "http://[::1]:3000")]);
        assert_eq!(check(&v6, true, &[], None), Ok(()));
        // On a non-loopback bind, a loopback origin is not special.
        let local = headers(&[("host", "10.0.0.2:8080"), ("origin", "http://localhost:1")]);
        assert_eq!(check(&local, false, &[], None), Err(Refusal::Origin));
    }

    #[test]
    fn the_token_must_match_exactly() {
        let token = BearerToken::new("s3cret");
        let good = headers(&[("authorization", "Bearer s3cret")]);
        assert_eq!(check(&good, false, &[], Some(&token)), Ok(()));
        let lower = headers(&[("authorization", "bearer s3cret")]);
        assert_eq!(check(&lower, false, &[], Some(&token)), Ok(()));
        for bad in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Basic s3cret",
            "s3cret",
            "",
        ] {
            let h = headers(&[("authorization", bad)]);
            assert_eq!(
                check(&h, false, &[], Some(&token)),
                Err(Refusal::Token),
                "{bad}"
            );
        }
        assert_eq!(
            check(&HeaderMap::new(), false, &[], Some(&token)),
            Err(Refusal::Token)
        );
        assert!(!format!("{token:?}").contains("s3cret"));
    }
}
