//! The protected MCP endpoints: RFC 9728 metadata, and JSON-RPC over POST for
//! bearer tokens issued for them.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::hostile::apply;
use super::{ResourceRequest, Shared, lock};

/// RFC 9728 protected-resource metadata of the endpoint at `path`.
pub(super) async fn metadata(State(shared): State<Arc<Shared>>, path: &'static str) -> Json<Value> {
    let suffix = lock(&shared.resource_suffix).clone();
    let mut doc = json!({
        "resource": format!("{}{path}{suffix}", shared.base),
        "authorization_servers": [shared.base],
        "scopes_supported": ["notes"],
        "bearer_methods_supported": ["header"],
    });
    apply(&mut doc, &lock(&shared.hostility).resource_metadata);
    Json(doc)
}

/// These endpoints offer no GET stream and keep no session to delete.
pub(super) async fn no_stream() -> StatusCode {
    StatusCode::METHOD_NOT_ALLOWED
}

/// Checks the bearer token, then answers the JSON-RPC message in the body.
pub(super) async fn serve(
    State(shared): State<Arc<Shared>>,
    path: &'static str,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let url = format!("{}{path}{}", shared.base, lock(&shared.resource_suffix));
    let checked = {
        let mut state = lock(&shared.state);
        let checked = token.as_deref().map(|t| state.check(t, &url));
        state.resource_requests.push(ResourceRequest {
            path: path.to_string(),
            http_method: "POST".into(),
            token: token.clone(),
            accepted: matches!(checked, Some(Ok(()))),
            rpc_method: message["method"].as_str().map(str::to_string),
        });
        checked
    };
    let metadata = format!("{}/.well-known/oauth-protected-resource{path}", shared.base);
    let challenge = match checked {
        Some(Ok(())) => None,
        Some(Err(_)) => Some(format!(
            r#"Bearer error="invalid_token", resource_metadata="{metadata}""#
        )),
        None => Some(format!(r#"Bearer resource_metadata="{metadata}""#)),
    };
    if let Some(challenge) = challenge {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge)],
        )
            .into_response();
    }
    let Some(id) = message.get("id").filter(|id| !id.is_null()).cloned() else {
        // A notification or a response.
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": "2025-03-26",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "protected-notes", "version": "1"},
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
            return Json(json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {"code": -32601, "message": "Method not found"},
            }))
            .into_response();
        }
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}
