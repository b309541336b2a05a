//! Requests servers send the host: `sampling/createMessage` (the host's model)
//! and `elicitation/create` (a person's input, in a form or at a URL),
//! read into typed requests and answered by the host's [`ClientHandler`].
//!
//! Each request runs on its own task, bounded in time and in number per
//! connection, so a handler that hangs or a server that floods requests never
//! holds up the connection: the server gets a JSON-RPC error instead.
//! A request is read and checked before the host sees it (one the server was
//! offered, in a shape this client can show), and the host's answer is
//! completed with a form's defaults and checked against it before it goes back.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcpvisor_protocol::mcp::elicit_answer::{ElicitAction, ElicitAnswer};
use mcpvisor_protocol::mcp::elicitation::Form;
use mcpvisor_protocol::mcp::messages::{ClientCapabilities, Root, methods};
use mcpvisor_protocol::mcp::sampling::{CreateMessage, SamplingResult};
use mcpvisor_protocol::mcp::url_elicitation::UrlElicitation;
use mcpvisor_protocol::wire::jsonrpc::ErrorObject;
use mcpvisor_protocol::wire::jsonrpc::error_codes;
use serde_json::Value;

/// A server asks for a completion by the host's model.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The server asking.
    pub server: Arc<str>,
    /// What it asks, read.
    pub request: CreateMessage,
}

/// A server asks the person to fill in a form.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FormRequest {
    /// The server asking.
    pub server: Arc<str>,
    /// Why, in the server's words (not escaped: escape it before a terminal shows it).
    pub message: String,
    /// The form, read from `requestedSchema`.
    pub form: Form,
    params: Value,
}

/// A server asks the person to open a page (a URL elicitation).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct UrlRequest {
    /// The server asking.
    pub server: Arc<str>,
    /// The page, checked (https, no user information); show and open its `url`.
    pub elicitation: UrlElicitation,
    params: Value,
}

/// A server asks for the roots it may work in (`roots/list`), of a handler
/// that answers roots itself (a gateway asks the client the call is for).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RootsRequest {
    /// The server asking.
    pub server: Arc<str>,
    params: Value,
}

impl RootsRequest {
    /// The parameters as sent (for a host that relays the request).
    pub fn params(&self) -> &Value {
        &self.params
    }
}

impl FormRequest {
    /// The parameters as sent (for a host that relays the request).
    pub fn params(&self) -> &Value {
        &self.params
    }
}

impl UrlRequest {
    /// The parameters as sent, with the URL as checked (for a host that relays it).
    pub fn params(&self) -> &Value {
        &self.params
    }
}

/// A request a server sent the host, read and checked against what the
/// server was offered.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HostAsk {
    /// `sampling/createMessage`.
    Sampling(SamplingRequest),
    /// `elicitation/create` with a form.
    Form(FormRequest),
    /// `elicitation/create` in URL mode.
    Url(UrlRequest),
    /// `roots/list`, of a handler that declares `roots`.
    Roots(RootsRequest),
}

tokio::task_local! {
    static ROUND_KEY: Arc<str>;
}

/// The key a stateless server (2026-07-28) gave the question a handler is
/// answering now, when it asked in a multi-round-trip result; `None` for a
/// server's own request. A handler that relays the question to a client of
/// its own asks it under the same key. Read it where the handler is called,
/// not in a task it spawns.
pub fn round_key() -> Option<Arc<str>> {
    ROUND_KEY.try_with(Arc::clone).ok()
}

/// Runs `answering` as the answer to the round question `key`.
pub(crate) async fn in_round<T>(key: &str, answering: impl Future<Output = T>) -> T {
    ROUND_KEY.scope(Arc::from(key), answering).await
}

/// A handler's answer, or a JSON-RPC error for the server.
pub type HostAnswer<T> = Pin<Box<dyn Future<Output = Result<T, ErrorObject>> + Send>>;

fn not_offered<T: Send + 'static>(method: &str) -> HostAnswer<T> {
    let refused = error(
        error_codes::METHOD_NOT_FOUND,
        format!("method not found: {method}"),
    );
    Box::pin(std::future::ready(Err(refused)))
}

