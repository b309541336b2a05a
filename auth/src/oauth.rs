//! The `OAuth` facade: one per protected server. The HTTP transport asks it for
//! a bearer token before each request and tells it about `401`/`403`; the CLI
//! uses it to log in and out. Storage stays behind it.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use mcpvisor_protocol::SecretString;
use reqwest::Url;

use crate::challenge::Challenge;
use crate::client_credentials::{self, Proof};
use crate::discovery::{Discovered, discover};
use crate::driver::AuthorizationDriver;
use crate::error::AuthError;
use crate::identity_assertion::{self, IdentityProvider};
use crate::login::{self, ClientIdentity, RefreshFailure};
use crate::storage::{StoreLock, TokenStore};
use crate::tokens::StoredTokens;

/// Step-up authorizations one request may trigger (after the first login);
/// with the login that makes at most three authorizations for a request.
pub const MAX_STEP_UPS: u32 = 2;

/// Which grant this client uses.
#[derive(Clone)]
pub enum Grant {
    /// Authorization code with PKCE, through a driver (browser or headless).
    AuthorizationCode,
    /// Client credentials with the configured secret (`client_secret_basic`).
    ClientSecret,
    /// Client credentials with a signed assertion (`private_key_jwt`).
    PrivateKeyJwt {
        /// The PKCS#8 PEM private key.
        pem: SecretString,
        /// `ES256` or `RS256`.
        algorithm: String,
    },
    /// Enterprise-managed authorization: the host's ID token exchanged at its
    /// identity provider for an ID-JAG, and that for an access token with the
    /// JWT bearer grant (client id and, usually, secret as configured).
    IdentityAssertion(IdentityProvider),
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Grant::AuthorizationCode => f.write_str("AuthorizationCode"),
            Grant::ClientSecret => f.write_str("ClientSecret"),
            Grant::PrivateKeyJwt { algorithm, .. } => f
                .debug_struct("PrivateKeyJwt")
                .field("algorithm", algorithm)
                .finish_non_exhaustive(),
            Grant::IdentityAssertion(idp) => f.debug_tuple("IdentityAssertion").field(idp).finish(),
        }
    }
}

/// One server's OAuth settings.
#[derive(Clone)]
pub struct OAuthConfig {
    /// The server's name (token files are keyed by it and by the URL).
    pub server: String,
    /// The MCP server URL (the protected resource).
    pub url: String,
    /// Where token files live: `<home>/oauth/`.
    pub home: PathBuf,
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret.
    pub client_secret: Option<SecretString>,
    /// A client ID metadata document URL, used where the server supports them.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for instead of discovering them.
    pub scope: Option<String>,
    /// The grant.
    pub grant: Grant,
    /// Logs in without a person when a login is needed (tests, unattended hosts);
    /// without it a missing or revoked login is `AuthError::LoginRequired`.
    pub unattended: Option<Arc<dyn AuthorizationDriver>>,
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("server", &self.server)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scope", &self.scope)
            .field("grant", &self.grant)
            .field("unattended", &self.unattended.is_some())
            .finish()
    }
}

/// Where a server's login stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthState {
    /// No token stored.
    LoggedOut,
    /// A token is stored; `expires_at` in Unix seconds when known.
    LoggedIn {
        /// Expiry of the access token.
        expires_at: Option<u64>,
        /// Whether it can be refreshed.
        refreshable: bool,
    },
}

/// OAuth for one protected server.
pub struct OAuth {
    config: OAuthConfig,
    url: Url,
    /// The one key its tokens are locked, loaded, saved and removed under:
    /// with the server's name, the configured URL as a resource (no query, no
    /// fragment). Derived once here, never from what discovery returns: a
    /// metadata `resource` of `…/mcp/` must not file the tokens of `…/mcp`
    /// where no lookup or lock will find them.
    key: String,
    store: TokenStore,
    current: parking_lot::Mutex<Option<StoredTokens>>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("config", &self.config)
            .finish()
    }
}

impl OAuth {
    /// OAuth for the server in `config`.
    pub fn new(config: OAuthConfig) -> Result<OAuth, AuthError> {
        let mut url =
            Url::parse(&config.url).map_err(|e| AuthError::Config(format!("server URL: {e}")))?;
        url.set_fragment(None);
        Ok(OAuth {
            store: TokenStore::new(&config.home),
            key: crate::discovery::resource_of(&url),
            url,
            config,
            current: parking_lot::Mutex::new(None),
        })
    }

