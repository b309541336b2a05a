//! The client side of one MCP connection as a state machine without I/O.
//!
//! The caller feeds it parsed messages and asks it for messages to send; it
//! allocates request ids, keeps the pending table (each entry carrying a caller
//! token `T`, such as a reply channel), runs the handshake and turns what the
//! server sends into [`SessionEvent`]s. Sockets, processes and clocks stay outside.
//!
//! "The handshake" is `initialize`, or at a stateless revision (2026-07-28)
//! a `server/discover` probe, chosen and switched between by [`Era`]; once
//! stateless, every request carries the revision in its `_meta`.

use std::collections::HashMap;

use serde_json::Value;

use crate::mcp::request_meta::RequestMeta;
use crate::mcp::revision::{Revision, Versions};
use crate::state::calls::RequestIds;
use crate::state::era::{Era, EraError, Step};

use crate::mcp::messages::{
    ClientCapabilities, InitializeError, InitializeParams, InitializeResult, LogMessageParams,
    ProgressParams, methods,
};
use crate::wire::jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, Request, RequestId, Response, error_codes,
};

/// Where the handshake stands.
#[derive(Debug, Clone, PartialEq)]
pub enum HandshakeState {
    /// Nothing sent yet.
    New,
    /// `initialize` sent, waiting for its answer.
    Initializing(RequestId),
    /// `server/discover` sent (a stateless revision), waiting for its answer.
    Discovering(RequestId),
    /// Handshake complete.
    Ready(Box<InitializeResult>),
    /// Closed: no more requests.
    Closed,
}

/// Why the handshake failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InitializeFailure {
    /// The server's answer was refused by validation.
    #[error(transparent)]
    Invalid(#[from] InitializeError),
    /// The server answered `initialize` with an error.
    #[error("server refused initialize: {} (code {})", .0.message, .0.code)]
    Refused(ErrorObject),
    /// No revision both sides speak, or none the settings allow.
    #[error(transparent)]
    NoRevision(#[from] EraError),
    /// The server refused `initialize` as only an MCP 2026-07-28 server does,
    /// and this connection may not use that revision.
    #[error(
        "server refused initialize as only an MCP 2026-07-28 server does: {} (code {}); 2026-07-28 is not in protocol_versions, or not over this transport",
        .0.message, .0.code
    )]
    RefusedAsModern(ErrorObject),
}

/// Misuse of the session by its driver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// A request before the handshake completed.
    #[error("session is not initialized")]
    NotReady,
    /// `initialize` sent twice.
    #[error("initialize was already sent")]
    AlreadyInitializing,
    /// The session was closed.
    #[error("session is closed")]
    Closed,
}

/// Why an incoming message produced no event.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Ignored {
    /// A response whose id is not pending (late, duplicate or invented).
    UnknownResponseId(RequestId),
    /// An error response without an id.
    ErrorWithoutId(ErrorObject),
    /// A notification this client does not handle.
    UnknownNotification(String),
    /// A notification whose params did not parse.
    MalformedNotification(String),
    /// The server cancelled one of its own requests (this client answers at once, so nothing is in flight).
    ServerCancelled,
    /// The way the server is reached changed (a probe, or `initialize` after
    /// one): the message in the reply is the next step.
    Switched,
}

