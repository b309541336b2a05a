//! OAuth against an in-process authorization server and the MCP servers it
//! protects (tests/support/auth_server), through hosts: a revoked refresh token
//! means login required, with no restart loop; an unreachable token endpoint
//! does not (the login is kept).

mod support;

use std::time::Duration;

use mcpvisor::auth::{AuthError, AuthState};
use mcpvisor::transports::TransportError;
use mcpvisor::{CallError, Host, HostEvent, ServerState};
use serde_json::json;
use support::auth_server::client::{
    Events, TempHome, expires_at, login, oauth, protected, start_host, state_of, unix_now,
};
use support::auth_server::{AuthServer, ClientKind};
use support::{call, drain, next_ready, wait_for};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_refresh_token_means_login_required_without_a_restart_loop() {
    let auth = AuthServer::start(ClientKind::Public).await;
    let home = TempHome::new("revoked");
    let notes = oauth("notes", &auth.mcp_url(), &home.0);
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
    assert!(reason.contains("mcpvisor login notes"), "{reason}");
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
    let auth = AuthServer::start(ClientKind::Public).await;
    let home = TempHome::new("revoked-startup");
    let notes = oauth("notes", &auth.mcp_url(), &home.0);
    auth.set_access_ttl(30);
    login(&notes).await;
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
    assert!(reason.contains("mcpvisor login notes"), "{reason}");
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
    let auth = AuthServer::start(ClientKind::Public).await;
    let home = TempHome::new("outage");
    let notes = oauth("notes", &auth.mcp_url(), &home.0);
    auth.set_access_ttl(30);
    login(&notes).await;
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
    auth.set_access_ttl(3600);
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
    let auth = AuthServer::start(ClientKind::Public).await;
    let home = TempHome::new("outage-startup");
    let notes = oauth("notes", &auth.mcp_url(), &home.0);
    // Expired on arrival: nothing can be sent until a refresh succeeds.
    auth.set_access_ttl(0);
    login(&notes).await;
    auth.set_access_ttl(3600);
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
        matches!(&event, HostEvent::ServerRestarting { reason, .. } if reason.contains("token request failed")),
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
