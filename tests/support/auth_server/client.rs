//! The mcpvisor side of the OAuth tests: a home directory, OAuth facades for the
//! fixture's endpoints, a headless login, and hosts serving a protected server.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use futures::Stream;
use mcpvisor::auth::{AuthState, Grant, HeadlessDriver, OAuth, OAuthConfig};
use mcpvisor::transports::HttpSpec;
use mcpvisor::{Host, HostEvent, ServerSpec, ServerState};

use super::random_value;
use crate::support::fast_options;

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

/// The HTTP client the host and the CLI use (no redirects followed, no `Referer`).
pub fn http() -> reqwest::Client {
    mcpvisor::transports::http_client(&Default::default()).expect("the production HTTP client")
}

/// What `mcpvisor login --headless` does: registration, authorization, code exchange.
pub async fn login(oauth: &OAuth) {
    let driver = HeadlessDriver::new().expect("a headless driver");
    oauth
        .login(&http(), &driver)
        .await
        .expect("login against the in-process authorization server");
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