/// What an incoming message means to the driver.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent<T> {
    /// The handshake completed; the `initialized` notification is in the reply.
    Ready(Box<InitializeResult>),
    /// The handshake failed; the connection should be closed.
    InitializeFailed(InitializeFailure),
    /// A pending request was answered.
    Response {
        /// The caller's token for the request.
        token: T,
        /// The result.
        result: Value,
    },
    /// A pending request failed.
    ErrorResponse {
        /// The caller's token for the request.
        token: T,
        /// The error.
        error: ErrorObject,
    },
    /// The server asked something; the reply is already prepared (ping, or -32601).
    ServerRequest {
        /// The method the server asked for.
        method: String,
    },
    /// The server asked something the host offers (see
    /// [`ClientSession::with_capabilities`]): no reply is prepared; the host's
    /// answer goes back with the same id.
    HostRequest {
        /// The id to answer.
        id: RequestId,
        /// What is asked (`sampling/createMessage`, `elicitation/create`, `roots/list`).
        method: String,
        /// Its parameters.
        params: Option<Value>,
    },
    /// `notifications/tools/list_changed`.
    ToolsChanged,
    /// `notifications/resources/list_changed` (resources or templates).
    ResourcesChanged,
    /// `notifications/prompts/list_changed`.
    PromptsChanged,
    /// `notifications/resources/updated`: a subscribed resource changed.
    ResourceUpdated(crate::mcp::resources::ResourceUpdated),
    /// `notifications/progress`.
    Progress(ProgressParams),
    /// `notifications/message`.
    Log(LogMessageParams),
    /// `notifications/elicitation/complete`: the URL elicitation with this id
    /// completed out of band.
    ElicitationComplete(String),
    /// Nothing to do; kept for logging.
    Ignored(Ignored),
}

/// The outcome of one incoming message: an event, and possibly a message to send back.
#[derive(Debug, Clone, PartialEq)]
pub struct Handled<T> {
    /// What happened.
    pub event: SessionEvent<T>,
    /// What to send back, if anything.
    pub reply: Option<Message>,
}

enum Pending<T> {
    Initialize,
    Discover(Revision),
    Request(T),
}

/// A client session: one per connection.
pub struct ClientSession<T> {
    /// Shared with whoever else sends requests on this connection, so ids never collide.
    ids: RequestIds,
    pending: HashMap<RequestId, Pending<T>>,
    state: HandshakeState,
    params: InitializeParams,
    offered: ClientCapabilities,
    versions: Versions,
    era: Era,
    /// Set once the server is reached at a stateless revision: what each
    /// request then carries.
    stateless: Option<RequestMeta>,
}

