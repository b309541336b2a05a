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
use std::time::Duration;

use futures::future::Abortable;
use mcpvisor::{CallError, CallOptions, HostEvent, QualifiedMcpToolName};
use mcpvisor_protocol::mcp::messages::{ClientCapabilities, methods};
use mcpvisor_protocol::mcp::revision::Revision;
use mcpvisor_protocol::mcp::url_elicitation;
use mcpvisor_protocol::wire::jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, Request, RequestId, Response, error_codes,
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::convert;
use crate::events::{self, level_rank};
use crate::gateway::Gateway;
use crate::handshake;
use crate::inject;

mod url_steps;
use crate::in_flight::{Admitted, Refusal, Registered, RequestMarks, Requests};
use crate::ingress::Ingress;
use crate::outcome::{self, Outcome};
use crate::resources_prompts;
use crate::subscriptions;
use crate::tools::{self, Naming};
use crate::wire;

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
        });
        let task = tokio::spawn(events::watch_events(
            Arc::downgrade(&session),
            events,
            coalesce,
        ));
        *session.watcher.lock() = Some(task.abort_handle());
        session
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
        let mut state = self.state.lock();
        let opening = request.method == methods::INITIALIZE;
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
                Ok(result) => Message::Response(Response {
                    id: request.id,
                    result,
                }),
                Err(error) => Message::Error(ErrorResponse {
                    id: Some(request.id),
                    error,
                }),
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

    /// Whether the client declared the capability a server request needs.
    pub(crate) fn offers(&self, method: &str, params: &Value) -> bool {
        self.state.lock().client.offers_request(method, params)
    }

    /// Sends the client a request on `replies` and waits for its answer (the
    /// caller bounds the wait; a dropped wait forgets the request).
    pub(crate) async fn ask(
        &self,
        method: &str,
        params: Value,
        replies: &Outbound,
    ) -> Result<Value, ErrorObject> {
        let id = RequestId::String(format!(
            "mcpvisor-{}",
            self.next_ask
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let (tx, rx) = oneshot::channel();
        {
            // Checked under the same lock `close` clears: no ask outlives the session.
            let mut asks = self.asks.lock();
            if self.requests.is_closed() {
                return Err(error(
                    error_codes::INTERNAL_ERROR,
                    "the client's session has ended",
                ));
            }
            asks.insert(id.clone(), tx);
        }
        let forget = AskGuard {
            session: self,
            id: id.clone(),
        };
        let request = Message::Request(Request::new(id, method, Some(params)));
        if replies.send(request).await.is_err() {
            return Err(error(
                error_codes::INTERNAL_ERROR,
                "the client went away before it could be asked",
            ));
        }
        let answer = rx.await.unwrap_or_else(|_| {
            Err(error(
                error_codes::INTERNAL_ERROR,
                "the client's session ended before it answered",
            ))
        });
        drop(forget);
        answer
    }

    fn answered(&self, id: &RequestId, answer: Result<Value, ErrorObject>) {
        match self.asks.lock().remove(id) {
            Some(waiting) => {
                let _ = waiting.send(answer);
            }
            None => tracing::debug!(%id, "a downstream client answered no request of ours"),
        }
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.requests.len()
    }

    /// Ends the session: requests in flight are abandoned (and cancelled upstream).
    pub fn close(&self) {
        self.requests.close();
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
            m if resources_prompts::handles(m) => {
                let page_size = self.gateway.options().page_size;
                resources_prompts::answer(
                    host,
                    self.naming(),
                    page_size,
                    self.revision(),
                    m,
                    params.as_ref(),
                )
                .await
            }
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

    /// How tools are named to this client.
    fn naming(&self) -> Naming {
        match self.naming.load(std::sync::atomic::Ordering::Relaxed) {
            n if n == Naming::Short as u8 => Naming::Short,
            _ => Naming::Qualified,
        }
    }

    /// [`extension::SESSION`]: a relayed client's own options, before it
    /// initializes; what this gateway cannot honour is refused, not ignored.
    fn set_options(&self, params: Option<&Value>) -> Outcome {
        if !matches!(self.ingress, Ingress::Local) {
            return Err(error(
                error_codes::INVALID_REQUEST,
                "session options are for the local socket",
            ));
        }
        if self.state.lock().greeted {
            return Err(error(
                error_codes::INVALID_REQUEST,
                "session options come before `initialize`",
            ));
        }
        let naming = match params.and_then(|p| p.get("names")).and_then(Value::as_str) {
            None | Some("qualified") => Naming::Qualified,
            Some("short") => Naming::Short,
            Some(_) => {
                return Err(error(
                    error_codes::INVALID_PARAMS,
                    "`names` is `short` or `qualified`",
                ));
            }
        };
        let faults = params
            .and_then(|p| p.get("faults"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if faults && !self.gateway.options().allow_faults {
            return Err(error(
                error_codes::INVALID_PARAMS,
                "the running serve was started without --allow-faults; stop it, or start this one without the flag",
            ));
        }
        self.naming
            .store(naming as u8, std::sync::atomic::Ordering::Relaxed);
        self.faults_off
            .store(!faults, std::sync::atomic::Ordering::Relaxed);
        Ok(json!({}))
    }

    async fn call(
        &self,
        params: Option<Value>,
        replies: &Outbound,
        marks: &RequestMarks,
        registered: &Registered,
    ) -> Outcome {
        let params = params.unwrap_or(Value::Null);
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(error(
                error_codes::INVALID_PARAMS,
                "tools/call needs a string `name`",
            ));
        };
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => Value::Null,
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => {
                return Err(error(
                    error_codes::INVALID_PARAMS,
                    "`arguments` must be an object",
                ));
            }
        };
        let routed = self.naming().route(name);
        let host = self.gateway.host();
        let Some(route) = routed.as_deref() else {
            return outcome::unrouted(host, name, None);
        };
        let mut options = CallOptions::default();
        // mcpvisor's own clients may shorten (or lengthen) the server's timeout.
        let patience = params
            .get("_meta")
            .and_then(|m| m.get(extension::TIMEOUT_MS))
            .and_then(Value::as_u64)
            .map(Duration::from_millis);
        let token = params
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_number())
            .cloned();
        if let Some(token) = token {
            let sink = replies.clone();
            options = options.on_progress(move |p| {
                let mut params = json!({"progressToken": token, "progress": p.progress});
                if let Some(total) = p.total {
                    params["total"] = json!(total);
                }
                if let Some(message) = &p.message {
                    params["message"] = json!(message);
                }
                // Progress is advisory: when the reader is this far behind, drop it.
                let _ = sink.try_send(notification(methods::PROGRESS, params));
            });
        }
        // While it runs, the server's requests (sampling, elicitation) come here.
        let _caller = match (self.gateway.callers(), QualifiedMcpToolName::parse(route)) {
            (Some(callers), Ok(name)) => {
                Some(callers.enter(Arc::from(name.server()), self.me.clone(), replies.clone()))
            }
            _ => None,
        };
        let mut pending = registered.detaching(host.call(route, arguments, options));
        let given_up = async {
            match patience {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = &mut pending => match result {
                Ok(result) => Ok(convert::tool_result_for(self.revision(), result.to_value())),
                Err(CallError::UnknownTool(_) | CallError::ServerUnavailable { .. }) => {
                    outcome::unrouted(host, name, Some(route))
                }
                Err(e @ CallError::RouteRefused { .. }) => outcome::refused(host, &e, Some(route)),
                Err(CallError::Rpc { server, error })
                    if error.code == url_elicitation::URL_ELICITATION_REQUIRED =>
                {
                    self.url_elicitation_required(&server, error)
                }
                Err(e) => outcome::failed(e),
            },
            () = given_up => {
                // A client's own limit cancels its call; it must not end a
                // connection that other sessions share.
                marks.cancel();
                Ok(outcome::tool_error(format!(
                    "no answer within {}s (this call's own limit); the call was cancelled",
                    patience.unwrap_or_default().as_secs_f64()
                )))
            }
            () = self.gateway.stopped() => {
                // Stopping is the end of the call, not a client gone away.
                marks.cancel();
                outcome::shutting_down()
            }
        }
    }

    /// Reacts to one supervisor event; returns which lists may have changed.
    pub(crate) fn on_event(&self, event: &HostEvent) -> wire::Changed {
        let (watching, log_level) = {
            let state = self.state.lock();
            (state.watching, state.log_level)
        };
        // A call's progress goes to the session that made the call, through
        // the call itself; a watcher sees no other session's.
        if watching && !matches!(event, HostEvent::Progress { .. }) {
            let mut described = wire::event_json(event);
            // In a cluster, this node's own events carry its name too.
            if described.get("node").is_none()
                && let Some(node) = self.gateway.host().node_name()
            {
                described["node"] = json!(&*node);
            }
            let params = json!({"text": event.to_string(), "event": described});
            let _ = self
                .notices
                .try_send(notification(extension::EVENT, params));
        }
        // Server logs may carry any session's call data: for trusted clients only.
        if let (HostEvent::ServerLog { server, message }, Some(min)) = (event, log_level)
            && self.ingress.is_trusted()
            && level_rank(&message.level).is_some_and(|l| l >= min)
        {
            let params = json!({"level": message.level, "logger": &**server, "data": message.data});
            let _ = self
                .notices
                .try_send(notification(methods::LOG_MESSAGE, params));
        }
        if let HostEvent::ElicitationComplete {
            server,
            elicitation_id,
        } = event
        {
            self.completed(server, elicitation_id);
        }
        if let HostEvent::ResourceUpdated { server, uri } = event
            && self.subscribed.has(server, uri)
        {
            let params = json!({ "uri": &**uri });
            let _ = self
                .notices
                .try_send(notification(methods::RESOURCES_UPDATED, params));
        }
        wire::changes(event)
    }

    /// Tells the client which lists changed (one notification per list).
    pub(crate) fn lists_changed(&self, changed: wire::Changed) {
        if !self.state.lock().initialized {
            return;
        }
        let notices = [
            (changed.tools, methods::TOOLS_LIST_CHANGED),
            (changed.resources, methods::RESOURCES_LIST_CHANGED),
            (changed.prompts, methods::PROMPTS_LIST_CHANGED),
        ];
        for (_, method) in notices.iter().filter(|(yes, _)| *yes) {
            let _ = self.notices.try_send(notification(method, json!({})));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

/// Forgets a request sent to the client when its wait ends, however it ends.
struct AskGuard<'a> {
    session: &'a Session,
    id: RequestId,
}

impl Drop for AskGuard<'_> {
    fn drop(&mut self) {
        self.session.asks.lock().remove(&self.id);
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
