//! A `tools/call` through the session: named as the client sees tools, run on
//! the host with the client's progress token and cancellation, and answered
//! the way the session's revision expects.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor::{CallError, CallOptions, QualifiedMcpToolName};
use mcpvisor_protocol::mcp::messages::methods;
use mcpvisor_protocol::mcp::url_elicitation;
use mcpvisor_protocol::wire::jsonrpc::error_codes;
use serde_json::{Value, json};

use crate::convert;

use crate::bridge::{Binding, Op};
use crate::in_flight::{Registered, RequestMarks, Requests};
use crate::outcome::{self, Outcome};
use mcpvisor_protocol::wire::jsonrpc::RequestId;

use super::{Outbound, Session, error, extension, notification};

impl Session {
    pub(super) async fn call(
        &self,
        params: Option<Value>,
        replies: &Outbound,
        marks: &RequestMarks,
        registered: &Registered,
    ) -> Outcome {
        let (stateless, client) = {
            let state = self.state.lock();
            (state.stateless, state.client)
        };
        let Some(me) = self.me.upgrade().filter(|_| stateless) else {
            let cancel_on_drop = self.cancels_when_dropped();
            return self
                .call_direct(params, replies, marks, registered, cancel_on_drop)
                .await;
        };
        let replies = replies.clone();
        self.bridged(
            me,
            methods::TOOLS_CALL,
            params,
            client,
            move |me, params| me.call_detached(params, replies),
        )
        .await
    }

    /// A stateless client's request whose server may ask (`tools/call`,
    /// `resources/read`, `prompts/get`): a client that can only be asked
    /// through rounds gets them from the bridge. The request runs on its own
    /// (`run`, given this session and the params), and what its server asks
    /// parks it for the client's retry; a retry resumes the parked request.
    pub(super) async fn bridged<F, Fut>(
        &self,
        me: Arc<Session>,
        method: &'static str,
        params: Option<Value>,
        client: mcpvisor_protocol::mcp::messages::ClientCapabilities,
        run: F,
    ) -> Outcome
    where
        F: FnOnce(Arc<Session>, Option<Value>) -> Fut,
        Fut: std::future::Future<Output = Outcome> + Send + 'static,
    {
        let bridge = &self.gateway.bridge;
        let binding = Binding::of(method, params.as_ref());
        let responses = match params.as_ref().and_then(|p| p.get("inputResponses")) {
            None => None,
            // Each answer is the result the question asked for: an object.
            Some(Value::Object(responses)) if responses.values().all(Value::is_object) => {
                Some(responses.clone())
            }
            Some(_) => {
                return Err(error(
                    error_codes::INVALID_PARAMS,
                    "`inputResponses` must be an object of answers (each an object) by key",
                ));
            }
        };
        let op = match params.as_ref().and_then(|p| p.get("requestState")) {
            None | Some(Value::Null) => {
                let (mut op, _) = Op::start_with(|asking, parked| {
                    *me.asking.lock() = Some((asking, parked));
                    run(me, params)
                });
                if let Some(responses) = &responses {
                    op.give(responses);
                }
                op
            }
            Some(Value::String(state)) => bridge.resume(state, &binding, responses.as_ref())?,
            Some(_) => {
                return Err(error(
                    error_codes::INVALID_PARAMS,
                    "`requestState` must be the string the last round gave",
                ));
            }
        };
        bridge.drive(op, binding, client).await
    }

    /// A call run by the bridge, on a task of its own: registered in a table
    /// of its own, and cancelled upstream when the bridge drops it.
    async fn call_detached(self: Arc<Self>, params: Option<Value>, replies: Outbound) -> Outcome {
        let requests = Arc::new(Requests::default());
        let Ok(admitted) = requests.admit(&RequestId::Number(0), 1) else {
            return Err(error(
                error_codes::INTERNAL_ERROR,
                "the call could not be registered",
            ));
        };
        let (marks, registered) = (admitted.marks, admitted.registered);
        self.call_direct(params, &replies, &marks, &registered, true)
            .await
    }

    async fn call_direct(
        &self,
        params: Option<Value>,
        replies: &Outbound,
        marks: &RequestMarks,
        registered: &Registered,
        cancel_on_drop: bool,
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
        let host = self.gateway.host();
        let routed = crate::tools::route_of(host, self.naming(), name);
        let Some(route) = routed.as_deref() else {
            return outcome::unrouted(host, name, None);
        };
        // A 2026-07-28 server is told, and so asks, only what this client answers.
        let mut options = CallOptions::default().answering(self.state.lock().client);
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
        let call = host.call(route, arguments, options);
        let call = if cancel_on_drop {
            registered.cancelling(call)
        } else {
            registered.detaching(call)
        };
        // A client that asked for logs hears the server's while it alone calls it.
        let relays_logs = self.asked_for_logs() && self.ingress.is_trusted();
        let mut pending = match (relays_logs, QualifiedMcpToolName::parse(route)) {
            (true, Ok(name)) => {
                let server: Arc<str> = Arc::from(name.server());
                let events = host.events();
                futures::future::Either::Left(Box::pin(
                    self.relaying_logs(call, events, server, replies),
                ))
            }
            _ => futures::future::Either::Right(call),
        };
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

    /// `call`, with the log messages of `server` that come while it runs (and
    /// before its answer) sent on `replies`, when this session alone calls
    /// `server`: a message then relates to this session's work, and travels
    /// with the request it relates to, as the transports say.
    async fn relaying_logs<T>(
        &self,
        call: impl std::future::Future<Output = T>,
        events: impl futures::Stream<Item = mcpvisor::HostEvent>,
        server: Arc<str>,
        replies: &Outbound,
    ) -> T {
        use futures::{FutureExt, StreamExt};
        let mut call = std::pin::pin!(call);
        let mut events = std::pin::pin!(events);
        loop {
            tokio::select! {
                biased;
                done = &mut call => {
                    // What the server logged before it answered is queued already.
                    while let Some(Some(event)) = events.next().now_or_never() {
                        self.relay_log(&event, &server, replies);
                    }
                    return done;
                }
                Some(event) = events.next() => self.relay_log(&event, &server, replies),
            }
        }
    }

    fn relay_log(&self, event: &mcpvisor::HostEvent, server: &Arc<str>, replies: &Outbound) {
        let mcpvisor::HostEvent::ServerLog {
            server: from,
            message,
        } = event
        else {
            return;
        };
        // Server logs may carry any session's data: for trusted clients only,
        // as the GET stream's are (`--no-token` sessions get none).
        if from != server
            || !self.ingress.is_trusted()
            || !self.wants_log(&message.level)
            || !self.calls_alone(server)
        {
            return;
        }
        let params = json!({"level": message.level, "logger": &**server, "data": message.data});
        // Advisory, like progress: dropped when the reader is this far behind.
        let _ = replies.try_send(notification(methods::LOG_MESSAGE, params));
    }
}
