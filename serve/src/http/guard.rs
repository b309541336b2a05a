//! Who may talk to the HTTP endpoint: the DNS-rebinding checks (`Host` and
//! `Origin`) and the bearer token.

use std::net::SocketAddr;

use axum::http::{HeaderMap, header};

use super::token::BearerToken;

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

/// An authority as `Host` and `Origin` carry it: a host (a name, an IPv4
/// address or a bracketed IPv6 one) and maybe a port, nothing else. User
/// information (`localhost:80@evil.example`), paths and stray characters
/// make it no authority at all, so a lenient split can never read another
/// host than the browser meant.
#[derive(Debug, PartialEq, Eq)]
struct Authority<'a> {
    host: &'a str,
    port: Option<u16>,
}

fn authority(text: &str) -> Option<Authority<'_>> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        v6.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (&text[..v6.len() + 2], port)
    } else {
        match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let name_byte = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_');
    if host.is_empty() || (!host.starts_with('[') && !host.bytes().all(name_byte)) {
        return None;
    }
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse().ok()?)
        }
        Some(_) => return None,
    };
    Some(Authority { host, port })
}

/// Why a request was refused before it reached a session.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `Host` is missing, unreadable, or names another machine while the
    /// gateway listens on loopback.
    Host,
    /// `Origin` is neither this endpoint's own nor allowed.
    Origin,
    /// No valid bearer token.
    Token,
}

/// What a request is checked against.
pub(crate) struct Admission<'a> {
    /// The endpoint listens on loopback.
    pub(crate) loopback: bool,
    /// The port it listens on: a loopback page on another port is another site.
    pub(crate) port: u16,
    /// Origins accepted besides the endpoint's own.
    pub(crate) allowed_origins: &'a [String],
    /// The token every request must present, if any.
    pub(crate) token: Option<&'a BearerToken>,
}

/// The DNS-rebinding and token checks, in that order.
pub(crate) fn check(headers: &HeaderMap, admission: &Admission<'_>) -> Result<(), Refusal> {
    // Two of either is ambiguous: a proxy and this check could read different
    // ones. (Each is looked up once: this runs on every request.)
    let only = |name| {
        let mut values = headers.get_all(name).iter();
        match (values.next(), values.next()) {
            (one, None) => Ok(one),
            (Some(_), Some(_)) | (None, Some(_)) => Err(()),
        }
    };
    let host = only(header::HOST)
        .map_err(|()| Refusal::Host)?
        .and_then(|h| h.to_str().ok())
        .and_then(authority)
        .ok_or(Refusal::Host)?;
    let origin = only(header::ORIGIN).map_err(|()| Refusal::Origin)?;
    // A page of another site resolved to 127.0.0.1 still names its own host.
    if admission.loopback && !loopback_host(host.host) {
        return Err(Refusal::Host);
    }
    if let Some(origin) = origin {
        let origin = origin.to_str().map_err(|_| Refusal::Origin)?;
        let listed = admission.allowed_origins.iter().any(|o| o == origin);
        if !listed && !own_origin(origin, admission) {
            return Err(Refusal::Origin);
        }
    }
    match admission.token {
        Some(token) if !token.admits(headers) => Err(Refusal::Token),
        _ => Ok(()),
    }
}

