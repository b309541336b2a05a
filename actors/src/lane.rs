//! The call lane: how a tool call goes out and its answer comes back without
//! passing through the server actor's mailbox.
//!
//! One lane per connection, shared by the routes (callers), the transport's
//! reader (answers) and the server actor (lifecycle). A caller records its
//! reply channel in the call table, which gives it the connection's next
//! request id (one counter, shared with the session), and writes its line
//! itself (stdio) or hands it to the transport actor (HTTP). The reader completes the call from this table as soon as the answer
//! is parsed. Everything that is not a call's answer — notifications, server
//! requests, the session's own requests — still goes through the server actor,
//! and so does an answer that arrives while earlier events are still queued
//! there, so a call never completes before the progress or log messages the
//! server sent ahead of its answer.
//!
//! The server actor opens the lane when the connection is ready and closes it
//! when the connection ends, failing every call still in it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcpvisor_protocol::mcp::logging::LogLevel;
use mcpvisor_protocol::mcp::messages::ClientCapabilities;
use mcpvisor_protocol::mcp::messages::call_tool_line;
use mcpvisor_protocol::mcp::output_schema::OutputCheck;
use mcpvisor_protocol::mcp::param_headers::ParamHeaders;
use mcpvisor_protocol::mcp::request_meta::RequestMeta;
use mcpvisor_protocol::state::calls::{Answered, CallTable, RequestIds, StartRefused};
use mcpvisor_protocol::{CallToolResult, QualifiedMcpToolName, RequestId};
use mcpvisor_transports::{Outbound, StdioWriter, TransportError};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{Notify, oneshot};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::error::CallError;
use crate::options::ProgressCallback;
use mcpvisor_protocol::mcp::input_required::ASKING_METHODS;
pub(crate) use rounds::InputAsker;

/// A tool's compiled `outputSchema`, with the names its errors give.
#[derive(Debug)]
pub(crate) struct ToolOutput {
    pub(crate) tool: QualifiedMcpToolName,
    pub(crate) check: OutputCheck,
}

/// The answer to one call, as the caller waits for it.
pub(crate) type Answer = oneshot::Receiver<Result<CallToolResult, CallError>>;
/// The answer to one request of another kind (a listing, a read, a prompt), as sent.
pub(crate) type RawAnswer = oneshot::Receiver<Result<Value, CallError>>;

/// Where an answer goes: a tool call's is read as a `CallToolResult`; any other
/// request's result is handed over as sent, for its caller to read.
enum Reply {
    Call(oneshot::Sender<Result<CallToolResult, CallError>>),
    Raw(oneshot::Sender<Result<Value, CallError>>),
}

impl Reply {
    fn fail(self, error: CallError) {
        match self {
            Reply::Call(tx) => {
                let _ = tx.send(Err(error));
            }
            Reply::Raw(tx) => {
                let _ = tx.send(Err(error));
            }
        }
    }
}

/// Where a lane's lines go: straight into a stdio server's stdin, or through
/// the transport actor, which posts each HTTP request on its own task.
pub(crate) trait LaneWrite: Send + Sync {
    /// Sends `out`, whose line ends with its newline (stdio frames with it; an
    /// HTTP body goes without).
    fn write(&self, out: Outbound) -> Result<(), TransportError>;

    /// The lane stopped waiting for `id`: an HTTP request holds its
    /// connection until answered, so it is let go. Nothing to do on stdio.
    fn abandon(&self, _id: RequestId) {}
}

/// What the lane tells its connection, which ends when either happens.
pub(crate) trait LaneReport: Send + Sync {
    /// Call `id` ran past its timeout `after`. False when nobody heard it (the
    /// connection's actor is gone), so the lane fails what is left itself.
    fn call_timed_out(&self, id: i64, after: Duration) -> bool;

    /// A write failed for a reason other than backlog (told once per lane).
    fn write_failed(&self, error: TransportError);

    /// What the host listens for changed (a stateless revision's
    /// `subscriptions/listen` is opened anew).
    fn relisten(&self) {}

    /// A call found the tools list stale: it is read again.
    fn tools_stale(&self) {}
}

impl LaneWrite for StdioWriter {
    fn write(&self, out: Outbound) -> Result<(), TransportError> {
        self.write_line(out.line)
    }
}