    fn lock(&self) -> impl std::future::Future<Output = Result<StoreLock, AuthError>> + '_ {
        self.store.lock(&self.config.server, &self.key)
    }

    /// The stored tokens, with the configured client secret put back (it is
    /// never written to the token file).
    fn load(&self) -> Result<Option<StoredTokens>, AuthError> {
        let mut tokens = self.store.load(&self.config.server, &self.key)?;
        if let (Some(t), Some(secret)) = (tokens.as_mut(), &self.config.client_secret) {
            let configured = self.config.client_id.as_ref() == Some(&t.client.client_id);
            if configured && t.client.client_secret.is_none() && t.client.auth_method != "none" {
                t.client.client_secret = Some(secret.expose().to_string());
            }
        }
        Ok(tokens)
    }

    /// Saves under this server's key; a configured client secret stays in the
    /// configuration and out of the file (a secret issued by registration has
    /// nowhere else to live, so it is kept).
    fn save(&self, tokens: &StoredTokens) -> Result<(), AuthError> {
        let configured = self.config.client_secret.as_ref().map(|s| s.expose());
        if configured.is_some() && tokens.client.client_secret.as_deref() == configured {
            let mut on_disk = tokens.clone();
            on_disk.client.client_secret = None;
            return self.store.save(&self.config.server, &self.key, &on_disk);
        }
        self.store.save(&self.config.server, &self.key, tokens)
    }

    /// The bearer token to send, refreshed shortly before it expires (while the
    /// token endpoint cannot be reached, the current token serves until it does
    /// expire). `None` when there is none yet: the request goes without, and a
    /// `401` follows.
    pub async fn bearer(&self, http: &reqwest::Client) -> Result<Option<SecretString>, AuthError> {
        if let Some(t) = self.current.lock().as_ref().filter(|t| t.fresh()) {
            return Ok(Some(SecretString::new(t.access_token.clone())));
        }
        let tokens = self.renew(http, Renewal::BeforeRequest).await?;
        Ok(tokens.map(|t| SecretString::new(t.access_token)))
    }

    /// After a `401`: refresh once, or log in (unattended or client credentials),
    /// or fail with [`AuthError::LoginRequired`]. `Ok` means: retry the request.
    pub async fn unauthorized(
        &self,
        http: &reqwest::Client,
        used: Option<&SecretString>,
        challenge: &Challenge,
    ) -> Result<(), AuthError> {
        self.renew(http, Renewal::Refused { used, challenge })
            .await
            .map(|_| ())
    }

    /// The one lock → load → refresh path. Under the server's lock, re-reads the
    /// stored tokens (another task or process may have refreshed them while this
    /// one waited), refreshes them if `why` calls for it, logs in without a
    /// person where the refresh is refused, and adopts the result. `None`: no
    /// login yet and none to make before a request.
    async fn renew(
        &self,
        http: &reqwest::Client,
        why: Renewal<'_>,
    ) -> Result<Option<StoredTokens>, AuthError> {
        let _lock = self.lock().await?;
        let tokens = match self.load()? {
            Some(t) if why.still_serves(&t) => t,
            Some(t) if t.refresh_token.is_some() => {
                match login::refresh(http, &t.resource, &t).await {
                    Ok(next) => {
                        self.save(&next)?;
                        next
                    }
                    // An early refresh failed: the token serves until it expires.
                    Err(RefreshFailure::Unavailable(e)) if why.before_request() && !t.expired() => {
                        tracing::warn!(server = %self.config.server, "token refresh failed; the current token serves until it expires: {e}");
                        t
                    }
                    // Keep the login: this request fails, a later one refreshes.
                    Err(RefreshFailure::Unavailable(e)) => return Err(e),
                    Err(RefreshFailure::Refused(e)) => {
                        tracing::warn!(server = %self.config.server, "{}: {e}", why.refresh_failed());
                        self.forget()?;
                        self.unattended_tokens(http, why.challenge()).await?
                    }
                }
            }
            // Not refreshable: sent as it is until the server refuses it.
            Some(t) if why.before_request() => t,
            Some(_) => {
                self.forget()?;
                self.unattended_tokens(http, why.challenge()).await?
            }
            // The authorization code needs a `401` first (whose challenge
            // discovery reads); client credentials need no one.
            None if why.before_request()
                && matches!(self.config.grant, Grant::AuthorizationCode) =>
            {
                return Ok(None);
            }
            None => self.unattended_tokens(http, why.challenge()).await?,
        };
        *self.current.lock() = Some(tokens.clone());
        Ok(Some(tokens))
    }

    /// After a `403` with `insufficient_scope`: authorizes again with the scope
    /// the server asks for, joined with what was granted. `Ok` means: retry.
    /// The caller bounds how often (see [`MAX_STEP_UPS`]).
    pub async fn insufficient_scope(
        &self,
        http: &reqwest::Client,
        challenge: &Challenge,
    ) -> Result<(), AuthError> {
        let _lock = self.lock().await?;
        let tokens = self.unattended_tokens(http, challenge).await?;
        *self.current.lock() = Some(tokens);
        Ok(())
    }

    /// New tokens without a person: client credentials, or the unattended driver.
    async fn unattended_tokens(
        &self,
        http: &reqwest::Client,
        challenge: &Challenge,
    ) -> Result<StoredTokens, AuthError> {
        if !matches!(self.config.grant, Grant::AuthorizationCode) {
            return self.without_person(http, challenge).await;
        }
        let Some(driver) = self.config.unattended.clone() else {
            return Err(AuthError::LoginRequired {
                server: self.config.server.clone(),
            });
        };
        let tokens = self.authorize(http, driver.as_ref(), challenge).await?;
        self.save(&tokens)?;
        Ok(tokens)
    }

    /// The grants that need no person: client credentials, identity assertion.
    async fn without_person(
        &self,
        http: &reqwest::Client,
        challenge: &Challenge,
    ) -> Result<StoredTokens, AuthError> {
        let found = self.discover(http, challenge).await?;
        let scope = login::choose_scope(
            &found,
            challenge.scope.as_deref(),
            self.config.scope.as_deref(),
            None,
        );
        let tokens = match &self.config.grant {
            Grant::IdentityAssertion(idp) => {
                let client_id = self.config.client_id.as_deref().ok_or_else(|| {
                    AuthError::Config(
                        "the identity assertion grant needs the client id registered at the authorization server".into(),
                    )
                })?;
                let secret = self.config.client_secret.as_ref().map(|s| s.expose());
                let client = identity_assertion::Client {
                    id: client_id,
                    secret,
                };
                identity_assertion::acquire(http, &found, idp, client, scope.as_deref()).await?
            }
            _ => {
                self.client_credentials(http, &found, scope.as_deref())
                    .await?
            }
        };
        self.save(&tokens)?;
        Ok(tokens)
    }

    async fn client_credentials(
        &self,
        http: &reqwest::Client,
        found: &Discovered,
        scope: Option<&str>,
    ) -> Result<StoredTokens, AuthError> {
        let client_id = self
            .config
            .client_id
            .clone()
            .ok_or_else(|| AuthError::Config("client credentials need a client id".into()))?;
        let proof = match &self.config.grant {
            Grant::PrivateKeyJwt { pem, algorithm } => Proof::PrivateKey {
                pem: pem.expose().to_string(),
                algorithm: algorithm.clone(),
            },
            _ => Proof::Secret(
                self.config
                    .client_secret
                    .as_ref()
                    .map(|s| s.expose().to_string())
                    .ok_or_else(|| {
                        AuthError::Config("client credentials need a client secret".into())
                    })?,
            ),
        };
        client_credentials::acquire(http, found, &client_id, &proof, scope).await
    }

    async fn discover(
        &self,
        http: &reqwest::Client,
        challenge: &Challenge,
    ) -> Result<Discovered, AuthError> {
        let challenge = if challenge.resource_metadata.is_none() && challenge.scope.is_none() {
            self.probe(http).await.unwrap_or(challenge.clone())
        } else {
            challenge.clone()
        };
        discover(http, &self.url, &challenge).await
    }

    /// An unauthenticated request to the server, for its `WWW-Authenticate`.
    async fn probe(&self, http: &reqwest::Client) -> Option<Challenge> {
        let body = r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#;
        let request = http
            .post(self.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .body(body);
        let resp = crate::http::send(request, &self.url, AuthError::Discovery)
            .await
            .ok()?;
        let values: Vec<String> = resp
            .headers()
            .get_all(reqwest::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect();
        (!values.is_empty()).then(|| Challenge::parse(values.iter().map(String::as_str)))
    }

    async fn authorize(
        &self,
        http: &reqwest::Client,
        driver: &dyn AuthorizationDriver,
        challenge: &Challenge,
    ) -> Result<StoredTokens, AuthError> {
        let found = self.discover(http, challenge).await?;
        let identity = ClientIdentity {
            client_id: self.config.client_id.clone(),
            client_secret: self
                .config
                .client_secret
                .as_ref()
                .map(|s| s.expose().to_string()),
            metadata_url: self.config.client_metadata_url.clone(),
            client_name: "mcpvisor".into(),
        };
        let reg = login::client_for(http, &found, &identity, &driver.redirect_uri()).await?;
        let granted = self.current.lock().as_ref().and_then(|t| t.scope.clone());
        let scope = login::choose_scope(
            &found,
            challenge.scope.as_deref(),
            self.config.scope.as_deref(),
            granted.as_deref(),
        );
        login::authorize(http, &found, &reg, driver, scope.as_deref()).await
    }

    /// Logs in through `driver` (a browser for `mcpvisor login`) and stores the tokens.
    pub async fn login(
        &self,
        http: &reqwest::Client,
        driver: &dyn AuthorizationDriver,
    ) -> Result<(), AuthError> {
        let _lock = self.lock().await?;
        let tokens = match self.config.grant {
            Grant::AuthorizationCode => self.authorize(http, driver, &Challenge::default()).await?,
            _ => {
                drop(_lock);
                return self
                    .without_person(http, &Challenge::default())
                    .await
                    .map(|_| ());
            }
        };
        self.save(&tokens)?;
        *self.current.lock() = Some(tokens);
        Ok(())
    }

    /// Deletes the stored tokens. Returns whether there were any.
    pub fn logout(&self) -> Result<bool, AuthError> {
        *self.current.lock() = None;
        self.store.remove(&self.config.server, &self.key)
    }

    fn forget(&self) -> Result<(), AuthError> {
        *self.current.lock() = None;
        self.store
            .remove(&self.config.server, &self.key)
            .map(|_| ())
    }

    /// Where the login stands (reads the token file; a corrupt file is an error).
    pub fn state(&self) -> Result<AuthState, AuthError> {
        Ok(match self.load()? {
            None => AuthState::LoggedOut,
            Some(t) => AuthState::LoggedIn {
                expires_at: t.expires_at,
                refreshable: t.refresh_token.is_some(),
            },
        })
    }

    /// The token file (for diagnostics and tests).
    pub fn token_path(&self) -> PathBuf {
        self.store.path(&self.config.server, &self.key)
    }
}

/// Why the stored tokens are being looked at under the lock.
#[derive(Clone, Copy)]
enum Renewal<'a> {
    /// A request is about to go: refresh a token about to expire.
    BeforeRequest,
    /// The server answered `401` to a request that carried `used`.
    Refused {
        used: Option<&'a SecretString>,
        challenge: &'a Challenge,
    },
}

impl Renewal<'_> {
    /// Whether the stored tokens `t` can be used as they are.
    fn still_serves(&self, t: &StoredTokens) -> bool {
        match self {
            Renewal::BeforeRequest => t.fresh(),
            // Someone else already replaced the token that was refused.
            Renewal::Refused { used, .. } => used.is_none_or(|u| u.expose() != t.access_token),
        }
    }

    fn before_request(&self) -> bool {
        matches!(self, Renewal::BeforeRequest)
    }

    /// What the server asked for, for a login that follows.
    fn challenge(&self) -> &Challenge {
        static NONE: Challenge = Challenge {
            resource_metadata: None,
            scope: None,
            error: None,
        };
        match self {
            Renewal::BeforeRequest => &NONE,
            Renewal::Refused { challenge, .. } => challenge,
        }
    }

    /// The warning logged when the authorization server refuses the refresh.
    fn refresh_failed(&self) -> &'static str {
        match self {
            Renewal::BeforeRequest => "token refresh failed",
            Renewal::Refused { .. } => "token refresh after 401 failed",
        }
    }
}
