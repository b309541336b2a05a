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

use mcpvisor_protocol::mcp::elicitation::Form;
use mcpvisor_protocol::mcp::messages::{ClientCapabilities, methods};
use mcpvisor_protocol::mcp::url_elicitation::UrlElicitation;
use mcpvisor_protocol::wire::jsonrpc::ErrorObject;
use mcpvisor_protocol::wire::jsonrpc::error_codes;
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

/// A request the host may see, with what its answer is checked against.
#[derive(Debug)]
pub(crate) enum Admitted {
    /// Sampling: the answer passes as it is.
    Other,
    /// A form: the answer is completed with its defaults and checked.
    Form(Form),
    /// A URL to open: the answer is an action alone.
    Url(UrlElicitation),
}

/// What must hold of a request before the host sees it: it is one the
/// server was offered (`declared`: as declared at the revision it speaks —
/// an elicitation in its mode, sampling with tools only where tools were
/// offered); for an elicitation, a form this client can show, or a URL that
/// passes [`UrlElicitation::parse`].
pub(crate) fn admit(
    method: &str,
    params: &Value,
    declared: ClientCapabilities,
) -> Result<Admitted, ErrorObject> {
    let invalid = |message: String| error(error_codes::INVALID_PARAMS, message);
    if !declared.offers_request(method, params) {
        return Err(invalid(format!("{method} was not offered as asked")));
    }
    if method != methods::ELICIT {
        return Ok(Admitted::Other);
    }
    match params.get("mode").and_then(Value::as_str).unwrap_or("form") {
        "form" => {}
        "url" => {
            return UrlElicitation::parse(params)
                .map(Admitted::Url)
                .map_err(|e| invalid(format!("URL elicitation: {e}")));
        }
        _ => return Err(invalid("unknown elicitation mode".into())),
    }
    let schema = params.get("requestedSchema").unwrap_or(&Value::Null);
    Form::parse(schema)
        .map(Admitted::Form)
        .map_err(|e| invalid(format!("requestedSchema: {e}")))
}

/// The host's answer as it goes back: an accepted elicitation completed with
/// the form's defaults and checked against it; a URL elicitation's, an action
/// without content.
pub(crate) fn finish(admitted: &Admitted, answer: Value) -> Result<Value, ErrorObject> {
    let form = match admitted {
        Admitted::Other => return Ok(answer),
        Admitted::Url(_) => return url_answer(answer),
        Admitted::Form(form) => form,
    };
    let mut answer = match answer {
        Value::Object(map) => map,
        _ => {
            return Err(error(
                error_codes::INTERNAL_ERROR,
                "the host's elicitation answer is not an object",
            ));
        }
    };
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let given = answer.get("content").and_then(Value::as_object);
            let content = form.complete(given).map_err(|e| {
                error(
                    error_codes::INTERNAL_ERROR,
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
                error_codes::INTERNAL_ERROR,
                "the host's elicitation answer has no action (accept, decline or cancel)",
            ));
        }
    }
    Ok(Value::Object(answer))
}

/// URL elicitations the host was asked about on one connection, so that a
/// server's completion notices reach the host only for those (a server
/// cannot fill the event bus with made-up ids). The oldest are forgotten.
#[derive(Debug, Default)]
pub(crate) struct AskedUrls(std::collections::VecDeque<String>);

impl AskedUrls {
    /// How many are remembered.
    const KEPT: usize = 64;

    pub(crate) fn remember(&mut self, id: String) {
        if self.0.contains(&id) {
            return;
        }
        if self.0.len() == Self::KEPT {
            self.0.pop_front();
        }
        self.0.push_back(id);
    }

    /// True (once) when `id` is one the host was asked about.
    pub(crate) fn complete(&mut self, id: &str) -> bool {
        match self.0.iter().position(|k| k == id) {
            Some(i) => {
                self.0.remove(i);
                true
            }
            None => false,
        }
    }
}

