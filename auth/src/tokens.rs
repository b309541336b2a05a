//! What a login yields and what a refresh needs.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Tokens expiring within this many seconds are refreshed before use.
pub(crate) const REFRESH_MARGIN_SECS: u64 = 60;

/// The client as registered (or configured) with the authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClientRegistration {
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    pub(crate) auth_method: String,
    pub(crate) token_endpoint: String,
}

/// A token set for one server and resource, as stored.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredTokens {
    /// The resource (server URL) these tokens are for; never sent anywhere else.
    pub(crate) resource: String,
    pub(crate) access_token: String,
    pub(crate) refresh_token: Option<String>,
    /// Unix seconds.
    pub(crate) expires_at: Option<u64>,
    pub(crate) scope: Option<String>,
    pub(crate) client: ClientRegistration,
    /// The storage key the file was written under (see `OAuth`); `None` until saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) key: Option<String>,
}

impl StoredTokens {
    /// True when the access token is missing its expiry or expires after the margin.
    pub(crate) fn fresh(&self) -> bool {
        self.expires_at
            .is_none_or(|at| at > now().saturating_add(REFRESH_MARGIN_SECS))
    }

    /// True once the access token's expiry has passed.
    pub(crate) fn expired(&self) -> bool {
        self.expires_at.is_some_and(|at| at <= now())
    }
}

/// The Unix time `expires_in` from now; a huge `expires_in` saturates rather
/// than overflowing (it is the server's number, not ours).
pub(crate) fn expiry(expires_in: Duration) -> u64 {
    now().saturating_add(expires_in.as_secs())
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl fmt::Debug for StoredTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredTokens")
            .field("resource", &self.resource)
            .field("access_token", &"[redacted]")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "[redacted]"),
            )
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("client", &self.client)
            .finish()
    }
}

impl fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[redacted]"),
            )
            .field("auth_method", &self.auth_method)
            .field("token_endpoint", &self.token_endpoint)
            .finish()
    }
}
