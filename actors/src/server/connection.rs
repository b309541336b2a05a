//! The state of one connection and what each message does to it.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures::FutureExt;
use mcpvisor_protocol::jsonrpc::{ErrorObject, ErrorResponse, Response, error_codes};
use mcpvisor_protocol::listing::{ListingBounds, json_size};
use mcpvisor_protocol::messages::{ResultError, ToolsPage, list_tools_params, methods};
use mcpvisor_protocol::session::{HandshakeState, SessionEvent};
use mcpvisor_protocol::{ClientSession, Incoming, Message, RequestId, Tool};
use mcpvisor_transports::{Outbound, TransportError, TransportEvent};
use ractor::ActorRef;
use ractor::MessagingErr;
use serde_json::Value;
use tokio::task::JoinHandle;

type Timer = JoinHandle<Result<(), MessagingErr<ServerMsg>>>;

use super::ServerArgs;
use super::malformed::MalformedCount;
use crate::catalog::{Lists, Offers, ServerLink};
use crate::context::HostContext;
use crate::error::{CallError, ConnectionError, FailureCell};
use crate::events::HostEvent;
use crate::host_requests::{self, HostRequest};
use crate::lane::CallLane;
use crate::messages::{ServerMsg, SupervisorMsg, TransportMsg};
use crate::options::ServerSpec;
use crate::registry::{RegistryMsg, ToolsReport};
use crate::status::{ServerId, ServerState};

/// What the session's own requests are for (calls go through the lane).
pub(crate) enum Pending {
    ListTools {
        generation: u64,
    },
    /// Asking a new connection again what the host asked of the last one
    /// (a subscription, a log level): its answer only matters if it fails.
    Renewal {
        what: &'static str,
    },
}

struct Listing {
    generation: u64,
    initial: bool,
    tools: Vec<Tool>,
    rejected: Vec<String>,
    bounds: ListingBounds,
    timer: Option<Timer>,
}

/// One connection: the session, its lane of calls, the tool listing under way.
pub(crate) struct Connection {
    id: ServerId,
    name: Arc<str>,
    spec: Arc<ServerSpec>,
    ctx: Arc<HostContext>,
    transport: ActorRef<TransportMsg>,
    pid: Option<u32>,
    session: ClientSession<Pending>,
    lane: Arc<CallLane>,
    ready: bool,
    stopping: bool,
    listing: Option<Listing>,
    relist: bool,
    list_generation: u64,
    startup_timer: Option<Timer>,
    malformed: MalformedCount,
    /// Why this connection ended, for the supervisor.
    failure: FailureCell,
    /// Server requests the host is answering now.
    host_requests: usize,
    /// What the server declared besides tools, once initialized.
    offers: Offers,
    /// Its resource and prompt lists, kept for hosts between requests.
    lists: Arc<Lists>,
}

impl Connection {
    pub(crate) fn new(
        args: ServerArgs,
        transport: ActorRef<TransportMsg>,
        pid: Option<u32>,
        lane: Arc<CallLane>,
        ids: Arc<AtomicI64>,
    ) -> Self {
        let ServerArgs {
            id,
            spec,
            ctx,
            failure,
        } = args;
        let session = ClientSession::with_ids(
            ctx.options.client_name.clone(),
            ctx.options.client_version.clone(),
            ids,
        )
        .with_capabilities(host_requests::declared(
            ctx.options.client_handler.as_ref(),
            ctx.roots.read().is_some(),
        ))
        .with_versions(
            spec.protocol_versions
                .clone()
                .unwrap_or_else(|| ctx.options.protocol_versions.clone()),
        );
        Connection {
            id,
            failure,
            name: Arc::from(spec.name.as_str()),
            spec,
            ctx,
            transport,
            pid,
            session,
            lane,
            ready: false,
            stopping: false,
            listing: None,
            relist: false,
            list_generation: 0,
            startup_timer: None,
            malformed: MalformedCount::default(),
            host_requests: 0,
            offers: Offers::default(),
            lists: Arc::default(),
        }
    }

    pub(crate) fn transport(&self) -> &ActorRef<TransportMsg> {
        &self.transport
    }

    pub(crate) fn lane(&self) -> &CallLane {
        &self.lane
    }

    /// How long after a failed write the connection ends if the reader has not
    /// reported the exit: past the reader's own wait for the exit status.
    pub(crate) fn write_failure_grace(&self) -> Duration {
        self.ctx.options.stdio.exit_wait * 2 + Duration::from_millis(500)
    }

