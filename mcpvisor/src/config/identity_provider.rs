//! The `identityProvider` of an `oauth` block: enterprise-managed authorization,
//! where the host's ID token is exchanged at the enterprise's identity provider
//! for an ID-JAG and that for the server's access token.
//!
//! The ID token is given as a value (usually `${VAR}`, expanded when the entry
//! is resolved) or as a file that is read at every exchange: the host's sign-in
//! replaces it as it expires, and a long-running supervisor must see the new one.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use mcpvisor_auth::{IdTokenSource, IdentityProvider};
use mcpvisor_transports::SecretString;
use serde::Deserialize;

use super::error::EntryProblem;
use super::expand::expand;
use super::key_file::read_key_file;

/// `"identityProvider": {...}` as written.
#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawIdentityProvider {
    issuer: Option<String>,
    token_endpoint: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    id_token: Option<String>,
    id_token_file: Option<String>,
}

/// The identity provider of an `oauth` block (secrets stay secrets).
#[derive(Clone, PartialEq, Default)]
pub struct IdentityProviderEntry {
    /// Its issuer, for OpenID discovery of the token endpoint.
    pub issuer: Option<String>,
    /// Its token endpoint (instead of discovery).
    pub token_endpoint: Option<String>,
    /// mcpvisor's client id there.
    pub client_id: Option<String>,
    /// Its secret there (may reference `${VAR}`).
    pub client_secret: Option<SecretString>,
    /// The ID token (may reference `${VAR}`).
    pub id_token: Option<SecretString>,
    /// A file holding the ID token, read at each exchange (relative to the
    /// configuration file's directory).
    pub id_token_file: Option<String>,
}

impl fmt::Debug for IdentityProviderEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityProviderEntry")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("id_token", &self.id_token)
            .field("id_token_file", &self.id_token_file)
            .finish()
    }
}

impl From<RawIdentityProvider> for IdentityProviderEntry {
    fn from(raw: RawIdentityProvider) -> IdentityProviderEntry {
        IdentityProviderEntry {
            issuer: raw.issuer,
            token_endpoint: raw.token_endpoint,
            client_id: raw.client_id,
            client_secret: raw.client_secret.map(SecretString::new),
            id_token: raw.id_token.map(SecretString::new),
            id_token_file: raw.id_token_file,
        }
    }
}

impl IdentityProviderEntry {
    /// The identity provider, with `${VAR}`s expanded and the ID token file
    /// bound to `base_dir`.
    pub(super) fn resolve(
        &self,
        server: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
        base_dir: &Path,
    ) -> Result<IdentityProvider, EntryProblem> {
        let problem = |reason: &str| EntryProblem::OAuth {
            server: server.to_string(),
            reason: format!("`identityProvider` {reason}"),
        };
        if self.issuer.is_none() && self.token_endpoint.is_none() {
            return Err(problem("needs `issuer` or `tokenEndpoint`"));
        }
        if self.client_secret.is_some() && self.client_id.is_none() {
            return Err(problem("has a `clientSecret` without its `clientId`"));
        }
        let expanded = |field: &str, value: &Option<SecretString>| match value {
            Some(v) => expand(v.expose(), lookup)
                .map(|v| Some(SecretString::new(v)))
                .map_err(|error| EntryProblem::Expansion {
                    server: server.to_string(),
                    field: field.to_string(),
                    error,
                }),
            None => Ok(None),
        };
        let client_secret = expanded("oauth.identityProvider.clientSecret", &self.client_secret)?;
        let id_token = expanded("oauth.identityProvider.idToken", &self.id_token)?;
        let source: IdTokenSource = match (id_token, &self.id_token_file) {
            (Some(token), None) => Arc::new(move || Ok(token.clone())),
            (None, Some(file)) => {
                let path = base_dir.join(file);
                Arc::new(move || read_id_token(&path))
            }
            _ => return Err(problem("needs exactly one of `idToken` and `idTokenFile`")),
        };
        Ok(IdentityProvider {
            issuer: self.issuer.clone(),
            token_endpoint: self.token_endpoint.clone(),
            client_id: self.client_id.clone(),
            client_secret,
            id_token: source,
        })
    }
}

/// The ID token in `path`, under the key files' rules (a regular file, not a
/// link, bounded), without surrounding whitespace.
fn read_id_token(path: &Path) -> Result<SecretString, String> {
    let text = read_key_file(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("`{}` is empty", path.display()));
    }
    Ok(SecretString::new(token.to_string()))
}
