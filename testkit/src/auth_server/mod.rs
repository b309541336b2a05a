//! An in-process OAuth authorization server with the MCP servers it protects, on
//! one port of 127.0.0.1, for the OAuth tests.
//!
//! The authorization server serves RFC 8414 metadata, dynamic client registration
//! (RFC 7591), `/authorize` (no person: a 302 straight back to the registered
//! `redirect_uri` with `code` and `state`, so a headless driver completes it) and
//! `/token` (the authorization code with its PKCE S256 verifier checked,
//! refresh tokens that are rotated: each is good for one refresh, and client
//! credentials for a client with a secret or a registered key, see
//! [`client_assertion`]). Tokens are bound to the RFC 8707
//! `resource` they were asked for.
//!
//! Two protected MCP endpoints, `/mcp` and `/alt/mcp`, each with RFC 9728 metadata,
//! answer JSON-RPC with plain JSON and accept only unexpired tokens issued for
//! themselves; anything else gets a `401` with `WWW-Authenticate: Bearer`.
//!
//! The test sets how long access tokens live, can slow refreshes down, take the
//! token endpoint down, revoke every refresh token or make the resource reject
//! every access token issued so far, and reads counters and records of what each
//! endpoint saw. It can also be made hostile (see [`hostile`]): an endpoint that
//! redirects or never answers, altered metadata, extra callback parameters.
//! Dropping the server closes the port and every open connection.

mod authorization;
pub mod client;
pub mod client_assertion;
pub mod hostile;
pub mod idp;
pub mod pkce;
mod resource;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::{get, post};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use serde_json::Value;

use hostile::{Endpoint, Hostility, Misbehaviour};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

/// The protected MCP endpoints, as paths on the server's origin.
pub const RESOURCE_PATHS: [&str; 2] = ["/mcp", "/alt/mcp"];

/// How long access tokens live (seconds) unless the test says otherwise.
pub const ACCESS_TTL: u64 = 3600;

/// How clients authenticate at the token endpoint, as the metadata advertises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientKind {
    /// `none`: registration issues no secret.
    Public,
    /// `client_secret_basic`: registration issues a secret.
    Confidential,
}

/// How many requests of each kind the authorization server has answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub registrations: u64,
    pub authorizations: u64,
    /// `authorization_code` grants that issued tokens.
    pub code_exchanges: u64,
    /// Every `refresh_token` grant request, refused, unanswered (an outage) or not.
    pub refresh_requests: u64,
    /// `refresh_token` grant requests refused (`invalid_grant`, bad client).
    pub refresh_refusals: u64,
    /// Every request to `/token`, answered or not.
    pub token_requests: u64,
    /// `client_credentials` grants that issued tokens.
    pub client_credentials_grants: u64,
    /// JWT bearer grants (an ID-JAG redeemed) that issued tokens.
    pub jwt_bearer_grants: u64,
}

/// One request to a protected MCP endpoint.
#[derive(Clone, Debug)]
pub struct ResourceRequest {
    /// `/mcp` or `/alt/mcp`.
    pub path: String,
    pub http_method: String,
    /// The bearer token sent, if any.
    pub token: Option<String>,
    /// Whether the token was accepted (`false`: answered `401`).
    pub accepted: bool,
    pub rpc_method: Option<String>,
}

/// A running server; see the module docs.
pub struct AuthServer {
    /// `http://127.0.0.1:PORT`, also the issuer.
    pub base: String,
    shared: Arc<Shared>,
    accept_loop: JoinHandle<()>,
}