/// What a host offers servers beyond tools: its model (sampling) and its user
/// (elicitation). mcpvisor declares exactly the capabilities this returns, so
/// servers register features (tools that sample or ask) only when they will be
/// answered, and only requests of a declared kind reach the handler. Each
/// method's default refuses (`-32601`). The host's roots are not asked here:
/// they are data the host sets (`SupervisorOptions::roots`,
/// [`crate::Host::set_roots`]), since servers must be told when they change.
pub trait ClientHandler: Send + Sync + 'static {
    /// The requests this handler answers. `roots`: it answers a stateless
    /// server's `roots/list` itself ([`ClientHandler::list_roots`]), as a
    /// gateway does for the client a call is made for; without it the
    /// host's own roots answer (and a dated revision's server is always
    /// answered with those, declared where the host has them).
    fn capabilities(&self) -> ClientCapabilities;

    /// Answers `sampling/createMessage` (declared by `sampling`; a request
    /// with tools only where `sampling_tools` is too).
    fn create_message(&self, request: SamplingRequest) -> HostAnswer<SamplingResult> {
        let _ = request;
        not_offered(methods::CREATE_MESSAGE)
    }

    /// Answers a form (declared by `elicitation`). An accept may leave out
    /// fields: the form's defaults fill them, and the answer is checked
    /// against the form before it is sent.
    fn elicit(&self, request: FormRequest) -> HostAnswer<ElicitAnswer> {
        let _ = request;
        not_offered(methods::ELICIT)
    }

    /// Answers a URL elicitation (declared by `elicitation_url`): whether the
    /// person went to the page. Only the action goes back to the server.
    fn elicit_url(&self, request: UrlRequest) -> HostAnswer<ElicitAction> {
        let _ = request;
        not_offered(methods::ELICIT)
    }

    /// Answers `roots/list` (declared by `roots`).
    fn list_roots(&self, request: RootsRequest) -> HostAnswer<Vec<Root>> {
        let _ = request;
        not_offered(methods::ROOTS_LIST)
    }
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

impl HostAsk {
    /// Reads a request `server` sent: it must be one the server was offered
    /// (`offered`: as declared at the revision it speaks — an elicitation in
    /// its mode, sampling with tools only where tools were offered), in a
    /// shape this client can use: a sampling request [`CreateMessage::parse`]
    /// reads, a form this client can show, or a URL that passes
    /// [`UrlElicitation::parse`]. A host that relays requests itself (as the
    /// CLI does for those `mcpvisor serve` forwards it) reads them with this.
    pub fn read(
        server: Arc<str>,
        method: &str,
        params: Value,
        offered: ClientCapabilities,
    ) -> Result<HostAsk, ErrorObject> {
        let invalid = |message: String| error(error_codes::INVALID_PARAMS, message);
        if !offered.offers_request(method, &params) {
            return Err(invalid(format!("{method} was not offered as asked")));
        }
        if method == methods::CREATE_MESSAGE {
            let request = CreateMessage::parse(&params)
                .map_err(|e| invalid(format!("sampling request: {e}")))?;
            return Ok(HostAsk::Sampling(SamplingRequest { server, request }));
        }
        if method == methods::ROOTS_LIST {
            return Ok(HostAsk::Roots(RootsRequest { server, params }));
        }
        if method != methods::ELICIT {
            return Err(error(
                error_codes::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            ));
        }
        match params.get("mode").and_then(Value::as_str).unwrap_or("form") {
            "form" => {}
            "url" => {
                let elicitation = UrlElicitation::parse(&params)
                    .map_err(|e| invalid(format!("URL elicitation: {e}")))?;
                let mut params = params;
                // The host sees the URL as checked, not as sent.
                params["url"] = Value::String(elicitation.url.clone());
                return Ok(HostAsk::Url(UrlRequest {
                    server,
                    elicitation,
                    params,
                }));
            }
            _ => return Err(invalid("unknown elicitation mode".into())),
        }
        let schema = params.get("requestedSchema").unwrap_or(&Value::Null);
        let form = Form::parse(schema).map_err(|e| invalid(format!("requestedSchema: {e}")))?;
        let message = params
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        Ok(HostAsk::Form(FormRequest {
            server,
            message,
            form,
            params,
        }))
    }

