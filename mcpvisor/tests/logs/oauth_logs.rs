//! OAuth tokens, codes and client secrets appear nowhere: not in logs at TRACE
//! (the HTTP stack's `log` records included), not in `Debug` or `Display` of the
//! facade, its configuration, statuses, events or errors. In the logs binary: the
//! capturing subscriber is global.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor::HttpSpec;
use mcpvisor::auth::{Grant, OAuth};
use mcpvisor::{Host, HostEvent, SecretString, ServerSpec};
use serde_json::json;
use testkit::auth_server::client::{TempHome, http, login_expiring_in, oauth_config};
use testkit::auth_server::{AuthServer, ClientKind, pkce};
use testkit::{call, drain, fast_options, next_ready, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_and_client_secrets_never_reach_logs_debug_or_errors() {
    testkit::logs::capture();

    // A confidential client: registration hands out a secret, sent with each
    // token request as client_secret_basic.
    let auth = AuthServer::start(ClientKind::Confidential).await;
    let home = TempHome::new("logs");
    let config = oauth_config("notes", &auth.mcp_url(), &home.0);
    let notes = Arc::new(OAuth::new(config.clone()).unwrap());
    login_expiring_in(&auth, &notes, 30).await;

    let spec = ServerSpec::http(
        "notes",
        HttpSpec {
            url: auth.mcp_url(),
            headers: Vec::new(),
            oauth: Some(notes.clone()),
        },
    );
    let mut shown = format!("{spec:?} {spec:#?}");
    let host = Host::start(vec![spec], fast_options()).await.unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    // Refreshed before use (the login's token was about to expire).
    call(&host, "mcp__notes__echo", json!({"text": "one"}))
        .await
        .unwrap();
    // Refreshed after a 401.
    auth.reject_access_tokens();
    call(&host, "mcp__notes__echo", json!({"text": "two"}))
        .await
        .unwrap();
    // A refresh refused: login required.
    auth.revoke_refresh_tokens();
    auth.reject_access_tokens();
    let error = call(&host, "mcp__notes__echo", json!({"text": "three"}))
        .await
        .unwrap_err();
    wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, HostEvent::LoginRequired { .. })
    })
    .await;
    let counts = auth.counts();
    assert_eq!(
        (
            counts.code_exchanges,
            counts.refresh_requests,
            counts.refresh_refusals
        ),
        (1, 3, 1)
    );
    shown.push_str(&format!("{error:?} {error} {:?}", host.servers()));
    shown.push_str(&format!("{notes:?} {notes:#?} {config:?} {config:#?}"));
    shown.push_str(&format!(
        "{:?} {:?}",
        notes.state(),
        notes.bearer(&http()).await
    ));
    host.shutdown().await;
    shown.push_str(&format!(
        "{:?}",
        drain(&mut events, Duration::from_millis(200)).await
    ));
    // A pre-registered secret in the configuration, random per run, and used:
    // the client credentials grant it pays for must issue a token.
    let configured = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("cs-configured-{:016x}", h.finish())
    };
    auth.preregister(
        "client-preregistered",
        Some(&configured),
        "http://127.0.0.1:1/unused",
    );
    let mut with_secret = oauth_config("agent", &auth.mcp_url(), &home.0);
    with_secret.grant = Grant::ClientSecret;
    with_secret.client_id = Some("client-preregistered".into());
    with_secret.client_secret = Some(SecretString::new(configured.clone()));
    let agent = OAuth::new(with_secret.clone()).unwrap();
    let token = agent.bearer(&http()).await.unwrap().unwrap();
    assert!(auth.accepts(token.expose(), &auth.mcp_url()));
    assert_eq!(auth.counts().client_credentials_grants, 1);
    shown.push_str(&format!("{with_secret:?} {agent:?} {:?}", agent.state()));

    let mut secrets: Vec<String> = auth.access_tokens();
    secrets.extend(auth.refresh_tokens());
    secrets.extend(auth.codes());
    let client_secrets = auth.client_secrets();
    assert_eq!(client_secrets.len(), 2, "the registered and the configured");
    assert!(client_secrets.contains(&configured));
    secrets.extend(client_secrets.iter().cloned());
    let registered = client_secrets.iter().find(|s| **s != configured).unwrap();
    // client_secret_basic carries the secret in base64.
    for (id, secret) in [
        ("client-1", registered),
        ("client-preregistered", &configured),
    ] {
        let basic = pkce::basic_authorization(id, secret);
        secrets.push(basic.trim_start_matches("Basic ").to_string());
    }
    // What the authorization URL and the code exchange carry: state, PKCE.
    for query in auth.authorize_requests() {
        secrets.extend(["state", "code_challenge"].map(|k| query[k].clone()));
    }
    for form in auth.token_requests() {
        secrets.extend(form.get("code_verifier").cloned());
    }
    assert!(secrets.len() > 12);
    assert_eq!(
        auth.access_tokens().len(),
        4,
        "three for notes, one for agent"
    );
    assert_eq!(auth.refresh_tokens().len(), 3);

    let logs = testkit::logs::captured();
    // The capture saw the OAuth facade, the transport and the HTTP stack at work.
    assert!(logs.contains("token refresh after 401 failed"), "{logs}");
    assert!(logs.contains("reqwest"), "{logs}");
    assert!(logs.contains("TRACE"), "{logs}");
    for secret in &secrets {
        assert!(
            !logs.contains(secret.as_str()),
            "the logs leak `{secret}`:\n{logs}"
        );
        assert!(
            !shown.contains(secret.as_str()),
            "leaks `{secret}`:\n{shown}"
        );
    }
}
