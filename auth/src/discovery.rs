//! Finding the authorization server of an MCP server.
//!
//! Protected-resource metadata (RFC 9728) from the `resource_metadata` URL of
//! the challenge, else at the path-aware well-known location, then at the root;
//! its `resource` must match the server URL. Authorization-server metadata
//! (RFC 8414, then OpenID discovery, in their path-aware issuer forms). For
//! 2025-03-26 servers without metadata: authorization-server metadata at the
//! server's root, and finally `/authorize`, `/token`, `/register` there.

use reqwest::Url;
use serde::Deserialize;

use crate::challenge::Challenge;
use crate::display::display_url;
use crate::error::AuthError;
use crate::http::{check_endpoint, get_json};

/// RFC 9728 protected-resource metadata (the fields used here).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResourceMetadata {
    pub(crate) resource: Option<String>,
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 authorization-server metadata (the fields used here).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    pub(crate) issuer: Option<String>,
    pub(crate) authorization_endpoint: Option<String>,
    pub(crate) token_endpoint: Option<String>,
    pub(crate) registration_endpoint: Option<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: bool,
}

/// Everything a flow needs to know about where to go.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The RFC 8707 `resource` to send (no query, no fragment).
    pub(crate) resource: String,
    /// Scopes the resource says it supports.
    pub(crate) resource_scopes: Option<Vec<String>>,
    /// The issuer identifier, checked against the metadata when there is any.
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Url,
    pub(crate) token_endpoint: Url,
    pub(crate) registration_endpoint: Option<Url>,
    pub(crate) metadata: Option<ServerMetadata>,
}

impl Discovered {
    pub(crate) fn scopes_supported(&self) -> Option<&[String]> {
        self.metadata
            .as_ref()
            .and_then(|m| m.scopes_supported.as_deref())
    }

    pub(crate) fn auth_methods(&self) -> &[String] {
        self.metadata
            .as_ref()
            .and_then(|m| m.token_endpoint_auth_methods_supported.as_deref())
            .unwrap_or(&[])
    }

    pub(crate) fn supports_cimd(&self) -> bool {
        self.metadata
            .as_ref()
            .is_some_and(|m| m.client_id_metadata_document_supported)
    }

    /// Whether the authorization response must carry `iss` (RFC 9207).
    pub(crate) fn iss_in_response(&self) -> bool {
        self.metadata
            .as_ref()
            .is_some_and(|m| m.authorization_response_iss_parameter_supported)
    }

    /// Login needs PKCE with S256: metadata that does not list it is refused.
    /// With no metadata at all (the 2025-03-26 fallback to `/authorize` and
    /// `/token` at the root) there is nothing to check; S256 is sent regardless.
    pub(crate) fn require_pkce_s256(&self) -> Result<(), AuthError> {
        let Some(metadata) = &self.metadata else {
            return Ok(());
        };
        let s256 = metadata
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|m| m == "S256"));
        if s256 {
            Ok(())
        } else {
            Err(AuthError::PkceUnsupported {
                issuer: display_url(&self.issuer),
            })
        }
    }
}

/// The resource identifier of a server URL (RFC 8707): without query, fragment
/// or user info, which may hold credentials and must not reach the
/// authorization server.
pub(crate) fn resource_of(server: &Url) -> String {
    let mut u = server.clone();
    u.set_query(None);
    u.set_fragment(None);
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.to_string()
}

/// Runs discovery for `server` after `challenge`.
pub(crate) async fn discover(
    client: &reqwest::Client,
    server: &Url,
    challenge: &Challenge,
) -> Result<Discovered, AuthError> {
    let prm = protected_resource(client, server, challenge).await?;
    let (resource, resource_scopes, named) = match &prm {
        Some(prm) => {
            let resource = match &prm.resource {
                Some(r) => published_resource(server, r)?,
                None => resource_of(server),
            };
            let issuer = prm.authorization_servers.first().cloned().ok_or_else(|| {
                AuthError::Discovery(
                    "protected-resource metadata names no authorization server".into(),
                )
            })?;
            let issuer_url = Url::parse(&issuer).map_err(|e| {
                AuthError::Discovery(format!(
                    "authorization server `{}`: {e}",
                    display_url(&issuer)
                ))
            })?;
            check_endpoint("authorization server", &issuer_url)?;
            (resource, prm.scopes_supported.clone(), Some(issuer))
        }
        None => (resource_of(server), None, None),
    };
    let (issuer, metadata) = match named {
        Some(issuer) => {
            let issuer_url =
                Url::parse(&issuer).map_err(|e| AuthError::Discovery(e.to_string()))?;
            let metadata = server_metadata(client, &issuer_url).await?;
            if let Some(m) = &metadata {
                check_issuer(m, &issuer_url)?;
            }
            (issuer, metadata)
        }
        None => legacy_server(client, server).await?,
    };
    let issuer_url = Url::parse(&issuer).map_err(|e| AuthError::Discovery(e.to_string()))?;
    check_endpoint("issuer", &issuer_url)?;
    let base = origin_url(&issuer_url);
    let endpoint =
        |what: &'static str, given: Option<&String>, fallback: &str| -> Result<Url, AuthError> {
            let url = match given {
                Some(u) => Url::parse(u)
                    .map_err(|e| AuthError::Discovery(format!("{what} endpoint: {e}")))?,
                None => base
                    .join(fallback)
                    .map_err(|e| AuthError::Discovery(e.to_string()))?,
            };
            check_endpoint(what, &url)?;
            Ok(url)
        };
    let (authorization_endpoint, token_endpoint, registration_endpoint) = match &metadata {
        Some(m) => (
            endpoint(
                "authorization",
                m.authorization_endpoint.as_ref(),
                "/authorize",
            )?,
            endpoint("token", m.token_endpoint.as_ref(), "/token")?,
            m.registration_endpoint
                .as_ref()
                .map(|r| endpoint("registration", Some(r), "/register"))
                .transpose()?,
        ),
        // No metadata (2025-03-26): the default paths at the issuer's root.
        None => (
            endpoint("authorization", None, "/authorize")?,
            endpoint("token", None, "/token")?,
            Some(endpoint("registration", None, "/register")?),
        ),
    };
    Ok(Discovered {
        resource,
        resource_scopes,
        issuer,
        authorization_endpoint,
        token_endpoint,
        registration_endpoint,
        metadata,
    })
}

