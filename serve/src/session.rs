//! One downstream MCP session: what a host sees when it talks to `mcpvisor serve`.
//!
//! A session is independent of how its bytes travel: the line driver (stdio and
//! the local socket) and the HTTP front end both hand it parsed messages and
//! read what it sends from bounded channels. Each request runs as its own task,
//! so a slow call never holds up a `ping` or a cancel; a cancelled request's
//! task is aborted, which drops the upstream call and so sends the upstream
//! server `notifications/cancelled`. Sessions share nothing but the gateway.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};

use futures::future::Abortable;
use mcpvisor::CallError;
use mcpvisor_protocol::mcp::messages::{ClientCapabilities, methods};
use mcpvisor_protocol::mcp::revision::Revision;
use mcpvisor_protocol::wire::jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, Request, RequestId, Response, error_codes,
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::events::{self, level_rank};
use crate::gateway::Gateway;
use crate::handshake;
use crate::inject;

mod asks;
mod calls;
mod listen;
mod notices;
mod options;
mod reads;
mod url_steps;
use crate::in_flight::{Admitted, Refusal, Registered, RequestMarks, Requests};
use crate::ingress::Ingress;
use crate::outcome::Outcome;
use crate::resources_prompts;
use crate::stateless::{self, Modern};
use crate::subscriptions;
use crate::tools::{self, Naming};
use crate::wire;
use mcpvisor_protocol::mcp::subscriptions::LISTEN;

/// Where a session's messages go: answers and their progress to the channel
/// the request came with, everything unsolicited to the session's own.
pub type Outbound = mpsc::Sender<Message>;

/// `mcpvisor/…` methods and notifications, beside the MCP ones.
pub mod extension {
    /// Every server's status: `{"servers": [...]}`.
    pub const SERVERS: &str = "mcpvisor/servers";
    /// Restarts a server that is down or failed: params `{"server": name}`,
    /// result `{"restarted": n}`.
    pub const RESTART: &str = "mcpvisor/restart";
    /// Reads the configuration again and applies the difference; result
    /// `{"added": [...], "removed": [...], "restarted": [...], "unchanged": [...]}`.
    pub const RELOAD: &str = "mcpvisor/reload";
    /// Asks for every supervisor event as an [`EVENT`] notification.
    pub const WATCH: &str = "mcpvisor/watch";
    /// Deals a fault to a server, or ends its faults: params
    /// `{"server": name, "fault": "stop:2s", "for"?: "10s"}` or
    /// `{"server": name, "clear": true}`. Only when the gateway allows faults,
    /// and over HTTP only with the bearer token; see [`crate::inject`].
    pub const INJECT: &str = "mcpvisor/inject";
    /// In a `tools/call`'s `_meta`: how long this client waits, in
    /// milliseconds. Past it the call is cancelled (the server gets
    /// `notifications/cancelled`); the connection, which other sessions share,
    /// keeps its own request timeout.
    pub const TIMEOUT_MS: &str = "mcpvisor/timeoutMs";
    /// One supervisor event: `{"text": ..., "event": {...}}`.
    pub const EVENT: &str = "notifications/mcpvisor/event";
    /// Before `initialize`, on the local socket: this session's own options,
    /// `{"names": "short" | "qualified", "faults": bool}`, for a second
    /// `serve --stdio` that relays its host to the running one. `faults: true`
    /// is refused unless the running serve allows faults.
    pub const SESSION: &str = "mcpvisor/session";
}

/// One downstream session.
pub struct Session {
    /// This session, for what outlives a borrow of it (a call's forwarding entry).
    me: Weak<Session>,
    gateway: Arc<Gateway>,
    /// How tools are named to this client ([`Naming`] as a number: a relay
    /// may set it before `initialize`, and every call reads it).
    naming: std::sync::atomic::AtomicU8,
    /// This session asked for no faults (a relayed `serve --stdio` started
    /// without `--allow-faults`): it may not inject, whatever the gateway allows.
    faults_off: std::sync::atomic::AtomicBool,
    /// How the client came in, which decides what it may ask beyond MCP.
    ingress: Ingress,
    notices: Outbound,
    state: Mutex<State>,
    requests: Arc<Requests>,
    /// Requests this session sent its client (servers' requests forwarded), by id.
    asks: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, ErrorObject>>>>,
    next_ask: AtomicU64,
    watcher: Mutex<Option<tokio::task::AbortHandle>>,
    /// Resources this session subscribed to.
    subscribed: subscriptions::Mine,
    /// A stateless request's call: where its server's questions go (the
    /// bridge turns them into the call's rounds).
    /// (and whether the call is parked, waiting for the client's retry).
    asking: Mutex<Option<(crate::bridge::Asking, Arc<std::sync::atomic::AtomicBool>)>>,
    /// The request table is this session's own (not a stateless request's
    /// borrowed from the connection it came on), so closing the session closes it.
    owns_requests: bool,
}