/// An origin that is this endpoint itself: on loopback, a loopback host on
/// the endpoint's own port (a page served on another local port is another
/// site, which must be listed with `--allow-origin`).
fn own_origin(origin: &str, admission: &Admission<'_>) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    let default_port = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return false,
    };
    admission.loopback
        && authority(rest).is_some_and(|a| {
            loopback_host(a.host) && a.port.unwrap_or(default_port) == admission.port
        })
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

    fn at(loopback: bool, allowed: &[String]) -> Admission<'_> {
        Admission {
            loopback,
            port: 8080,
            allowed_origins: allowed,
            token: None,
        }
    }

    #[test]
    fn only_this_endpoints_origin_passes_and_others_need_listing() {
        let ok = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://localhost:8080"),
        ]);
        assert_eq!(check(&ok, &at(true, &[])), Ok(()));
        // Another loopback port is another site: a page the user opened there
        // must not reach the gateway unless listed.
        let other_port = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://localhost:3000"),
        ]);
        assert_eq!(check(&other_port, &at(true, &[])), Err(Refusal::Origin));
        let listed = ["http://localhost:3000".to_string()];
        assert_eq!(check(&other_port, &at(true, &listed)), Ok(()));
        let evil = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://evil.example"),
        ]);
        assert_eq!(check(&evil, &at(true, &[])), Err(Refusal::Origin));
        let listed = ["http://evil.example".to_string()];
        assert_eq!(check(&evil, &at(true, &listed)), Ok(()));
        let rebound = headers(&[("host", "evil.example:8080")]);
        assert_eq!(check(&rebound, &at(true, &[])), Err(Refusal::Host));
        let v6 = headers(&[("host", "[::1]:8080"), ("origin", "http://[::1]:8080")]);
        assert_eq!(check(&v6, &at(true, &[])), Ok(()));
        // On a non-loopback bind, a loopback origin is not special.
        let local = headers(&[
            ("host", "10.0.0.2:8080"),
            ("origin", "http://localhost:8080"),
        ]);
        assert_eq!(check(&local, &at(false, &[])), Err(Refusal::Origin));
    }

    #[test]
    fn host_and_origin_are_parsed_as_authorities() {
        for host in [
            "localhost:80@evil.example",
            "evil.example@localhost",
            "localhost:8080/x",
            "localhost:",
            "localhost:99999",
            "[::1",
            "[evil]:80",
            "local host",
            "",
        ] {
            let h = headers(&[("host", host)]);
            assert_eq!(check(&h, &at(true, &[])), Err(Refusal::Host), "{host}");
        }
        for origin in [
            "http://localhost:8080@evil.example",
            "http://evil.example@localhost:8080",
            "http://localhost:8080/path",
            "file://localhost:8080",
            "null",
        ] {
            let h = headers(&[("host", "localhost:8080"), ("origin", origin)]);
            assert_eq!(check(&h, &at(true, &[])), Err(Refusal::Origin), "{origin}");
        }
        let mut two = headers(&[("host", "localhost:8080")]);
        two.append("host", HeaderValue::from_static("evil.example"));
        assert_eq!(check(&two, &at(true, &[])), Err(Refusal::Host));
        let mut origins = headers(&[
            ("host", "localhost:8080"),
            ("origin", "http://localhost:8080"),
        ]);
        origins.append("origin", HeaderValue::from_static("http://evil.example"));
        assert_eq!(check(&origins, &at(true, &[])), Err(Refusal::Origin));
        // No Host at all is refused on any bind.
        assert_eq!(
            check(&HeaderMap::new(), &at(false, &[])),
            Err(Refusal::Host)
        );
        assert_eq!(
            authority("[::1]:9"),
            Some(Authority {
                host: "[::1]",
                port: Some(9)
            })
        );
    }

    #[test]
    fn the_token_must_match_exactly() {
        let token = BearerToken::new("s3cret");
        let with = |auth: &str| {
            let mut h = headers(&[("host", "10.0.0.2:8080")]);
            h.insert("authorization", HeaderValue::from_str(auth).unwrap());
            h
        };
        let admission = Admission {
            token: Some(&token),
            ..at(false, &[])
        };
        assert_eq!(check(&with("Bearer s3cret"), &admission), Ok(()));
        assert_eq!(check(&with("bearer s3cret"), &admission), Ok(()));
        for bad in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Basic s3cret",
            "s3cret",
            "",
        ] {
            assert_eq!(check(&with(bad), &admission), Err(Refusal::Token), "{bad}");
        }
        let no_auth = headers(&[("host", "10.0.0.2:8080")]);
        assert_eq!(check(&no_auth, &admission), Err(Refusal::Token));
    }
}