impl AuthServer {
    /// Starts on a free port of 127.0.0.1; access tokens live an hour until
    /// [`AuthServer::set_access_ttl`] says otherwise.
    pub async fn start(kind: ClientKind) -> AuthServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the authorization server on 127.0.0.1");
        let addr: SocketAddr = listener.local_addr().expect("its address");
        let base = format!("http://{addr}");
        let shared = Arc::new(Shared {
            base: base.clone(),
            kind,
            access_ttl: Mutex::new(ACCESS_TTL),
            refresh_delay: Mutex::new(Duration::ZERO),
            token_outage: Mutex::new(false),
            resource_suffix: Mutex::new(String::new()),
            hostility: Mutex::new(Hostility::default()),
            state: Mutex::new(State::default()),
        });
        let app = router(shared.clone());
        let accept_loop = serve(listener, app);
        AuthServer {
            base,
            shared,
            accept_loop,
        }
    }

    /// The URL of the main protected MCP endpoint.
    pub fn mcp_url(&self) -> String {
        format!("{}{}", self.base, RESOURCE_PATHS[0])
    }

    /// The URL of the other protected MCP endpoint, on the same origin.
    pub fn alt_mcp_url(&self) -> String {
        format!("{}{}", self.base, RESOURCE_PATHS[1])
    }

    /// The `expires_in` of access tokens issued from now on.
    pub fn set_access_ttl(&self, secs: u64) {
        *lock(&self.shared.access_ttl) = secs;
    }

    /// How long the token endpoint waits before answering a refresh, so that
    /// concurrent refreshes would overlap if nothing kept them apart.
    pub fn set_refresh_delay(&self, delay: Duration) {
        *lock(&self.shared.refresh_delay) = delay;
    }

    /// While on, the token endpoint answers `503` with no body, as one that is down.
    pub fn set_token_outage(&self, down: bool) {
        *lock(&self.shared.token_outage) = down;
    }

    /// Every refresh token issued so far is refused from now on (`invalid_grant`).
    pub fn revoke_refresh_tokens(&self) {
        for grant in lock(&self.shared.state).refresh.values_mut() {
            grant.revoked = true;
        }
    }

    /// The resources reject every access token issued so far (`invalid_token`),
    /// though none has expired.
    pub fn reject_access_tokens(&self) {
        for grant in lock(&self.shared.state).access.values_mut() {
            grant.rejected = true;
        }
    }

    /// The resources call themselves `…/mcp{suffix}` from now on: in their
    /// metadata's `resource`, and as the audience their tokens must have.
    pub fn set_resource_suffix(&self, suffix: &str) {
        *lock(&self.shared.resource_suffix) = suffix.to_string();
    }

    /// `endpoint` misbehaves from now on.
    pub fn misbehave(&self, endpoint: Endpoint, how: Misbehaviour) {
        lock(&self.shared.hostility).endpoints.insert(endpoint, how);
    }

    /// Sets `key` in the authorization-server metadata (`null` removes it).
    pub fn set_server_metadata(&self, key: &str, value: Value) {
        lock(&self.shared.hostility)
            .server_metadata
            .insert(key.to_string(), value);
    }

    /// Sets `key` in the protected-resource metadata (`null` removes it).
    pub fn set_resource_metadata(&self, key: &str, value: Value) {
        lock(&self.shared.hostility)
            .resource_metadata
            .insert(key.to_string(), value);
    }

    /// Authorization responses carry only these extra parameters from now on.
    pub fn set_callback_params(&self, params: &[(&str, &str)]) {
        lock(&self.shared.hostility).callback_params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    }

    /// A client registered out of band (a configured `clientId`), with its
    /// secret if confidential, allowed to come back to `redirect_uri`.
    pub fn preregister(&self, client_id: &str, secret: Option<&str>, redirect_uri: &str) {
        lock(&self.shared.state).clients.insert(
            client_id.to_string(),
            Client {
                redirect_uris: vec![redirect_uri.to_string()],
                secret: secret.map(str::to_string),
            },
        );
    }

    /// Whether the resource at `url` would accept `token` now.
    pub fn accepts(&self, token: &str, url: &str) -> bool {
        lock(&self.shared.state).check(token, url).is_ok()
    }

    pub fn counts(&self) -> Counts {
        lock(&self.shared.state).counts
    }

    /// Access tokens issued, oldest first.
    pub fn access_tokens(&self) -> Vec<String> {
        lock(&self.shared.state).issued_access.clone()
    }

    /// Refresh tokens issued, oldest first.
    pub fn refresh_tokens(&self) -> Vec<String> {
        lock(&self.shared.state).issued_refresh.clone()
    }

    /// Client secrets issued by registration.
    pub fn client_secrets(&self) -> Vec<String> {
        lock(&self.shared.state)
            .clients
            .values()
            .filter_map(|c| c.secret.clone())
            .collect()
    }

    /// Authorization codes issued.
    pub fn codes(&self) -> Vec<String> {
        lock(&self.shared.state).issued_codes.clone()
    }

    /// The JSON bodies of registration requests.
    pub fn registrations(&self) -> Vec<Value> {
        lock(&self.shared.state).registration_bodies.clone()
    }

    /// The query of each `/authorize` request.
    pub fn authorize_requests(&self) -> Vec<HashMap<String, String>> {
        lock(&self.shared.state).authorize_queries.clone()
    }

    /// The form of each `/token` request.
    pub fn token_requests(&self) -> Vec<HashMap<String, String>> {
        lock(&self.shared.state).token_forms.clone()
    }

    /// A new ID token for `subject`, which the identity provider exchanges.
    pub fn issue_id_token(&self, subject: &str) -> String {
        let token = random_value("idt");
        lock(&self.shared.state)
            .id_tokens
            .insert(token.clone(), subject.to_string());
        token
    }

    /// The identity provider's issuer.
    pub fn idp_issuer(&self) -> String {
        format!("{}{}", self.base, idp::IDP_PATH)
    }

    /// The identity provider's token exchange requests, oldest first.
    pub fn exchanges(&self) -> Vec<idp::Exchange> {
        lock(&self.shared.state).exchanges.clone()
    }

    /// The ID-JAGs the identity provider issued.
    pub fn jags(&self) -> HashMap<String, idp::Jag> {
        lock(&self.shared.state).jags.clone()
    }

    /// The identity provider's OpenID configuration names `issuer` from now on.
    pub fn set_idp_issuer(&self, issuer: &str) {
        lock(&self.shared.hostility).idp_issuer = Some(issuer.to_string());
    }

    /// Every request to the protected MCP endpoints, in order of arrival.
    pub fn resource_requests(&self) -> Vec<ResourceRequest> {
        lock(&self.shared.state).resource_requests.clone()
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

fn router(shared: Arc<Shared>) -> Router {
    let mut app = Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(authorization::metadata),
        )
        .route("/register", post(authorization::register))
        .route("/authorize", get(authorization::authorize))
        .route("/token", post(authorization::token))
        .route(
            &format!("{}/.well-known/openid-configuration", idp::IDP_PATH),
            get(idp::configuration),
        )
        .route(&format!("{}/token", idp::IDP_PATH), post(idp::token));
    for path in RESOURCE_PATHS {
        app = app
            .route(
                &format!("/.well-known/oauth-protected-resource{path}"),
                get(move |s| resource::metadata(s, path)),
            )
            .route(
                path,
                post(move |s, h, b| resource::serve(s, path, h, b))
                    .get(resource::no_stream)
                    .delete(resource::no_stream),
            );
    }
    app.layer(axum::middleware::from_fn_with_state(
        shared.clone(),
        hostile::misbehave,
    ))
    .with_state(shared)
}

