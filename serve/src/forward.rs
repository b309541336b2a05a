//! Requests servers send the host (sampling, elicitation; and roots, asked
//! in a 2026-07-28 server's round), forwarded through `mcpvisor serve` to the
//! downstream client whose call they relate to. A dated revision's server
//! asking `roots/list` on its own (its connection's, not a call's) gets the
//! host's roots, as before.
//!
//! A server asks while one of its tools runs, so the request goes to the one
//! session with calls in flight to that server, on its newest call's channel
//! (over HTTP: the call's SSE stream), and only if that client declared the
//! capability. With several sessions calling the same server the request
//! cannot be matched to its call, and it is refused rather than shown to the
//! wrong client; so is one no client can answer. The time a
//! client may take and how many requests wait at once are the supervisor's
//! bounds (`host_request_timeout`, `max_host_requests`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use mcpvisor::{
    ClientHandler, ElicitAction, ElicitAnswer, FormRequest, HostAnswer, HostAsk, RootsRequest,
    SamplingRequest, SamplingResult, SharedClientHandler, UrlRequest,
};
use mcpvisor_protocol::mcp::messages::{ClientCapabilities, Root};
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, error_codes};
use parking_lot::Mutex;
use serde_json::Value;

use crate::session::{Outbound, Session};

struct Caller {
    seq: u64,
    session: Weak<Session>,
    replies: Outbound,
}

/// The calls in flight per upstream server, newest last.
#[derive(Default)]
pub struct Callers {
    by_server: Mutex<HashMap<Arc<str>, Vec<Caller>>>,
    next: AtomicU64,
}

impl Callers {
    /// Records a call to `server` from `session`, whose messages for it go to
    /// `replies`, until the guard is dropped.
    pub(crate) fn enter(
        self: &Arc<Self>,
        server: Arc<str>,
        session: Weak<Session>,
        replies: Outbound,
    ) -> CallerGuard {
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        self.by_server
            .lock()
            .entry(server.clone())
            .or_default()
            .push(Caller {
                seq,
                session,
                replies,
            });
        CallerGuard {
            callers: self.clone(),
            server,
            seq,
        }
    }

    /// The one session calling `server` now, and where to reach it (its newest
    /// call's channel). With several sessions calling, a request cannot be told
    /// apart by its call, and sending it to the wrong client would show that
    /// client another's work: none is chosen.
    fn caller(&self, server: &str) -> Result<(Arc<Session>, Outbound), String> {
        self.caller_of(server, false)
    }

    /// [`Callers::caller`] for a question of `server`: `in_round` when it came
    /// in a 2026-07-28 server's round, whose parked calls cannot be asking
    /// (their server waits for the answers to a round it already sent). A
    /// 2025 server's request may still be a parked call's own: then it
    /// cannot be told apart from the others', and none is chosen.
    fn caller_of(&self, server: &str, in_round: bool) -> Result<(Arc<Session>, Outbound), String> {
        let map = self.by_server.lock();
        let all: Vec<(Arc<Session>, &Caller)> = map
            .get(server)
            .into_iter()
            .flatten()
            .filter_map(|c| Some((c.session.upgrade()?, c)))
            .collect();
        let parked = all.iter().filter(|(s, _)| s.is_parked()).count();
        let live: Vec<(Arc<Session>, &Caller)> =
            all.into_iter().filter(|(s, _)| !s.is_parked()).collect();
        if parked > 0 && !in_round && !live.is_empty() {
            return Err(format!(
                "several clients of mcpvisor serve are calling `{server}`; the request cannot be matched to one"
            ));
        }
        let Some((newest, caller)) = live.last() else {
            return Err(format!(
                "no client of mcpvisor serve has a call to `{server}` in flight"
            ));
        };
        if live.iter().any(|(s, _)| !Arc::ptr_eq(s, newest)) {
            return Err(format!(
                "several clients of mcpvisor serve are calling `{server}`; the request cannot be matched to one"
            ));
        }
        Ok((newest.clone(), caller.replies.clone()))
    }
}

impl Callers {
    /// The one session calling `server` now, if one alone is.
    pub(crate) fn calling(&self, server: &str) -> Option<Arc<Session>> {
        self.caller(server).ok().map(|(session, _)| session)
    }
}

/// Forgets a call when it ends.
pub(crate) struct CallerGuard {
    callers: Arc<Callers>,
    server: Arc<str>,
    seq: u64,
}

impl Drop for CallerGuard {
    fn drop(&mut self) {
        let mut map = self.callers.by_server.lock();
        if let Some(calls) = map.get_mut(&self.server) {
            calls.retain(|c| c.seq != self.seq);
            if calls.is_empty() {
                map.remove(&self.server);
            }
        }
    }
}