/// 2025-03-26 without protected-resource metadata: the authorization server is
/// the MCP server's origin. Its metadata was not found through an issuer, so its
/// `issuer` cannot be compared with one; it must at least be on that origin.
async fn legacy_server(
    client: &reqwest::Client,
    server: &Url,
) -> Result<(String, Option<ServerMetadata>), AuthError> {
    let metadata = server_metadata(client, &origin_url(server)).await?;
    let Some(m) = metadata else {
        return Ok((origin(server), None));
    };
    let issuer = m.issuer.clone().ok_or_else(|| AuthError::IssuerMismatch {
        context: "authorization-server metadata",
        expected: origin(server),
        found: None,
    })?;
    let same_origin = Url::parse(&issuer).is_ok_and(|u| u.origin() == server.origin());
    if !same_origin {
        return Err(AuthError::IssuerMismatch {
            context: "authorization-server metadata",
            expected: origin(server),
            found: Some(display_url(&issuer)),
        });
    }
    Ok((issuer, Some(m)))
}

/// RFC 8414 §3.3 (and OpenID Discovery §4.3): the metadata's `issuer` is the
/// issuer its URL was derived from, or the metadata is not used.
fn check_issuer(metadata: &ServerMetadata, issuer: &Url) -> Result<(), AuthError> {
    let found = metadata.issuer.as_deref();
    if found.and_then(|f| Url::parse(f).ok()).as_ref() == Some(issuer) {
        return Ok(());
    }
    Err(AuthError::IssuerMismatch {
        context: "authorization-server metadata",
        expected: display_url(issuer),
        found: found.map(display_url),
    })
}

