//! OAuth against a real, certified authorization server: `oidc-provider`
//! (testkit/src/oidc) with dynamic registration, PKCE S256, RFC 8707
//! resource indicators, rotated refresh tokens and revocation, protecting an
//! MCP server that checks each token by introspection at the provider. A
//! person's login is driven through the provider's own interactions and the
//! product's loopback browser driver, and through `mcpvisor login` itself (the
//! printed URL opened by a test browser); a headless login, which such a
//! provider cannot serve, says a person is needed. What the provider did is read from the
//! provider: introspection says which tokens it still honours, its record which
//! grants it made and refused. The in-process fixture (mcpvisor/tests/it/oauth.rs) keeps
//! the cases no real server produces on demand (an outage, hostile answers).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::oauth_storage::{TOKEN_LINE, refresh_child};
use mcpvisor::TransportError;
use mcpvisor::auth::{AuthError, AuthState, HeadlessDriver, OAuth};
use mcpvisor::{CallError, Host, HostEvent, ServerState};
use serde_json::{Value, json};
use testkit::auth_server::client::{
    Events, TempHome, expires_at, http, oauth, protected, start_host, state_of, unix_now,
};
use testkit::oidc::browser::{ProviderBrowser, browser_client, follow};
use testkit::oidc::{Granted, OidcProvider};
use testkit::{call, drain, eventually, next_ready, wait_for};

/// The provider and a facade for the server `notes` it protects, in a fresh home.
async fn notes_at_provider(tag: &str) -> (OidcProvider, TempHome, std::sync::Arc<OAuth>) {
    let provider = OidcProvider::start().await;
    let home = TempHome::new(tag);
    let notes = oauth("notes", &provider.mcp_url(), &home.0);
    (provider, home, notes)
}

/// `mcpvisor login notes` with a person at the provider's pages.
async fn login(provider: &OidcProvider, notes: &OAuth) {
    let browser = ProviderBrowser::new().await;
    if let Err(e) = notes.login(&http(), &browser).await {
        panic!("login at oidc-provider: {e}\n{}", provider.output());
    }
}

/// The stored token file, as JSON.
fn stored(notes: &OAuth) -> Value {
    serde_json::from_str(&std::fs::read_to_string(notes.token_path()).unwrap()).unwrap()
}

/// The string at `key` (the file's keys, never its tokens, in the failure).
fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| {
        let keys: Vec<&String> = v
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        panic!("no {key} among {keys:?}")
    })
}

fn refresh_of(mcp_url: &str) -> Granted {
    Granted {
        grant_type: "refresh_token".into(),
        resource: Some(mcp_url.to_string()),
    }
}