/// The gateway's [`ClientHandler`]: it declares sampling and elicitation to
/// every server and forwards each request to the downstream caller.
struct Forwarder(Arc<Callers>);

/// A handler for the supervisor behind `serve` and the table it forwards by
/// (give the table to [`crate::Gateway::new`]).
pub fn forwarder() -> (SharedClientHandler, Arc<Callers>) {
    let callers = Arc::new(Callers::default());
    let handler = SharedClientHandler(Arc::new(Forwarder(callers.clone())));
    (handler, callers)
}

fn refusal(message: String) -> ErrorObject {
    ErrorObject {
        code: error_codes::METHOD_NOT_FOUND,
        message,
        data: None,
    }
}

impl Forwarder {
    /// Sends `ask` to the client calling its server and waits for its answer.
    fn relay(&self, ask: HostAsk) -> impl Future<Output = Result<Value, ErrorObject>> + use<> {
        let callers = self.0.clone();
        // Read where the handler is called: the round's key lives in this task.
        let key = mcpvisor::round_key();
        async move {
            let (server, method) = (ask.server(), ask.method());
            let (session, replies) = callers
                .caller_of(server, key.is_some())
                .map_err(|why| refusal(format!("{why} to answer {method}")))?;
            if !session.offers(method, ask.params()) {
                return Err(refusal(format!(
                    "the client calling `{server}` does not offer {method} as asked"
                )));
            }
            // Which server asks, for clients that show it (the CLI does).
            let mut params = ask.params().clone();
            if let Some(map) = params.as_object_mut() {
                let meta = map
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert(
                        crate::resources_prompts::SERVER_META.into(),
                        Value::String(server.to_string()),
                    );
                }
            }
            if let HostAsk::Url(asked) = &ask {
                session.expect_completion(server, &asked.elicitation.elicitation_id);
            }
            session.ask(key, method, params, &replies).await
        }
    }
}

/// A client's `roots/list` result: `roots`, each a `file://` URI (bounded).
fn read_roots(answer: &Value) -> Result<Vec<Root>, ErrorObject> {
    /// More than a client could mean: a list this long is refused whole.
    const MAX_ROOTS: usize = 1024;
    let roots = answer
        .get("roots")
        .and_then(Value::as_array)
        .ok_or_else(|| unreadable("roots", "no `roots` array"))?;
    if roots.len() > MAX_ROOTS {
        return Err(unreadable("roots", format!("more than {MAX_ROOTS} roots")));
    }
    roots
        .iter()
        .map(|root| {
            let root: Root =
                serde_json::from_value(root.clone()).map_err(|e| unreadable("roots", e))?;
            if !root.uri.starts_with("file://") {
                return Err(unreadable("roots", "a root's uri is not a file:// URI"));
            }
            Ok(root)
        })
        .collect()
}

/// The client's answer did not read as what it answers.
fn unreadable(what: &str, why: impl std::fmt::Display) -> ErrorObject {
    ErrorObject {
        code: error_codes::INTERNAL_ERROR,
        message: format!("the client's {what} answer is not one: {why}"),
        data: None,
    }
}

impl ClientHandler for Forwarder {
    fn capabilities(&self) -> ClientCapabilities {
        // What each downstream client declared is checked per request. Roots
        // too: a stateless server asks them in a call, for its client.
        ClientCapabilities {
            roots: true,
            ..ClientCapabilities::EVERY_REQUEST
        }
    }

    fn list_roots(&self, request: RootsRequest) -> HostAnswer<Vec<Root>> {
        let relayed = self.relay(HostAsk::Roots(request));
        Box::pin(async move { read_roots(&relayed.await?) })
    }

    fn create_message(&self, request: SamplingRequest) -> HostAnswer<SamplingResult> {
        let relayed = self.relay(HostAsk::Sampling(request));
        Box::pin(async move {
            SamplingResult::parse(&relayed.await?).map_err(|e| unreadable("sampling", e))
        })
    }

    fn elicit(&self, request: FormRequest) -> HostAnswer<ElicitAnswer> {
        let relayed = self.relay(HostAsk::Form(request));
        Box::pin(async move {
            ElicitAnswer::parse(&relayed.await?).map_err(|e| unreadable("elicitation", e))
        })
    }

    fn elicit_url(&self, request: UrlRequest) -> HostAnswer<ElicitAction> {
        let relayed = self.relay(HostAsk::Url(request));
        Box::pin(async move {
            let answer = ElicitAnswer::parse(&relayed.await?);
            Ok(answer.map_err(|e| unreadable("elicitation", e))?.action)
        })
    }
}