async fn protected_resource(
    client: &reqwest::Client,
    server: &Url,
    challenge: &Challenge,
) -> Result<Option<ResourceMetadata>, AuthError> {
    if let Some(url) = &challenge.resource_metadata {
        let url = Url::parse(url).map_err(|e| {
            AuthError::Discovery(format!("resource_metadata `{}`: {e}", display_url(url)))
        })?;
        if url.origin() != server.origin() {
            return Err(AuthError::Discovery(format!(
                "resource_metadata {} is not on the server's origin",
                display_url(&url)
            )));
        }
        return get_json(client, &url).await;
    }
    let path = server.path().trim_end_matches('/');
    let mut candidates = Vec::new();
    if !path.is_empty() {
        candidates.push(format!("/.well-known/oauth-protected-resource{path}"));
    }
    candidates.push("/.well-known/oauth-protected-resource".to_string());
    for candidate in candidates {
        let url = origin_url(server)
            .join(&candidate)
            .map_err(|e| AuthError::Discovery(e.to_string()))?;
        if let Some(found) = get_json(client, &url).await? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

async fn server_metadata(
    client: &reqwest::Client,
    issuer: &Url,
) -> Result<Option<ServerMetadata>, AuthError> {
    let path = issuer.path().trim_end_matches('/');
    let candidates: Vec<String> = if path.is_empty() {
        vec![
            "/.well-known/oauth-authorization-server".into(),
            "/.well-known/openid-configuration".into(),
        ]
    } else {
        vec![
            format!("/.well-known/oauth-authorization-server{path}"),
            format!("/.well-known/openid-configuration{path}"),
            format!("{path}/.well-known/openid-configuration"),
        ]
    };
    for candidate in candidates {
        let url = origin_url(issuer)
            .join(&candidate)
            .map_err(|e| AuthError::Discovery(e.to_string()))?;
        if let Some(found) = get_json(client, &url).await? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The metadata's `resource` must name this server: the same origin, and a path
/// that is the server's path or a prefix of it. Returns it parsed.
fn check_resource(server: &Url, resource: &str) -> Result<Url, AuthError> {
    let mismatch = || AuthError::ResourceMismatch {
        expected: display_url(resource_of(server)),
        found: display_url(resource),
    };
    let declared = Url::parse(resource).map_err(|_| mismatch())?;
    if declared.origin() != server.origin() {
        return Err(mismatch());
    }
    let want = declared.path().trim_end_matches('/');
    let have = server.path().trim_end_matches('/');
    if have == want || have.starts_with(&format!("{want}/")) || want.is_empty() {
        Ok(declared)
    } else {
        Err(mismatch())
    }
}

/// The resource identifier to send for a `resource` the metadata published,
/// once it is checked to name this server: the string as published when it
/// is the URL parser's own form of it, or that form less the trailing `/` of
/// a bare origin (a parser writes `https://mcp.example.com` back as
/// `https://mcp.example.com/`, another identifier to an authorization server
/// that compares strings). Anything else (a `\`, dot segments, control
/// characters, user info, a fragment) is sent as the parser read it, which
/// is what was checked, so no other reading of the string can name another
/// resource.
fn published_resource(server: &Url, published: &str) -> Result<String, AuthError> {
    let parsed = check_resource(server, published)?;
    let bare_origin = parsed.path() == "/"
        && parsed.query().is_none()
        && published == parsed.origin().ascii_serialization();
    let canonical = parsed.as_str() == published;
    let clean =
        parsed.username().is_empty() && parsed.password().is_none() && parsed.fragment().is_none();
    Ok(if clean && (canonical || bare_origin) {
        published.to_string()
    } else {
        resource_of(&parsed)
    })
}

fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

fn origin_url(url: &Url) -> Url {
    let mut u = url.clone();
    u.set_path("/");
    u.set_query(None);
    u.set_fragment(None);
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_must_name_this_server() {
        let server = Url::parse("https://mcp.example.com/mcp").unwrap();
        assert!(check_resource(&server, "https://mcp.example.com/mcp").is_ok());
        assert!(check_resource(&server, "https://mcp.example.com/mcp/").is_ok());
        assert!(check_resource(&server, "https://mcp.example.com").is_ok());
        assert!(check_resource(&server, "https://other.example.com/mcp").is_err());
        assert!(check_resource(&server, "https://mcp.example.com/other").is_err());
        assert!(check_resource(&server, "https://mcp.example.com/mc").is_err());
        assert!(check_resource(&server, "not a url").is_err());
    }

    #[test]
    fn a_published_resource_is_sent_as_published() {
        let server = Url::parse("https://mcp.example.com/mcp").unwrap();
        let sent = |r: &str| published_resource(&server, r).unwrap();
        assert_eq!(sent("https://mcp.example.com"), "https://mcp.example.com");
        assert_eq!(
            sent("https://mcp.example.com/mcp/"),
            "https://mcp.example.com/mcp/"
        );
        assert_eq!(
            sent("https://u:p@mcp.example.com/mcp#f"),
            "https://mcp.example.com/mcp"
        );
        assert!(published_resource(&server, "https://other.example.com").is_err());
        // Read another way, this names evil.com: what is sent is what was checked.
        assert_eq!(
            sent("https://mcp.example.com\\@evil.com/../.."),
            "https://mcp.example.com/"
        );
        assert_eq!(
            sent("https://mcp.example.com/mcp\t"),
            "https://mcp.example.com/mcp"
        );
    }

    #[test]
    fn resource_identifiers_drop_query_fragment_and_user_info() {
        let server = Url::parse("https://u:p@mcp.example.com/mcp?api_key=k#frag").unwrap();
        assert_eq!(resource_of(&server), "https://mcp.example.com/mcp");
    }

    #[test]
    fn a_mismatched_resource_is_reported_without_queries() {
        let server = Url::parse("https://mcp.example.com/mcp?api_key=k1").unwrap();
        let e = check_resource(&server, "https://evil.example.com/mcp?x=k2").unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, AuthError::ResourceMismatch { .. }));
        assert!(!text.contains("k1") && !text.contains("k2"), "{text}");
    }

    #[test]
    fn the_metadata_issuer_must_be_the_one_asked() {
        let metadata = |issuer: Option<&str>| ServerMetadata {
            issuer: issuer.map(str::to_string),
            authorization_endpoint: None,
            token_endpoint: None,
            registration_endpoint: None,
            scopes_supported: None,
            token_endpoint_auth_methods_supported: None,
            code_challenge_methods_supported: None,
            client_id_metadata_document_supported: false,
            authorization_response_iss_parameter_supported: false,
        };
        let issuer = Url::parse("https://as.example.com/tenant1").unwrap();
        assert!(check_issuer(&metadata(Some("https://as.example.com/tenant1")), &issuer).is_ok());
        for bad in [
            Some("https://evil.example.com/tenant1"),
            Some("https://as.example.com"),
            None,
        ] {
            assert!(matches!(
                check_issuer(&metadata(bad), &issuer),
                Err(AuthError::IssuerMismatch { .. })
            ));
        }
        let root = Url::parse("https://as.example.com").unwrap();
        assert!(check_issuer(&metadata(Some("https://as.example.com/")), &root).is_ok());
    }
}