fn is_login_required(e: &CallError, server: &str) -> bool {
    matches!(
        e,
        CallError::Transport {
            source: TransportError::Auth(AuthError::LoginRequired { server: s }),
            ..
        } if s == server
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_at_the_provider_serves_a_tool_call() {
    let (provider, _home, notes) = notes_at_provider("oidc-login").await;
    login(&provider, &notes).await;

    // Registered, authorized and exchanged once, the code for this resource.
    let record = provider.record().await;
    assert_eq!((record.registrations, record.authorizations), (1, 1));
    assert_eq!(
        record.grants,
        [Granted {
            grant_type: "authorization_code".into(),
            resource: Some(provider.mcp_url()),
        }]
    );
    assert!(record.refusals.is_empty(), "{record:?}");
    // A refreshable login (the provider issues a refresh token only where it
    // was asked for offline access the way OpenID Connect requires).
    assert!(expires_at(&notes) > unix_now() + 3000);
    let tokens = stored(&notes);
    let access = text(&tokens, "access_token").to_string();
    let said = provider.introspect(&access).await;
    assert_eq!(said["active"], true, "{said}");
    assert_eq!(said["aud"], json!(provider.mcp_url()));
    assert_eq!(said["client_id"], tokens["client"]["client_id"]);
    assert!(provider.active(text(&tokens, "refresh_token")).await);
    let probes = provider.resource_requests().len();

    let (host, mut events) = start_host(protected("notes", &provider.mcp_url(), &notes)).await;
    next_ready(&mut events).await;
    let r = call(&host, "mcp__notes__echo", json!({"text": "logged in"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "logged in");
    let seen = provider.resource_requests().split_off(probes);
    assert!(
        seen.len() >= 3,
        "initialize, tools/list, the call: {seen:?}"
    );
    assert!(
        seen.iter()
            .all(|r| r.accepted && r.token.as_deref() == Some(access.as_str())),
        "{seen:?}"
    );
    assert_eq!(provider.record().await.grants.len(), 1, "no refresh");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_due_to_expire_is_refreshed_before_use_and_its_refresh_token_is_spent() {
    let (provider, _home, notes) = notes_at_provider("oidc-before-expiry").await;
    // 30 s to live: inside the 60 s margin, due for a refresh at once.
    provider.set_access_ttl(30).await;
    login(&provider, &notes).await;
    provider.set_access_ttl(3600).await;
    assert!(expires_at(&notes) <= unix_now() + 30);
    let first = stored(&notes);
    let (expiring, spent) = (
        text(&first, "access_token").to_string(),
        text(&first, "refresh_token").to_string(),
    );
    assert!(provider.active(&expiring).await);
    let probes = provider.resource_requests().len();

    let (host, mut events) = start_host(protected("notes", &provider.mcp_url(), &notes)).await;
    next_ready(&mut events).await;
    let r = call(&host, "mcp__notes__echo", json!({"text": "fresh"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "fresh");

    // One refresh, naming the resource (RFC 8707), none refused.
    let record = provider.record().await;
    assert_eq!(
        record.granted("refresh_token"),
        [&refresh_of(&provider.mcp_url())]
    );
    assert!(record.refusals.is_empty(), "{record:?}");
    // The rotated refresh token was stored; the provider no longer honours the
    // one spent, and honours the new pair.
    let now = stored(&notes);
    let (refreshed, rotated) = (text(&now, "access_token"), text(&now, "refresh_token"));
    // Compared without printing them: tokens stay out of test output too.
    assert!(refreshed != expiring, "the access token was not replaced");
    assert!(rotated != spent, "the rotated refresh token was not stored");
    assert!(!provider.active(&spent).await, "the spent refresh token");
    assert!(provider.active(rotated).await);
    assert!(provider.active(refreshed).await);
    assert!(expires_at(&notes) > unix_now() + 3000);
    // The expiring token was never sent: every request carried the new one.
    let seen = provider.resource_requests().split_off(probes);
    assert!(!seen.is_empty());
    assert!(
        seen.iter()
            .all(|r| r.accepted && r.token.as_deref() == Some(refreshed)),
        "{seen:?}"
    );
    call(&host, "mcp__notes__echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(provider.record().await.granted("refresh_token").len(), 1);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_access_token_is_refreshed_once_at_the_provider_and_the_call_succeeds() {
    let (provider, _home, notes) = notes_at_provider("oidc-on-401").await;
    login(&provider, &notes).await;
    let (host, mut events) = start_host(protected("notes", &provider.mcp_url(), &notes)).await;
    next_ready(&mut events).await;
    call(&host, "mcp__notes__echo", json!({"text": "before"}))
        .await
        .unwrap();
    let tokens = stored(&notes);
    let (refused, spent) = (
        text(&tokens, "access_token").to_string(),
        text(&tokens, "refresh_token").to_string(),
    );

    // An hour to live, but the resource server answers 401 invalid_token.
    provider.refuse_at_resource(&refused);
    let seen_before = provider.resource_requests().len();
    let r = call(&host, "mcp__notes__echo", json!({"text": "after"})).await;
    let r = match r {
        Ok(r) => r,
        Err(e) => panic!("{e:?}; the provider: {:?}", provider.record().await),
    };
    assert_eq!(r.text(), "after");

    let record = provider.record().await;
    assert_eq!(
        record.granted("refresh_token"),
        [&refresh_of(&provider.mcp_url())]
    );
    assert!(record.refusals.is_empty(), "{record:?}");
    let now = stored(&notes);
    let refreshed = text(&now, "access_token").to_string();
    assert!(!provider.active(&spent).await, "the spent refresh token");
    assert!(provider.active(text(&now, "refresh_token")).await);
    let tried: Vec<(Option<String>, bool)> = provider
        .resource_requests()
        .split_off(seen_before)
        .into_iter()
        .map(|r| (r.token, r.accepted))
        .collect();
    assert_eq!(tried, [(Some(refused), false), (Some(refreshed), true)]);
    call(&host, "mcp__notes__echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(provider.record().await.granted("refresh_token").len(), 1);
    assert_eq!(state_of(&host, "notes"), ServerState::Ready);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_login_at_a_provider_that_needs_a_person_says_so() {
    let (provider, _home, notes) = notes_at_provider("oidc-headless").await;
    // `mcpvisor login --headless`: the provider answers with its sign-in page.
    let driver = HeadlessDriver::new().unwrap();
    let error = notes.login(&http(), &driver).await.unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, AuthError::Authorization(_)), "{error:?}");
    assert!(message.contains("needs a person to sign in"), "{message}");
    assert!(message.contains(&provider.issuer), "{message}");
    assert!(!message.contains("/interaction/"), "{message}");
    assert_eq!(notes.state().unwrap(), AuthState::LoggedOut);
    let record = provider.record().await;
    assert_eq!(record.authorizations, 0);
    assert!(record.grants.is_empty(), "{record:?}");
}

/// `mcpvisor` in `dir` with its home there, as a person runs it.
fn mcpvisor(dir: &Path) -> Command {
    let mut cmd = Command::new(testkit::mcpvisor_exe());
    cmd.current_dir(dir)
        .env("MCPVISOR_HOME", dir.join("home"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcpvisor_login_with_a_browser_at_the_provider_then_a_call() {
    use std::io::BufRead;
    let provider = OidcProvider::start().await;
    let home = TempHome::new("oidc-cli");
    let dir = home.0.clone();
    let config = json!({"mcpServers": {"notes": {"type": "http", "url": provider.mcp_url()}}});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let out = mcpvisor(&dir).args(["enable", "notes"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");

    // `mcpvisor login notes` prints the URL; the person opens it and signs in.
    let mut login = mcpvisor(&dir).args(["login", "notes"]).spawn().unwrap();
    let stderr = login.stderr.take().unwrap();
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let printed = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.trim().starts_with("http://") {
                let _ = url_tx.send(line.trim().to_string());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let url = tokio::task::spawn_blocking(move || url_rx.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("the authorization URL on stderr");
    let url = reqwest::Url::parse(&url).unwrap();
    let back = url
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| reqwest::Url::parse(&v).unwrap())
        .expect("a redirect_uri");
    follow(&browser_client(), url, &back).await.unwrap();
    let out = tokio::task::spawn_blocking(move || login.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = printed.join().unwrap();
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("logged in to `notes`"), "{stdout}");

    // A later command uses the stored login: the provider honours what it sends.
    let out = mcpvisor(&dir)
        .args(["call", "mcp__notes__echo", "text=from the command line"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "from the command line"
    );
    let record = provider.record().await;
    assert_eq!(record.grants.len(), 1, "{record:?}");
    let sent: Vec<_> = provider
        .resource_requests()
        .into_iter()
        .filter(|r| r.token.is_some())
        .collect();
    assert!(!sent.is_empty());
    assert!(sent.iter().all(|r| r.accepted), "{sent:?}");
}

/// For a while: the server is not started again, nothing asks the provider or
/// the resource for anything, and it still waits for a login.
async fn assert_no_restart_loop(host: &Host, events: &mut Events, provider: &OidcProvider) {
    let (record, requests) = (provider.record().await, provider.resource_requests().len());
    let later = drain(events, Duration::from_millis(600)).await;
    let restarts: Vec<&HostEvent> = later
        .iter()
        .filter(|e| {
            matches!(
                e,
                HostEvent::ServerStarting { .. } | HostEvent::ServerRestarting { .. }
            )
        })
        .collect();
    assert!(
        restarts.is_empty(),
        "restarted after login required: {restarts:?}"
    );
    assert_eq!(
        provider.record().await,
        record,
        "the provider was asked again"
    );
    assert_eq!(provider.resource_requests().len(), requests);
    assert!(matches!(
        state_of(host, "notes"),
        ServerState::LoginRequired { .. }
    ));
}

/// Which token of a login is revoked at the provider.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Revoked {
    RefreshToken,
    AccessToken,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_token_revoked_at_the_provider_means_login_required_without_a_restart_loop() {
    a_revoked_login_needs_a_person("oidc-revoked", Revoked::RefreshToken).await;
}

/// RFC 7009 §2.1 lets a server revoke the refresh tokens of a revoked access
/// token, and oidc-provider does: the refresh after the `401` is refused too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_access_token_revoked_at_the_provider_takes_the_login_with_it() {
    a_revoked_login_needs_a_person("oidc-revoked-access", Revoked::AccessToken).await;
}

async fn a_revoked_login_needs_a_person(tag: &str, which: Revoked) {
    let (provider, _home, notes) = notes_at_provider(tag).await;
    login(&provider, &notes).await;
    let (host, mut events) = start_host(protected("notes", &provider.mcp_url(), &notes)).await;
    next_ready(&mut events).await;
    call(&host, "mcp__notes__echo", json!({"text": "before"}))
        .await
        .unwrap();

    // Either way the provider honours neither token of the login any more;
    // a revoked refresh token revokes the grant itself.
    let tokens = stored(&notes);
    let client_id = tokens["client"]["client_id"].as_str().unwrap();
    let (access, refresh) = (
        text(&tokens, "access_token"),
        text(&tokens, "refresh_token"),
    );
    let token = match which {
        Revoked::RefreshToken => refresh,
        Revoked::AccessToken => access,
    };
    provider.revoke(token, client_id).await;
    assert!(!provider.active(access).await);
    assert!(!provider.active(refresh).await);
    let revoked_grants = u64::from(which == Revoked::RefreshToken);
    assert_eq!(provider.record().await.revoked_grants, revoked_grants);
    let error = call(&host, "mcp__notes__echo", json!({"text": "refused"}))
        .await
        .unwrap_err();
    assert!(is_login_required(&error, "notes"), "{error:?}");
    let event = wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, HostEvent::LoginRequired { .. })
    })
    .await;
    let HostEvent::LoginRequired { server, .. } = event else {
        unreachable!()
    };
    assert_eq!(&*server, "notes");
    // One refresh tried, and the provider's verdict taken as final.
    let record = provider.record().await;
    assert_eq!(
        record.refusals,
        [("refresh_token".to_string(), "invalid_grant".to_string())]
    );
    assert!(record.granted("refresh_token").is_empty());
    assert_no_restart_loop(&host, &mut events, &provider).await;

    // `mcpvisor login notes` again, a restart, and the server works.
    login(&provider, &notes).await;
    assert_eq!(host.restart("notes").await.unwrap(), 1);
    next_ready(&mut events).await;
    let r = call(&host, "mcp__notes__echo", json!({"text": "back"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "back");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_refreshing_at_once_at_the_provider_make_one_refresh() {
    let (provider, home, notes) = notes_at_provider("oidc-processes").await;
    provider.set_access_ttl(30).await;
    login(&provider, &notes).await;
    provider.set_access_ttl(3600).await;
    let spent = text(&stored(&notes), "refresh_token").to_string();
    // Long enough that the second process asks while the first one's refresh is out.
    provider.set_token_delay(Duration::from_millis(400)).await;

    let children: Vec<_> = (0..2)
        .map(|id| {
            // The same child as the fixture's test: only the server differs.
            refresh_child(&home.0, &provider.mcp_url(), id)
        })
        .collect();
    let ready = |id: usize| home.0.join(format!("ready-{id}")).exists();
    assert!(
        eventually(Duration::from_secs(60), || ready(0) && ready(1)).await,
        "the children did not start"
    );
    std::fs::write(home.0.join("go"), b"").unwrap();
    let mut tokens = Vec::new();
    for child in children {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "child failed:\n{stdout}\n{}\nprovider: {:?}",
            String::from_utf8_lossy(&out.stderr),
            provider.record().await
        );
        let token = stdout
            .lines()
            .find_map(|l| l.strip_prefix(TOKEN_LINE))
            .unwrap_or_else(|| panic!("no token printed:\n{stdout}"));
        tokens.push(token.to_string());
    }

    // One refresh at the provider, none refused (a second one with the spent
    // refresh token would be refused, and revoke the whole grant).
    let record = provider.record().await;
    assert_eq!(
        record.granted("refresh_token"),
        [&refresh_of(&provider.mcp_url())]
    );
    assert!(record.refusals.is_empty(), "{record:?}");
    assert_eq!(record.revoked_grants, 0);
    // Both hold the stored token; the store holds the rotated pair the provider honours.
    let now = stored(&notes);
    let (access, rotated) = (text(&now, "access_token"), text(&now, "refresh_token"));
    assert_eq!(tokens, [access, access]);
    assert!(provider.active(access).await);
    assert!(provider.active(rotated).await);
    assert!(!provider.active(&spent).await);
    let bearer = notes.bearer(&http()).await.unwrap().unwrap();
    assert_eq!(bearer.expose(), access);
    assert_eq!(provider.record().await.granted("refresh_token").len(), 1);
}
