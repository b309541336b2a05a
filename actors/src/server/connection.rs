//! The state of one connection and what each message does to it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcpvisor_protocol::mcp::messages::{ResultError, methods};
use mcpvisor_protocol::mcp::route_headers::RouteHeaders;
use mcpvisor_protocol::state::calls::RequestIds;
use mcpvisor_protocol::state::listing::ListingBounds;
use mcpvisor_protocol::state::session::{HandshakeState, Ignored, SessionEvent};
use mcpvisor_protocol::state::setup_deadlines::SetupDeadlines;
use mcpvisor_protocol::wire::jsonrpc::ErrorObject;
use mcpvisor_protocol::{ClientSession, Incoming, Message, RequestId, Tool};
use mcpvisor_transports::{Outbound, TransportError, TransportEvent};
use ractor::ActorRef;
use ractor::MessagingErr;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio::time::Instant;

mod host_asks;
mod listen;
mod listing;
mod setup;

type Timer = JoinHandle<Result<(), MessagingErr<ServerMsg>>>;

use super::ServerArgs;
use super::malformed::MalformedCount;
use crate::context::HostContext;
use crate::error::{CallError, ConnectionError, FailureCell};
use crate::events::HostEvent;
use crate::host_requests;
use crate::lane::CallLane;
use crate::messages::{ServerMsg, SupervisorMsg, TransportMsg};
use crate::options::ServerSpec;
use crate::registry_msg::RegistryMsg;
use crate::server_lists::{Lists, Offers};
use crate::status::ServerId;

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
    /// The `subscriptions/listen` stream (a stateless revision), answered
    /// only when it ends.
    Listen,
}

struct Listing {
    generation: u64,
    initial: bool,
    /// At a stateless revision, the caching hints of its pages together.
    hint: Option<mcpvisor_protocol::mcp::caching::CacheHint>,
    tools: Vec<Tool>,
    rejected: Vec<String>,
    bounds: ListingBounds,
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
    /// The startup and re-listing deadlines, and the one timer set for the earliest.
    deadlines: SetupDeadlines<Instant>,
    deadline_timer: Option<Timer>,
    malformed: MalformedCount,
    /// Why this connection ended, for the supervisor.
    failure: FailureCell,
    /// Server requests the host is answering now.
    host_requests: usize,
    /// What the server declared besides tools, once initialized.
    offers: Offers,
    /// Its resource and prompt lists, kept for hosts between requests.
    lists: Arc<Lists>,
    /// The `subscriptions/listen` request open (a stateless revision).
    listen: Option<RequestId>,
}

impl Connection {
    pub(crate) fn new(
        args: ServerArgs,
        transport: ActorRef<TransportMsg>,
        pid: Option<u32>,
        lane: Arc<CallLane>,
        ids: RequestIds,
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
        .with_versions(setup::connection_versions(&spec, &ctx));
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
            listen: None,
            list_generation: 0,
            deadlines: SetupDeadlines::new(),
            deadline_timer: None,
            malformed: MalformedCount::default(),
            host_requests: 0,
            offers: Offers::default(),
            lists: Arc::default(),
        }
    }

    /// Fault injection no longer reaches this connection.
    pub(crate) fn detach_faults(&self, actor: ractor::ActorId) {
        self.ctx.faults.server(&self.name).detach(actor);
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
        let (id, initialize, listing, route) = match msg {
            Message::Request(r) => (
                Some(r.id.clone()),
                r.method == methods::INITIALIZE,
                // tools/list, prompts/list, resources/list, resources/templates/list
                r.method.ends_with("/list"),
                // The probe and every request at a stateless revision carry
                // that revision in their `_meta`, and the headers with it.
                RouteHeaders::stamped(&r.method, r.params.as_ref()).map(Box::new),
            ),
            Message::Notification(n) => (
                None,
                false,
                false,
                RouteHeaders::stamped(&n.method, n.params.as_ref()).map(Box::new),
            ),
            _ => (None, false, false, None),
        };
        let out = Outbound {
            line: msg.to_vec(),
            id,
            initialize,
            listing,
            route,
        };
        // The lane reports a failed write to this actor, which ends the connection.
        if let Err(e) = self.lane.send(out) {
            tracing::debug!(server = %self.name, "send to server failed: {e}");
        }
    }

    /// The server's slot.
    pub(crate) fn id(&self) -> ServerId {
        self.id
    }

    /// The process id (stdio).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
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
        if matches!(self.session.state(), HandshakeState::Discovering(probe) if *probe == id) {
            // The probe cannot be answered (an HTTP status): as if unanswered.
            let _ = self.session.forget(&id);
            if let Some(handled) = self.session.probe_unanswered() {
                self.after_step(myself, handled);
                self.arm_deadlines(myself);
            }
            return;
        }
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
                    code: mcpvisor_protocol::wire::jsonrpc::error_codes::INTERNAL_ERROR,
                    message: error.to_string(),
                    data: None,
                };
                self.on_tools_page(myself, generation, Err(error));
            }
            Some(Pending::Renewal { what }) => {
                tracing::warn!(server = %self.name, "renewing {what} failed: {error}");
            }
            Some(Pending::Listen) => {
                self.listen = None;
                tracing::debug!(server = %self.name, "subscriptions/listen failed: {error}");
            }
            None => {
                self.lane.fail(&id, error);
            }
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
        if matches!(handled.event, SessionEvent::Ignored(Ignored::Switched)) {
            // A probe's answer led to `initialize`, or a refused `initialize`
            // to a probe: the reply is the next step.
            self.after_step(myself, handled);
            return self.arm_deadlines(myself);
        }
        if matches!(handled.event, SessionEvent::Ready(_)) {
            self.deadlines.probed();
            if let Some(meta) = self.session.request_meta() {
                let handler = self.ctx.options.client_handler.clone();
                // As declared at this revision, as the server reads it.
                let mut offered =
                    mcpvisor_protocol::mcp::client_offers::ClientCapabilities::declared_by(
                        Some(&self.session.offered().to_value_at(meta.revision())),
                        meta.revision(),
                    );
                // A handler that answers roots itself may be asked for them in
                // a call made for its client (declared per call, narrowed to it).
                offered.roots |= handler.as_ref().is_some_and(|h| h.0.capabilities().roots);
                let asker = crate::lane::InputAsker {
                    handler,
                    roots: self.ctx.roots.clone(),
                    offered,
                    timeout: self.ctx.options.host_request_timeout,
                    permits: Arc::new(tokio::sync::Semaphore::new(
                        self.ctx.options.max_host_requests,
                    )),
                };
                self.lane.go_stateless(meta.clone(), asker);
                if let Some(level) = self.ctx.restart_replay.level(&self.name) {
                    self.lane.set_log_level(level);
                }
            }
        }
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
            SessionEvent::ElicitationComplete(id) => {
                if self.lane.completed(&id) {
                    self.ctx.bus.emit(HostEvent::ElicitationComplete {
                        server: self.name.clone(),
                        elicitation_id: Arc::from(id),
                    });
                }
            }
            SessionEvent::ResourceUpdated(updated) => {
                // Only what the host subscribed to: a server cannot fill the bus with URIs.
                if self
                    .ctx
                    .restart_replay
                    .is_subscribed(&self.name, &updated.uri)
                {
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
            Pending::Listen => self.listen_answered(outcome),
        }
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
        self.listing = None;
        self.deadlines = SetupDeadlines::new();
        if let Some(timer) = self.deadline_timer.take() {
            timer.abort();
        }
    }
}
