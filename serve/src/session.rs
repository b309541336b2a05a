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
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::{AbortHandle, Abortable};
use futures::{Stream, StreamExt};
use mcpvisor::{CallError, CallOptions, HostEvent};
use mcpvisor_protocol::jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, Request, RequestId, Response, error_codes,
};
use mcpvisor_protocol::messages::{PROTOCOL_VERSION, methods};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::gateway::Gateway;
use crate::outcome::{self, Outcome};
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
    /// In a `tools/call`'s `_meta`: this call's timeout in milliseconds,
    /// instead of the server's request timeout.
    pub const TIMEOUT_MS: &str = "mcpvisor/timeoutMs";
    /// One supervisor event: `{"text": ..., "event": {...}}`.
    pub const EVENT: &str = "notifications/mcpvisor/event";
}

/// Log levels in order (RFC 5424 as MCP names them).
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

fn level_rank(level: &str) -> Option<usize> {
    LEVELS.iter().position(|l| *l == level)
}

/// One downstream session.
pub struct Session {
    gateway: Arc<Gateway>,
    naming: Naming,
    notices: Outbound,
    state: Mutex<State>,
    watcher: Mutex<Option<tokio::task::AbortHandle>>,
}

/// A request being answered: how to stop it, and what became of it.
struct InFlight {
    abort: AbortHandle,
    fate: Arc<Fate>,
}

/// Shared by a request's table entry and its answer.
#[derive(Default)]
struct Fate {
    /// Stopped by a cancel (or the session's end): its call is cancelled upstream.
    cancelled: AtomicBool,
    /// Its client went away; its call runs on, still cancellable by id.
    detached: AtomicBool,
}

impl InFlight {
    /// Stops the request and cancels its call upstream.
    fn cancel(self) {
        self.fate.cancelled.store(true, Ordering::SeqCst);
        self.abort.abort();
    }
}

/// Removes a request from the in-flight table when its answer ends, unless its
/// call was detached (the detached call removes it when it ends).
struct Registered {
    session: Arc<Session>,
    id: RequestId,
    fate: Arc<Fate>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        if self.fate.detached.load(Ordering::SeqCst) {
            return;
        }
        self.session.forget(&self.id, &self.fate);
    }
}

/// A routed call that outlives the future awaiting it. Dropped unfinished
/// without a cancel (the client disconnected), it runs on to its end, since a
/// disconnection is not a cancellation in MCP; it stays in the table, so a
/// `notifications/cancelled` that follows still cancels it. Dropped after a
/// cancel, it is cancelled upstream.
struct Detaching {
    call: Option<mcpvisor::PendingCall>,
    session: Weak<Session>,
    id: RequestId,
    fate: Arc<Fate>,
}

impl Future for Detaching {
    type Output = Result<mcpvisor::CallToolResult, CallError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(call) = self.call.as_mut() else {
            return Poll::Ready(Err(CallError::Cancelled));
        };
        let done = Pin::new(call).poll(cx);
        if done.is_ready() {
            self.call = None;
        }
        done
    }
}

impl Drop for Detaching {
    fn drop(&mut self) {
        let Some(call) = self.call.take() else {
            return;
        };
        if self.fate.cancelled.load(Ordering::SeqCst) {
            return;
        }
        let (Some(session), Ok(runtime)) = (
            self.session.upgrade(),
            tokio::runtime::Handle::try_current(),
        ) else {
            return;
        };
        self.fate.detached.store(true, Ordering::SeqCst);
        let (abort, registration) = AbortHandle::new_pair();
        {
            let mut state = session.state.lock();
            let ours = match state.in_flight.get(&self.id) {
                Some(entry) => Arc::ptr_eq(&entry.fate, &self.fate),
                // Its entry went first; nothing else took the id: put it back.
                None => !state.closed,
            };
            if !ours {
                return;
            }
            let fate = self.fate.clone();
            state
                .in_flight
                .insert(self.id.clone(), InFlight { abort, fate });
        }
        let (id, fate) = (self.id.clone(), self.fate.clone());
        runtime.spawn(async move {
            let _ = Abortable::new(call, registration).await;
            session.forget(&id, &fate);
        });
    }
}

#[derive(Default)]
struct State {
    /// `initialize` was answered: other requests are served.
    greeted: bool,
    /// `notifications/initialized` arrived: notifications may be sent.
    initialized: bool,
    log_level: Option<usize>,
    watching: bool,
    in_flight: HashMap<RequestId, InFlight>,
    closed: bool,
}