/// A URL elicitation is answered with the person's consent alone: nothing
/// they typed elsewhere comes back through the client.
fn url_answer(answer: Value) -> Result<Value, ErrorObject> {
    match answer.get("action").and_then(Value::as_str) {
        Some(action @ ("accept" | "decline" | "cancel")) => {
            Ok(serde_json::json!({ "action": action }))
        }
        _ => Err(error(
            error_codes::INTERNAL_ERROR,
            "the host's elicitation answer has no action (accept, decline or cancel)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FORMS: ClientCapabilities = ClientCapabilities {
        sampling: false,
        sampling_tools: false,
        elicitation: true,
        elicitation_url: false,
        roots: false,
    };
    const ALL: ClientCapabilities = ClientCapabilities {
        sampling: true,
        sampling_tools: true,
        elicitation: true,
        elicitation_url: true,
        roots: false,
    };

    #[test]
    fn only_what_was_offered_as_asked_reaches_the_host() {
        let url_only = ClientCapabilities {
            elicitation_url: true,
            ..Default::default()
        };
        let form = json!({"message": "?", "requestedSchema": {"type": "object", "properties": {}}});
        assert!(admit(methods::ELICIT, &form, url_only).is_err());
        let with_tools = json!({"messages": [], "maxTokens": 5, "tools": []});
        let plain = ClientCapabilities {
            sampling: true,
            ..Default::default()
        };
        assert!(admit(methods::CREATE_MESSAGE, &with_tools, plain).is_err());
        assert!(admit(methods::CREATE_MESSAGE, &with_tools, ALL).is_ok());
        assert!(admit(methods::CREATE_MESSAGE, &json!({}), plain).is_ok());
    }

    #[test]
    fn an_accepted_elicitation_is_completed_and_checked() {
        let params = json!({"message": "?", "requestedSchema": {"type": "object",
            "properties": {"n": {"type": "integer", "default": 3}, "s": {"type": "string"}}}});
        let form = admit(methods::ELICIT, &params, FORMS).unwrap();
        let done = finish(&form, json!({"action": "accept"})).unwrap();
        assert_eq!(done, json!({"action": "accept", "content": {"n": 3}}));
        let bad = finish(&form, json!({"action": "accept", "content": {"n": "x"}}));
        assert!(bad.unwrap_err().message.contains("field `n`"));
        let declined = finish(&form, json!({"action": "decline", "content": {"n": 1}}));
        assert_eq!(declined.unwrap(), json!({"action": "decline"}));
        assert!(finish(&form, json!({"content": {}})).is_err());
        // Sampling answers pass as they are.
        assert_eq!(
            finish(&Admitted::Other, json!({"x": 1})).unwrap(),
            json!({"x": 1})
        );
    }

    #[test]
    fn url_mode_unoffered_or_unsafe_and_unreadable_forms_are_refused_before_the_host_sees_them() {
        let url = json!({"mode": "url", "elicitationId": "e", "url": "https://x.example", "message": "?"});
        assert!(admit(methods::ELICIT, &url, FORMS).is_err());
        let Admitted::Url(asked) = admit(methods::ELICIT, &url, ALL).unwrap() else {
            panic!("a URL elicitation")
        };
        assert_eq!(asked.host(), "x.example");
        let disguised = json!({"mode": "url", "elicitationId": "e",
            "url": "https://bank.example@x.example", "message": "?"});
        assert!(admit(methods::ELICIT, &disguised, ALL).is_err());
        // Only the action goes back, whatever else the host put in its answer.
        let back = finish(
            &Admitted::Url(asked),
            json!({"action": "accept", "content": {"pw": "x"}}),
        );
        assert_eq!(back.unwrap(), json!({"action": "accept"}));
        let nested =
            json!({"requestedSchema": {"type": "object", "properties": {"o": {"type": "object"}}}});
        assert!(
            admit(methods::ELICIT, &nested, ALL)
                .unwrap_err()
                .message
                .contains("field `o`")
        );
        assert!(matches!(
            admit(methods::CREATE_MESSAGE, &json!({}), ALL),
            Ok(Admitted::Other)
        ));
    }
}