    pub(crate) fn is_ready(&self) -> bool {
        self.ready
    }

    pub(crate) fn listing_generation(&self) -> Option<u64> {
        self.listing.as_ref().map(|l| l.generation)
    }

    pub(crate) fn startup_timeout(&self) -> Duration {
        self.spec
            .startup_timeout
            .unwrap_or(self.ctx.options.startup_timeout)
    }

    pub(crate) fn request_timeout(&self) -> Duration {
        self.spec
            .request_timeout
            .unwrap_or(self.ctx.options.request_timeout)
    }

    /// Longest a transport teardown may take before it is killed.
    pub(crate) fn teardown_budget(&self) -> Duration {
        let stdio = &self.ctx.options.stdio;
        stdio.grace * 2 + stdio.exit_wait + Duration::from_secs(1)
    }

    fn send(&self, msg: &Message) {
        let (id, initialize) = match msg {
            Message::Request(r) => (Some(r.id.clone()), r.method == methods::INITIALIZE),
            _ => (None, false),
        };
        let out = Outbound {
            line: msg.to_vec(),
            id,
            initialize,
        };
        // The lane reports a failed write to this actor, which ends the connection.
        if let Err(e) = self.lane.send(out) {
            tracing::debug!(server = %self.name, "send to server failed: {e}");
        }
    }

    /// Sends `initialize` and arms the startup timer.
    /// The server's slot.
    pub(crate) fn id(&self) -> ServerId {
        self.id
    }

