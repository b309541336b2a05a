//! OAuth against an in-process authorization server and the MCP servers it
//! protects (testkit/src/auth_server), through hosts: a login with registration
//! whose tokens serve only their URL, refresh before expiry and after a `401`, a
//! revoked refresh token (login required, no restart loop), an unreachable
//! token endpoint (the login is kept), and the client credentials grant (no
//! login, and the grant again after a `401`). The token files: mcpvisor/tests/it/oauth_storage.rs.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor::TransportError;
use mcpvisor::auth::{AuthError, AuthState, AuthorizationDriver, Grant, HeadlessDriver, OAuth};
use mcpvisor::{CallError, Host, HostEvent, SecretString, ServerState};
use serde_json::json;
use testkit::auth_server::client::{
    Events, TempHome, expires_at, http, login, login_expiring_in, notes_server, oauth,
    oauth_config, protected, start_host, state_of, unix_now, wait_login_required,
};
use testkit::auth_server::{AuthServer, ClientKind, pkce};
use testkit::{call, drain, next_ready, wait_for};

fn is_login_required(e: &CallError, server: &str) -> bool {
    matches!(
        e,
        CallError::Transport {
            source: TransportError::Auth(AuthError::LoginRequired { server: s }),
            ..
        } if s == server
    )
}

/// Asserts that for a while the server is not started again, nothing asks the
/// authorization server or the resource for anything, and it still waits for a login.
async fn assert_no_restart_loop(host: &Host, events: &mut Events, auth: &AuthServer) {
    let (counts, requests) = (auth.counts(), auth.resource_requests().len());
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
        auth.counts(),
        counts,
        "the authorization server was asked again"
    );
    assert_eq!(auth.resource_requests().len(), requests);
    assert!(matches!(
        state_of(host, "notes"),
        ServerState::LoginRequired { .. }
    ));
}