#[derive(Default)]
struct State {
    /// `initialize` was answered: other requests are served.
    greeted: bool,
    /// `notifications/initialized` arrived: notifications may be sent.
    initialized: bool,
    log_level: Option<usize>,
    watching: bool,
    /// What the client said it offers in `initialize`.
    client: ClientCapabilities,
    /// The revision this session speaks (2025-03-26 until `initialize` says otherwise).
    revision: Revision,
    /// URL elicitations forwarded to this client (server, id), newest last, so
    /// their completion notices reach it and no other.
    asked_urls: std::collections::VecDeque<(Arc<str>, String)>,
    /// One stateless (2026-07-28) request: what `initialize` decides came in
    /// its `_meta`, and it is answered as that revision says.
    stateless: bool,
    /// This stateless request is a `subscriptions/listen`: what it listens
    /// for, and its id, which tags every notification it is sent.
    listening: Option<listen::Listening>,
}

impl Session {
    /// Opens a session for a client that came in by `ingress`; unsolicited
    /// messages go to `notices`.
    pub fn open(
        gateway: Arc<Gateway>,
        naming: Naming,
        ingress: Ingress,
        notices: Outbound,
    ) -> Arc<Session> {
        let events = gateway.host().events();
        let coalesce = gateway.options().coalesce;
        let session = Arc::new_cyclic(|me| Session {
            me: me.clone(),
            gateway,
            naming: std::sync::atomic::AtomicU8::new(naming as u8),
            faults_off: std::sync::atomic::AtomicBool::new(false),
            ingress,
            notices,
            state: Mutex::new(State::default()),
            requests: Arc::default(),
            asks: Mutex::new(HashMap::new()),
            next_ask: AtomicU64::new(1),
            watcher: Mutex::new(None),
            subscribed: Default::default(),
            asking: Mutex::new(None),
            owns_requests: true,
        });
        session.watch(events, coalesce);
        session
    }

    /// A session for one stateless (2026-07-28) request: greeted by the
    /// request's own `_meta` (`modern`), told nothing unsolicited unless it
    /// is a `subscriptions/listen` (then `notices` is that request's stream).
    /// `requests` is the table of the connection it came on (stdio, the
    /// socket), whose cancels and ids it shares; over HTTP, its own.
    pub(crate) fn stateless(
        gateway: Arc<Gateway>,
        naming: Naming,
        ingress: Ingress,
        requests: Option<Arc<Requests>>,
        modern: Modern,
        notices: Outbound,
    ) -> Arc<Session> {
        let state = State {
            greeted: true,
            initialized: true,
            log_level: modern.log_level,
            client: modern.client,
            revision: modern.revision,
            stateless: true,
            ..State::default()
        };
        Arc::new_cyclic(|me| Session {
            me: me.clone(),
            gateway,
            naming: std::sync::atomic::AtomicU8::new(naming as u8),
            faults_off: std::sync::atomic::AtomicBool::new(false),
            ingress,
            notices,
            state: Mutex::new(state),
            owns_requests: requests.is_none(),
            requests: requests.unwrap_or_default(),
            asks: Mutex::new(HashMap::new()),
            next_ask: AtomicU64::new(1),
            watcher: Mutex::new(None),
            subscribed: Default::default(),
            asking: Mutex::new(None),
        })
    }

    /// Starts telling this session the supervisor's events.
    fn watch(
        self: &Arc<Self>,
        events: impl futures::Stream<Item = mcpvisor::HostEvent> + Send + 'static,
        coalesce: std::time::Duration,
    ) {
        let task = tokio::spawn(events::watch_events(Arc::downgrade(self), events, coalesce));
        *self.watcher.lock() = Some(task.abort_handle());
    }

    /// Handles one message; answers to a request (and its progress) go to
    /// `replies`. Returns a refusal to send at once, if the request got one.
    #[must_use = "a refused request's error must be sent"]
    pub fn receive(self: &Arc<Self>, message: Message, replies: &Outbound) -> Option<Message> {
        match message {
            Message::Request(request) => return self.request(request, replies.clone()),
            Message::Notification(n) => self.notification(n),
            Message::Response(r) => self.answered(&r.id, Ok(r.result)),
            Message::Error(e) => match e.id {
                Some(id) => self.answered(&id, Err(e.error)),
                None => tracing::debug!("a downstream client sent an error without an id"),
            },
        }
        None
    }