/// What the handlers share with the test.
struct Shared {
    base: String,
    kind: ClientKind,
    access_ttl: Mutex<u64>,
    refresh_delay: Mutex<Duration>,
    token_outage: Mutex<bool>,
    resource_suffix: Mutex<String>,
    hostility: Mutex<Hostility>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    counts: Counts,
    clients: HashMap<String, Client>,
    codes: HashMap<String, CodeGrant>,
    access: HashMap<String, AccessGrant>,
    refresh: HashMap<String, RefreshGrant>,
    issued_access: Vec<String>,
    issued_refresh: Vec<String>,
    issued_codes: Vec<String>,
    registration_bodies: Vec<Value>,
    authorize_queries: Vec<HashMap<String, String>>,
    token_forms: Vec<HashMap<String, String>>,
    resource_requests: Vec<ResourceRequest>,
    /// ID tokens the identity provider issued, with their subject.
    id_tokens: HashMap<String, String>,
    exchanges: Vec<idp::Exchange>,
    jags: HashMap<String, idp::Jag>,
    /// Public keys of `private_key_jwt` clients, by client id.
    assertion_keys: HashMap<String, client_assertion::PublicKey>,
    /// The `jti` of every client assertion taken (each is good once).
    assertion_jtis: std::collections::HashSet<String>,
    /// The claims of every client assertion taken.
    assertion_claims: Vec<Value>,
}

struct Client {
    redirect_uris: Vec<String>,
    secret: Option<String>,
}

struct CodeGrant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    resource: String,
    scope: Option<String>,
}

struct AccessGrant {
    resource: String,
    expires: Instant,
    rejected: bool,
}

struct RefreshGrant {
    client_id: String,
    resource: String,
    scope: Option<String>,
    used: bool,
    revoked: bool,
}

/// Why a resource refused a token.
#[derive(Debug)]
enum Refusal {
    Unknown,
    Expired,
    Rejected,
    OtherResource,
}

impl State {
    fn check(&self, token: &str, url: &str) -> Result<(), Refusal> {
        let grant = self.access.get(token).ok_or(Refusal::Unknown)?;
        if grant.rejected {
            Err(Refusal::Rejected)
        } else if grant.expires <= Instant::now() {
            Err(Refusal::Expired)
        } else if grant.resource != url {
            Err(Refusal::OtherResource)
        } else {
            Ok(())
        }
    }
}

/// A fresh unguessable value, `<tag>-<32 hex digits>`.
fn random_value(tag: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut out = format!("{tag}-");
    for _ in 0..2 {
        // Each RandomState is seeded afresh, so two of them give 128 random bits.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out
}

/// Locks, ignoring poisoning: a panicking test thread must not hide the records.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Serves `app` on `listener` from one task; its connections live in a set
/// inside it, so aborting the task drops them all.
pub(super) fn serve(listener: TcpListener, app: Router) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut connections = JoinSet::new();
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let service = TowerToHyperService::new(app.clone());
            connections.spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
            while connections.try_join_next().is_some() {}
        }
    })
}