    /// The method the server called.
    pub fn method(&self) -> &'static str {
        match self {
            HostAsk::Sampling(_) => methods::CREATE_MESSAGE,
            HostAsk::Form(_) | HostAsk::Url(_) => methods::ELICIT,
            HostAsk::Roots(_) => methods::ROOTS_LIST,
        }
    }

    /// The parameters as sent (a URL's as checked).
    pub fn params(&self) -> &Value {
        match self {
            HostAsk::Sampling(r) => r.request.params(),
            HostAsk::Form(r) => r.params(),
            HostAsk::Url(r) => r.params(),
            HostAsk::Roots(r) => r.params(),
        }
    }

    /// The server asking.
    pub fn server(&self) -> &Arc<str> {
        match self {
            HostAsk::Sampling(r) => &r.server,
            HostAsk::Form(r) => &r.server,
            HostAsk::Url(r) => &r.server,
            HostAsk::Roots(r) => &r.server,
        }
    }

    /// [`HostAsk::answer_with`] under `timeout`: a handler that panics or
    /// never returns still yields an answer for the server (an error).
    pub(crate) async fn answer_within(
        self,
        handler: &dyn ClientHandler,
        timeout: std::time::Duration,
    ) -> Result<Value, ErrorObject> {
        let asked = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(
            self.answer_with(handler),
        ));
        match tokio::time::timeout(timeout, asked).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(error(
                error_codes::INTERNAL_ERROR,
                "the host's handler failed",
            )),
            Err(_) => Err(error(
                -32001,
                format!("the host did not answer within {timeout:?}"),
            )),
        }
    }

    /// Hands the request to `handler` and returns the result for the server:
    /// an accepted form completed with its defaults and checked against it;
    /// for a URL, the action alone.
    pub async fn answer_with(self, handler: &dyn ClientHandler) -> Result<Value, ErrorObject> {
        match self {
            HostAsk::Sampling(request) => Ok(handler.create_message(request).await?.to_value()),
            HostAsk::Url(request) => {
                let action = handler.elicit_url(request).await?;
                Ok(serde_json::json!({ "action": action.as_str() }))
            }
            HostAsk::Form(request) => {
                let form = request.form.clone();
                let answer = handler.elicit(request).await?;
                finish_form(&form, answer)
            }
            HostAsk::Roots(request) => {
                let roots = handler.list_roots(request).await?;
                Ok(serde_json::json!({ "roots": roots }))
            }
        }
    }
}