    /// The process id (stdio).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    pub(crate) fn begin(&mut self, myself: &ActorRef<ServerMsg>) {
        match self.session.initialize() {
            Ok(init) => self.send(&init),
            Err(e) => tracing::error!(server = %self.name, "cannot initialize: {e}"),
        }
        self.startup_timer =
            Some(myself.send_after(self.startup_timeout(), || ServerMsg::StartupTimeout));
    }

    pub(crate) fn inbound(&mut self, myself: &ActorRef<ServerMsg>, event: TransportEvent) {
        match event {
            TransportEvent::Message(Incoming::Single(msg)) => self.on_message(myself, msg),
            TransportEvent::Message(Incoming::Batch(_))
                if !self.session.revision().is_none_or(|r| r.rules().batches) =>
            {
                // A server that batches at a revision without batches does not
                // speak the revision it chose: the connection ends, typed.
                let revision = self.session.revision().map_or("", |r| r.as_str());
                self.fail(
                    myself,
                    ConnectionError::Protocol(format!(
                        "the server sent a JSON-RPC batch, which protocol {revision} does not allow"
                    )),
                );
            }
            TransportEvent::Message(Incoming::Batch(items)) => {
                for item in items {
                    match item {
                        Ok(msg) => self.on_message(myself, msg),
                        Err(e) => self.ignore_malformed("batch element", &e),
                    }
                }
                // The batch may have carried the answer that settled a revision without batches.
                if let Some(revision) = self.session.revision()
                    && !revision.rules().batches
                {
                    self.fail(
                        myself,
                        ConnectionError::Protocol(format!(
                            "the server sent a JSON-RPC batch, which protocol {revision} does not allow"
                        )),
                    );
                }
            }
            TransportEvent::Malformed(e) => self.ignore_malformed("message", &e),
            TransportEvent::UnreadableAnswer { id, error } => {
                let failure = CallError::InvalidResult {
                    server: self.name.clone(),
                    source: ResultError {
                        what: "tools/call",
                        detail: format!("the answer could not be read: {error}"),
                    },
                };
                if !self.lane.fail_with(&id, failure) {
                    self.ignore_malformed("answer", &error);
                }
            }
            TransportEvent::RequestFailed { id, error } => self.request_failed(myself, id, error),
            TransportEvent::SessionRenewed => {
                self.ctx.bus.emit(HostEvent::SessionRenewed {
                    server: self.name.clone(),
                });
                // A new session may offer other tools.
                if self.ready && self.listing.is_none() {
                    self.start_listing(myself, false);
                } else if self.ready {
                    self.relist = true;
                }
            }
            TransportEvent::Closed(e) => self.fail(myself, ConnectionError::Transport(e)),
        }
    }

    fn ignore_malformed(&mut self, what: &str, e: &dyn std::fmt::Display) {
        if self.malformed.note() {
            let ignored = self.malformed.count();
            tracing::warn!(server = %self.name, ignored, "ignored malformed {what}: {e}");
        }
    }

    /// One request failed in the transport (an HTTP status, an oversize answer):
    /// that request fails; the connection goes on unless it was the handshake.
    fn request_failed(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        id: RequestId,
        error: TransportError,
    ) {
        let handshake =
            matches!(self.session.state(), HandshakeState::Initializing(init) if *init == id);
        // Without authorization the server cannot start, and once only a person can
        // authorize it no request will succeed: either way the connection ends.
        let unauthorized =
            matches!(&error, TransportError::Auth(e) if !self.ready || e.needs_login());
        if handshake || unauthorized {
            self.fail(myself, ConnectionError::Transport(error));
            return;
        }
        match self.session.forget(&id) {
            Some(Pending::ListTools { generation }) => {
                let error = ErrorObject {
                    code: mcpvisor_protocol::jsonrpc::error_codes::INTERNAL_ERROR,
                    message: error.to_string(),
                    data: None,
                };
                self.on_tools_page(myself, generation, Err(error));
            }
            Some(Pending::Renewal { what }) => {
                tracing::warn!(server = %self.name, "renewing {what} failed: {error}");
            }
            None => {
                self.lane.fail(&id, error);
            }
        }
    }

    /// Hands a server's request to the host's handler on a task of its own,
    /// bounded in number and time; its answer comes back as `HostAnswered`.
    fn ask_host(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        id: RequestId,
        method: String,
        params: Value,
    ) {
        if method == methods::ROOTS_LIST {
            // The roots are the host's, kept here: no handler is involved.
            let roots = self
                .ctx
                .roots
                .read()
                .clone()
                .unwrap_or_else(|| Arc::from([]));
            let result = serde_json::json!({ "roots": &*roots });
            self.answer_host_request(id, Ok(result));
            return;
        }
        let options = &self.ctx.options;
        let admitted = match &options.client_handler {
            None => Err(host_requests::error(
                error_codes::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            )),
            Some(_) if self.host_requests >= options.max_host_requests => {
                Err(host_requests::error(
                    -32000,
                    format!(
                        "the host is answering {} requests of this server; try again later",
                        self.host_requests
                    ),
                ))
            }
            Some(handler) => {
                host_requests::admit(&method, &params).map(|form| (handler.clone(), form))
            }
        };
        let (handler, form) = match admitted {
            Ok(admitted) => admitted,
            Err(error) => {
                self.answer_host_request(id, Err(error));
                return;
            }
        };
        self.host_requests += 1;
        let request = HostRequest {
            server: self.name.clone(),
            method,
            params,
        };
        let timeout = options.host_request_timeout;
        let me = myself.clone();
        tokio::spawn(async move {
            // A handler that panics or never returns still gets the server an answer.
            let asked = std::panic::AssertUnwindSafe(handler.0.answer(request)).catch_unwind();
            let answer = match tokio::time::timeout(timeout, asked).await {
                Ok(Ok(Ok(answer))) => host_requests::finish(form.as_ref(), answer),
                Ok(Ok(Err(error))) => Err(error),
                Ok(Err(_)) => Err(host_requests::error(
                    error_codes::INTERNAL_ERROR,
                    "the host's handler failed",
                )),
                Err(_) => Err(host_requests::error(
                    -32001,
                    format!("the host did not answer within {timeout:?}"),
                )),
            };
            let _ = me.cast(ServerMsg::HostAnswered { id, answer });
        });
    }

    /// Sends the host's answer to a server's request.
    pub(crate) fn answer_host_request(
        &mut self,
        id: RequestId,
        answer: Result<Value, ErrorObject>,
    ) {
        let message = match answer {
            Ok(result) => Message::Response(Response { id, result }),
            Err(error) => Message::Error(ErrorResponse {
                id: Some(id),
                error,
            }),
        };
        self.send(&message);
    }

    /// The host's roots changed: tell the server (once it is initialized).
    pub(crate) fn roots_changed(&mut self) {
        if self.session.is_ready() && !self.stopping {
            let note = Message::Notification(mcpvisor_protocol::jsonrpc::Notification::new(
                methods::ROOTS_LIST_CHANGED,
                None,
            ));
            self.send(&note);
        }
    }

    /// A request handed to the host has its answer.
    pub(crate) fn host_answered(&mut self, id: RequestId, answer: Result<Value, ErrorObject>) {
        self.host_requests = self.host_requests.saturating_sub(1);
        if !self.stopping {
            self.answer_host_request(id, answer);
        }
    }

    fn on_message(&mut self, myself: &ActorRef<ServerMsg>, msg: Message) {
        if self.stopping {
            return;
        }
        // A call's answer that came this way (in a batch, or behind other events).
        let Some(msg) = self.lane.complete(msg) else {
            return;
        };
        let handled = self.session.handle(msg);
        if let (SessionEvent::Ready(_), Some(revision)) = (&handled.event, self.session.revision())
        {
            // Ahead of `notifications/initialized`, which is the first message it governs.
            let _ = self.transport.cast(TransportMsg::Protocol(revision));
        }
        if let Some(reply) = &handled.reply {
            self.send(reply);
        }
        match handled.event {
            SessionEvent::Ready(init) => {
                self.offers = Offers::from_capabilities(&init.capabilities);
                tracing::debug!(server = %self.name, peer = %init.server_info.name, version = %init.server_info.version, "initialized");
                if let Some(sup) = myself.try_get_supervisor() {
                    let _ = sup.send_message(SupervisorMsg::Initialized {
                        id: self.id,
                        actor: myself.get_id(),
                        init: Arc::from(init),
                    });
                }
                let _ = self.transport.cast(TransportMsg::Ready);
                self.start_listing(myself, true);
            }
            SessionEvent::InitializeFailed(f) => self.fail(myself, ConnectionError::Initialize(f)),
            SessionEvent::Response { token, result } => self.on_answer(myself, token, Ok(result)),
            SessionEvent::ErrorResponse { token, error } => {
                self.on_answer(myself, token, Err(error))
            }
            SessionEvent::ServerRequest { method } => {
                tracing::debug!(server = %self.name, %method, "answered server request");
            }
            SessionEvent::HostRequest { id, method, params } => {
                self.ask_host(myself, id, method, params.unwrap_or(Value::Null));
            }
            SessionEvent::ToolsChanged => {
                if !self.ready {
                    // The first full list is still to come.
                } else if self.listing.is_some() {
                    self.relist = true;
                } else {
                    self.start_listing(myself, false);
                }
            }
            SessionEvent::ResourcesChanged => {
                self.lists.resources_changed();
                self.ctx.bus.emit(HostEvent::ResourcesChanged {
                    server: self.name.clone(),
                });
            }
            SessionEvent::PromptsChanged => {
                self.lists.prompts_changed();
                self.ctx.bus.emit(HostEvent::PromptsChanged {
                    server: self.name.clone(),
                });
            }
            SessionEvent::ResourceUpdated(updated) => {
                // Only what the host subscribed to: a server cannot fill the bus with URIs.
                if self.ctx.standing.is_subscribed(&self.name, &updated.uri) {
                    self.ctx.bus.emit(HostEvent::ResourceUpdated {
                        server: self.name.clone(),
                        uri: Arc::from(updated.uri),
                    });
                }
            }
            SessionEvent::Progress(p) => {
                if let Some(cb) = self.lane.progress(&p.progress_token) {
                    // A panicking host callback must not take the connection down with it.
                    let call = std::panic::AssertUnwindSafe(|| cb(&p));
                    if std::panic::catch_unwind(call).is_err() {
                        tracing::error!(server = %self.name, "progress callback panicked");
                    }
                }
                self.ctx.bus.emit(HostEvent::Progress {
                    server: self.name.clone(),
                    progress: p,
                });
            }
            SessionEvent::Log(message) => {
                tracing::debug!(server = %self.name, level = %message.level, "server log: {}", message.data);
                self.ctx.bus.emit(HostEvent::ServerLog {
                    server: self.name.clone(),
                    message,
                });
            }
            SessionEvent::Ignored(why) => {
                tracing::debug!(server = %self.name, ?why, "ignored message")
            }
        }
    }

    fn on_answer(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        pending: Pending,
        outcome: Result<Value, ErrorObject>,
    ) {
        match pending {
            Pending::ListTools { generation } => self.on_tools_page(myself, generation, outcome),
            Pending::Renewal { what } => {
                if let Err(error) = outcome {
                    tracing::warn!(server = %self.name, code = error.code, "renewing {what} failed: {}", error.message);
                }
            }
        }
    }

    /// A new registry knows nothing of this connection: list the tools again and
    /// report them. A connection whose first report may have been lost with the
    /// old registry (the host still sees it starting) reports as a first one.
    pub(crate) fn report_again(&mut self, myself: &ActorRef<ServerMsg>) {
        if !self.ready {
            return;
        }
        let starting = self
            .ctx
            .status
            .snapshot()
            .iter()
            .any(|s| s.id == self.id && matches!(s.state, ServerState::Starting { .. }));
        if self.listing.is_some() {
            self.relist = true;
        } else {
            self.start_listing(myself, starting);
        }
    }

    fn start_listing(&mut self, myself: &ActorRef<ServerMsg>, initial: bool) {
        self.list_generation += 1;
        let generation = self.list_generation;
        let timer = (!initial).then(|| {
            myself.send_after(self.request_timeout(), move || ServerMsg::ListTimedOut {
                generation,
            })
        });
        self.listing = Some(Listing {
            generation,
            initial,
            tools: Vec::new(),
            rejected: Vec::new(),
            bounds: ListingBounds::new(self.ctx.options.listing),
            timer,
        });
        self.request_page(None, generation);
    }

    fn request_page(&mut self, cursor: Option<&str>, generation: u64) {
        let params = list_tools_params(cursor);
        if let Ok((_, msg)) = self.session.request(
            methods::TOOLS_LIST,
            params,
            Pending::ListTools { generation },
        ) {
            self.send(&msg);
        }
    }

    fn on_tools_page(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        generation: u64,
        outcome: Result<Value, ErrorObject>,
    ) {
        let Some(listing) = self.listing.as_mut().filter(|l| l.generation == generation) else {
            return;
        };
        let page = match outcome {
            Ok(v) => {
                // What the listing keeps: the tools (a cursor is kept as a hash).
                let bytes = v.get("tools").map_or(0, json_size);
                ToolsPage::parse(v)
                    .map(|page| (bytes, page))
                    .map_err(|e| ConnectionError::Protocol(e.to_string()))
            }
            // A server that declared no tools (resources or prompts only) may
            // refuse the listing: it has none, and is ready all the same.
            Err(_) if !self.offers.tools => Ok((
                0,
                ToolsPage {
                    tools: Vec::new(),
                    rejected: Vec::new(),
                    next_cursor: None,
                },
            )),
            Err(error) => Err(ConnectionError::Protocol(format!(
                "tools/list failed: {} (code {})",
                error.message, error.code
            ))),
        };
        let problem = match page {
            Err(problem) => Some(problem),
            Ok((bytes, page)) => {
                let counted = listing.bounds.page(
                    bytes,
                    page.tools.len() + page.rejected.len(),
                    page.next_cursor.as_deref(),
                );
                listing.tools.extend(page.tools);
                listing.rejected.extend(page.rejected);
                match (counted, page.next_cursor) {
                    (Err(error), _) => {
                        // What this listing gathered goes now, not with the connection.
                        listing.tools = Vec::new();
                        Some(ConnectionError::Listing {
                            server: self.name.clone(),
                            error,
                        })
                    }
                    (Ok(()), Some(c)) => {
                        self.request_page(Some(&c), generation);
                        return;
                    }
                    (Ok(()), None) => None,
                }
            }
        };
        let Some(listing) = self.listing.take() else {
            return;
        };
        if let Some(timer) = &listing.timer {
            timer.abort();
        }
        if let Some(problem) = problem {
            if listing.initial {
                self.fail(myself, problem);
            } else {
                // The routes from the last good list stay; the server is still usable.
                tracing::warn!(server = %self.name, "re-listing tools failed: {problem}");
            }
            return;
        }
        self.report(myself, listing);
        if std::mem::take(&mut self.relist) {
            self.start_listing(myself, false);
        }
    }

    fn report(&mut self, myself: &ActorRef<ServerMsg>, listing: Listing) {
        if listing.initial {
            // Open before the routes exist, so the first call routed here is taken.
            self.lane.open();
        }
        let link = Arc::new(ServerLink {
            id: self.id,
            name: self.name.clone(),
            lane: self.lane.clone(),
            request_timeout: self.request_timeout(),
            offers: self.offers,
            lists: self.lists.clone(),
            limits: self.ctx.options.listing,
            revision: self.session.revision(),
        });
        if listing.initial {
            self.renew(&link);
        }
        let report = ToolsReport {
            id: self.id,
            name: self.name.clone(),
            link,
            tools: listing.tools,
            rejected: listing.rejected,
            initial: listing.initial,
            pid: self.pid,
        };
        self.ctx.to_registry(RegistryMsg::Report(Box::new(report)));
        if listing.initial {
            self.ready = true;
            if let Some(timer) = self.startup_timer.take() {
                timer.abort();
            }
            if let Some(sup) = myself.try_get_supervisor() {
                let _ = sup.send_message(SupervisorMsg::ServerReady { id: self.id });
            }
        }
    }

    /// Asks a new connection what the host asked of the server before: the
    /// log level ahead of any call, the subscriptions one at a time on the
    /// lane (with the calls' deadline), so however many there are, at most one
    /// is waiting for its answer.
    fn renew(&mut self, link: &Arc<ServerLink>) {
        if self.offers.logging
            && let Some(level) = self.ctx.standing.level(&self.name)
            && let Ok((_, msg)) = self.session.request(
                methods::SET_LOG_LEVEL,
                Some(level.params()),
                Pending::Renewal {
                    what: "the log level",
                },
            )
        {
            self.send(&msg);
        }
        let uris = self.ctx.standing.subscriptions(&self.name);
        if !self.offers.subscribe || uris.is_empty() {
            return;
        }
        let link = link.clone();
        tokio::spawn(async move {
            for uri in uris {
                let params = mcpvisor_protocol::resources::uri_params(&uri);
                match link.ask(methods::RESOURCES_SUBSCRIBE, Some(params)).await {
                    Ok(_) => {}
                    Err(e @ (CallError::Rpc { .. } | CallError::InvalidResult { .. })) => {
                        tracing::warn!(server = %link.name, "renewing a subscription failed: {e}");
                    }
                    // The connection is gone or going: the next one renews them all.
                    Err(_) => return,
                }
            }
        });
    }

    /// Ends the connection: every pending request fails, the actor stops, and the
    /// supervisor decides about a restart.
    pub(crate) fn fail(&mut self, myself: &ActorRef<ServerMsg>, cause: ConnectionError) {
        if self.stopping {
            return;
        }
        let server = self.name.clone();
        let reason = cause.to_string();
        tracing::warn!(server = %server, "connection failed: {reason}");
        let error = match &cause {
            ConnectionError::RequestTimeout(_) => CallError::ConnectionTimedOut { server },
            ConnectionError::Transport(source) => CallError::Transport {
                server,
                source: source.clone(),
            },
            _ => CallError::ConnectionClosed {
                server,
                reason: Arc::from(reason.as_str()),
            },
        };
        self.fail_pending(error);
        if matches!(&cause, ConnectionError::Transport(TransportError::Auth(e)) if e.needs_login())
        {
            // A restart would only ask the authorization server again: wait for a login.
            // Other authorization failures (an unreachable token endpoint) restart as usual.
            if let Some(sup) = myself.try_get_supervisor() {
                let _ = sup.send_message(SupervisorMsg::LoginRequired {
                    id: self.id,
                    actor: myself.get_id(),
                    reason: Arc::new(cause.clone()),
                });
            }
        }
        *self.failure.lock() = Some(cause);
        // Withdraw the routes now rather than when the supervisor hears of the exit,
        // so new calls fail fast instead of reaching a stopping actor.
        self.ctx.to_registry(RegistryMsg::Remove(self.id));
        myself.stop(Some(reason));
    }

    /// Fails whatever is still pending when the actor stops for any reason.
    pub(crate) fn close_pending(&mut self, reason: &str) {
        let error = if self.ctx.shutting_down.load(Ordering::Relaxed) {
            CallError::Shutdown
        } else {
            CallError::ConnectionClosed {
                server: self.name.clone(),
                reason: Arc::from(reason),
            }
        };
        self.fail_pending(error);
    }

    fn fail_pending(&mut self, error: CallError) {
        self.stopping = true;
        // The session's own requests (tools/list) need no answer once it is closed.
        self.session.close();
        self.lane.close(&error);
        if let Some(timer) = self.startup_timer.take() {
            timer.abort();
        }
        if let Some(timer) = self.listing.take().and_then(|l| l.timer) {
            timer.abort();
        }
    }
}