impl<T> ClientSession<T> {
    /// A new session that will introduce itself as `name`/`version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self::with_ids(name, version, RequestIds::new())
    }

    /// A session that takes request ids from `ids`, a counter it shares with
    /// requests sent beside it (calls that do not pass through the session).
    /// Every id is the counter's next value, so they stay unique per connection.
    pub fn with_ids(name: impl Into<String>, version: impl Into<String>, ids: RequestIds) -> Self {
        ClientSession {
            ids,
            pending: HashMap::new(),
            state: HandshakeState::New,
            params: InitializeParams::new(name, version),
            offered: ClientCapabilities::default(),
            versions: Versions::default(),
            era: Era::new(Versions::default()),
            stateless: None,
        }
    }

    /// Offers the first of `versions` in `initialize` and accepts any of them
    /// in the answer (the default: 2025-03-26 alone).
    pub fn with_versions(mut self, versions: Versions) -> Self {
        self.params.protocol_version = versions.offered().as_str().to_string();
        self.params.capabilities = self.offered.to_value_at(versions.offered());
        self.era = Era::new(versions.clone());
        self.versions = versions;
        self
    }

    /// The revision the handshake settled on, once it has.
    pub fn revision(&self) -> Option<Revision> {
        match &self.state {
            HandshakeState::Ready(_) if self.stateless.is_some() => {
                self.stateless.as_ref().map(RequestMeta::revision)
            }
            HandshakeState::Ready(init) => self.versions.accepts(&init.protocol_version),
            _ => None,
        }
    }

    /// What the host answers, as declared (in `initialize`, or in each
    /// request's `_meta` at a stateless revision).
    pub fn offered(&self) -> ClientCapabilities {
        self.offered
    }

    /// What each request carries, once the server is reached at a stateless
    /// revision (for requests built beside the session: the call lane's).
    pub fn request_meta(&self) -> Option<&RequestMeta> {
        self.stateless.as_ref()
    }

    /// Declares what the host answers: these capabilities go in `initialize`,
    /// and the server's requests for them become [`SessionEvent::HostRequest`]
    /// instead of a `-32601` reply.
    pub fn with_capabilities(mut self, offered: ClientCapabilities) -> Self {
        self.params.capabilities = offered.to_value_at(self.versions.offered());
        self.offered = offered;
        self
    }

    /// The handshake state.
    pub fn state(&self) -> &HandshakeState {
        &self.state
    }

    /// True once the handshake completed and before close.
    pub fn is_ready(&self) -> bool {
        matches!(self.state, HandshakeState::Ready(_))
    }

    /// Requests awaiting an answer.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    fn alloc_id(&mut self) -> RequestId {
        RequestId::Number(self.ids.next())
    }

    /// Starts the handshake: returns the `initialize` request to send.
    pub fn initialize(&mut self) -> Result<Message, SessionError> {
        match self.state {
            HandshakeState::New => {}
            HandshakeState::Closed => return Err(SessionError::Closed),
            _ => return Err(SessionError::AlreadyInitializing),
        }
        let id = self.alloc_id();
        self.pending.insert(id.clone(), Pending::Initialize);
        self.state = HandshakeState::Initializing(id.clone());
        let params = serde_json::to_value(&self.params).unwrap_or(Value::Null);
        Ok(Message::Request(Request::new(
            id,
            methods::INITIALIZE,
            Some(params),
        )))
    }

    /// Builds a request after the handshake; `token` comes back with its answer.
    pub fn request(
        &mut self,
        method: &str,
        params: Option<Value>,
        token: T,
    ) -> Result<(RequestId, Message), SessionError> {
        match self.state {
            HandshakeState::Ready(_) => {}
            HandshakeState::Closed => return Err(SessionError::Closed),
            _ => return Err(SessionError::NotReady),
        }
        let id = self.alloc_id();
        self.pending.insert(id.clone(), Pending::Request(token));
        let params = match &self.stateless {
            Some(meta) => Some(meta.stamp(params)),
            None => params,
        };
        let msg = Message::Request(Request::new(id.clone(), method, params));
        Ok((id, msg))
    }

    /// Stops waiting for `id` without telling the server.
    pub fn forget(&mut self, id: &RequestId) -> Option<T> {
        match self.pending.remove(id)? {
            Pending::Request(t) => Some(t),
            Pending::Initialize | Pending::Discover(_) => None,
        }
    }

    /// Closes the session and hands back every pending token, so the driver can fail them.
    pub fn close(&mut self) -> Vec<T> {
        self.state = HandshakeState::Closed;
        self.pending
            .drain()
            .filter_map(|(_, p)| match p {
                Pending::Request(t) => Some(t),
                Pending::Initialize | Pending::Discover(_) => None,
            })
            .collect()
    }

    /// Handles one message from the server.
    pub fn handle(&mut self, msg: Message) -> Handled<T> {
        match msg {
            Message::Response(Response { id, result }) => self.on_response(id, Ok(result)),
            Message::Error(ErrorResponse {
                id: Some(id),
                error,
            }) => self.on_response(id, Err(error)),
            Message::Error(ErrorResponse { id: None, error }) => {
                ignored(Ignored::ErrorWithoutId(error))
            }
            Message::Request(req) => self.on_request(req),
            Message::Notification(n) => on_notification(n),
        }
    }

    fn on_response(&mut self, id: RequestId, outcome: Result<Value, ErrorObject>) -> Handled<T> {
        let Some(pending) = self.pending.remove(&id) else {
            return ignored(Ignored::UnknownResponseId(id));
        };
        match pending {
            Pending::Initialize => self.on_initialize_answer(outcome),
            Pending::Discover(revision) => self.on_discover_answer(id, revision, outcome),
            Pending::Request(token) => no_reply(match outcome {
                Ok(result) => SessionEvent::Response { token, result },
                Err(error) => SessionEvent::ErrorResponse { token, error },
            }),
        }
    }

    fn on_initialize_answer(&mut self, outcome: Result<Value, ErrorObject>) -> Handled<T> {
        if let Err(error) = &outcome
            && let Some(step) = self.era.on_initialize_refused(error)
        {
            if step == Step::Fail(EraError::ModernLeftOut) {
                self.state = HandshakeState::Closed;
                return no_reply(SessionEvent::InitializeFailed(
                    InitializeFailure::RefusedAsModern(error.clone()),
                ));
            }
            return self.take(step);
        }
        let validated = match outcome {
            Ok(result) => InitializeResult::validate_for(result, &self.versions)
                .map_err(InitializeFailure::from),
            Err(error) => Err(InitializeFailure::Refused(error)),
        };
        match validated {
            Ok(result) => {
                let result = Box::new(result);
                self.state = HandshakeState::Ready(result.clone());
                Handled {
                    event: SessionEvent::Ready(result),
                    reply: Some(Message::Notification(Notification::new(
                        methods::INITIALIZED,
                        None,
                    ))),
                }
            }
            Err(failure) => {
                self.state = HandshakeState::Closed;
                no_reply(SessionEvent::InitializeFailed(failure))
            }
        }
    }

    fn on_request(&mut self, req: Request) -> Handled<T> {
        if self.offered.offers(&req.method) {
            return no_reply(SessionEvent::HostRequest {
                id: req.id,
                method: req.method,
                params: req.params,
            });
        }
        // The spec allows ping at any time; everything else this client does not offer.
        let reply = if req.method == methods::PING {
            Message::Response(Response {
                id: req.id,
                result: Value::Object(Default::default()),
            })
        } else {
            Message::Error(ErrorResponse::new(
                Some(req.id),
                error_codes::METHOD_NOT_FOUND,
                format!("method not found: {}", req.method),
            ))
        };
        Handled {
            event: SessionEvent::ServerRequest { method: req.method },
            reply: Some(reply),
        }
    }
}