/// What the lane keeps per call; the call's state is the table's.
struct Slot {
    reply: Reply,
    progress: Option<ProgressCallback>,
    /// The tool's `outputSchema`, where the revision asks results to match it.
    output: Option<Arc<ToolOutput>>,
    /// The call's timeout, for the error that reports it.
    after: Duration,
    /// What sending it again takes, where it may be answered with questions
    /// (a stateless revision).
    retry: Option<Box<rounds::Retry>>,
    /// Counted in [`Vitals::calls_in_flight`](crate::Vitals) while the slot lives.
    _live: crate::vitals::Live,
}

/// What a tool's route says a call of it is checked against: its output
/// schema (from 2025-06-18 a result must match it) and the arguments its
/// schema asks to be mirrored into HTTP headers (MCP 2026-07-28 over HTTP).
#[derive(Default)]
pub(crate) struct ToolShape<'a> {
    pub(crate) output: Option<Arc<ToolOutput>>,
    pub(crate) mirrored: Option<&'a ParamHeaders>,
}

/// The calls in flight on one connection.
pub(crate) struct CallLane {
    server: Arc<str>,
    report: Arc<dyn LaneReport>,
    writer: Arc<dyn LaneWrite>,
    /// The calls in flight; their ids are the table's, from the connection's counter.
    calls: Mutex<CallTable<Slot, Instant>>,
    /// Wakes the deadline task when a call is due sooner than its timer.
    wake: Arc<Notify>,
    /// The instant the deadline task sleeps until (`None`: it waits for a call).
    armed: Mutex<Option<Instant>>,
    deadlines: Mutex<Option<AbortHandle>>,
    /// Set once a failed write was reported to the actor.
    write_failed: AtomicBool,
    /// Progress of tasks, by the token of the call that started each.
    watched: Mutex<std::collections::HashMap<i64, ProgressCallback>>,
    /// URL elicitations the host was asked about or told of (a `-32042`), for
    /// their completion notices.
    asked_urls: Mutex<crate::host_requests::AskedUrls>,
    /// What each request carries once the server is reached at a stateless
    /// revision (set once, before the lane opens).
    meta: OnceLock<RequestMeta>,
    /// The level of the log messages asked for with each request at a
    /// stateless revision (`Host::set_log_level`; none: no messages).
    log_level: Mutex<Option<LogLevel>>,
    /// Who answers the server's questions (set with `meta`).
    asker: OnceLock<Arc<rounds::InputAsker>>,
    /// Requests past their first round, by the id their caller was given.
    rounds: Mutex<rounds::Rounds>,
    /// This lane, for the tasks that answer questions and send the next round.
    me: OnceLock<std::sync::Weak<CallLane>>,
    /// Where those tasks run: the host's runtime, taken when the lane is
    /// bound (never the thread an answer happened to arrive on).
    runtime: OnceLock<tokio::runtime::Handle>,
    /// Requests that may wait between rounds at once (the in-flight bound).
    max_asking: usize,
    /// When the lane began: the clock of `tools_fresh_until`.
    born: Instant,
    /// Milliseconds after `born` at which the tools list goes stale (a
    /// stateless revision's `ttlMs`); `u64::MAX`: not before a change notice.
    tools_fresh_until: std::sync::atomic::AtomicU64,
    /// Milliseconds after `born` before which a stale list is not read again.
    tools_recheck_at: std::sync::atomic::AtomicU64,
    /// Counted in [`Vitals::lanes`](crate::Vitals) while the lane lives.
    _live: crate::vitals::Live,
}

impl std::fmt::Debug for CallLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallLane")
            .field("server", &self.server)
            .field("in_flight", &self.calls.lock().len())
            .finish()
    }
}

impl CallLane {
    pub(crate) fn new(
        server: Arc<str>,
        report: Arc<dyn LaneReport>,
        writer: Arc<dyn LaneWrite>,
        ids: RequestIds,
        max_in_flight: usize,
    ) -> Self {
        CallLane {
            server,
            report,
            writer,
            calls: Mutex::new(CallTable::with_ids(max_in_flight, ids)),
            wake: Arc::new(Notify::new()),
            armed: Mutex::new(None),
            deadlines: Mutex::new(None),
            write_failed: AtomicBool::new(false),
            watched: Mutex::new(std::collections::HashMap::new()),
            asked_urls: Mutex::default(),
            meta: OnceLock::new(),
            log_level: Mutex::new(None),
            asker: OnceLock::new(),
            rounds: Mutex::default(),
            me: OnceLock::new(),
            runtime: OnceLock::new(),
            max_asking: max_in_flight,
            born: Instant::now(),
            tools_fresh_until: std::sync::atomic::AtomicU64::new(u64::MAX),
            tools_recheck_at: std::sync::atomic::AtomicU64::new(0),
            _live: crate::vitals::Live::lane(),
        }
    }

