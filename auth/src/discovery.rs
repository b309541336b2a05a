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
use crate::error::AuthError;
use crate::http::{check_endpoint, get_json, without_query};

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
    pub(crate) authorization_endpoint: Option<String>,
    pub(crate) token_endpoint: Option<String>,
    pub(crate) registration_endpoint: Option<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
}

/// Everything a flow needs to know about where to go.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The RFC 8707 `resource` to send (no fragment).
    pub(crate) resource: String,
    /// Scopes the resource says it supports.
    pub(crate) resource_scopes: Option<Vec<String>>,
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
}

/// The resource identifier of a server URL: without fragment (RFC 8707).
pub(crate) fn resource_of(server: &Url) -> String {
    let mut u = server.clone();
    u.set_fragment(None);
    u.to_string()
}

/// Runs discovery for `server` after `challenge`.
pub(crate) async fn discover(
    client: &reqwest::Client,
    server: &Url,
    challenge: &Challenge,
) -> Result<Discovered, AuthError> {
    let prm = protected_resource(client, server, challenge).await?;
    let (resource, resource_scopes, issuer) = match &prm {
        Some(prm) => {
            let resource = match &prm.resource {
                Some(r) => {
                    check_resource(server, r)?;
                    r.clone()
                }
                None => resource_of(server),
            };
            let issuer = prm.authorization_servers.first().cloned().ok_or_else(|| {
                AuthError::Discovery(
                    "protected-resource metadata names no authorization server".into(),
                )
            })?;
            (resource, prm.scopes_supported.clone(), issuer)
        }
        // 2025-03-26: the authorization server is the MCP server's origin.
        None => (resource_of(server), None, origin(server)),
    };
    let issuer_url =
        Url::parse(&issuer).map_err(|e| AuthError::Discovery(format!("issuer `{issuer}`: {e}")))?;
    let metadata = server_metadata(client, &issuer_url).await?;
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
        // 2025-03-26 without metadata: the default paths at the root.
        None => (
            endpoint("authorization", None, "/authorize")?,
            endpoint("token", None, "/token")?,
            Some(endpoint("registration", None, "/register")?),
        ),
    };
    let methods = metadata
        .as_ref()
        .and_then(|m| m.code_challenge_methods_supported.as_ref());
    if methods.is_some_and(|methods| !methods.iter().any(|m| m == "S256")) {
        return Err(AuthError::Discovery(
            "authorization server does not support PKCE S256".into(),
        ));
    }
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

async fn protected_resource(
    client: &reqwest::Client,
    server: &Url,
    challenge: &Challenge,
) -> Result<Option<ResourceMetadata>, AuthError> {
    if let Some(url) = &challenge.resource_metadata {
        let url = Url::parse(url)
            .map_err(|e| AuthError::Discovery(format!("resource_metadata URL: {e}")))?;
        if url.origin() != server.origin() {
            return Err(AuthError::Discovery(format!(
                "resource_metadata {} is not on the server's origin",
                without_query(&url)
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
/// that is the server's path or a prefix of it.
fn check_resource(server: &Url, resource: &str) -> Result<(), AuthError> {
    let mismatch = || AuthError::ResourceMismatch {
        expected: resource_of(server),
        found: resource.to_string(),
    };
    let declared = Url::parse(resource).map_err(|_| mismatch())?;
    if declared.origin() != server.origin() {
        return Err(mismatch());
    }
    let want = declared.path().trim_end_matches('/');
    let have = server.path().trim_end_matches('/');
    if have == want || have.starts_with(&format!("{want}/")) || want.is_empty() {
        Ok(())
    } else {
        Err(mismatch())
    }
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
    fn resource_identifiers_drop_the_fragment() {
        let server = Url::parse("https://mcp.example.com/mcp#frag").unwrap();
        assert_eq!(resource_of(&server), "https://mcp.example.com/mcp");
    }
}