fn on_notification<T>(n: Notification) -> Handled<T> {
    fn parse<P: serde::de::DeserializeOwned>(n: &Notification) -> Option<P> {
        serde_json::from_value(n.params.clone().unwrap_or(Value::Null)).ok()
    }
    let event = match n.method.as_str() {
        methods::TOOLS_LIST_CHANGED => SessionEvent::ToolsChanged,
        methods::RESOURCES_LIST_CHANGED => SessionEvent::ResourcesChanged,
        methods::PROMPTS_LIST_CHANGED => SessionEvent::PromptsChanged,
        methods::RESOURCES_UPDATED => match parse(&n) {
            Some(p) => SessionEvent::ResourceUpdated(p),
            None => SessionEvent::Ignored(Ignored::MalformedNotification(n.method)),
        },
        methods::PROGRESS => match parse(&n) {
            Some(p) => SessionEvent::Progress(p),
            None => SessionEvent::Ignored(Ignored::MalformedNotification(n.method)),
        },
        methods::LOG_MESSAGE => match parse(&n) {
            Some(p) => SessionEvent::Log(p),
            None => SessionEvent::Ignored(Ignored::MalformedNotification(n.method)),
        },
        methods::CANCELLED => SessionEvent::Ignored(Ignored::ServerCancelled),
        crate::mcp::url_elicitation::ELICITATION_COMPLETE => {
            match crate::mcp::url_elicitation::completed_id(n.params.as_ref()) {
                Some(id) => SessionEvent::ElicitationComplete(id.to_string()),
                None => SessionEvent::Ignored(Ignored::MalformedNotification(n.method)),
            }
        }
        _ => SessionEvent::Ignored(Ignored::UnknownNotification(n.method)),
    };
    no_reply(event)
}

fn no_reply<T>(event: SessionEvent<T>) -> Handled<T> {
    Handled { event, reply: None }
}

fn ignored<T>(why: Ignored) -> Handled<T> {
    no_reply(SessionEvent::Ignored(why))
}

mod opening;

#[cfg(test)]
mod tests;