    /// Lets the lane's own tasks (the rounds of a request) reach it.
    pub(crate) fn bind(self: &Arc<Self>) {
        let _ = self.me.set(Arc::downgrade(self));
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let _ = self.runtime.set(handle);
        }
    }

    /// Runs a task of the lane's own on the host's runtime.
    fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        match self.runtime.get() {
            Some(runtime) => drop(runtime.spawn(task)),
            None => drop(tokio::spawn(task)),
        }
    }

    /// The host's subscriptions changed: the connection listens anew.
    pub(crate) fn relisten(&self) {
        self.report.relisten();
    }

    /// Whether the server is reached at a stateless revision.
    pub(crate) fn is_stateless(&self) -> bool {
        self.meta.get().is_some()
    }

    /// The server this lane belongs to.
    pub(crate) fn server(&self) -> &Arc<str> {
        &self.server
    }

    /// Sends `tools/call` for `tool`, due within `timeout`, checked as `shape`
    /// says. Returns the request id and the answer to wait on.
    pub(crate) fn start(
        &self,
        tool: &str,
        arguments: Option<&Value>,
        progress: Option<ProgressCallback>,
        shape: ToolShape<'_>,
        timeout: Duration,
        answers: Option<ClientCapabilities>,
    ) -> Result<(i64, Answer), CallError> {
        let ToolShape { output, mirrored } = shape;
        let with_progress = progress.is_some();
        let params_headers = match (self.meta.get(), mirrored) {
            (Some(_), Some(mirrored)) => {
                mirrored
                    .extract(arguments)
                    .map_err(|source| CallError::ArgumentHeader {
                        server: self.server.clone(),
                        source,
                    })?
            }
            _ => Vec::new(),
        };
        let (reply, answer) = oneshot::channel();
        let mut slot = Slot {
            reply: Reply::Call(reply),
            progress,
            output,
            after: timeout,
            retry: None,
            _live: crate::vitals::Live::call(),
        };
        if self.meta.get().is_some() {
            // Stateless: the request may go several rounds, each built alike.
            let mut params = serde_json::json!({"name": tool});
            if let Some(arguments) = arguments {
                params["arguments"] = arguments.clone();
            }
            let id = self.next_id();
            let retry = rounds::Retry::of(
                id,
                mcpvisor_protocol::mcp::messages::methods::TOOLS_CALL,
                params,
                with_progress,
                params_headers,
                timeout,
            )
            .map(|retry| retry.answering(answers));
            let mut retry = retry;
            let line = retry.as_mut().map(|r| self.round_line(id, r));
            slot.retry = retry;
            let id = self.begin(Some(id), |_| line.unwrap_or_default(), slot)?;
            return Ok((id, answer));
        }
        // The progress token is the request id: unique on this connection.
        let line = |id| {
            (
                call_tool_line(id, tool, arguments, with_progress.then_some(id)),
                None,
            )
        };
        let id = self.begin(None, line, slot)?;
        Ok((id, answer))
    }

    /// Sends a request of another kind (`resources/read`, `prompts/list`…) on
    /// the calls' path, with their deadline rule: one that times out ends the
    /// connection. Returns the request id and the result to wait on, as sent.
    pub(crate) fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<(i64, RawAnswer), CallError> {
        self.request_with(None, method, params, timeout, None)
    }

    /// [`CallLane::request`], awaited: the result as sent. Dropping the future
    /// cancels the request (the server is sent `notifications/cancelled`).
    pub(crate) async fn ask(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        self.ask_for(method, params, timeout, None).await
    }

    /// [`CallLane::ask`] made for a client that answers `answers` (a
    /// gateway's): at a stateless revision each round declares only that.
    pub(crate) async fn ask_for(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        answers: Option<ClientCapabilities>,
    ) -> Result<Value, CallError> {
        let (id, answer) = self.request_with(None, method, params, timeout, answers)?;
        self.await_raw(id, answer).await
    }

    /// Waits for a raw request's answer; cancels it if dropped first.
    pub(crate) async fn await_raw(&self, id: i64, answer: RawAnswer) -> Result<Value, CallError> {
        let cancel = CancelOnDrop {
            lane: self,
            id,
            armed: true,
        };
        let outcome = answer.await;
        cancel.disarm();
        outcome.unwrap_or_else(|_| {
            Err(CallError::ConnectionClosed {
                server: self.server.clone(),
                reason: Arc::from("the connection ended before answering"),
            })
        })
    }

    /// The next request id of this connection (for a request whose parameters
    /// name it, as a progress token does), to pass to [`CallLane::request_as`].
    pub(crate) fn next_id(&self) -> i64 {
        self.calls.lock().ids().next()
    }

    /// [`CallLane::request`] under an id from [`CallLane::next_id`].
    pub(crate) fn request_as(
        &self,
        id: i64,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<RawAnswer, CallError> {
        let (_, answer) = self.request_with(Some(id), method, params, timeout, None)?;
        Ok(answer)
    }

    /// A raw request under `id`, or the table's next id.
    fn request_with(
        &self,
        id: Option<i64>,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        answers: Option<ClientCapabilities>,
    ) -> Result<(i64, RawAnswer), CallError> {
        let (reply, answer) = oneshot::channel();
        let mut slot = Slot {
            reply: Reply::Raw(reply),
            progress: None,
            output: None,
            after: timeout,
            retry: None,
            _live: crate::vitals::Live::call(),
        };
        if self.meta.get().is_some()
            && let Some(feature) = stateless::removed_at_stateless(method)
        {
            return Err(CallError::NotOffered {
                server: self.server.clone(),
                feature,
            });
        }
        if self.meta.get().is_some()
            && let Some(asking) = ASKING_METHODS.iter().find(|m| **m == method)
        {
            let id = id.unwrap_or_else(|| self.next_id());
            let params = params.unwrap_or_else(|| Value::Object(Default::default()));
            let mut retry = rounds::Retry::of(id, asking, params, false, Vec::new(), timeout)
                .map(|retry| retry.answering(answers));
            let line = retry.as_mut().map(|r| self.round_line(id, r));
            slot.retry = retry;
            let id = self.begin(Some(id), |_| line.unwrap_or_default(), slot)?;
            return Ok((id, answer));
        }
        let line = |id| self.line_of(id, method, params);
        let id = self.begin(id, line, slot)?;
        Ok((id, answer))
    }

    /// Sends progress for token `id` to `progress` until [`CallLane::unwatch`]
    /// (a task's progress outlives the request that started it).
    pub(crate) fn watch(&self, id: i64, progress: ProgressCallback) {
        self.watched.lock().insert(id, progress);
    }

    /// Stops [`CallLane::watch`]ing `id`.
    pub(crate) fn unwatch(&self, id: i64) {
        self.watched.lock().remove(&id);
    }

    /// Records a request due after `slot.after`, under `id` or the table's
    /// next id, then writes its line (`line` of the id); returns the id.
    fn begin(
        &self,
        id: Option<i64>,
        line: impl FnOnce(i64) -> stateless::Line,
        slot: Slot,
    ) -> Result<i64, CallError> {
        let timeout = slot.after;
        let deadline = Instant::now() + timeout;
        let started = {
            let mut calls = self.calls.lock();
            match id {
                Some(id) => calls.start(id, deadline, slot).map(|()| id),
                None => calls.start_next(deadline, slot),
            }
        };
        let id = started.map_err(|e| match e {
            StartRefused::Overloaded(limit) => CallError::Overloaded {
                server: self.server.clone(),
                limit,
            },
            _ => self.unavailable(),
        })?;
        let (line, route) = line(id);
        self.arm(deadline);
        let out = Outbound {
            line,
            id: Some(RequestId::Number(id)),
            initialize: false,
            listing: false,
            route,
        };
        if let Err(e) = self.write(out) {
            self.calls.lock().withdraw(id);
            return Err(match e {
                TransportError::Backlog { .. } => CallError::Transport {
                    server: self.server.clone(),
                    source: e,
                },
                // `send` has told the actor, which ends the connection.
                _ => self.unavailable(),
            });
        }
        Ok(id)
    }

    /// Stops waiting for call `id`, tells the server, and answers the caller
    /// with [`CallError::Cancelled`]. A call that already ended is left alone.
    pub(crate) fn cancel(&self, id: i64) {
        if self.cancel_asking(id) {
            return;
        }
        let id = self.current_round(id);
        let Some((slot, note)) = self.calls.lock().cancel(id, "cancelled by the host") else {
            return;
        };
        let mut line = note.to_vec();
        line.push(b'\n');
        self.writer.abandon(RequestId::Number(id));
        // Best effort: a server that is not reading will not act on it anyway.
        let _ = self.write(Outbound {
            line,
            id: None,
            initialize: false,
            listing: false,
            route: self.route_of_notice(mcpvisor_protocol::mcp::messages::methods::CANCELLED),
        });
        self.rounds_ended(&slot);
        slot.reply.fail(CallError::Cancelled);
    }

    /// True if call `id` timed out (the first time asked): the connection ends.
    pub(crate) fn take_expired(&self, id: i64) -> bool {
        self.calls.lock().take_expired(id)
    }

    /// Remembers a URL elicitation the host is asked about.
    pub(crate) fn expect_completion(&self, elicitation_id: String) {
        self.asked_urls.lock().remember(elicitation_id);
    }

    /// True (once) when the server's completion notice names an elicitation
    /// the host was asked about or told of.
    pub(crate) fn completed(&self, elicitation_id: &str) -> bool {
        self.asked_urls.lock().complete(elicitation_id)
    }

    /// Fails call `id` alone (an HTTP status for its POST, an oversize answer).
    /// False if `id` is not a call in this lane.
    pub(crate) fn fail(&self, id: &RequestId, error: TransportError) -> bool {
        self.fail_with(
            id,
            CallError::Transport {
                server: self.server.clone(),
                source: error,
            },
        )
    }

    /// Fails call `id` alone with `error`. False if `id` is not a call in this lane.
    pub(crate) fn fail_with(&self, id: &RequestId, error: CallError) -> bool {
        let RequestId::Number(n) = id else {
            return false;
        };
        let slot = match self.calls.lock().fail(*n) {
            Answered::Call(slot) => slot,
            Answered::Late => return true,
            Answered::Unknown => return false,
        };
        self.rounds_ended(&slot);
        slot.reply.fail(error);
        true
    }

    /// The progress callback of the call whose progress token is `token`.
    pub(crate) fn progress(&self, token: &Value) -> Option<ProgressCallback> {
        let id = token.as_i64()?;
        if let Some(progress) = self.calls.lock().get(id).and_then(|s| s.progress.clone()) {
            return Some(progress);
        }
        self.watched.lock().get(&id).cloned()
    }

    /// The connection is ready: calls may start.
    pub(crate) fn open(&self) {
        self.calls.lock().open();
    }

    /// The connection is ending: no call starts any more, and every call in
    /// flight fails with `error`.
    pub(crate) fn close(&self, error: &CallError) {
        let slots = self.calls.lock().close();
        // A request whose host is still answering is told when its round
        // cannot be sent; one that is between rounds ends with the lane.
        self.rounds.lock().clear();
        if let Some(task) = self.deadlines.lock().take() {
            task.abort();
        }
        for (_, slot) in slots {
            slot.reply.fail(error.clone());
        }
    }

    /// Sends one message of the connection's own (the handshake, listings,
    /// replies to the server): straight to stdin for stdio, so it keeps its
    /// place among the calls' lines, or through the transport actor.
    pub(crate) fn send(&self, mut out: Outbound) -> Result<(), TransportError> {
        out.line.push(b'\n');
        self.write(out)
    }

    /// Sends `out`, whose line ends with its newline (stdio frames with it; an
    /// HTTP body goes without). A failed write is reported to the actor.
    fn write(&self, out: Outbound) -> Result<(), TransportError> {
        let sent = self.writer.write(out);
        if let Err(e) = &sent {
            self.write_failed(e.clone());
        }
        sent
    }

    /// A write failed for a reason other than backlog: the server cannot be
    /// reached any more, so its connection must end (once), even if its output
    /// stays open and no end of file ever comes.
    fn write_failed(&self, error: TransportError) {
        if matches!(error, TransportError::Backlog { .. }) {
            return;
        }
        if !self.write_failed.swap(true, Ordering::AcqRel) {
            self.report.write_failed(error);
        }
    }

    fn unavailable(&self) -> CallError {
        CallError::ServerUnavailable {
            server: self.server.clone(),
            why: Some(Arc::from("its connection is closing")),
            next_try: None,
        }
    }
}

/// Cancels a raw request whose waiter went away.
struct CancelOnDrop<'a> {
    lane: &'a CallLane,
    id: i64,
    armed: bool,
}

impl CancelOnDrop<'_> {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.lane.cancel(self.id);
        }
    }
}

impl Drop for CallLane {
    fn drop(&mut self) {
        if let Some(task) = self.deadlines.get_mut().take() {
            task.abort();
        }
    }
}

mod answers;
mod deadlines;
mod rounds;
mod stateless;
mod tasks_ext;
#[cfg(test)]
pub(crate) mod test_ports;
#[cfg(test)]
mod tests;
