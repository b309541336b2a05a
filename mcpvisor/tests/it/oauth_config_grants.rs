//! The `.mcp.json` `oauth` block decides how a `Host` gets its tokens, seen at
//! the auth fixture: `clientSecret` with a `${VAR}` goes, expanded, as the
//! client credentials' Basic authentication; a `privateKeyFile` without a
//! `grant` means client credentials signed with ES256; no `oauth` block means
//! the authorization code, which waits for a person's login. Unsupported grants
//! and unset variables: cli/tests/it/config/hardening.rs; the assertions themselves:
//! mcpvisor/tests/it/oauth_client_assertion.rs.

use std::path::Path;
use std::time::Duration;

use mcpvisor::project::Project;
use mcpvisor::{CallOptions, Host, ServerState};
use serde_json::{Value, json};
use testkit::auth_server::client::{TempHome, wait_login_required};
use testkit::auth_server::client_assertion::KeyPair;
use testkit::auth_server::{AuthServer, ClientKind};
use testkit::fast_options;

/// A secret of this run alone.
fn random_secret() -> String {
    use std::hash::BuildHasher;
    let bits =
        std::collections::hash_map::RandomState::new().hash_one(std::time::SystemTime::now());
    format!("cs-config-{bits:016x}")
}

/// Writes `.mcp.json` with one entry `notes`, approves it, and starts a host
/// for it with variables from `env`.
async fn host_for(dir: &Path, entry: Value, env: &[(&str, &str)]) -> Host {
    let path = dir.join(".mcp.json");
    std::fs::write(&path, json!({"mcpServers": {"notes": entry}}).to_string()).unwrap();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let lookup = move |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let project = Project::open(&path, &dir.join("home")).unwrap();
    project.enable("notes", &lookup).unwrap();
    let (specs, problems) = project.enabled_specs(&lookup).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(specs.len(), 1);
    Host::start(specs, fast_options()).await.unwrap()
}

async fn echo(host: &Host, text: &str) -> String {
    host.call(
        "mcp__notes__echo",
        json!({ "text": text }),
        CallOptions::default(),
    )
    .await
    .unwrap()
    .text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_secret_variable_is_expanded_into_the_client_credentials_grant() {
    let auth = AuthServer::start(ClientKind::Confidential).await;
    let dir = TempHome::new("config-secret");
    let secret = random_secret();
    auth.preregister("agent", Some(&secret), "http://127.0.0.1:1/unused");
    let entry = json!({"type": "http", "url": auth.mcp_url(), "oauth": {
        "grant": "client_credentials", "clientId": "agent", "clientSecret": "${AGENT_SECRET}",
    }});
    let host = host_for(&dir.0, entry, &[("AGENT_SECRET", &secret)]).await;
    let statuses = host.wait_ready(Duration::from_secs(20)).await;
    assert_eq!(statuses[0].state, ServerState::Ready, "{statuses:?}");
    assert_eq!(echo(&host, "expanded").await, "expanded");
    host.shutdown().await;

    let counts = auth.counts();
    assert_eq!(
        (
            counts.client_credentials_grants,
            counts.authorizations,
            counts.registrations
        ),
        (1, 0, 0)
    );
    let form = &auth.token_requests()[0];
    assert_eq!(form["grant_type"], "client_credentials");
    // The fixture took it as Basic authentication; it is never in the form.
    assert!(form.values().all(|v| !v.contains(&secret)), "{form:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_key_file_alone_means_client_credentials_signed_with_es256() {
    let auth = AuthServer::start(ClientKind::Confidential).await;
    let dir = TempHome::new("config-key");
    let key = KeyPair::es256();
    auth.preregister_key("keyed", &key);
    std::fs::write(dir.0.join("agent.pem"), &key.private_pem).unwrap();
    let entry = json!({"type": "http", "url": auth.mcp_url(), "oauth": {
        "clientId": "keyed", "privateKeyFile": "agent.pem",
    }});
    let host = host_for(&dir.0, entry, &[]).await;
    let statuses = host.wait_ready(Duration::from_secs(20)).await;
    assert_eq!(statuses[0].state, ServerState::Ready, "{statuses:?}");
    assert_eq!(echo(&host, "keyed").await, "keyed");
    host.shutdown().await;
    assert_eq!(auth.counts().client_credentials_grants, 1);
    assert_eq!(auth.client_assertions().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_oauth_block_the_server_waits_for_a_login() {
    let auth = AuthServer::start(ClientKind::Public).await;
    let dir = TempHome::new("config-none");
    let entry = json!({"type": "http", "url": auth.mcp_url()});
    let host = host_for(&dir.0, entry, &[]).await;
    wait_login_required(&host, "notes").await;
    let counts = auth.counts();
    assert_eq!(
        (
            counts.token_requests,
            counts.registrations,
            counts.authorizations
        ),
        (0, 0, 0),
        "no grant runs without a person"
    );
    assert!(
        auth.resource_requests().iter().all(|r| r.token.is_none()),
        "no token was sent"
    );
    host.shutdown().await;
}