/// An accepted form's answer, completed with the form's defaults and checked.
fn finish_form(form: &Form, mut answer: ElicitAnswer) -> Result<Value, ErrorObject> {
    if answer.action == ElicitAction::Accept {
        answer.content = form.complete(Some(&answer.content)).map_err(|e| {
            error(
                error_codes::INTERNAL_ERROR,
                format!("the host's answer does not fit the form: {e}"),
            )
        })?;
    }
    Ok(answer.to_value())
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
    const ALL: ClientCapabilities = ClientCapabilities::EVERY_REQUEST;

    fn read(
        method: &str,
        params: &Value,
        offered: ClientCapabilities,
    ) -> Result<HostAsk, ErrorObject> {
        HostAsk::read(Arc::from("s"), method, params.clone(), offered)
    }

    /// Answers every kind with what it is given.
    struct Gives(ElicitAnswer, ElicitAction);

    impl ClientHandler for Gives {
        fn capabilities(&self) -> ClientCapabilities {
            ALL
        }

        fn create_message(&self, _: SamplingRequest) -> HostAnswer<SamplingResult> {
            Box::pin(std::future::ready(Ok(SamplingResult::text("m", "hi"))))
        }

        fn elicit(&self, _: FormRequest) -> HostAnswer<ElicitAnswer> {
            Box::pin(std::future::ready(Ok(self.0.clone())))
        }

        fn elicit_url(&self, _: UrlRequest) -> HostAnswer<ElicitAction> {
            Box::pin(std::future::ready(Ok(self.1)))
        }
    }

    async fn answered(ask: &HostAsk, answer: Value) -> Result<Value, ErrorObject> {
        let given = ElicitAnswer::parse(&answer).unwrap();
        ask.clone()
            .answer_with(&Gives(given, ElicitAction::Accept))
            .await
    }

    #[test]
    fn only_what_was_offered_as_asked_reaches_the_host() {
        let url_only = ClientCapabilities {
            elicitation_url: true,
            ..Default::default()
        };
        let form = json!({"message": "?", "requestedSchema": {"type": "object", "properties": {}}});
        assert!(read(methods::ELICIT, &form, url_only).is_err());
        let with_tools = json!({"messages": [], "maxTokens": 5, "tools": []});
        let plain = ClientCapabilities {
            sampling: true,
            ..Default::default()
        };
        assert!(read(methods::CREATE_MESSAGE, &with_tools, plain).is_err());
        assert!(read(methods::CREATE_MESSAGE, &with_tools, ALL).is_ok());
        assert!(read(methods::CREATE_MESSAGE, &json!({"messages": []}), plain).is_ok());
        assert!(read(methods::ROOTS_LIST, &json!({}), ALL).is_err());
    }

    #[test]
    fn a_sampling_request_that_is_not_one_is_refused_before_the_host_sees_it() {
        let refused = read(methods::CREATE_MESSAGE, &json!({}), ALL).unwrap_err();
        assert_eq!(refused.code, error_codes::INVALID_PARAMS);
        assert!(
            refused.message.contains("`messages`"),
            "{}",
            refused.message
        );
        let Ok(HostAsk::Sampling(asked)) = read(
            methods::CREATE_MESSAGE,
            &json!({"messages": [{"role": "user", "content": {"type": "text", "text": "?"}}], "maxTokens": 9}),
            ALL,
        ) else {
            panic!("a sampling request")
        };
        assert_eq!(asked.request.max_tokens, Some(9));
    }

    #[tokio::test]
    async fn an_accepted_elicitation_is_completed_and_checked() {
        let params = json!({"message": "?", "requestedSchema": {"type": "object",
            "properties": {"n": {"type": "integer", "default": 3}, "s": {"type": "string"}}}});
        let form = read(methods::ELICIT, &params, FORMS).unwrap();
        let HostAsk::Form(asked) = &form else {
            panic!("a form")
        };
        assert_eq!(asked.message, "?");
        assert_eq!(asked.form.fields.len(), 2);
        let done = answered(&form, json!({"action": "accept"})).await.unwrap();
        assert_eq!(done, json!({"action": "accept", "content": {"n": 3}}));
        let bad = answered(&form, json!({"action": "accept", "content": {"n": "x"}})).await;
        assert!(bad.unwrap_err().message.contains("field `n`"));
        let declined = answered(&form, json!({"action": "decline", "content": {"n": 1}})).await;
        assert_eq!(declined.unwrap(), json!({"action": "decline"}));
        let sampled = read(methods::CREATE_MESSAGE, &json!({"messages": []}), ALL).unwrap();
        let reply = answered(&sampled, json!({"action": "cancel"}))
            .await
            .unwrap();
        assert_eq!(reply, SamplingResult::text("m", "hi").to_value());
    }

    #[tokio::test]
    async fn url_mode_unoffered_or_unsafe_and_unreadable_forms_are_refused_before_the_host_sees_them()
     {
        let url = json!({"mode": "url", "elicitationId": "e", "url": "https://x.example", "message": "?"});
        assert!(read(methods::ELICIT, &url, FORMS).is_err());
        let ask = read(methods::ELICIT, &url, ALL).unwrap();
        let HostAsk::Url(asked) = &ask else {
            panic!("a URL elicitation")
        };
        assert_eq!(asked.elicitation.host(), "x.example");
        assert_eq!(asked.params()["url"], json!("https://x.example/"));
        let disguised = json!({"mode": "url", "elicitationId": "e",
            "url": "https://bank.example@x.example", "message": "?"});
        assert!(read(methods::ELICIT, &disguised, ALL).is_err());
        // Only the action goes back, whatever else the host put in its answer.
        let back = answered(&ask, json!({"action": "accept", "content": {"pw": "x"}})).await;
        assert_eq!(back.unwrap(), json!({"action": "accept"}));
        let nested =
            json!({"requestedSchema": {"type": "object", "properties": {"o": {"type": "object"}}}});
        assert!(
            read(methods::ELICIT, &nested, ALL)
                .unwrap_err()
                .message
                .contains("field `o`")
        );
    }

    #[tokio::test]
    async fn a_handler_that_offers_nothing_refuses_each_kind() {
        struct Silent;
        impl ClientHandler for Silent {
            fn capabilities(&self) -> ClientCapabilities {
                ClientCapabilities::default()
            }
        }
        let sampled = read(methods::CREATE_MESSAGE, &json!({"messages": []}), ALL).unwrap();
        let refused = sampled.answer_with(&Silent).await.unwrap_err();
        assert_eq!(refused.code, error_codes::METHOD_NOT_FOUND);
    }
}
