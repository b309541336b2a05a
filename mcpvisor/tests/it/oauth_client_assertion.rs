//! `private_key_jwt` client credentials (RFC 7523) from a `.mcp.json` entry
//! with `privateKeyFile` and `signingAlgorithm`, ES256 and RS256, through a
//! `Host`: the fixture verifies each assertion with the registered public key
//! and its claims (iss = sub = client id, aud = the issuer, exp, a `jti` never
//! seen before), and a key the fixture does not know gets no token.

use std::path::Path;
use std::time::Duration;

use mcpvisor::auth::AuthError;
use mcpvisor::project::Project;
use mcpvisor::{CallOptions, Host, ServerState};
use serde_json::json;
use testkit::auth_server::client::{TempHome, http, unix_now};
use testkit::auth_server::client_assertion::KeyPair;
use testkit::auth_server::{AuthServer, ClientKind};
use testkit::fast_options;

/// A project whose one entry, `notes`, logs in to `auth` as `client_id` with
/// the key in `key.pem` beside the `.mcp.json`; enabled.
fn project(dir: &Path, auth: &AuthServer, client_id: &str, key: &KeyPair) -> Project {
    std::fs::write(dir.join("key.pem"), &key.private_pem).unwrap();
    let config = json!({"mcpServers": {"notes": {
        "type": "http",
        "url": auth.mcp_url(),
        "oauth": {
            "grant": "client_credentials",
            "clientId": client_id,
            "privateKeyFile": "key.pem",
            "signingAlgorithm": key.algorithm,
        },
    }}});
    let path = dir.join(".mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let project = Project::open(&path, &dir.join("home")).unwrap();
    project.enable("notes", &|_| None).unwrap();
    project
}

async fn signed_assertions_are_verified_and_each_is_fresh(key: KeyPair) {
    let auth = AuthServer::start(ClientKind::Confidential).await;
    let dir = TempHome::new(&format!("assertion-{}", key.algorithm));
    let client_id = format!("agent-{}", key.algorithm.to_lowercase());
    auth.preregister_key(&client_id, &key);
    let project = project(&dir.0, &auth, &client_id, &key);
    let (specs, problems) = project.enabled_specs(&|_| None).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let host = Host::start(specs, fast_options()).await.unwrap();
    let statuses = host.wait_ready(Duration::from_secs(20)).await;
    assert_eq!(statuses[0].state, ServerState::Ready, "{statuses:?}");

    let echo = |text: &'static str| {
        host.call(
            "mcp__notes__echo",
            json!({ "text": text }),
            CallOptions::default(),
        )
    };
    assert_eq!(echo("signed").await.unwrap().text(), "signed");
    // A refused token: the grant runs again, with a new assertion.
    auth.reject_access_tokens();
    assert_eq!(echo("again").await.unwrap().text(), "again");
    host.shutdown().await;

    assert_eq!(auth.counts().client_credentials_grants, 2);
    let forms = auth.token_requests();
    assert!(
        forms
            .iter()
            .all(|f| f.get("client_assertion_type").map(String::as_str)
                == Some(testkit::auth_server::client_assertion::JWT_BEARER)),
        "{forms:?}"
    );
    let claims = auth.client_assertions();
    assert_eq!(claims.len(), 2, "{claims:?}");
    for c in &claims {
        assert_eq!(c["iss"], client_id.as_str(), "{c}");
        assert_eq!(c["sub"], client_id.as_str(), "{c}");
        assert_eq!(c["aud"], auth.base.as_str(), "{c}");
        let exp = c["exp"].as_u64().expect("exp");
        assert!(exp > unix_now(), "{c}");
        assert!(exp <= unix_now() + 3600, "an assertion lives minutes: {c}");
    }
    assert_ne!(claims[0]["jti"], claims[1]["jti"]);
    // The private key never leaves the host, nor goes to the token file.
    let pem_body = key.private_pem.lines().nth(1).unwrap();
    assert!(
        forms
            .iter()
            .all(|f| f.values().all(|v| !v.contains(pem_body)))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn es256_assertions_are_verified_and_each_is_fresh() {
    signed_assertions_are_verified_and_each_is_fresh(KeyPair::es256()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rs256_assertions_are_verified_and_each_is_fresh() {
    signed_assertions_are_verified_and_each_is_fresh(KeyPair::rs256()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assertion_signed_with_another_key_gets_no_token() {
    let auth = AuthServer::start(ClientKind::Confidential).await;
    let dir = TempHome::new("assertion-other-key");
    auth.preregister_key("agent", &KeyPair::rs256());
    let project = project(&dir.0, &auth, "agent", &KeyPair::rs256());
    let notes = project.oauth("notes", &|_| None).unwrap();
    let error = notes.bearer(&http()).await.expect_err("no token");
    assert!(
        matches!(error, AuthError::Token(_) | AuthError::LoginRequired { .. }),
        "{error:?}"
    );
    assert!(format!("{error}").contains("invalid_client"), "{error}");
    assert_eq!(auth.counts().token_requests, 1, "the request was made");
    assert_eq!(auth.counts().client_credentials_grants, 0);
    assert!(auth.client_assertions().is_empty());
}
