//! OAuth against a hostile authorization server (testkit/src/auth_server,
//! made to misbehave through its `hostile` knobs) and a second origin that
//! records whatever reaches it: no OAuth request follows a redirect, every one
//! is bounded in time, discovery checks issuers, https and PKCE, and neither the
//! `resource` parameter nor an error carries a URL's query. The token files and
//! the loopback callback: mcpvisor/tests/it/oauth_storage_hardening.rs.

use std::time::{Duration, Instant};

use mcpvisor::auth::{AuthError, AuthState};
use serde_json::{Value, json};
use testkit::auth_server::client::{
    TempHome, failed_login, http, login, login_expiring_in, notes_server, oauth,
};
use testkit::auth_server::hostile::{Endpoint, Misbehaviour, Witness};
use testkit::auth_server::{AuthServer, ClientKind};

/// Asserts `error` is a redirect with `status` to the witness, shown without its query.
fn assert_redirected(error: &AuthError, status: u16, witness: &Witness, path: &str) {
    match error {
        AuthError::Redirected {
            status: s,
            location,
            ..
        } => {
            assert_eq!(*s, status, "{error}");
            assert_eq!(location, &format!("{}{path}?[redacted]", witness.base));
        }
        other => panic!("expected a redirect error, got {other:?}"),
    }
    let text = format!("{error} {error:?}");
    assert!(text.contains(&status.to_string()), "{text}");
    assert!(!text.contains("q-secret"), "the query leaks: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_302_on_resource_metadata_never_takes_discovery_to_another_origin() {
    let auth = AuthServer::start(ClientKind::Public).await;
    let witness = Witness::start().await;
    let path = "/.well-known/oauth-protected-resource/mcp";
    auth.misbehave(
        Endpoint::ResourceMetadata,
        Misbehaviour::Redirect(302, format!("{}{path}?leak=q-secret-1", witness.base)),
    );
    let home = TempHome::new("prm-302");
    let notes = oauth("notes", &auth.mcp_url(), &home.0);

    let error = failed_login(&notes).await;
    assert_redirected(&error, 302, &witness, path);
    assert!(witness.seen().is_empty(), "{:?}", witness.seen());
    assert_eq!(auth.counts().registrations, 0);
    assert_eq!(notes.state().unwrap(), AuthState::LoggedOut);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_307_on_the_token_endpoint_never_resends_a_verifier_or_refresh_token() {
    let (auth, _home, notes) = notes_server(ClientKind::Confidential, "token-307").await;
    let witness = Witness::start().await;
    login_expiring_in(&auth, &notes, 30).await;
    let expiring = auth.access_tokens()[0].clone();
    auth.misbehave(
        Endpoint::Token,
        Misbehaviour::Redirect(307, format!("{}/token?x=q-secret-2", witness.base)),
    );

    // The refresh due before expiry is redirected: not followed, and the
    // current token serves until it expires.
    let bearer = notes.bearer(&http()).await.unwrap().unwrap();
    assert_eq!(bearer.expose(), expiring);
    assert_eq!(auth.counts().token_requests, 1, "only the login's exchange");
    // A code exchange redirected: no login, and the code verifier went nowhere.
    let other_home = TempHome::new("token-307-login");
    let error = failed_login(&oauth("notes", &auth.mcp_url(), &other_home.0)).await;
    assert_redirected(&error, 307, &witness, "/token");
    assert_eq!(auth.counts().code_exchanges, 1);
    assert!(witness.seen().is_empty(), "{:?}", witness.seen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_on_server_metadata_and_registration_are_typed_errors() {
    let witness = Witness::start().await;
    for (endpoint, status, path) in [
        (
            Endpoint::ServerMetadata,
            301,
            "/.well-known/oauth-authorization-server",
        ),
        (Endpoint::Registration, 308, "/register"),
    ] {
        let auth = AuthServer::start(ClientKind::Public).await;
        auth.misbehave(
            endpoint,
            Misbehaviour::Redirect(status, format!("{}{path}?q=q-secret-3", witness.base)),
        );
        let home = TempHome::new("redirects");
        let error = failed_login(&oauth("notes", &auth.mcp_url(), &home.0)).await;
        assert_redirected(&error, status, &witness, path);
        assert_eq!(auth.counts().authorizations, 0);
    }
    assert!(witness.seen().is_empty(), "{:?}", witness.seen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_endpoints_that_never_answer_time_out_typed() {
    let (metadata, token) = tokio::join!(
        AuthServer::start(ClientKind::Public),
        AuthServer::start(ClientKind::Public)
    );
    metadata.misbehave(Endpoint::ServerMetadata, Misbehaviour::Hang);
    token.misbehave(Endpoint::Token, Misbehaviour::Hang);
    let (home_a, home_b) = (TempHome::new("hang-a"), TempHome::new("hang-b"));
    let (a, b) = (
        oauth("notes", &metadata.mcp_url(), &home_a.0),
        oauth("notes", &token.mcp_url(), &home_b.0),
    );
    let started = Instant::now();
    let (ea, eb) = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::join!(failed_login(&a), failed_login(&b))
    })
    .await
    .expect("OAuth requests are bounded in time");
    let elapsed = started.elapsed();
    for e in [&ea, &eb] {
        assert!(
            matches!(e, AuthError::TimedOut { after, .. } if *after == Duration::from_secs(15)),
            "{e:?}"
        );
    }
    assert!(
        ea.to_string().contains("oauth-authorization-server"),
        "{ea}"
    );
    assert!(eb.to_string().contains("/token"), "{eb}");
    assert!(elapsed >= Duration::from_secs(14), "{elapsed:?}");
    assert_eq!(token.counts().code_exchanges, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_naming_another_issuer_is_refused() {
    let witness = Witness::start().await;
    for issuer in [
        witness.base.clone(),
        "http://127.0.0.1:1/tenant".to_string(),
    ] {
        let auth = AuthServer::start(ClientKind::Public).await;
        auth.set_server_metadata("issuer", json!(issuer));
        let home = TempHome::new("issuer");
        let error = failed_login(&oauth("notes", &auth.mcp_url(), &home.0)).await;
        assert!(
            matches!(&error, AuthError::IssuerMismatch { context, found: Some(f), .. }
                if *context == "authorization-server metadata" && *f == mcpvisor::auth::display_url(&issuer)),
            "{error:?}"
        );
        assert_eq!(auth.counts().registrations, 0);
    }
    // Metadata without an issuer is refused as well.
    let auth = AuthServer::start(ClientKind::Public).await;
    auth.set_server_metadata("issuer", Value::Null);
    let home = TempHome::new("no-issuer");
    let error = failed_login(&oauth("notes", &auth.mcp_url(), &home.0)).await;
    assert!(
        matches!(error, AuthError::IssuerMismatch { found: None, .. }),
        "{error:?}"
    );
    assert!(witness.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_authorization_servers_and_endpoints_off_loopback_are_refused() {
    let cases: [(&str, Value, &str); 3] = [
        (
            "prm",
            json!(["http://as.example.com/"]),
            "authorization server",
        ),
        (
            "token_endpoint",
            json!("http://as.example.com/token"),
            "token",
        ),
        (
            "registration_endpoint",
            json!("http://as.example.com/register"),
            "registration",
        ),
    ];
    for (field, value, what) in cases {
        let auth = AuthServer::start(ClientKind::Public).await;
        if field == "prm" {
            auth.set_resource_metadata("authorization_servers", value);
        } else {
            auth.set_server_metadata(field, value);
        }
        let home = TempHome::new("https");
        let error = failed_login(&oauth("notes", &auth.mcp_url(), &home.0)).await;
        assert!(
            matches!(&error, AuthError::InsecureEndpoint { what: w, url } if *w == what && url.starts_with("http://as.example.com/")),
            "{field}: {error:?}"
        );
        assert_eq!(auth.counts().registrations, 0, "{field}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_needs_pkce_s256_in_the_metadata() {
    for methods in [Value::Null, json!(["plain"]), json!([])] {
        let auth = AuthServer::start(ClientKind::Public).await;
        auth.set_server_metadata("code_challenge_methods_supported", methods.clone());
        let home = TempHome::new("pkce");
        let error = failed_login(&oauth("notes", &auth.mcp_url(), &home.0)).await;
        assert!(
            matches!(error, AuthError::PkceUnsupported { .. }),
            "{methods}: {error:?}"
        );
        assert_eq!(auth.counts().authorizations, 0, "{methods}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callback_issuer_is_checked_where_the_server_advertises_it() {
    let auth = AuthServer::start(ClientKind::Public).await;
    auth.set_server_metadata(
        "authorization_response_iss_parameter_supported",
        json!(true),
    );
    let refused = |found: Option<&str>| {
        let found = found.map(str::to_string);
        move |e: &AuthError| {
            matches!(e, AuthError::IssuerMismatch { context, found: f, .. }
                if *context == "authorization response" && *f == found)
        }
    };
    // Advertised but missing.
    let home = TempHome::new("iss-missing");
    let error = failed_login(&oauth("notes", &auth.mcp_url(), &home.0)).await;
    assert!(refused(None)(&error), "{error:?}");
    // Another issuer's response (a mix-up).
    auth.set_callback_params(&[("iss", "http://127.0.0.1:1")]);
    let home = TempHome::new("iss-other");
    let error = failed_login(&oauth("notes", &auth.mcp_url(), &home.0)).await;
    assert!(refused(Some("http://127.0.0.1:1/"))(&error), "{error:?}");
    assert_eq!(auth.counts().code_exchanges, 0, "no code was exchanged");
    // The right one.
    auth.set_callback_params(&[("iss", &auth.base)]);
    let home = TempHome::new("iss-ok");
    let notes = oauth("notes", &auth.mcp_url(), &home.0);
    login(&notes).await;
    assert_eq!(auth.counts().code_exchanges, 1);

    // Not advertised: an `iss` that is present is still compared.
    let auth = AuthServer::start(ClientKind::Public).await;
    auth.set_callback_params(&[("iss", "http://127.0.0.1:1")]);
    let home = TempHome::new("iss-unadvertised");
    let error = failed_login(&oauth("notes", &auth.mcp_url(), &home.0)).await;
    assert!(refused(Some("http://127.0.0.1:1/"))(&error), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_resource_metadata_the_server_origin_is_the_issuer() {
    // 2025-03-26: no protected-resource metadata; the authorization server's
    // metadata at the MCP server's root is used, and its issuer must be on that origin.
    let auth = AuthServer::start(ClientKind::Public).await;
    auth.misbehave(Endpoint::ResourceMetadata, Misbehaviour::Missing);
    let home = TempHome::new("legacy");
    let notes = oauth("notes", &auth.mcp_url(), &home.0);
    login(&notes).await;
    assert_eq!(auth.authorize_requests()[0]["resource"], auth.mcp_url());

    let witness = Witness::start().await;
    auth.set_server_metadata("issuer", json!(witness.base));
    let home = TempHome::new("legacy-other-issuer");
    let error = failed_login(&oauth("notes", &auth.mcp_url(), &home.0)).await;
    assert!(
        matches!(error, AuthError::IssuerMismatch { .. }),
        "{error:?}"
    );
    assert!(witness.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resource_parameter_carries_no_query_or_fragment() {
    let auth = AuthServer::start(ClientKind::Public).await;
    // Without a `resource` in the metadata, the server URL is the resource.
    auth.set_resource_metadata("resource", Value::Null);
    let home = TempHome::new("resource-query");
    let url = format!("{}?api_key=q-secret-4#part", auth.mcp_url());
    let notes = oauth("notes", &url, &home.0);
    login(&notes).await;

    assert_eq!(auth.authorize_requests()[0]["resource"], auth.mcp_url());
    assert_eq!(auth.token_requests()[0]["resource"], auth.mcp_url());
    let sent = format!(
        "{:?} {:?} {:?}",
        auth.authorize_requests(),
        auth.token_requests(),
        auth.registrations()
    );
    assert!(!sent.contains("q-secret-4"), "{sent}");
    let stored = std::fs::read_to_string(notes.token_path()).unwrap();
    assert!(!stored.contains("q-secret-4"), "{stored}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_mismatch_is_reported_without_queries() {
    let auth = AuthServer::start(ClientKind::Public).await;
    auth.set_resource_metadata(
        "resource",
        json!("https://evil.example.com/mcp?t=q-secret-5"),
    );
    let home = TempHome::new("mismatch");
    let url = format!("{}?api_key=q-secret-6", auth.mcp_url());
    let error = failed_login(&oauth("notes", &url, &home.0)).await;
    let AuthError::ResourceMismatch { expected, found } = &error else {
        panic!("expected a resource mismatch, got {error:?}");
    };
    assert_eq!(expected, &auth.mcp_url());
    assert_eq!(found, "https://evil.example.com/mcp?[redacted]");
    let text = format!("{error} {error:?}");
    assert!(!text.contains("q-secret"), "{text}");
}