#[test]
fn the_fixture_checks_pkce_as_rfc_7636_computes_it() {
    // RFC 7636, Appendix B.
    assert_eq!(
        pkce::s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    );
    // RFC 7617, section 2.
    assert_eq!(
        pkce::basic_authorization("Aladdin", "open sesame"),
        "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_registers_and_its_tokens_serve_only_their_url() {
    let (auth, home, notes) = notes_server(ClientKind::Public, "login").await;
    assert_eq!(notes.state().unwrap(), AuthState::LoggedOut);
    let driver = HeadlessDriver::new().unwrap();
    notes.login(&http(), &driver).await.unwrap();

    // Registered (RFC 7591) with the driver's redirect and the refresh grant.
    let registrations = auth.registrations();
    assert_eq!(registrations.len(), 1);
    assert_eq!(
        registrations[0]["redirect_uris"],
        json!([driver.redirect_uri().as_str()])
    );
    assert!(
        registrations[0]["grant_types"]
            .as_array()
            .unwrap()
            .contains(&json!("refresh_token"))
    );
    // One authorization with S256 and the resource, one code exchange the
    // server accepted (its verifier matched), both naming the same resource.
    let authorize = &auth.authorize_requests()[0];
    assert_eq!(authorize["code_challenge_method"], "S256");
    assert_eq!(authorize["resource"], auth.mcp_url());
    assert_eq!(authorize["scope"], "notes");
    let exchange = &auth.token_requests()[0];
    assert_eq!(exchange["grant_type"], "authorization_code");
    assert_eq!(exchange["resource"], auth.mcp_url());
    assert_eq!(auth.counts().code_exchanges, 1);
    assert!(expires_at(&notes) > unix_now() + 3000);
    let token = auth.access_tokens()[0].clone();
    // Discovery's unauthenticated probe.
    let probes = auth.resource_requests();
    assert!(probes.iter().all(|r| r.token.is_none() && !r.accepted));

    let (host, mut events) = start_host(protected("notes", &auth.mcp_url(), &notes)).await;
    next_ready(&mut events).await;
    let r = call(&host, "mcp__notes__echo", json!({"text": "logged in"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "logged in");
    let main: Vec<_> = auth.resource_requests().split_off(probes.len());
    assert!(main.len() >= 3, "initialize, initialized, tools/list, call");
    assert!(
        main.iter()
            .all(|r| r.path == "/mcp" && r.accepted && r.token.as_deref() == Some(&token))
    );
    host.shutdown().await;

    // The same name at another URL: another token file, no token, and the
    // tokens of the first URL never sent there.
    let other = oauth("notes", &auth.alt_mcp_url(), &home.0);
    assert_ne!(other.token_path(), notes.token_path());
    assert_eq!(other.state().unwrap(), AuthState::LoggedOut);
    assert!(other.bearer(&http()).await.unwrap().is_none());
    let (host, _events) = start_host(protected("notes", &auth.alt_mcp_url(), &other)).await;
    wait_login_required(&host, "notes").await;
    let alt: Vec<_> = auth
        .resource_requests()
        .into_iter()
        .skip(probes.len() + main.len())
        .filter(|r| r.path == "/alt/mcp")
        .collect();
    assert!(!alt.is_empty());
    assert!(alt.iter().all(|r| r.token.is_none() && !r.accepted));
    assert!(!auth.accepts(&token, &auth.alt_mcp_url()));
    assert!(auth.accepts(&token, &auth.mcp_url()));
    assert!(matches!(notes.state().unwrap(), AuthState::LoggedIn { .. }));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_expiring_within_the_margin_is_refreshed_before_use() {
    let (auth, _home, notes) = notes_server(ClientKind::Public, "before-expiry").await;
    // Valid for 30 s more: inside the 60 s margin.
    login_expiring_in(&auth, &notes, 30).await;
    assert!(expires_at(&notes) <= unix_now() + 30);
    let expiring = auth.access_tokens()[0].clone();
    assert!(auth.accepts(&expiring, &auth.mcp_url()));
    let probes = auth.resource_requests().len();

    let (host, mut events) = start_host(protected("notes", &auth.mcp_url(), &notes)).await;
    next_ready(&mut events).await;
    let r = call(&host, "mcp__notes__echo", json!({"text": "fresh"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "fresh");

    assert_eq!(auth.counts().refresh_requests, 1);
    assert_eq!(auth.counts().refresh_refusals, 0);
    let tokens = auth.access_tokens();
    assert_eq!(tokens.len(), 2);
    let refreshed = &tokens[1];
    // The expiring token was never sent: every request carried the new one.
    let seen = auth.resource_requests().split_off(probes);
    assert!(!seen.is_empty());
    assert!(
        seen.iter()
            .all(|r| r.accepted && r.token.as_ref() == Some(refreshed)),
        "{seen:?}"
    );
    assert!(expires_at(&notes) > unix_now() + 3000);
    let bearer = notes.bearer(&http()).await.unwrap().unwrap();
    assert_eq!(bearer.expose(), refreshed);
    assert_eq!(auth.counts().refresh_requests, 1);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_is_refreshed_once_and_the_call_succeeds() {
    let (auth, _home, notes) = notes_server(ClientKind::Public, "on-401").await;
    login(&notes).await;
    let (host, mut events) = start_host(protected("notes", &auth.mcp_url(), &notes)).await;
    next_ready(&mut events).await;
    call(&host, "mcp__notes__echo", json!({"text": "before"}))
        .await
        .unwrap();
    assert_eq!(auth.counts().refresh_requests, 0);
    let first = auth.access_tokens()[0].clone();

    // Still an hour to live, but the resource now answers 401 invalid_token.
    auth.reject_access_tokens();
    let seen_before = auth.resource_requests().len();
    let r = call(&host, "mcp__notes__echo", json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "after");
    assert_eq!(auth.counts().refresh_requests, 1);
    assert_eq!(auth.counts().refresh_refusals, 0);
    let second = auth.access_tokens()[1].clone();
    let seen: Vec<_> = auth.resource_requests().split_off(seen_before);
    let tried: Vec<(Option<&str>, bool)> = seen
        .iter()
        .map(|r| (r.token.as_deref(), r.accepted))
        .collect();
    assert_eq!(
        tried,
        [(Some(first.as_str()), false), (Some(second.as_str()), true)]
    );
    assert!(
        seen.iter()
            .all(|r| r.rpc_method.as_deref() == Some("tools/call"))
    );

    call(&host, "mcp__notes__echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(auth.counts().refresh_requests, 1);
    assert_eq!(state_of(&host, "notes"), ServerState::Ready);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_refresh_token_means_login_required_without_a_restart_loop() {
    let (auth, _home, notes) = notes_server(ClientKind::Public, "revoked").await;
    login(&notes).await;
    let (host, mut events) = start_host(protected("notes", &auth.mcp_url(), &notes)).await;
    next_ready(&mut events).await;
    call(&host, "mcp__notes__echo", json!({"text": "before"}))
        .await
        .unwrap();

    auth.revoke_refresh_tokens();
    auth.reject_access_tokens();
    let error = call(&host, "mcp__notes__echo", json!({"text": "refused"}))
        .await
        .unwrap_err();
    assert!(is_login_required(&error, "notes"), "{error:?}");
    assert!(
        error.to_string().contains("mcpvisor login notes"),
        "{error}"
    );
    let event = wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, HostEvent::LoginRequired { .. })
    })
    .await;
    let HostEvent::LoginRequired { server, reason } = event else {
        unreachable!()
    };
    assert_eq!(&*server, "notes");
    assert!(
        reason.to_string().contains("mcpvisor login notes"),
        "{reason}"
    );
    assert_eq!(auth.counts().refresh_requests, 1);
    assert_eq!(auth.counts().refresh_refusals, 1);
    assert_no_restart_loop(&host, &mut events, &auth).await;
    let error = call(&host, "mcp__notes__echo", json!({"text": "down"}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            CallError::UnknownTool(_) | CallError::ServerUnavailable { .. }
        ),
        "{error:?}"
    );

    // `mcpvisor login notes`, then a restart, and the server works again.
    login(&notes).await;
    assert_eq!(host.restart("notes").await.unwrap(), 1);
    next_ready(&mut events).await;
    let r = call(&host, "mcp__notes__echo", json!({"text": "back"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "back");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_refresh_token_at_startup_waits_for_a_login() {
    let (auth, _home, notes) = notes_server(ClientKind::Public, "revoked-startup").await;
    login_expiring_in(&auth, &notes, 30).await;
    auth.revoke_refresh_tokens();

    let (host, mut events) = start_host(protected("notes", &auth.mcp_url(), &notes)).await;
    let event = wait_for(&mut events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::LoginRequired { .. })
    })
    .await;
    let HostEvent::LoginRequired { server, reason } = event else {
        unreachable!()
    };
    assert_eq!(&*server, "notes");
    assert!(
        reason.to_string().contains("mcpvisor login notes"),
        "{reason}"
    );
    assert_eq!(
        state_of(&host, "notes"),
        ServerState::LoginRequired { reason }
    );
    assert_eq!(auth.counts().refresh_requests, 1);
    assert_eq!(auth.counts().refresh_refusals, 1);
    assert_no_restart_loop(&host, &mut events, &auth).await;
    // `wait_ready` counts a server that needs a login as settled.
    let statuses = host.wait_ready(Duration::from_secs(10)).await;
    assert!(matches!(
        statuses[0].state,
        ServerState::LoginRequired { .. }
    ));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_endpoint_outage_keeps_the_login_until_it_is_back() {
    let (auth, _home, notes) = notes_server(ClientKind::Public, "outage").await;
    login_expiring_in(&auth, &notes, 30).await;
    let expiring = auth.access_tokens()[0].clone();
    auth.set_token_outage(true);

    // The refresh due before expiry cannot happen; the token still works meanwhile.
    let (host, mut events) = start_host(protected("notes", &auth.mcp_url(), &notes)).await;
    next_ready(&mut events).await;
    call(&host, "mcp__notes__echo", json!({"text": "during"}))
        .await
        .unwrap();
    assert!(auth.counts().refresh_requests >= 1);
    assert_eq!(auth.access_tokens(), [expiring]);
    assert!(expires_at(&notes) <= unix_now() + 30);

    // Refused by the resource while the token endpoint is down: that call fails,
    // the login stays, and the server keeps running.
    auth.reject_access_tokens();
    let error = call(&host, "mcp__notes__echo", json!({"text": "refused"}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            CallError::Transport {
                source: TransportError::Auth(AuthError::Token(_)),
                ..
            }
        ),
        "{error:?}"
    );
    assert!(notes.token_path().exists());
    assert!(matches!(notes.state().unwrap(), AuthState::LoggedIn { .. }));
    assert_eq!(state_of(&host, "notes"), ServerState::Ready);

    // Back up: the next call refreshes with the kept refresh token.
    auth.set_token_outage(false);
    let r = call(&host, "mcp__notes__echo", json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "after");
    assert_eq!(auth.counts().refresh_refusals, 0);
    assert_eq!(auth.access_tokens().len(), 2);
    assert!(expires_at(&notes) > unix_now() + 3000);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_started_during_a_token_endpoint_outage_retries_without_a_login() {
    let (auth, _home, notes) = notes_server(ClientKind::Public, "outage-startup").await;
    // Expired on arrival: nothing can be sent until a refresh succeeds.
    login_expiring_in(&auth, &notes, 0).await;
    auth.set_token_outage(true);

    let (host, mut events) = start_host(protected("notes", &auth.mcp_url(), &notes)).await;
    let event = wait_for(&mut events, Duration::from_secs(20), |e| {
        matches!(
            e,
            HostEvent::ServerRestarting { .. } | HostEvent::LoginRequired { .. }
        )
    })
    .await;
    assert!(
        matches!(&event, HostEvent::ServerRestarting { reason, .. } if reason.to_string().contains("token request failed")),
        "{event:?}"
    );
    assert!(notes.token_path().exists());

    auth.set_token_outage(false);
    next_ready(&mut events).await;
    let r = call(&host, "mcp__notes__echo", json!({"text": "recovered"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "recovered");
    assert_eq!(auth.counts().refresh_refusals, 0);
    assert_eq!(auth.counts().code_exchanges, 1, "no second login");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_need_no_login_and_are_granted_again_after_a_401() {
    let auth = AuthServer::start(ClientKind::Confidential).await;
    let home = TempHome::new("client-credentials");
    // Random per run: the token file's check below cannot pass on an old value.
    let secret = &{
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("cs-agent-{:016x}", h.finish())
    };
    auth.preregister("agent", Some(secret), "http://127.0.0.1:1/unused");
    let mut config = oauth_config("notes", &auth.mcp_url(), &home.0);
    config.grant = Grant::ClientSecret;
    config.client_id = Some("agent".into());
    config.client_secret = Some(SecretString::new(secret));
    let notes = Arc::new(OAuth::new(config).unwrap());
    assert_eq!(notes.state().unwrap(), AuthState::LoggedOut);

    // No login: the first request's bearer token comes from the grant.
    let (host, mut events) = start_host(protected("notes", &auth.mcp_url(), &notes)).await;
    next_ready(&mut events).await;
    let r = call(&host, "mcp__notes__echo", json!({"text": "unattended"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "unattended");
    let counts = auth.counts();
    assert_eq!(
        (
            counts.client_credentials_grants,
            counts.registrations,
            counts.authorizations
        ),
        (1, 0, 0)
    );
    let first = auth.access_tokens()[0].clone();
    assert_eq!(auth.token_requests()[0]["resource"], auth.mcp_url());
    assert!(matches!(
        notes.state().unwrap(),
        AuthState::LoggedIn {
            refreshable: false,
            ..
        }
    ));
    let stored = std::fs::read_to_string(notes.token_path()).unwrap();
    assert!(!stored.contains(secret), "the configured secret stays out");

    // Refused: nothing to refresh, so the grant runs again and the call succeeds.
    auth.reject_access_tokens();
    let r = call(&host, "mcp__notes__echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "again");
    assert_eq!(auth.counts().client_credentials_grants, 2);
    assert_eq!(auth.counts().refresh_requests, 0);
    let second = auth.access_tokens()[1].clone();
    assert_ne!(second, first);
    assert!(
        std::fs::read_to_string(notes.token_path())
            .unwrap()
            .contains(&second)
    );
    assert_eq!(state_of(&host, "notes"), ServerState::Ready);
    host.shutdown().await;
}
