//! The lane at a stateless revision (2026-07-28): every request it writes
//! carries the connection's `_meta`, a result that is neither complete nor a
//! round of questions (see `rounds`) fails typed, and what the revision
//! removed is refused before it is sent.

use mcpvisor_protocol::mcp::logging::LogLevel;
use mcpvisor_protocol::mcp::messages::ClientCapabilities;
use mcpvisor_protocol::mcp::messages::{ResultError, methods};
use mcpvisor_protocol::mcp::request_meta::{LOG_LEVEL_KEY, RequestMeta};
use mcpvisor_protocol::mcp::result_type::ResultType;
use mcpvisor_protocol::mcp::route_headers::RouteHeaders;
use mcpvisor_protocol::wire::jsonrpc::Request;
use mcpvisor_protocol::{Message, RequestId};
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{CallLane, InputAsker};
use crate::error::CallError;

impl CallLane {
    /// The server is reached at a stateless revision: every request of this
    /// lane carries `meta` (its revision, the client's capabilities and name).
    pub(crate) fn go_stateless(&self, meta: RequestMeta, asker: InputAsker) {
        let _ = self.asker.set(std::sync::Arc::new(asker));
        let _ = self.meta.set(meta);
    }

    /// At a stateless revision: a result that is not complete cannot be taken
    /// yet (input_required rounds and tasks are answered in a later step),
    /// and says so instead of reading as an empty success.
    pub(super) fn incomplete(&self, what: &'static str, result: &Value) -> Option<CallError> {
        self.meta.get()?;
        let detail = match ResultType::of(result) {
            Ok(ResultType::Complete) => return None,
            Ok(ResultType::InputRequired) => {
                "resultType input_required on a request that cannot ask (only tools/call, resources/read and prompts/get may)".to_string()
            }
            Ok(ResultType::Task) => {
                "resultType task on a request that is not followed as a task (only tools/call, resources/read and prompts/get are)".to_string()
            }
            Err(e) => e.to_string(),
        };
        Some(CallError::InvalidResult {
            server: self.server.clone(),
            source: ResultError { what, detail },
        })
    }

    /// At a stateless revision the log level rides in each request's `_meta`
    /// (there is no `logging/setLevel`): from now on, this one.
    pub(crate) fn set_log_level(&self, level: LogLevel) {
        *self.log_level.lock() = Some(level);
    }

    /// The tools list just read stays fresh for `ttl` (its `ttlMs`).
    pub(crate) fn tools_fresh_for(&self, ttl: Duration) {
        let until = self.lane_ms().saturating_add(ttl.as_millis() as u64);
        self.tools_fresh_until.store(until, Ordering::Relaxed);
    }

    /// A call is about to use the tools list: when it is stale, the
    /// connection reads it again (in the background: the call goes on with
    /// the routes it has), and not again within [`STALE_RECHECK`], so a list
    /// stale at once (`ttlMs: 0`) is read at most once a second under load.
    pub(crate) fn tools_accessed(&self) {
        let until = self.tools_fresh_until.load(Ordering::Relaxed);
        if until == u64::MAX {
            return;
        }
        let now = self.lane_ms();
        let recheck = self.tools_recheck_at.load(Ordering::Relaxed);
        if now < until || now < recheck {
            return;
        }
        let next = now.saturating_add(STALE_RECHECK.as_millis() as u64);
        if self
            .tools_recheck_at
            .compare_exchange(recheck, next, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            self.report.tools_stale();
        }
    }

    fn lane_ms(&self) -> u64 {
        self.born.elapsed().as_millis() as u64
    }

    /// A request's line, and at a stateless revision its params stamped with
    /// the `_meta` and the headers Streamable HTTP mirrors from them.
    pub(super) fn line_of(&self, id: i64, method: &str, params: Option<Value>) -> Line {
        let (params, route) = self.stamped(method, params);
        let request = Request::new(RequestId::Number(id), method, params);
        let mut line = Message::Request(request).to_vec();
        line.push(b'\n');
        (line, route)
    }

    /// `params` stamped with the stateless `_meta` (and the log level), and
    /// the headers mirrored from them; as they are at a dated revision.
    fn stamped(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> (Option<Value>, Option<Box<RouteHeaders>>) {
        self.stamped_for(method, params, None)
    }

    /// [`CallLane::stamped`], declaring only what both this connection and
    /// `answers` (the client a request is made for) answer.
    fn stamped_for(
        &self,
        method: &str,
        params: Option<Value>,
        answers: Option<ClientCapabilities>,
    ) -> (Option<Value>, Option<Box<RouteHeaders>>) {
        match self.meta.get() {
            Some(meta) => {
                let route = RouteHeaders::new(meta.revision(), method, params.as_ref());
                let narrowed = answers
                    .zip(self.asker.get())
                    .map(|(answers, asker)| meta.answering(asker.offered.within(answers)));
                let mut stamped = narrowed.as_ref().unwrap_or(meta).stamp(params);
                if let Some(level) = *self.log_level.lock()
                    && let Some(meta) = stamped.get_mut("_meta").and_then(Value::as_object_mut)
                {
                    meta.insert(LOG_LEVEL_KEY.into(), Value::from(level.as_str()));
                }
                (Some(stamped), Some(Box::new(route)))
            }
            None => (params, None),
        }
    }

    /// [`CallLane::line_of`], giving the stamped params back: the line is
    /// written from them, not from a copy.
    pub(super) fn line_keeping(
        &self,
        id: i64,
        method: &str,
        params: Value,
        answers: Option<ClientCapabilities>,
    ) -> (Line, Value) {
        let (params, route) = self.stamped_for(method, Some(params), answers);
        let message = Message::Request(Request::new(RequestId::Number(id), method, params));
        let mut line = message.to_vec();
        line.push(b'\n');
        let kept = match message {
            Message::Request(r) => r.params.unwrap_or(Value::Null),
            _ => Value::Null,
        };
        ((line, route), kept)
    }

    /// The headers of a notification of this lane (a cancellation), at a
    /// stateless revision.
    pub(super) fn route_of_notice(&self, method: &str) -> Option<Box<RouteHeaders>> {
        let meta = self.meta.get()?;
        Some(Box::new(RouteHeaders::new(meta.revision(), method, None)))
    }
}

/// The least time between two re-readings of a stale tools list.
const STALE_RECHECK: Duration = Duration::from_secs(1);

/// A request's line (ending with its newline) and, at a stateless
/// revision, the headers Streamable HTTP mirrors from it.
pub(super) type Line = (Vec<u8>, Option<Box<RouteHeaders>>);

/// What MCP 2026-07-28 removed, named as what the server does not offer.
pub(super) fn removed_at_stateless(method: &str) -> Option<&'static str> {
    match method {
        methods::PING => Some("ping (not in MCP 2026-07-28)"),
        methods::SET_LOG_LEVEL => Some("logging/setLevel (not in MCP 2026-07-28)"),
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => Some(
            "resources/subscribe (not in MCP 2026-07-28: subscriptions/listen carries subscriptions)",
        ),
        _ => None,
    }
}
