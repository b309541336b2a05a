//! OAuth endpoints must be https, except on loopback. A [`Witness`] listening
//! over plain http on an address of this machine off loopback stands in for
//! the endpoint the metadata names: the login is refused with
//! `AuthError::InsecureEndpoint`, and nothing (no request, no client secret, no
//! code, no verifier) ever reaches it. The same witness on 127.0.0.1 does get
//! the request, which shows the witness records what reaches it.
//! Domains (`http://as.example.com/`): mcpvisor/tests/it/oauth_hardening.rs.

use std::net::{IpAddr, UdpSocket};
use std::sync::Arc;

use mcpvisor::SecretString;
use mcpvisor::auth::{AuthError, Grant, OAuth};
use serde_json::{Value, json};
use testkit::auth_server::client::{TempHome, failed_login, http, oauth, oauth_config};
use testkit::auth_server::hostile::Witness;
use testkit::auth_server::{AuthServer, ClientKind};

/// An IPv4 address of this machine off loopback: the source address the
/// kernel picks for a route out (a UDP `connect` sends nothing).
fn address_off_loopback() -> IpAddr {
    let socket = UdpSocket::bind("0.0.0.0:0").expect("a UDP socket");
    socket
        .connect("192.0.2.1:9")
        .or_else(|_| socket.connect("10.255.255.1:9"))
        .expect("this test needs a network interface besides loopback");
    let ip = socket.local_addr().expect("its address").ip();
    assert!(
        !ip.is_loopback() && !ip.is_unspecified(),
        "no address off loopback: {ip}"
    );
    ip
}

/// A client secret of this run alone, so finding it anywhere means it leaked.
fn random_secret() -> String {
    use std::hash::BuildHasher;
    let bits =
        std::collections::hash_map::RandomState::new().hash_one(std::time::SystemTime::now());
    format!("cs-https-only-{bits:016x}")
}

/// Asserts `error` refuses `what` at a URL on `witness`.
fn assert_insecure(error: &AuthError, what: &str, witness: &Witness) {
    match error {
        AuthError::InsecureEndpoint { what: w, url } => {
            assert_eq!(*w, what, "{error}");
            assert!(url.starts_with(&witness.base), "{url}");
        }
        other => panic!("expected InsecureEndpoint for the {what} endpoint, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_authorization_endpoint_off_loopback_is_never_visited() {
    // The control: on loopback, the headless driver does visit the witness.
    let near = Witness::start().await;
    let auth = AuthServer::start(ClientKind::Public).await;
    auth.set_server_metadata(
        "authorization_endpoint",
        json!(format!("{}/authorize", near.base)),
    );
    let home = TempHome::new("authorize-loopback");
    let _ = failed_login(&oauth("notes", &auth.mcp_url(), &home.0)).await;
    let seen = near.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].target.starts_with("/authorize?"), "{seen:?}");

    let far = Witness::start_on(address_off_loopback()).await;
    let auth = AuthServer::start(ClientKind::Public).await;
    auth.set_server_metadata(
        "authorization_endpoint",
        json!(format!("{}/authorize", far.base)),
    );
    let home = TempHome::new("authorize-far");
    let error = failed_login(&oauth("notes", &auth.mcp_url(), &home.0)).await;
    assert_insecure(&error, "authorization", &far);
    assert!(far.seen().is_empty(), "{:?}", far.seen());
    // Refused at discovery: no client was registered for a flow that cannot run.
    assert_eq!(auth.counts().registrations, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_code_or_client_secret_goes_to_a_plain_http_token_endpoint_off_loopback() {
    let far = Witness::start_on(address_off_loopback()).await;
    let secret = random_secret();
    let token_url = format!("{}/token", far.base);

    // Authorization code with a configured confidential client.
    let auth = AuthServer::start(ClientKind::Confidential).await;
    auth.set_server_metadata("token_endpoint", json!(token_url));
    let home = TempHome::new("token-far");
    let mut config = oauth_config("notes", &auth.mcp_url(), &home.0);
    config.client_id = Some("configured".into());
    config.client_secret = Some(SecretString::new(secret.clone()));
    let notes = Arc::new(OAuth::new(config).unwrap());
    let error = failed_login(&notes).await;
    assert_insecure(&error, "token", &far);
    assert_eq!(auth.counts().authorizations, 0, "no code was asked for");

    // Client credentials: the secret would go in the first request.
    let auth = AuthServer::start(ClientKind::Confidential).await;
    auth.set_server_metadata("token_endpoint", json!(token_url));
    let home = TempHome::new("credentials-far");
    let mut config = oauth_config("agent", &auth.mcp_url(), &home.0);
    config.grant = Grant::ClientSecret;
    config.client_id = Some("agent".into());
    config.client_secret = Some(SecretString::new(secret.clone()));
    let agent = Arc::new(OAuth::new(config).unwrap());
    let error = agent
        .bearer(&http())
        .await
        .expect_err("no token from an insecure endpoint");
    assert_insecure(&error, "token", &far);
    assert!(!format!("{error} {error:?}").contains(&secret));

    assert!(far.seen().is_empty(), "{:?}", far.seen());
    assert_eq!(auth.counts().token_requests, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_and_registration_off_loopback_over_plain_http_are_never_fetched() {
    let far = Witness::start_on(address_off_loopback()).await;
    let cases: [(&str, Value, &str); 2] = [
        (
            "registration_endpoint",
            json!(format!("{}/register", far.base)),
            "registration",
        ),
        (
            "authorization_servers",
            json!([format!("{}/", far.base)]),
            "authorization server",
        ),
    ];
    for (field, value, what) in cases {
        let auth = AuthServer::start(ClientKind::Public).await;
        if field == "authorization_servers" {
            auth.set_resource_metadata(field, value);
        } else {
            auth.set_server_metadata(field, value);
        }
        let home = TempHome::new("metadata-far");
        let error = failed_login(&oauth("notes", &auth.mcp_url(), &home.0)).await;
        assert_insecure(&error, what, &far);
        assert!(far.seen().is_empty(), "{field}: {:?}", far.seen());
    }
}