    /// Starts answering `request` on a task of its own; the answer goes to
    /// `replies` unless the request is cancelled first. A refusal (not
    /// initialized, a duplicate id, too many in flight) is returned for the
    /// caller to send, so a client that does not read slows its own reading
    /// down instead of piling up tasks.
    #[must_use = "a refused request's error must be sent"]
    pub fn request(self: &Arc<Self>, request: Request, replies: Outbound) -> Option<Message> {
        let answering = match self.begin(request, replies.clone()) {
            Ok(answering) => answering,
            Err(refusal) => return Some(refusal),
        };
        tokio::spawn(async move {
            if let Some((answer, registered)) = answering.await {
                let _ = replies.send(answer).await;
                // Counted as in flight until its answer is queued: a client
                // that stops reading cannot make answers pile up unbounded.
                drop(registered);
            }
        });
        None
    }

    /// Answers `request` in the caller's own future (a POST carrying one
    /// request): the answer is returned, not sent; progress still goes to
    /// `replies`. `None` when the request was cancelled or the session closed.
    /// Dropping the future before it ends (the client went away) does not
    /// cancel a call upstream: it runs to its end and its answer is dropped.
    pub fn answer_inline(
        self: &Arc<Self>,
        request: Request,
        replies: Outbound,
    ) -> impl Future<Output = Option<Message>> + Send + 'static {
        // Admitted now, in arrival order, not when the future is first polled.
        let begun = self.begin(request, replies);
        async move {
            match begun {
                Ok(answering) => answering.await.map(|(answer, _)| answer),
                Err(refusal) => Some(refusal),
            }
        }
    }

    /// Admits `request` and registers it as in flight: the checks run here, in
    /// arrival order (a call sent right behind `initialize` must not race it).
    /// Returns the answer to come, or the refusal (`None`: the session is closed).
    fn begin(
        self: &Arc<Self>,
        request: Request,
        replies: Outbound,
    ) -> Result<impl Future<Output = Option<(Message, Registered)>> + Send + 'static, Message> {
        match self.stateless_request(&request, &replies)? {
            Some(one) => one.admit(request, replies),
            None => self.admit(request, replies),
        }
    }

    /// A stateless request on a connection that has not initialized (stdio,
    /// the socket) is answered by a session of its own, made from its
    /// `_meta`, sharing this one's request table; a `_meta` that is not
    /// what the revision requires is refused with its code.
    fn stateless_request(
        &self,
        request: &Request,
        replies: &Outbound,
    ) -> Result<Option<Arc<Session>>, Message> {
        {
            let state = self.state.lock();
            if state.stateless || state.greeted || !stateless::is_stateless(request) {
                return Ok(None);
            }
        }
        let versions = &self.gateway.options().protocol_versions;
        let modern = stateless::read(request, versions).map_err(|error| {
            Message::Error(ErrorResponse {
                id: Some(request.id.clone()),
                error,
            })
        })?;
        let notices = if request.method == LISTEN {
            replies.clone()
        } else {
            mpsc::channel(1).0
        };
        let one = Session::stateless(
            self.gateway.clone(),
            self.naming(),
            self.ingress,
            Some(self.requests.clone()),
            modern,
            notices,
        );
        // A relayed session without faults stays without them, request by request.
        let faults_off = self.faults_off.load(std::sync::atomic::Ordering::Relaxed);
        one.faults_off
            .store(faults_off, std::sync::atomic::Ordering::Relaxed);
        Ok(Some(one))
    }

    /// Admits `request` to this session (see [`Session::begin`]).
    fn admit(
        self: &Arc<Self>,
        request: Request,
        replies: Outbound,
    ) -> Result<impl Future<Output = Option<(Message, Registered)>> + Send + 'static + use<>, Message>
    {
        let mut state = self.state.lock();
        // A stateless request was greeted by its own `_meta`; `initialize` is
        // only a method its revision removed.
        let opening = request.method == methods::INITIALIZE && !state.stateless;
        let refuse = |message: String| {
            Err(error_message(
                Some(request.id.clone()),
                error_codes::INVALID_REQUEST,
                message,
            ))
        };
        let preamble = request.method == extension::SESSION;
        if !opening && request.method != methods::PING && !preamble && !state.greeted {
            return refuse("the session is not initialized: send `initialize` first".into());
        }
        // What `initialize` decides is decided here, in arrival order, so a
        // request right behind it sees the session as it leaves it.
        let client = if opening {
            if state.greeted {
                return refuse("the session is already initialized".into());
            }
            let versions = &self.gateway.options().protocol_versions;
            match handshake::initialize_params(request.params.as_ref(), versions) {
                Ok(client) => Some(client),
                Err(message) => {
                    return Err(error_message(
                        Some(request.id.clone()),
                        error_codes::INVALID_PARAMS,
                        message,
                    ));
                }
            }
        } else {
            None
        };
        let limit = self.gateway.options().max_in_flight;
        let admitted = match self.requests.admit(&request.id, limit) {
            Ok(admitted) => admitted,
            Err(Refusal::Closed) => return refuse("the session has ended".into()),
            Err(Refusal::DuplicateId) => {
                return refuse(format!("request id {} is already in use", request.id));
            }
            Err(Refusal::Full(n)) => {
                return refuse(format!(
                    "this session has {n} requests in flight; wait for one to finish"
                ));
            }
        };
        if let Some((client, revision)) = client {
            state.greeted = true;
            state.client = client;
            state.revision = revision;
        }
        let stateless = state.stateless;
        drop(state);
        let Admitted {
            registration,
            marks,
            registered,
        } = admitted;
        let session = self.clone();
        Ok(async move {
            let answer = session.answer(&request, &replies, &marks, &registered);
            let outcome = Abortable::new(answer, registration).await.ok()?;
            let message = match outcome {
                Ok(mut result) => Message::Response(Response {
                    result: {
                        if stateless {
                            stateless::complete(
                                &request.method,
                                &mut result,
                                session.cache_scope(),
                            );
                        }
                        result
                    },
                    id: request.id,
                }),
                Err(mut error) => {
                    if stateless {
                        stateless::error_at(request.params.as_ref(), &mut error);
                    }
                    Message::Error(ErrorResponse {
                        id: Some(request.id),
                        error,
                    })
                }
            };
            Some((message, registered))
        })
    }

    /// Handles a notification from the host.
    pub fn notification(&self, notification: Notification) {
        match notification.method.as_str() {
            methods::INITIALIZED => self.state.lock().initialized = true,
            methods::CANCELLED => {
                let id = notification
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
                if let Some(id) = id {
                    // The call is dropped, which cancels it upstream; no answer is sent.
                    self.requests.cancel(&id);
                }
            }
            _ => {}
        }
    }

    /// Whether the client sent `notifications/initialized`.
    pub fn initialized(&self) -> bool {
        self.state.lock().initialized
    }

    /// The revision this session speaks.
    pub fn revision(&self) -> Revision {
        self.state.lock().revision
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.requests.len()
    }

    /// A request of this session whose answer is dropped unfinished is
    /// cancelled: a stateless request with a table of its own (HTTP, where
    /// the client cancels by closing the request's stream). Elsewhere a
    /// client cancels with `notifications/cancelled`, and a call whose client
    /// went away runs to its end.
    fn cancels_when_dropped(&self) -> bool {
        self.owns_requests && self.state.lock().stateless
    }

    /// Whom this session's cacheable answers may be shared with: a listing
    /// behind the bearer token is not for a shared cache.
    pub(crate) fn cache_scope(&self) -> &'static str {
        match self.ingress {
            Ingress::Http { token: true } => "private",
            _ => "public",
        }
    }

    /// Ends the session: requests in flight are abandoned (and cancelled upstream).
    pub fn close(&self) {
        if self.owns_requests {
            self.requests.close();
        }
        // Servers waiting on this client get their answer now: an error.
        self.asks.lock().clear();
        if let Some(watcher) = self.watcher.lock().take() {
            watcher.abort();
        }
        let host = self.gateway.host();
        subscriptions::release(host, &self.gateway.subscribers, &self.subscribed);
    }

    async fn answer(
        self: &Arc<Self>,
        request: &Request,
        replies: &Outbound,
        marks: &Arc<RequestMarks>,
        registered: &Registered,
    ) -> Outcome {
        let (method, params) = (request.method.as_str(), request.params.clone());
        if self.state.lock().stateless {
            match method {
                mcpvisor_protocol::mcp::discover::SERVER_DISCOVER => {
                    return Ok(stateless::discover(
                        &self.gateway.options().protocol_versions,
                    ));
                }
                LISTEN => {
                    return self.listen(params.as_ref(), &request.id, replies).await;
                }
                m if stateless::removed(m) => {
                    return Err(error(
                        error_codes::METHOD_NOT_FOUND,
                        format!("method not found: {m} (protocol 2026-07-28 removed it)"),
                    ));
                }
                _ => {}
            }
        }
        match method {
            methods::INITIALIZE => return Ok(handshake::initialize_result(self.revision())),
            methods::PING => return Ok(json!({})),
            _ => {}
        }
        let host = self.gateway.host();
        if matches!(method, methods::TOOLS_LIST | methods::TOOLS_CALL)
            || resources_prompts::handles(method)
            || method == methods::RESOURCES_SUBSCRIBE
        {
            self.gateway.first_start_settled().await;
        }
        match method {
            methods::TOOLS_LIST => {
                let cursor = params.as_ref().and_then(|p| p.get("cursor"));
                let cursor = match cursor {
                    None | Some(Value::Null) => None,
                    Some(Value::String(c)) => Some(c.as_str()),
                    Some(_) => return Err(error(error_codes::INVALID_PARAMS, "invalid cursor")),
                };
                tools::list_page(
                    host,
                    self.naming(),
                    self.revision(),
                    cursor,
                    self.gateway.options().page_size,
                )
                .map_err(|_| error(error_codes::INVALID_PARAMS, "invalid cursor"))
            }
            methods::TOOLS_CALL => self.call(params, replies, marks, registered).await,
            m if resources_prompts::handles(m) => self.resources_prompts(m, params, replies).await,
            methods::RESOURCES_SUBSCRIBE => {
                let all = &self.gateway.subscribers;
                subscriptions::subscribe(host, all, &self.subscribed, params.as_ref()).await
            }
            methods::RESOURCES_UNSUBSCRIBE => {
                let all = &self.gateway.subscribers;
                subscriptions::unsubscribe(host, all, &self.subscribed, params.as_ref()).await
            }
            "logging/setLevel" => {
                let level = params
                    .as_ref()
                    .and_then(|p| p.get("level"))
                    .and_then(Value::as_str)
                    .and_then(level_rank)
                    .ok_or_else(|| {
                        error(
                            error_codes::INVALID_PARAMS,
                            "`level` must be one of debug, info, notice, warning, error, critical, alert, emergency",
                        )
                    })?;
                self.state.lock().log_level = Some(level);
                Ok(json!({}))
            }
            // The supervisor's own controls, and its events, are the user's:
            // a client the token does not vouch for gets none of them.
            extension::SERVERS | extension::RESTART | extension::RELOAD | extension::WATCH
                if !self.ingress.is_trusted() =>
            {
                Err(crate::ingress::needs_token(method))
            }
            extension::SERVERS => Ok(json!({ "servers": wire::cluster_statuses(host) })),
            extension::RESTART => {
                let name = params
                    .as_ref()
                    .and_then(|p| p.get("server"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| error(error_codes::INVALID_PARAMS, "`server` is required"))?;
                match self.gateway.restart(name).await {
                    Ok(restarted) => Ok(json!({ "restarted": restarted })),
                    Err(e @ CallError::UnknownServer(_)) => {
                        Err(error(error_codes::INVALID_PARAMS, e.to_string()))
                    }
                    Err(e) => Err(error(error_codes::INTERNAL_ERROR, e.to_string())),
                }
            }
            extension::RELOAD => match self.gateway.reload().await {
                Ok(report) => Ok(wire::reload_json(&report)),
                Err(e) => Err(error(error_codes::INTERNAL_ERROR, e)),
            },
            extension::WATCH => {
                self.state.lock().watching = true;
                Ok(json!({}))
            }
            extension::INJECT if self.faults_off.load(std::sync::atomic::Ordering::Relaxed) => {
                Err(error(
                    error_codes::INVALID_REQUEST,
                    "this session was started without --allow-faults: it deals no faults",
                ))
            }
            extension::INJECT => inject::answer(&self.gateway, self.ingress, params.as_ref()).await,
            extension::SESSION => self.set_options(params.as_ref()),
            other => Err(error(
                error_codes::METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

fn error(code: i64, message: impl Into<String>) -> ErrorObject {
    ErrorObject {
        code,
        message: message.into(),
        data: None,
    }
}

/// An error response.
pub(crate) fn error_message(
    id: Option<RequestId>,
    code: i64,
    message: impl Into<String>,
) -> Message {
    Message::Error(ErrorResponse {
        id,
        error: error(code, message),
    })
}

fn notification(method: &str, params: Value) -> Message {
    Message::Notification(Notification {
        method: method.to_string(),
        params: Some(params),
    })
}
