//! URL-mode elicitation (2025-11-25): a server asks the person to open a URL
//! for something that must not pass through the client (a third-party login,
//! a payment, a credential). The client shows the whole URL and its host, and
//! opens nothing without the person's consent; the answer says only whether
//! they consented. The server may later send `notifications/elicitation/complete`,
//! or refuse a request with `-32042` naming the URL elicitations it needs first.
//!
//! What is read here is bounded and checked before anyone sees it: an
//! `https` URL (plain `http` only on loopback), without user information
//! (`https://bank.example@evil.example` is refused), of at most 8 KiB.

use serde_json::Value;

use crate::wire::jsonrpc::ErrorObject;

/// The JSON-RPC error code of a request that needs URL elicitations first.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
/// The notification a server sends when an elicitation completed out of band.
pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// The longest URL accepted.
pub const MAX_URL: usize = 8 * 1024;
/// The longest elicitation id accepted.
pub const MAX_ID: usize = 256;
/// The longest message accepted.
pub const MAX_MESSAGE: usize = 16 * 1024;
/// The most elicitations one `-32042` error may name.
pub const MAX_REQUIRED: usize = 16;

/// One URL elicitation, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlElicitation {
    /// The server's id for it (the completion notification names it).
    pub elicitation_id: String,
    /// The URL to open, as parsed and written out again: no tabs or line
    /// breaks the parser dropped, non-ASCII hosts in punycode, and
    /// characters that could disguise it percent-encoded. Show and open this.
    pub url: String,
    /// Why, in the server's words.
    pub message: String,
    host: String,
}

/// Why a URL elicitation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlElicitationError {
    /// A required member is missing or not a string.
    #[error("`{0}` is missing or not a string")]
    Missing(&'static str),
    /// A member is longer than allowed.
    #[error("`{field}` is longer than {limit} bytes")]
    TooLong {
        /// Which member.
        field: &'static str,
        /// Its limit.
        limit: usize,
    },
    /// The URL does not parse.
    #[error("`url` is not a URL")]
    NotAUrl,
    /// The URL is not `https` (nor `http` on loopback).
    #[error("`url` must be https (http only on loopback), not `{0}`")]
    Scheme(String),
    /// The URL carries user information, which can disguise its real host.
    #[error("`url` carries user information before its host")]
    UserInfo,
    /// The `-32042` error's data names no elicitations, or too many.
    #[error("the error names {0} URL elicitations (1 to {MAX_REQUIRED} expected)")]
    Count(usize),
}

impl UrlElicitation {
    /// Reads the parameters of an `elicitation/create` in URL mode (or one
    /// member of a `-32042` error's `elicitations`).
    pub fn parse(params: &Value) -> Result<UrlElicitation, UrlElicitationError> {
        let text = |field: &'static str, limit: usize| {
            let value = params
                .get(field)
                .and_then(Value::as_str)
                .ok_or(UrlElicitationError::Missing(field))?;
            if value.len() > limit {
                return Err(UrlElicitationError::TooLong { field, limit });
            }
            Ok(value.to_string())
        };
        let elicitation_id = text("elicitationId", MAX_ID)?;
        if elicitation_id.is_empty() {
            return Err(UrlElicitationError::Missing("elicitationId"));
        }
        let message = text("message", MAX_MESSAGE)?;
        let url = text("url", MAX_URL)?;
        let parsed = url::Url::parse(&url).map_err(|_| UrlElicitationError::NotAUrl)?;
        let host = parsed
            .host_str()
            .ok_or(UrlElicitationError::NotAUrl)?
            .to_string();
        let loopback = match parsed.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        };
        match parsed.scheme() {
            "https" => {}
            "http" if loopback => {}
            other => {
                return Err(UrlElicitationError::Scheme(
                    other.chars().take(32).collect(),
                ));
            }
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(UrlElicitationError::UserInfo);
        }
        Ok(UrlElicitation {
            elicitation_id,
            url: parsed.to_string(),
            message,
            host,
        })
    }

    /// The URL's host, to show apart from the rest of it.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The URL elicitations a `-32042` error names; `None` for any other error.
    pub fn required(
        error: &ErrorObject,
    ) -> Option<Result<Vec<UrlElicitation>, UrlElicitationError>> {
        if error.code != URL_ELICITATION_REQUIRED {
            return None;
        }
        let listed = error
            .data
            .as_ref()
            .and_then(|d| d.get("elicitations"))
            .and_then(Value::as_array);
        let Some(listed) = listed else {
            return Some(Err(UrlElicitationError::Count(0)));
        };
        if listed.is_empty() || listed.len() > MAX_REQUIRED {
            return Some(Err(UrlElicitationError::Count(listed.len())));
        }
        Some(listed.iter().map(UrlElicitation::parse).collect())
    }
}