impl Session {
    /// Opens a session; unsolicited messages go to `notices`.
    pub fn open(gateway: Arc<Gateway>, naming: Naming, notices: Outbound) -> Arc<Session> {
        let events = gateway.host().events();
        let coalesce = gateway.options().coalesce;
        let session = Arc::new(Session {
            gateway,
            naming,
            notices,
            state: Mutex::new(State::default()),
            watcher: Mutex::new(None),
        });
        let task = tokio::spawn(watch_events(Arc::downgrade(&session), events, coalesce));
        *session.watcher.lock() = Some(task.abort_handle());
        session
    }

    /// Handles one message; answers to a request (and its progress) go to `replies`.
    pub fn receive(self: &Arc<Self>, message: Message, replies: &Outbound) {
        match message {
            Message::Request(request) => self.request(request, replies.clone()),
            Message::Notification(n) => self.notification(n),
            // This gateway sends no requests of its own yet, so answers are unexpected.
            Message::Response(_) | Message::Error(_) => {
                tracing::debug!("a downstream session sent an answer to no request");
            }
        }
    }

    /// Starts answering `request` on a task of its own; the answer goes to
    /// `replies` unless the request is cancelled first.
    pub fn request(self: &Arc<Self>, request: Request, replies: Outbound) {
        let answering = match self.begin(request, replies.clone()) {
            Ok(answering) => answering,
            Err(None) => return,
            Err(Some(refusal)) => {
                tokio::spawn(async move {
                    let _ = replies.send(refusal).await;
                });
                return;
            }
        };
        tokio::spawn(async move {
            if let Some(answer) = answering.await {
                let _ = replies.send(answer).await;
            }
        });
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
                Ok(answering) => answering.await,
                Err(refusal) => refusal,
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
    ) -> Result<impl Future<Output = Option<Message>> + Send + 'static, Option<Message>> {
        let mut state = self.state.lock();
        if state.closed {
            return Err(None);
        }
        let opening = request.method == methods::INITIALIZE;
        let refusal = if state.in_flight.contains_key(&request.id) {
            Some(format!("request id {} is already in use", request.id))
        } else if !opening && request.method != methods::PING && !state.greeted {
            Some("the session is not initialized: send `initialize` first".to_string())
        } else if state.in_flight.len() >= self.gateway.options().max_in_flight {
            Some(format!(
                "this session has {} requests in flight; wait for one to finish",
                state.in_flight.len()
            ))
        } else {
            None
        };
        if let Some(message) = refusal {
            return Err(Some(error_message(
                Some(request.id),
                error_codes::INVALID_REQUEST,
                message,
            )));
        }
        if opening {
            state.greeted = true;
        }
        let (abort, registration) = AbortHandle::new_pair();
        let fate = Arc::new(Fate::default());
        let entry = InFlight {
            abort,
            fate: fate.clone(),
        };
        state.in_flight.insert(request.id.clone(), entry);
        drop(state);
        let registered = Registered {
            session: self.clone(),
            id: request.id.clone(),
            fate: fate.clone(),
        };
        let session = self.clone();
        Ok(async move {
            let answer = session.answer(&request, &replies, &fate);
            let outcome = Abortable::new(answer, registration).await;
            drop(registered);
            let outcome = outcome.ok()?;
            Some(match outcome {
                Ok(result) => Message::Response(Response {
                    id: request.id,
                    result,
                }),
                Err(error) => Message::Error(ErrorResponse {
                    id: Some(request.id),
                    error,
                }),
            })
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
                let found = id.and_then(|id| self.state.lock().in_flight.remove(&id));
                if let Some(request) = found {
                    // The call is dropped, which cancels it upstream; no answer is sent.
                    request.cancel();
                }
            }
            _ => {}
        }
    }

    /// Drops `id`'s entry if it is still the one of `fate` (a cancelled id may
    /// have been used again since).
    fn forget(&self, id: &RequestId, fate: &Arc<Fate>) {
        let mut state = self.state.lock();
        if state
            .in_flight
            .get(id)
            .is_some_and(|r| Arc::ptr_eq(&r.fate, fate))
        {
            state.in_flight.remove(id);
        }
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.state.lock().in_flight.len()
    }

    /// Ends the session: requests in flight are abandoned (and cancelled upstream).
    pub fn close(&self) {
        let requests: Vec<InFlight> = {
            let mut state = self.state.lock();
            state.closed = true;
            state.in_flight.drain().map(|(_, r)| r).collect()
        };
        for request in requests {
            request.cancel();
        }
        if let Some(watcher) = self.watcher.lock().take() {
            watcher.abort();
        }
    }

    async fn answer(
        self: &Arc<Self>,
        request: &Request,
        replies: &Outbound,
        fate: &Arc<Fate>,
    ) -> Outcome {
        let (method, params) = (request.method.as_str(), request.params.clone());
        match method {
            methods::INITIALIZE => return self.initialize(params),
            methods::PING => return Ok(json!({})),
            _ => {}
        }
        let host = self.gateway.host();
        if matches!(method, methods::TOOLS_LIST | methods::TOOLS_CALL) {
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
                tools::list_page(host, self.naming, cursor, self.gateway.options().page_size)
                    .map_err(|_| error(error_codes::INVALID_PARAMS, "invalid cursor"))
            }
            methods::TOOLS_CALL => self.call(&request.id, params, replies, fate).await,
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
            extension::SERVERS => {
                let servers: Vec<Value> = host.servers().iter().map(wire::status_json).collect();
                Ok(json!({ "servers": servers }))
            }
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
            other => Err(error(
                error_codes::METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        }
    }

    fn initialize(&self, params: Option<Value>) -> Outcome {
        let requested = params
            .as_ref()
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                // Not initialized after all: what follows is refused again.
                self.state.lock().greeted = false;
                error(error_codes::INVALID_PARAMS, "`protocolVersion` is required")
            })?;
        tracing::debug!(requested, "downstream session initialized");
        Ok(json!({
            // The one revision this gateway serves; a client that wants another
            // one sees it here and may disconnect (the MCP negotiation rule).
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": true}, "logging": {}},
            "serverInfo": {"name": "mcpvisor", "version": env!("CARGO_PKG_VERSION")},
            "instructions": "Tools of supervised MCP servers, named mcp__<server>__<tool>. \
                A tool result that says a server restarted can be retried.",
        }))
    }

    async fn call(
        self: &Arc<Self>,
        id: &RequestId,
        params: Option<Value>,
        replies: &Outbound,
        fate: &Arc<Fate>,
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
        let routed = self.naming.route(name);
        let host = self.gateway.host();
        let Some(route) = routed.as_deref() else {
            return outcome::unrouted(host, name, None);
        };
        let mut options = CallOptions::default();
        // mcpvisor's own clients may shorten (or lengthen) the server's timeout.
        if let Some(ms) = params
            .get("_meta")
            .and_then(|m| m.get(extension::TIMEOUT_MS))
            .and_then(Value::as_u64)
        {
            options = options.timeout(Duration::from_millis(ms));
        }
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
        let mut pending = Detaching {
            call: Some(host.call(route, arguments, options)),
            session: Arc::downgrade(self),
            id: id.clone(),
            fate: fate.clone(),
        };
        tokio::select! {
            result = &mut pending => match result {
                Ok(result) => Ok(result.to_value()),
                Err(CallError::UnknownTool(_)) => outcome::unrouted(host, name, Some(route)),
                Err(e) => outcome::failed(e),
            },
            () = self.gateway.stopped() => {
                // Stopping is the end of the call, not a client gone away.
                fate.cancelled.store(true, Ordering::SeqCst);
                outcome::shutting_down()
            }
        }
    }

    /// Reacts to one supervisor event; returns whether the tool set may have changed.
    fn on_event(&self, event: &HostEvent) -> bool {
        let (watching, log_level) = {
            let state = self.state.lock();
            (state.watching, state.log_level)
        };
        if watching {
            let params = json!({"text": event.to_string(), "event": wire::event_json(event)});
            let _ = self
                .notices
                .try_send(notification(extension::EVENT, params));
        }
        if let (HostEvent::ServerLog { server, message }, Some(min)) = (event, log_level)
            && level_rank(&message.level).is_some_and(|l| l >= min)
        {
            let params = json!({"level": message.level, "logger": &**server, "data": message.data});
            let _ = self
                .notices
                .try_send(notification(methods::LOG_MESSAGE, params));
        }
        wire::changes_routes(event)
    }

    fn tools_changed(&self) {
        if self.state.lock().initialized {
            let _ = self
                .notices
                .try_send(notification(methods::TOOLS_LIST_CHANGED, json!({})));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

/// Forwards events to a session until it is gone. Route changes become one
/// `list_changed` at most `coalesce` after the first of them, however many
/// other events (progress, logs) keep coming.
async fn watch_events(
    session: Weak<Session>,
    events: impl Stream<Item = HostEvent>,
    coalesce: Duration,
) {
    let mut events = std::pin::pin!(events);
    let mut due: Option<tokio::time::Instant> = None;
    loop {
        let event = match due {
            Some(at) => tokio::select! {
                event = events.next() => event,
                () = tokio::time::sleep_until(at) => {
                    due = None;
                    match session.upgrade() {
                        Some(s) => s.tools_changed(),
                        None => return,
                    }
                    continue;
                }
            },
            None => events.next().await,
        };
        let (Some(event), Some(session)) = (event, session.upgrade()) else {
            return;
        };
        if session.on_event(&event) && due.is_none() {
            due = Some(tokio::time::Instant::now() + coalesce);
        }
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
