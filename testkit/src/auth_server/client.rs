//! The mcpvisor side of the OAuth tests: a home directory, OAuth facades for the
//! fixture's endpoints, headless logins (that succeed, fail, or hold a token
//! about to expire), hosts serving a protected server, and readings of the
//! token directory and of a server's state.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::Stream;
use mcpvisor::HttpSpec;
use mcpvisor::auth::{AuthError, AuthState, Grant, HeadlessDriver, OAuth, OAuthConfig};
use mcpvisor::{Host, HostEvent, ServerSpec, ServerState};

use super::{ACCESS_TTL, AuthServer, ClientKind, random_value};
use crate::{eventually, fast_options};

/// A host's events, as the tests read them.
pub type Events = std::pin::Pin<Box<dyn Stream<Item = HostEvent> + Send>>;

/// A directory for one test's `$MCPVISOR_HOME`, removed when dropped.
pub struct TempHome(pub PathBuf);

impl TempHome {
    pub fn new(tag: &str) -> TempHome {
        let dir = std::env::temp_dir().join(format!(
            "mcpvisor-oauth-{tag}-{}-{}",
            std::process::id(),
            random_value("d")
        ));
        std::fs::create_dir_all(&dir).expect("create the test home");
        TempHome(dir)
    }
}

impl Drop for TempHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// OAuth settings for `server` at `url`: authorization code, no pre-registered
/// client, no unattended driver (a lost login needs a person).
pub fn oauth_config(server: &str, url: &str, home: &Path) -> OAuthConfig {
    OAuthConfig {
        server: server.to_string(),
        url: url.to_string(),
        home: home.to_path_buf(),
        client_id: None,
        client_secret: None,
        client_metadata_url: None,
        scope: None,
        grant: Grant::AuthorizationCode,
        unattended: None,
    }
}

/// The facade for `server` at `url` with [`oauth_config`].
pub fn oauth(server: &str, url: &str, home: &Path) -> Arc<OAuth> {
    Arc::new(OAuth::new(oauth_config(server, url, home)).expect("a valid OAuth configuration"))
}

/// The start of most OAuth tests: an authorization server of `kind`, a home
/// tagged `tag`, and the facade of the server `notes` it protects at `/mcp`.
pub async fn notes_server(kind: ClientKind, tag: &str) -> (AuthServer, TempHome, Arc<OAuth>) {
    let auth = AuthServer::start(kind).await;
    let home = TempHome::new(tag);
    let notes = oauth("notes", &auth.mcp_url(), &home.0);
    (auth, home, notes)
}

/// The HTTP client the host and the CLI use (no redirects followed, no `Referer`).
pub fn http() -> reqwest::Client {
    mcpvisor::http_client(&Default::default()).expect("the production HTTP client")
}

/// What `mcpvisor login --headless` does: registration, authorization, code exchange.
pub async fn login(oauth: &OAuth) {
    let driver = HeadlessDriver::new().expect("a headless driver");
    oauth
        .login(&http(), &driver)
        .await
        .expect("login against the in-process authorization server");
}

/// A [`login`] whose access token lives `secs` seconds (30: due for refresh,
/// inside the 60 s margin; 0: expired on arrival); later tokens live
/// [`ACCESS_TTL`] again.
pub async fn login_expiring_in(auth: &AuthServer, oauth: &OAuth, secs: u64) {
    auth.set_access_ttl(secs);
    login(oauth).await;
    auth.set_access_ttl(ACCESS_TTL);
}

/// A headless login that must fail; its error.
pub async fn failed_login(oauth: &OAuth) -> AuthError {
    let driver = HeadlessDriver::new().expect("a headless driver");
    oauth
        .login(&http(), &driver)
        .await
        .expect_err("the login must be refused")
}

/// A Streamable HTTP server spec whose requests `oauth` authorizes.
pub fn protected(name: &str, url: &str, oauth: &Arc<OAuth>) -> ServerSpec {
    ServerSpec::http(
        name,
        HttpSpec {
            url: url.to_string(),
            headers: Vec::new(),
            oauth: Some(oauth.clone()),
        },
    )
}

/// A host with the tests' fast options serving `spec`, and its events from the start.
pub async fn start_host(spec: ServerSpec) -> (Host, Events) {
    let host = Host::start(vec![spec], fast_options()).await.unwrap();
    let events: Events = Box::pin(host.events());
    (host, events)
}

/// Now in Unix seconds, the unit of token expiries.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The expiry of the stored login, which must be refreshable.
pub fn expires_at(oauth: &OAuth) -> u64 {
    match oauth.state().unwrap() {
        AuthState::LoggedIn {
            expires_at: Some(at),
            refreshable: true,
        } => at,
        other => panic!("expected a refreshable login with an expiry, got {other:?}"),
    }
}

/// The state of the host's server named `name`.
pub fn state_of(host: &Host, name: &str) -> ServerState {
    host.servers()
        .into_iter()
        .find(|s| &*s.name == name)
        .expect("the server's status")
        .state
}

/// Waits (up to 20 s) until the host's server `name` waits for a login; that state.
pub async fn wait_login_required(host: &Host, name: &str) -> ServerState {
    let waiting = eventually(Duration::from_secs(20), || {
        matches!(state_of(host, name), ServerState::LoginRequired { .. })
    })
    .await;
    let state = state_of(host, name);
    assert!(waiting, "state: {state:?}");
    state
}

/// The names of the files in `<home>/oauth/`, sorted.
pub fn token_dir_names(home: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(home.join("oauth"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The permission bits of `path`.
pub fn file_mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}
