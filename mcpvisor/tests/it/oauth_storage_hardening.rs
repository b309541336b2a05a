//! The token files and the loopback callback against a local attacker and a
//! hostile authorization server (testkit/src/auth_server): one key per server
//! whatever the metadata's `resource` looks like, a token directory open to
//! others is closed, planted symbolic links are refused and their targets left
//! alone, a configured client secret stays in the configuration, a huge
//! `expires_in` saturates, and the callback listener is neither held up by a
//! silent connection nor a way to put control characters on the terminal.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpvisor::SecretString;
use mcpvisor::auth::{
    AuthError, AuthState, AuthorizationDriver, BrowserDriver, DriverFuture, HeadlessDriver, OAuth,
};
use reqwest::Url;
use serde_json::json;
use testkit::auth_server::client::{
    TempHome, expires_at, file_mode, http, login, notes_server, oauth, oauth_config, protected,
    start_host, token_dir_names, unix_now,
};
use testkit::auth_server::{AuthServer, ClientKind};
use testkit::{call, next_ready};
use tokio::io::AsyncWriteExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_with_a_trailing_slash_is_saved_locked_and_found_under_one_key() {
    let auth = AuthServer::start(ClientKind::Public).await;
    // The metadata says `…/mcp/`; the configuration says `…/mcp`.
    auth.set_resource_suffix("/");
    let home = TempHome::new("trailing-slash");
    let notes = oauth("notes", &auth.mcp_url(), &home.0);
    login(&notes).await;
    assert_eq!(
        auth.authorize_requests()[0]["resource"],
        format!("{}/", auth.mcp_url())
    );

    assert!(matches!(notes.state().unwrap(), AuthState::LoggedIn { .. }));
    let token_file = notes.token_path();
    let stem = token_file.file_stem().unwrap().to_string_lossy();
    // One token file, and the lock beside it covers that file.
    assert_eq!(
        token_dir_names(&home.0),
        [format!("{stem}.json"), format!("{stem}.lock")]
    );
    let token = auth.access_tokens()[0].clone();
    let bearer = notes
        .bearer(&http())
        .await
        .unwrap()
        .expect("the stored token");
    assert_eq!(bearer.expose(), token);

    let (host, mut events) = start_host(protected("notes", &auth.mcp_url(), &notes)).await;
    next_ready(&mut events).await;
    let r = call(&host, "mcp__notes__echo", json!({"text": "found"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "found");
    host.shutdown().await;
    assert_eq!(auth.counts().code_exchanges, 1, "no second login");

    assert!(notes.logout().unwrap());
    assert_eq!(notes.state().unwrap(), AuthState::LoggedOut);
    assert_eq!(token_dir_names(&home.0), [format!("{stem}.lock")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_directory_open_to_others_is_closed_to_0700() {
    let auth = AuthServer::start(ClientKind::Public).await;
    let home = TempHome::new("dir-mode");
    let dir = home.0.join("oauth");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let notes = oauth("notes", &auth.mcp_url(), &home.0);
    login(&notes).await;
    assert_eq!(file_mode(&dir), 0o700);
    assert!(matches!(notes.state().unwrap(), AuthState::LoggedIn { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_planted_as_the_token_file_is_refused_and_its_target_untouched() {
    let (_auth, home, notes) = notes_server(ClientKind::Public, "token-link").await;
    let outside = home.0.join("outside.json");
    let original = b"{\"not\": \"a token file\"}\n";
    std::fs::write(&outside, original).unwrap();
    std::fs::create_dir(home.0.join("oauth")).unwrap();
    std::fs::set_permissions(home.0.join("oauth"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&outside, notes.token_path()).unwrap();

    let refused = |e: &AuthError| matches!(e, AuthError::SymlinkRefused { path } if *path == notes.token_path());
    let error = notes.state().unwrap_err();
    assert!(refused(&error), "{error:?}");
    let error = notes.bearer(&http()).await.unwrap_err();
    assert!(refused(&error), "{error:?}");
    let error = notes
        .login(&http(), &HeadlessDriver::new().unwrap())
        .await
        .unwrap_err();
    assert!(refused(&error), "{error:?}");
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert_eq!(std::fs::read(&outside).unwrap(), original);

    // `logout` removes the link, not what it points to.
    assert!(notes.logout().unwrap());
    assert!(!notes.token_path().exists());
    assert_eq!(std::fs::read(&outside).unwrap(), original);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_planted_as_the_lock_file_is_refused_and_creates_nothing() {
    let (auth, home, notes) = notes_server(ClientKind::Public, "lock-link").await;
    let target = home.0.join("created-through-the-link");
    std::fs::create_dir(home.0.join("oauth")).unwrap();
    std::fs::set_permissions(home.0.join("oauth"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let lock = notes.token_path().with_extension("lock");
    std::os::unix::fs::symlink(&target, &lock).unwrap();

    let error = notes
        .login(&http(), &HeadlessDriver::new().unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, AuthError::SymlinkRefused { path } if *path == lock),
        "{error:?}"
    );
    assert!(!target.exists(), "a file was created through the link");
    assert_eq!(auth.counts().registrations, 0, "refused before any request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_client_secret_stays_out_of_the_token_file() {
    let auth = AuthServer::start(ClientKind::Confidential).await;
    let home = TempHome::new("configured-secret");
    // Random per run: its absence from the file cannot rest on an old value.
    let secret = &{
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("cs-configured-{:016x}", h.finish())
    };
    let driver = HeadlessDriver::new().unwrap();
    auth.preregister("client-pre", Some(secret), driver.redirect_uri().as_str());
    let mut config = oauth_config("notes", &auth.mcp_url(), &home.0);
    config.client_id = Some("client-pre".into());
    config.client_secret = Some(SecretString::new(secret));
    let notes = Arc::new(OAuth::new(config.clone()).unwrap());
    auth.set_access_ttl(30);
    notes.login(&http(), &driver).await.unwrap();
    auth.set_access_ttl(3600);
    let bytes = std::fs::read(notes.token_path()).unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains(secret));
    assert!(String::from_utf8_lossy(&bytes).contains("client-pre"));

    // Another process (a fresh facade) refreshes with the secret from its configuration.
    let again = OAuth::new(config).unwrap();
    let bearer = again.bearer(&http()).await.unwrap().unwrap();
    assert_eq!(auth.counts().refresh_requests, 1);
    assert_eq!(auth.counts().refresh_refusals, 0);
    assert_eq!(bearer.expose(), auth.access_tokens()[1]);
    let bytes = std::fs::read(notes.token_path()).unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains(secret));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_expires_in_saturates() {
    let (auth, _home, notes) = notes_server(ClientKind::Public, "huge-expiry").await;
    auth.set_access_ttl(u64::MAX);
    login(&notes).await;
    assert_eq!(expires_at(&notes), u64::MAX);
    assert!(expires_at(&notes) > unix_now());
    let bearer = notes.bearer(&http()).await.unwrap().unwrap();
    assert_eq!(bearer.expose(), auth.access_tokens()[0]);
    assert_eq!(auth.counts().refresh_requests, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_connection_does_not_hold_up_the_callback() {
    let driver = BrowserDriver::bind(0, Duration::from_secs(60))
        .await
        .unwrap()
        .without_browser();
    let redirect = driver.redirect_uri();
    let waiting = tokio::spawn(async move {
        driver
            .authorize(Url::parse("http://127.0.0.1:1/authorize").unwrap())
            .await
    });
    let addr = format!("127.0.0.1:{}", redirect.port().unwrap());
    // Connects and sends nothing; sends half a head; sends a head too large.
    let _silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut half = tokio::net::TcpStream::connect(&addr).await.unwrap();
    half.write_all(b"GET /callback?code=half").await.unwrap();
    let mut huge = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let padding = format!(
        "GET /callback HTTP/1.1\r\nX-Pad: {}\r\n",
        "a".repeat(64 * 1024)
    );
    let _ = huge.write_all(padding.as_bytes()).await;

    let started = Instant::now();
    let mut callback = redirect.clone();
    callback.set_query(Some("code=c-1&state=s-1"));
    let answer = http().get(callback).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    let back = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the callback was held up")
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    let query: Vec<(String, String)> = back.query_pairs().into_owned().collect();
    assert_eq!(
        query,
        [
            ("code".into(), "c-1".into()),
            ("state".into(), "s-1".into())
        ]
    );
}

/// A browser login whose authorization URL the test reads, to play the
/// authorization server's redirect itself.
struct Relay {
    browser: BrowserDriver,
    urls: tokio::sync::mpsc::UnboundedSender<Url>,
}

impl AuthorizationDriver for Relay {
    fn redirect_uri(&self) -> Url {
        self.browser.redirect_uri()
    }

    fn authorize(&self, url: Url) -> DriverFuture<'_> {
        let _ = self.urls.send(url.clone());
        self.browser.authorize(url)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_in_a_callback_error_are_escaped() {
    let (auth, _home, notes) = notes_server(ClientKind::Public, "callback-error").await;
    let browser = BrowserDriver::bind(0, Duration::from_secs(60))
        .await
        .unwrap()
        .without_browser();
    let (urls, mut authorize_urls) = tokio::sync::mpsc::unbounded_channel();
    let relay = Relay { browser, urls };
    let redirect = relay.redirect_uri();
    let login = tokio::spawn(async move { notes.login(&http(), &relay).await });

    let authorize = authorize_urls.recv().await.unwrap();
    let state = authorize
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    let mut callback = redirect;
    callback
        .query_pairs_mut()
        .append_pair("error", "access_denied\x1b[2J\x1b]0;owned\x07")
        .append_pair(
            "error_description",
            "line one\r\nmcpvisor: login ok\u{202e}",
        )
        .append_pair("state", &state);
    assert_eq!(http().get(callback).send().await.unwrap().status(), 200);

    let error = login.await.unwrap().unwrap_err();
    let text = format!("{error} {error:?}");
    assert!(matches!(error, AuthError::Authorization(_)), "{text}");
    assert!(text.contains("access_denied"), "{text}");
    assert!(
        !text.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "{text:?}"
    );
    assert_eq!(auth.counts().code_exchanges, 0);
}
