//! Requests servers send the host: `sampling/createMessage` (the host's model)
//! and `elicitation/create` (a person's input), answered by the host's
//! [`ClientHandler`].
//!
//! Each request runs on its own task, bounded in time and in number per
//! connection, so a handler that hangs or a server that floods requests never
//! holds up the connection: the server gets a JSON-RPC error instead.
//! An elicitation's form is read before the host sees it, and the host's
//! answer is completed with the form's defaults and checked against it before
//! it goes back.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcpvisor_protocol::elicitation::Form;
use mcpvisor_protocol::jsonrpc::ErrorObject;
use mcpvisor_protocol::messages::{ClientCapabilities, methods};
use serde_json::Value;

/// A request a server sent the host.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HostRequest {
    /// The server asking.
    pub server: Arc<str>,
    /// `sampling/createMessage` or `elicitation/create`.
    pub method: String,
    /// The request's parameters, as sent.
    pub params: Value,
}

impl HostRequest {
    /// A request `server` sent (for hosts that relay requests themselves, as
    /// the CLI does for those `mcpvisor serve` forwards it).
    pub fn new(server: Arc<str>, method: String, params: Value) -> HostRequest {
        HostRequest {
            server,
            method,
            params,
        }
    }
}

/// A handler's answer: the result, or a JSON-RPC error for the server.
pub type HostAnswer = Pin<Box<dyn Future<Output = Result<Value, ErrorObject>> + Send>>;

/// What a host offers servers beyond tools: its model (sampling) and its user
/// (elicitation). mcpvisor declares exactly the capabilities this returns, so
/// servers register features (tools that sample or ask) only when they will be
/// answered.
pub trait ClientHandler: Send + Sync + 'static {
    /// The requests this handler answers (`roots` is ignored here).
    fn capabilities(&self) -> ClientCapabilities;

    /// Answers one request. For `elicitation/create`, an `accept` may leave
    /// out fields: the form's defaults fill them, and the answer is checked
    /// against the form before it is sent.
    fn answer(&self, request: HostRequest) -> HostAnswer;
}

/// A shared [`ClientHandler`] (what [`crate::SupervisorOptions`] holds).
#[derive(Clone)]
pub struct SharedClientHandler(pub Arc<dyn ClientHandler>);

impl fmt::Debug for SharedClientHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedClientHandler")
            .field(&self.0.capabilities())
            .finish()
    }
}

/// The capabilities a connection declares: the handler's sampling and
/// elicitation, and roots when the host has them (mcpvisor answers `roots/list`).
pub(crate) fn declared(handler: Option<&SharedClientHandler>, roots: bool) -> ClientCapabilities {
    let mut caps = handler.map(|h| h.0.capabilities()).unwrap_or_default();
    caps.roots = roots;
    caps
}

pub(crate) fn error(code: i64, message: impl Into<String>) -> ErrorObject {
    ErrorObject {
        code,
        message: message.into(),
        data: None,
    }
}

/// What must hold of a request before the host sees it: for an elicitation,
/// a form this client can show. Returns the form to check the answer with.
pub(crate) fn admit(method: &str, params: &Value) -> Result<Option<Form>, ErrorObject> {
    if method != methods::ELICIT {
        return Ok(None);
    }
    if params.get("mode").and_then(Value::as_str).unwrap_or("form") != "form" {
        return Err(error(
            mcpvisor_protocol::jsonrpc::error_codes::INVALID_PARAMS,
            "only form elicitation is supported",
        ));
    }
    let schema = params.get("requestedSchema").unwrap_or(&Value::Null);
    Form::parse(schema).map(Some).map_err(|e| {
        error(
            mcpvisor_protocol::jsonrpc::error_codes::INVALID_PARAMS,
            format!("requestedSchema: {e}"),
        )
    })
}

/// The host's answer as it goes back: an accepted elicitation completed with
/// the form's defaults and checked against it.
pub(crate) fn finish(form: Option<&Form>, answer: Value) -> Result<Value, ErrorObject> {
    let Some(form) = form else {
        return Ok(answer);
    };
    let mut answer = match answer {
        Value::Object(map) => map,
        _ => {
            return Err(error(
                mcpvisor_protocol::jsonrpc::error_codes::INTERNAL_ERROR,
                "the host's elicitation answer is not an object",
            ));
        }
    };
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let given = answer.get("content").and_then(Value::as_object);
            let content = form.complete(given).map_err(|e| {
                error(
                    mcpvisor_protocol::jsonrpc::error_codes::INTERNAL_ERROR,
                    format!("the host's answer does not fit the form: {e}"),
                )
            })?;
            answer.insert("content".into(), Value::Object(content));
        }
        Some("decline" | "cancel") => {
            answer.remove("content");
        }
        _ => {
            return Err(error(
                mcpvisor_protocol::jsonrpc::error_codes::INTERNAL_ERROR,
                "the host's elicitation answer has no action (accept, decline or cancel)",
            ));
        }
    }
    Ok(Value::Object(answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_accepted_elicitation_is_completed_and_checked() {
        let params = json!({"message": "?", "requestedSchema": {"type": "object",
            "properties": {"n": {"type": "integer", "default": 3}, "s": {"type": "string"}}}});
        let form = admit(methods::ELICIT, &params).unwrap();
        let done = finish(form.as_ref(), json!({"action": "accept"})).unwrap();
        assert_eq!(done, json!({"action": "accept", "content": {"n": 3}}));
        let bad = finish(
            form.as_ref(),
            json!({"action": "accept", "content": {"n": "x"}}),
        );
        assert!(bad.unwrap_err().message.contains("field `n`"));
        let declined = finish(
            form.as_ref(),
            json!({"action": "decline", "content": {"n": 1}}),
        );
        assert_eq!(declined.unwrap(), json!({"action": "decline"}));
        assert!(finish(form.as_ref(), json!({"content": {}})).is_err());
        // Sampling answers pass as they are.
        assert_eq!(finish(None, json!({"x": 1})).unwrap(), json!({"x": 1}));
    }

    #[test]
    fn url_mode_and_unreadable_forms_are_refused_before_the_host_sees_them() {
        let url = json!({"mode": "url", "url": "https://x.example", "message": "?"});
        assert!(admit(methods::ELICIT, &url).is_err());
        let nested =
            json!({"requestedSchema": {"type": "object", "properties": {"o": {"type": "object"}}}});
        assert!(
            admit(methods::ELICIT, &nested)
                .unwrap_err()
                .message
                .contains("field `o`")
        );
        assert!(
            admit(methods::CREATE_MESSAGE, &json!({}))
                .unwrap()
                .is_none()
        );
    }
}
