//! The MCP server the provider protects: RFC 9728 metadata naming the
//! provider, and JSON-RPC over POST for a bearer token the provider's
//! introspection (RFC 7662) calls active, issued by it, for this server's URL
//! (RFC 8707 audience) with the `notes` scope, unless the test told it to
//! refuse that token; anything else gets a `401` with `WWW-Authenticate: Bearer`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use super::form;

/// One request to the protected MCP server.
#[derive(Clone, Debug)]
pub struct ResourceRequest {
    /// The bearer token sent, if any.
    pub token: Option<String>,
    /// Whether the provider vouched for it (`false`: answered `401`).
    pub accepted: bool,
    pub rpc_method: Option<String>,
}

pub(super) struct Resource {
    pub(super) url: String,
    issuer: String,
    introspection: String,
    credentials: String,
    http: reqwest::Client,
    requests: Mutex<Vec<ResourceRequest>>,
    refused: Mutex<HashSet<String>>,
}

impl Resource {
    pub(super) fn new(
        url: String,
        issuer: String,
        introspection: String,
        credentials: String,
        http: reqwest::Client,
    ) -> Resource {
        Resource {
            url,
            issuer,
            introspection,
            credentials,
            http,
            requests: Mutex::new(Vec::new()),
            refused: Mutex::new(HashSet::new()),
        }
    }

    /// The `Authorization` header of the resource server's client at the provider.
    pub(super) fn credentials(&self) -> &str {
        &self.credentials
    }

    pub(super) fn requests(&self) -> Vec<ResourceRequest> {
        self.requests.lock().unwrap().clone()
    }

    pub(super) fn refuse(&self, token: &str) {
        self.refused.lock().unwrap().insert(token.to_string());
    }

    /// Whether the provider vouches for `token` at this server (and it is not refused).
    async fn vouched(&self, token: &str) -> bool {
        if self.refused.lock().unwrap().contains(token) {
            return false;
        }
        let resp = self
            .http
            .post(&self.introspection)
            .header(header::AUTHORIZATION, &self.credentials)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form(&[("token", token)]))
            .send()
            .await;
        let Ok(resp) = resp else { return false };
        let Ok(text) = resp.text().await else {
            return false;
        };
        let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let audience = match &answer["aud"] {
            Value::String(aud) => aud == &self.url,
            Value::Array(auds) => auds.iter().any(|a| a == &json!(self.url)),
            _ => false,
        };
        let scoped = answer["scope"]
            .as_str()
            .is_some_and(|s| s.split(' ').any(|s| s == "notes"));
        answer["active"] == json!(true)
            && answer["iss"] == json!(self.issuer)
            && answer["token_type"] == json!("Bearer")
            && audience
            && scoped
    }
}

pub(super) fn router(resource: Arc<Resource>) -> Router {
    Router::new()
        .route("/.well-known/oauth-protected-resource/mcp", get(metadata))
        .route(
            "/mcp",
            axum::routing::post(serve).get(no_stream).delete(no_stream),
        )
        .with_state(resource)
}

async fn metadata(State(resource): State<Arc<Resource>>) -> Response {
    axum::Json(json!({
        "resource": resource.url,
        "authorization_servers": [resource.issuer],
        "scopes_supported": ["notes"],
        "bearer_methods_supported": ["header"],
    }))
    .into_response()
}

/// No GET stream, no session to delete.
async fn no_stream() -> StatusCode {
    StatusCode::METHOD_NOT_ALLOWED
}

async fn serve(State(resource): State<Arc<Resource>>, headers: HeaderMap, body: Bytes) -> Response {
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let accepted = match &token {
        Some(t) => resource.vouched(t).await,
        None => false,
    };
    resource.requests.lock().unwrap().push(ResourceRequest {
        token: token.clone(),
        accepted,
        rpc_method: message["method"].as_str().map(str::to_string),
    });
    if !accepted {
        let metadata = resource
            .url
            .replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
        let error = if token.is_some() {
            r#"error="invalid_token", "#
        } else {
            ""
        };
        let challenge = format!(r#"Bearer {error}resource_metadata="{metadata}""#);
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge)],
        )
            .into_response();
    }
    let Some(id) = message.get("id").filter(|id| !id.is_null()).cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": "2025-03-26",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "oidc-protected-notes", "version": "1"},
        }),
        "ping" => json!({}),
        "tools/list" => json!({"tools": [{
            "name": "echo",
            "description": "Answers with its text.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        }]}),
        "tools/call" if message["params"]["name"] == "echo" => {
            let text = message["params"]["arguments"]["text"].clone();
            json!({"content": [{"type": "text", "text": text}], "isError": false})
        }
        _ => {
            let error = json!({"code": -32601, "message": "Method not found"});
            return axum::Json(json!({"jsonrpc": "2.0", "id": id, "error": error})).into_response();
        }
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}
