//! Enterprise-managed authorization against the in-process authorization server
//! and its identity provider (testkit/src/auth_server/idp.rs), configured as
//! an `.mcp.json` `oauth.identityProvider` block: the ID token from a file is
//! exchanged at the identity provider (RFC 8693) for an ID-JAG, which the
//! authorization server redeems with the JWT bearer grant (RFC 7523); a
//! refused access token means a new exchange with the ID token as the file
//! holds it then; refusals and a lying identity provider are typed errors.
//! No ID token, ID-JAG, secret or access token reaches the logs (captured at
//! TRACE for the whole binary), an error, `Debug` or the token file.

use std::path::Path;
use std::sync::Arc;

use mcpvisor::auth::{AuthError, HeadlessDriver, OAuth, OAuthConfig};
use mcpvisor::config::McpConfig;
use serde_json::json;
use testkit::auth_server::client::{TempHome, http, protected, start_host};
use testkit::auth_server::{AuthServer, ClientKind, pkce};
use testkit::{call, next_ready};

fn capture_logs() {
    testkit::logs::capture();
}

fn logs() -> String {
    testkit::logs::captured()
}

const CLIENT_ID: &str = "agent";
const CLIENT_SECRET: &str = "cs-enterprise-7f3a";

/// The `notes` entry of an `.mcp.json` in `dir` with `identity_provider` as its
/// identity provider, resolved as the CLI resolves it (`AS_SECRET` is the
/// authorization server's client secret).
fn configured(dir: &Path, auth: &AuthServer, identity_provider: serde_json::Value) -> OAuthConfig {
    let file = json!({"mcpServers": {"notes": {
        "type": "http",
        "url": auth.mcp_url(),
        "oauth": {
            "clientId": CLIENT_ID,
            "clientSecret": "${AS_SECRET}",
            "identityProvider": identity_provider,
        },
    }}});
    let path = dir.join(".mcp.json");
    std::fs::write(&path, file.to_string()).unwrap();
    let cfg = McpConfig::load(&path).unwrap();
    let lookup = |name: &str| (name == "AS_SECRET").then(|| CLIENT_SECRET.to_string());
    cfg.servers["notes"]
        .oauth_config(&lookup, &cfg.base_dir(), &dir.join("home"))
        .unwrap_or_else(|p| panic!("{p:?}"))
        .expect("an HTTP entry has OAuth")
}