/// Whether `params` of an `elicitation/create` ask for URL mode.
pub fn is_url_mode(params: &Value) -> bool {
    params.get("mode").and_then(Value::as_str) == Some("url")
}

/// The elicitation id of a `notifications/elicitation/complete`, if well formed.
pub fn completed_id(params: Option<&Value>) -> Option<&str> {
    params?
        .get("elicitationId")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty() && id.len() <= MAX_ID)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asked(url: &str) -> Result<UrlElicitation, UrlElicitationError> {
        UrlElicitation::parse(
            &json!({"mode": "url", "elicitationId": "e1", "url": url, "message": "Connect"}),
        )
    }

    #[test]
    fn https_urls_are_taken_with_their_host() {
        let e = asked("https://accounts.example.com/connect?state=1").unwrap();
        assert_eq!(e.host(), "accounts.example.com");
        assert_eq!(e.url, "https://accounts.example.com/connect?state=1");
        // Shown and opened as parsed: what the parser dropped or would encode is gone.
        let e = asked("https://exa\tmple.com/a b\u{202e}c").unwrap();
        assert_eq!(e.host(), "example.com");
        assert_eq!(e.url, "https://example.com/a%20b%E2%80%AEc");
        let e = asked("https://bücher.example/").unwrap();
        assert_eq!(e.host(), "xn--bcher-kva.example");
        assert_eq!(e.elicitation_id, "e1");
        assert!(asked("http://127.0.0.1:8080/x").is_ok());
        assert!(asked("http://localhost/x").is_ok());
    }

    #[test]
    fn other_schemes_user_information_and_oversize_members_are_refused() {
        for (url, expected) in [
            (
                "http://example.com/",
                UrlElicitationError::Scheme("http".into()),
            ),
            ("javascript:alert(1)", UrlElicitationError::NotAUrl),
            ("file:///etc/passwd", UrlElicitationError::NotAUrl),
            ("data:text/html,hi", UrlElicitationError::NotAUrl),
            (
                "https://bank.example@evil.example/",
                UrlElicitationError::UserInfo,
            ),
            ("https://u:p@evil.example/", UrlElicitationError::UserInfo),
            ("not a url", UrlElicitationError::NotAUrl),
        ] {
            assert_eq!(asked(url).unwrap_err(), expected, "{url}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL));
        assert!(matches!(
            asked(&long),
            Err(UrlElicitationError::TooLong { field: "url", .. })
        ));
        let no_id = json!({"mode": "url", "url": "https://example.com", "message": "m"});
        assert_eq!(
            UrlElicitation::parse(&no_id).unwrap_err(),
            UrlElicitationError::Missing("elicitationId")
        );
    }

    #[test]
    fn a_required_error_names_checked_elicitations() {
        let error = |data: Value| ErrorObject {
            code: URL_ELICITATION_REQUIRED,
            message: "URL elicitation required".into(),
            data: Some(data),
        };
        let one = json!({"elicitations": [{"mode": "url", "elicitationId": "a",
            "url": "https://example.com/a", "message": "m"}]});
        let listed = UrlElicitation::required(&error(one)).unwrap().unwrap();
        assert_eq!(listed[0].elicitation_id, "a");
        assert!(
            UrlElicitation::required(&error(json!({})))
                .unwrap()
                .is_err()
        );
        let bad =
            json!({"elicitations": [{"elicitationId": "a", "url": "ftp://x", "message": "m"}]});
        assert!(UrlElicitation::required(&error(bad)).unwrap().is_err());
        let other = ErrorObject {
            code: -32602,
            message: "x".into(),
            data: None,
        };
        assert!(UrlElicitation::required(&other).is_none());
        assert_eq!(
            completed_id(Some(&json!({"elicitationId": "a"}))),
            Some("a")
        );
        assert_eq!(completed_id(Some(&json!({"elicitationId": ""}))), None);
    }
}
