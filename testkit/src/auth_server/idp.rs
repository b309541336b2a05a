//! An enterprise identity provider beside the authorization server, at
//! `{base}/idp`: OpenID configuration and a token endpoint that takes only the
//! RFC 8693 token exchange of an ID token it issued for an ID-JAG. The ID-JAGs
//! are opaque values the authorization server looks up (their audience,
//! resource and subject), which the JWT bearer grant at `/token` redeems.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{Shared, lock, random_value};

/// The identity provider's path on the server's origin (also its issuer's path).
pub const IDP_PATH: &str = "/idp";

/// An ID-JAG the identity provider issued.
#[derive(Clone, Debug)]
pub struct Jag {
    pub subject: String,
    pub audience: String,
    pub resource: String,
}

/// One token exchange request as the identity provider saw it.
#[derive(Clone, Debug)]
pub struct Exchange {
    pub form: HashMap<String, String>,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
}

pub(super) async fn configuration(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let issuer = format!("{}{IDP_PATH}", shared.base);
    let mut doc = json!({
        "issuer": issuer,
        "token_endpoint": format!("{issuer}/token"),
        "grant_types_supported": ["urn:ietf:params:oauth:grant-type:token-exchange"],
    });
    if let Some(other) = lock(&shared.hostility).idp_issuer.clone() {
        doc["issuer"] = json!(other);
    }
    Json(doc)
}

pub(super) async fn token(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let mut state = lock(&shared.state);
    state.exchanges.push(Exchange {
        form: form.clone(),
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    });
    let param = |name: &str| form.get(name).cloned().unwrap_or_default();
    let well_formed = param("grant_type") == "urn:ietf:params:oauth:grant-type:token-exchange"
        && param("subject_token_type") == "urn:ietf:params:oauth:token-type:id_token"
        && param("requested_token_type") == "urn:ietf:params:oauth:token-type:id-jag"
        && !param("audience").is_empty()
        && !param("resource").is_empty();
    if !well_formed {
        return error(StatusCode::BAD_REQUEST, "invalid_request");
    }
    let Some(subject) = state.id_tokens.get(&param("subject_token")).cloned() else {
        return error(StatusCode::BAD_REQUEST, "invalid_grant");
    };
    let jag = random_value("jag");
    state.jags.insert(
        jag.clone(),
        Jag {
            subject,
            audience: param("audience"),
            resource: param("resource"),
        },
    );
    Json(json!({
        "access_token": jag,
        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "token_type": "N_A",
        "expires_in": 300,
    }))
    .into_response()
}

fn error(status: StatusCode, code: &str) -> Response {
    (status, Json(json!({"error": code}))).into_response()
}