fn assert_hidden(secrets: &[&str], shown: &str, what: &str) {
    for secret in secrets {
        assert!(!shown.contains(secret), "{what} shows a secret: {shown}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_token_becomes_an_access_token_and_a_refused_one_a_new_exchange() {
    capture_logs();
    let auth = AuthServer::start(ClientKind::Confidential).await;
    auth.preregister(CLIENT_ID, Some(CLIENT_SECRET), "http://127.0.0.1:1/unused");
    let home = TempHome::new("id-jag");
    let first_id_token = auth.issue_id_token("ada@example.com");
    std::fs::write(home.0.join("id_token"), format!("{first_id_token}\n")).unwrap();
    let config = configured(
        &home.0,
        &auth,
        json!({"issuer": auth.idp_issuer(), "clientId": "mcpvisor-at-idp", "idTokenFile": "id_token"}),
    );
    let shown_config = format!("{config:?}");
    let notes = Arc::new(OAuth::new(config).unwrap());

    let (host, mut events) = start_host(protected("notes", &auth.mcp_url(), &notes)).await;
    next_ready(&mut events).await;
    let r = call(&host, "mcp__notes__echo", json!({"text": "managed"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "managed");

    // At the identity provider: the ID token for an ID-JAG for this
    // authorization server and this resource, the IdP client named.
    let exchanges = auth.exchanges();
    assert_eq!(exchanges.len(), 1);
    let form = &exchanges[0].form;
    assert_eq!(form["subject_token"], first_id_token);
    assert_eq!(
        form["subject_token_type"],
        "urn:ietf:params:oauth:token-type:id_token"
    );
    assert_eq!(
        form["requested_token_type"],
        "urn:ietf:params:oauth:token-type:id-jag"
    );
    assert_eq!(form["audience"], auth.base);
    assert_eq!(form["resource"], auth.mcp_url());
    assert_eq!(form["client_id"], "mcpvisor-at-idp");
    assert_eq!(exchanges[0].authorization, None);
    // At the authorization server: that ID-JAG with the JWT bearer grant,
    // the client authenticated with client_secret_basic.
    let jags = auth.jags();
    assert_eq!(jags.len(), 1);
    let (first_jag, jag) = jags.iter().next().unwrap();
    assert_eq!(jag.subject, "ada@example.com");
    let requests = auth.token_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0]["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(&requests[0]["assertion"], first_jag);
    assert_eq!(requests[0]["resource"], auth.mcp_url());
    assert!(
        !requests[0].contains_key("client_secret"),
        "basic, not post"
    );
    assert_eq!(auth.counts().jwt_bearer_grants, 1);
    assert_eq!(
        (auth.counts().registrations, auth.counts().authorizations),
        (0, 0)
    );

    // The host's sign-in replaced the ID token; the access token is refused:
    // a new exchange with the ID token the file holds now.
    let second_id_token = auth.issue_id_token("ada@example.com");
    std::fs::write(home.0.join("id_token"), &second_id_token).unwrap();
    auth.reject_access_tokens();
    let r = call(&host, "mcp__notes__echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "again");
    let exchanges = auth.exchanges();
    assert_eq!(exchanges.len(), 2);
    assert_eq!(exchanges[1].form["subject_token"], second_id_token);
    assert_eq!(auth.counts().jwt_bearer_grants, 2);
    host.shutdown().await;

    let jags: Vec<String> = auth.jags().into_keys().collect();
    let access = auth.access_tokens();
    let stored = std::fs::read_to_string(notes.token_path()).unwrap();
    assert!(stored.contains(access.last().unwrap()));
    let mut secrets = vec![
        first_id_token.as_str(),
        second_id_token.as_str(),
        CLIENT_SECRET,
    ];
    secrets.extend(jags.iter().map(String::as_str));
    assert_hidden(&secrets, &stored, "the token file");
    assert_hidden(&secrets, &shown_config, "the configuration's Debug");
    secrets.extend(access.iter().map(String::as_str));
    assert_hidden(&secrets, &format!("{notes:?}"), "the facade's Debug");
    assert_hidden(&secrets, &logs(), "the logs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_provider_client_secret_goes_as_basic_and_only_there() {
    capture_logs();
    let auth = AuthServer::start(ClientKind::Confidential).await;
    auth.preregister(CLIENT_ID, Some(CLIENT_SECRET), "http://127.0.0.1:1/unused");
    let home = TempHome::new("id-jag-basic");
    let id_token = auth.issue_id_token("grace@example.com");
    // Random per run: its absence from the logs cannot rest on an old value.
    let idp_secret = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("idp-secret-{:016x}", h.finish())
    };
    let idp_secret = idp_secret.as_str();
    let token_endpoint = format!("{}/token", auth.idp_issuer());
    // The ID token and the IdP secret from the environment, the token endpoint
    // given (no discovery).
    let file = json!({"mcpServers": {"notes": {
        "type": "http",
        "url": auth.mcp_url(),
        "oauth": {
            "clientId": CLIENT_ID,
            "clientSecret": CLIENT_SECRET,
            "identityProvider": {
                "tokenEndpoint": token_endpoint,
                "clientId": "mcpvisor-at-idp",
                "clientSecret": "${IDP_SECRET}",
                "idToken": "${SSO_ID_TOKEN}",
            },
        },
    }}});
    let path = home.0.join(".mcp.json");
    std::fs::write(&path, file.to_string()).unwrap();
    let cfg = McpConfig::load(&path).unwrap();
    let lookup = |name: &str| match name {
        "IDP_SECRET" => Some(idp_secret.to_string()),
        "SSO_ID_TOKEN" => Some(id_token.clone()),
        _ => None,
    };
    let config = cfg.servers["notes"]
        .oauth_config(&lookup, &cfg.base_dir(), &home.0.join("home"))
        .unwrap()
        .unwrap();
    let notes = OAuth::new(config).unwrap();
    let driver = HeadlessDriver::new().unwrap();
    notes.login(&http(), &driver).await.unwrap();

    let exchanges = auth.exchanges();
    assert_eq!(exchanges.len(), 1);
    assert_eq!(
        exchanges[0].authorization.as_deref(),
        Some(pkce::basic_authorization("mcpvisor-at-idp", idp_secret).as_str())
    );
    assert!(!exchanges[0].form.contains_key("client_secret"));
    assert_eq!(exchanges[0].form["subject_token"], id_token);
    // The IdP's secret never went to the authorization server.
    for request in auth.token_requests() {
        assert!(!request.values().any(|v| v.contains(idp_secret)));
    }
    assert_eq!(auth.counts().jwt_bearer_grants, 1);
    assert_hidden(&[idp_secret, &id_token], &logs(), "the logs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_and_a_lying_identity_provider_are_typed_errors_without_tokens() {
    capture_logs();
    let auth = AuthServer::start(ClientKind::Confidential).await;
    auth.preregister(CLIENT_ID, Some(CLIENT_SECRET), "http://127.0.0.1:1/unused");
    let home = TempHome::new("id-jag-refused");
    let driver = HeadlessDriver::new().unwrap();
    let login = |config: OAuthConfig| {
        let driver = &driver;
        async move {
            OAuth::new(config)
                .unwrap()
                .login(&http(), driver)
                .await
                .expect_err("the login must fail")
        }
    };

    // An ID token the identity provider never issued.
    let forged = "idt-forged-5b7e0c";
    std::fs::write(home.0.join("id_token"), forged).unwrap();
    let idp = json!({"issuer": auth.idp_issuer(), "idTokenFile": "id_token"});
    let error = login(configured(&home.0, &auth, idp.clone())).await;
    let AuthError::Token(text) = &error else {
        panic!("{error:?}")
    };
    assert!(
        text.contains("identity provider") && text.contains("invalid_grant"),
        "{text}"
    );
    assert_hidden(&[forged], &format!("{error} {error:?}"), "the error");
    assert_eq!(auth.counts().jwt_bearer_grants, 0, "nothing to redeem");

    // No ID token file: a configuration error naming the file, not a request.
    std::fs::remove_file(home.0.join("id_token")).unwrap();
    let asked = auth.exchanges().len();
    let error = login(configured(&home.0, &auth, idp.clone())).await;
    assert!(
        matches!(&error, AuthError::Config(t) if t.contains("id_token")),
        "{error:?}"
    );
    assert_eq!(auth.exchanges().len(), asked);

    // A linked ID token file is not followed.
    let elsewhere = home.0.join("elsewhere");
    std::fs::write(&elsewhere, auth.issue_id_token("mallory@example.com")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, home.0.join("id_token")).unwrap();
    let error = login(configured(&home.0, &auth, idp)).await;
    assert!(
        matches!(&error, AuthError::Config(t) if t.contains("symbolic link")),
        "{error:?}"
    );
    assert_eq!(auth.exchanges().len(), asked);

    // An OpenID configuration naming another issuer: refused before the ID
    // token goes anywhere.
    std::fs::remove_file(home.0.join("id_token")).unwrap();
    std::fs::write(
        home.0.join("id_token"),
        auth.issue_id_token("ada@example.com"),
    )
    .unwrap();
    auth.set_idp_issuer("https://idp.elsewhere.example");
    let idp = json!({"issuer": auth.idp_issuer(), "idTokenFile": "id_token"});
    let error = login(configured(&home.0, &auth, idp)).await;
    assert!(
        matches!(error, AuthError::IssuerMismatch { .. }),
        "{error:?}"
    );
    assert_eq!(auth.exchanges().len(), asked);
    assert_hidden(&[forged], &logs(), "the logs");
}

#[test]
fn an_identity_provider_block_is_checked_when_the_entry_is_resolved() {
    let home = TempHome::new("id-jag-config");
    let problem = |oauth: serde_json::Value| {
        let file = json!({"mcpServers": {"notes": {
            "type": "http", "url": "https://mcp.example.com/mcp", "oauth": oauth,
        }}});
        let path = home.0.join(".mcp.json");
        std::fs::write(&path, file.to_string()).unwrap();
        let cfg = McpConfig::load(&path).unwrap();
        let problems = cfg.servers["notes"]
            .oauth_config(&|_| None, &cfg.base_dir(), &home.0)
            .expect_err("a problem");
        problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    };
    let shown = problem(json!({"clientId": "a", "identityProvider": {"idToken": "idt-1"}}));
    assert!(shown.contains("`issuer` or `tokenEndpoint`"), "{shown}");
    let shown = problem(
        json!({"identityProvider": {"issuer": "https://idp.example.com",
        "idToken": "idt-2", "idTokenFile": "f"}}),
    );
    assert!(shown.contains("exactly one of"), "{shown}");
    assert!(!shown.contains("idt-2"), "{shown}");
    let shown = problem(json!({"grant": "client_credentials", "identityProvider": {
        "issuer": "https://idp.example.com", "idToken": "idt-3"}}));
    assert!(
        shown.contains("`identity_assertion` grant alone"),
        "{shown}"
    );
    let shown = problem(
        json!({"identityProvider": {"issuer": "https://idp.example.com",
        "clientSecret": "idp-secret-4", "idToken": "idt-4"}}),
    );
    assert!(
        shown.contains("`clientSecret` without its `clientId`"),
        "{shown}"
    );
    assert!(!shown.contains("idp-secret-4"), "{shown}");
    let shown = problem(json!({"grant": "identity_assertion"}));
    assert!(shown.contains("needs an `identityProvider`"), "{shown}");
    let shown = problem(
        json!({"identityProvider": {"issuer": "https://idp.example.com",
        "idToken": "${SSO_TOKEN_UNSET}"}}),
    );
    assert!(
        shown.contains("oauth.identityProvider.idToken") && shown.contains("SSO_TOKEN_UNSET"),
        "{shown}"
    );
}
