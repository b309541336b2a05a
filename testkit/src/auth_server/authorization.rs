//! The authorization server's endpoints: metadata, registration, authorization, token.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::client_assertion;
use super::hostile::apply;
use super::pkce::{basic_authorization, s256_challenge};
use super::{AccessGrant, Client, ClientKind, CodeGrant, RefreshGrant, Shared, lock, random_value};

/// RFC 8414 metadata.
pub(super) async fn metadata(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let base = &shared.base;
    let methods = match shared.kind {
        ClientKind::Public => vec!["none"],
        ClientKind::Confidential => vec!["client_secret_basic"],
    };
    let mut doc = json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": methods,
        "scopes_supported": ["notes"],
    });
    apply(&mut doc, &lock(&shared.hostility).server_metadata);
    Json(doc)
}

/// RFC 7591 registration: a client id, and a secret for a confidential client.
pub(super) async fn register(
    State(shared): State<Arc<Shared>>,
    Json(body): Json<Value>,
) -> Response {
    let redirect_uris: Vec<String> = body["redirect_uris"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|u| u.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut state = lock(&shared.state);
    state.registration_bodies.push(body.clone());
    if redirect_uris.is_empty() {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_redirect_uri");
    }
    state.counts.registrations += 1;
    let client_id = format!("client-{}", state.counts.registrations);
    let (secret, method) = match shared.kind {
        ClientKind::Public => (None, "none"),
        ClientKind::Confidential => (Some(random_value("cs")), "client_secret_basic"),
    };
    state.clients.insert(
        client_id.clone(),
        Client {
            redirect_uris: redirect_uris.clone(),
            secret: secret.clone(),
        },
    );
    let mut answer = json!({
        "client_id": client_id,
        "redirect_uris": redirect_uris,
        "grant_types": body["grant_types"],
        "token_endpoint_auth_method": method,
    });
    if let Some(secret) = secret {
        answer["client_secret"] = json!(secret);
    }
    (StatusCode::CREATED, Json(answer)).into_response()
}

/// Authorizes at once: a 302 to the registered `redirect_uri` with `code` and `state`.
pub(super) async fn authorize(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let mut state = lock(&shared.state);
    state.authorize_queries.push(query.clone());
    let param = |name: &str| query.get(name).cloned().unwrap_or_default();
    let (client_id, redirect_uri) = (param("client_id"), param("redirect_uri"));
    let registered = state
        .clients
        .get(&client_id)
        .is_some_and(|c| c.redirect_uris.contains(&redirect_uri));
    // Nothing goes back to a redirect URI that is not the client's.
    if !registered {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request");
    }
    let bad = param("response_type") != "code"
        || param("code_challenge_method") != "S256"
        || param("code_challenge").len() != 43
        || !param("resource").starts_with(&shared.base);
    let mut back = reqwest::Url::parse(&redirect_uri).expect("a registered redirect URI");
    if bad {
        back.query_pairs_mut()
            .append_pair("error", "invalid_request");
    } else {
        state.counts.authorizations += 1;
        let code = random_value("code");
        state.issued_codes.push(code.clone());
        state.codes.insert(
            code.clone(),
            CodeGrant {
                client_id,
                redirect_uri,
                challenge: param("code_challenge"),
                resource: param("resource"),
                scope: query.get("scope").cloned(),
            },
        );
        back.query_pairs_mut().append_pair("code", &code);
    }
    for (name, value) in &lock(&shared.hostility).callback_params {
        back.query_pairs_mut().append_pair(name, value);
    }
    if let Some(s) = query.get("state") {
        back.query_pairs_mut().append_pair("state", s);
    }
    (StatusCode::FOUND, [(header::LOCATION, back.to_string())]).into_response()
}

/// The token endpoint: `authorization_code` (with PKCE), `refresh_token`
/// (rotating) and `client_credentials` (a client with a secret or a key; no refresh
/// token, as RFC 6749 §4.4.3 advises).
pub(super) async fn token(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let grant_type = form.get("grant_type").cloned().unwrap_or_default();
    if grant_type == "refresh_token" {
        let delay = *lock(&shared.refresh_delay);
        if delay > Duration::ZERO {
            tokio::time::sleep(delay).await;
        }
    }
    let mut state = lock(&shared.state);
    state.counts.token_requests += 1;
    state.token_forms.push(form.clone());
    if *lock(&shared.token_outage) {
        if grant_type == "refresh_token" {
            state.counts.refresh_requests += 1;
        }
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let by_assertion = form.contains_key("client_assertion");
    let client_id = if by_assertion {
        client_assertion::authenticate(&mut state, &shared.base, &form)
    } else {
        authenticated_client(&state.clients, &headers, &form)
    };
    let Some(client_id) = client_id else {
        if grant_type == "refresh_token" {
            state.counts.refresh_requests += 1;
            state.counts.refresh_refusals += 1;
        }
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    };
    let param = |name: &str| form.get(name).cloned().unwrap_or_default();
    let (resource, scope) = match grant_type.as_str() {
        "authorization_code" => {
            let Some(code) = state.codes.remove(&param("code")) else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            let valid = code.client_id == client_id
                && code.redirect_uri == param("redirect_uri")
                && code.challenge == s256_challenge(&param("code_verifier"))
                && code.resource == param("resource");
            if !valid {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            }
            state.counts.code_exchanges += 1;
            (code.resource, code.scope)
        }
        "refresh_token" => {
            state.counts.refresh_requests += 1;
            let refused = match state.refresh.get_mut(&param("refresh_token")) {
                Some(g) if !g.used && !g.revoked && g.client_id == client_id => {
                    g.used = true;
                    let asked = form.get("resource");
                    (asked.is_some_and(|r| *r != g.resource)).then_some("invalid_target")
                }
                _ => Some("invalid_grant"),
            };
            if let Some(error) = refused {
                state.counts.refresh_refusals += 1;
                return oauth_error(StatusCode::BAD_REQUEST, error);
            }
            let g = &state.refresh[&param("refresh_token")];
            (g.resource.clone(), g.scope.clone())
        }
        "client_credentials" if state.clients[&client_id].secret.is_some() || by_assertion => {
            state.counts.client_credentials_grants += 1;
            (param("resource"), form.get("scope").cloned())
        }
        // RFC 7523 with an ID-JAG: issued for this issuer and the resource asked.
        "urn:ietf:params:oauth:grant-type:jwt-bearer" => {
            let valid = state.jags.get(&param("assertion")).is_some_and(|jag| {
                jag.audience == shared.base && jag.resource == param("resource")
            });
            if !valid {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            }
            state.counts.jwt_bearer_grants += 1;
            (param("resource"), form.get("scope").cloned())
        }
        _ => return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type"),
    };
    let ttl = *lock(&shared.access_ttl);
    let access = random_value("at");
    state.issued_access.push(access.clone());
    state.access.insert(
        access.clone(),
        AccessGrant {
            resource: resource.clone(),
            // A test may hand out `expires_in: u64::MAX`: never expiring here.
            expires: Instant::now()
                .checked_add(Duration::from_secs(ttl))
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 86400)),
            rejected: false,
        },
    );
    let mut answer = json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": ttl,
    });
    if !matches!(
        grant_type.as_str(),
        "client_credentials" | "urn:ietf:params:oauth:grant-type:jwt-bearer"
    ) {
        let refresh = random_value("rt");
        state.issued_refresh.push(refresh.clone());
        state.refresh.insert(
            refresh.clone(),
            RefreshGrant {
                client_id,
                resource,
                scope: scope.clone(),
                used: false,
                revoked: false,
            },
        );
        answer["refresh_token"] = json!(refresh);
    }
    if let Some(scope) = scope {
        answer["scope"] = json!(scope);
    }
    ([(header::CACHE_CONTROL, "no-store")], Json(answer)).into_response()
}

/// The client making a token request: by `client_secret_basic` for a client with
/// a secret, else by the `client_id` parameter of a public client.
fn authenticated_client(
    clients: &HashMap<String, Client>,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> Option<String> {
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if let Some(basic) = basic {
        return clients.iter().find_map(|(id, c)| {
            let secret = c.secret.as_ref()?;
            (basic_authorization(id, secret) == basic).then(|| id.clone())
        });
    }
    let id = form.get("client_id")?;
    clients
        .get(id)
        .filter(|c| c.secret.is_none())
        .map(|_| id.clone())
}

fn oauth_error(status: StatusCode, error: &str) -> Response {
    (status, Json(json!({"error": error}))).into_response()
}
