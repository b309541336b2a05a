//! The bridge from a server that asks mid-call to a 2026-07-28 client, which
//! can only be asked by multi-round-trip results: the call (a `tools/call`, a
//! `resources/read` or a `prompts/get`) runs on as a task of its own; what
//! the server asks (elicitation, sampling; roots in a round) ends the client's
//! request with `input_required`, the questions and a `requestState`; the
//! client's retry, with `inputResponses` and that state, answers the server's
//! waiting requests and waits on the same call again.
//!
//! The `requestState` is a random handle to the parked call, never its
//! content: it names nothing secret, cannot be forged (an altered one names
//! no call, and is refused), and is good once, for one request (a retry must
//! repeat the method and params it was given for), for a bounded time. At
//! most [`MAX_PARKED`] calls wait at once; past that a call that asks is
//! answered with an error rather than kept.
//!
//! Whichever era the server speaks, its questions reach the gateway the same
//! way (a 2025 server's requests, a 2026 server's rounds answered by the
//! connection), so this one bridge serves both.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::{AbortHandle, Abortable};
use mcpvisor_protocol::mcp::input_required::{MAX_INPUT_REQUESTS, MAX_KEY_BYTES};
use mcpvisor_protocol::mcp::messages::ClientCapabilities;
use mcpvisor_protocol::mcp::modern_errors::MISSING_CLIENT_CAPABILITY;
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, error_codes};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::outcome::Outcome;

/// Calls waiting for their clients' answers at once.
pub(crate) const MAX_PARKED: usize = 1024;
/// How long a parked call waits for its client's retry: less than a
/// server's request timeout (60 s by default), so an abandoned call is
/// cancelled by the gateway, which the server survives, before the call's
/// deadline ends its connection for everyone.
pub(crate) const PARKED_FOR: Duration = Duration::from_secs(50);
/// After a server's first question, how long to wait for the others of its
/// round (a round's questions are asked together), so they go in one result.
const ROUND_WINDOW: Duration = Duration::from_millis(10);

/// A server's question for the client, and where its answer goes.
pub(crate) struct Asked {
    /// The key the server gave it (a stateless server's round), if any: the
    /// client answers under the same key.
    pub(crate) key: Option<std::sync::Arc<str>>,
    pub(crate) method: String,
    pub(crate) params: Value,
    pub(crate) answer: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// Where a call's questions are put while it runs.
pub(crate) type Asking = mpsc::Sender<Asked>;

/// What a retry must repeat: the method and its params, without the round's
/// own fields (`_meta`, `inputResponses`, `requestState`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Binding {
    method: String,
    params: Value,
}

impl Binding {
    /// The binding of a `method` request with `params`: what it addresses
    /// and with what (`name`, `uri`, `arguments`). Other params are not the
    /// request's identity: a retry that adds some is the same request.
    pub(crate) fn of(method: &str, params: Option<&Value>) -> Binding {
        let mut bound = Map::new();
        for key in ["name", "uri", "arguments"] {
            if let Some(value) = params.and_then(|p| p.get(key)) {
                bound.insert(key.into(), value.clone());
            }
        }
        Binding {
            method: method.to_string(),
            params: Value::Object(bound),
        }
    }
}

/// One question asked and not yet answered.
struct Waiting {
    key: String,
    request: Value,
    answer: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// A running call that may ask; dropped unfinished, it is cancelled.
pub(crate) struct Op {
    /// Set while the call is parked: its server waits for answers, so the
    /// call is not one of the calls a new question could belong to.
    parked: Arc<AtomicBool>,
    outcome: oneshot::Receiver<Outcome>,
    abort: AbortHandle,
    asks: mpsc::Receiver<Asked>,
    waiting: Vec<Waiting>,
    next_key: usize,
    /// Answers the client sent before it was asked (a stateless server's
    /// keys are its own, so a client may know them): given as asked.
    given: Map<String, Value>,
}

impl Drop for Op {
    fn drop(&mut self) {
        self.abort.abort();
    }
}

impl Op {
    /// Answers the client gives before it is asked, by the server's keys.
    pub(crate) fn give(&mut self, answers: &Map<String, Value>) {
        self.given
            .extend(answers.iter().map(|(k, v)| (k.clone(), v.clone())));
    }

    fn given_for(&mut self, asked: &Asked) -> Option<Value> {
        self.given.remove(&**asked.key.as_ref()?)
    }

    /// Runs the call `call` makes of the sender its questions go to (and the
    /// flag that says the call is parked), as a task of its own.
    pub(crate) fn start_with<F>(call: impl FnOnce(Asking, Arc<AtomicBool>) -> F) -> (Op, Asking)
    where
        F: Future<Output = Outcome> + Send + 'static,
    {
        let (asking, asks) = mpsc::channel(MAX_INPUT_REQUESTS);
        let (done, outcome) = oneshot::channel();
        let (abort, registration) = AbortHandle::new_pair();
        let parked = Arc::new(AtomicBool::new(false));
        let call = call(asking.clone(), parked.clone());
        tokio::spawn(async move {
            if let Ok(outcome) = Abortable::new(call, registration).await {
                let _ = done.send(outcome);
            }
        });
        let op = Op {
            parked,
            outcome,
            abort,
            asks,
            waiting: Vec::new(),
            next_key: 1,
            given: Map::new(),
        };
        (op, asking)
    }
}

struct Parked {
    op: Op,
    binding: Binding,
    until: Instant,
}

/// The calls waiting for their clients' retries, by `requestState`.
#[derive(Default)]
pub(crate) struct Bridge {
    parked: Arc<Mutex<HashMap<String, Parked>>>,
    /// This gateway's node, when it is one of a cluster: each state names
    /// it (`<node>~<handle>`), so a retry that reaches another node behind
    /// a load balancer is passed on here.
    node: Option<Arc<str>>,
}

/// The node a `requestState` names, if it names one.
pub(crate) fn owner_of(state: &str) -> Option<&str> {
    state
        .rsplit_once('~')
        .map(|(node, _)| node)
        .filter(|n| !n.is_empty())
}

impl Bridge {
    /// A bridge for the gateway of cluster node `node` (or of no cluster).
    pub(crate) fn new(node: Option<Arc<str>>) -> Bridge {
        Bridge {
            parked: Default::default(),
            // Node names have no `~` and are short; one that had would not be named.
            node: node.filter(|n| !n.contains('~') && n.len() <= 128),
        }
    }

    /// Waits on `op` for the client of a request bound to `binding`, who
    /// answers `client`: its outcome, or, when its server asks, an
    /// `input_required` result whose state parks the call for the retry. A
    /// question the client cannot answer (it did not declare the capability)
    /// ends the call with -32021, naming what was needed.
    pub(crate) async fn drive(
        &self,
        mut op: Op,
        binding: Binding,
        client: ClientCapabilities,
    ) -> Outcome {
        // Questions left unanswered by the last retry are asked again.
        while op.waiting.is_empty() {
            tokio::select! {
                outcome = &mut op.outcome => return ended(outcome),
                first = op.asks.recv() => {
                    let Some(first) = first else {
                        return ended((&mut op.outcome).await);
                    };
                    tokio::time::sleep(ROUND_WINDOW).await;
                    let mut round = vec![first];
                    while let Ok(more) = op.asks.try_recv() {
                        round.push(more);
                    }
                    for asked in round {
                        if let Some(answer) = op.given_for(&asked) {
                            let _ = asked.answer.send(Ok(answer));
                            continue;
                        }
                        if !client.offers_request(&asked.method, &asked.params) {
                            return Err(missing_capability(&asked.method));
                        }
                        let key = match asked.key {
                            Some(key) if op.waiting.iter().all(|w| *w.key != *key) => key.to_string(),
                            _ => {
                                op.next_key += 1;
                                format!("mcpvisor-{}", op.next_key - 1)
                            }
                        };
                        let request = json!({"method": asked.method, "params": asked.params});
                        op.waiting.push(Waiting { key, request, answer: asked.answer });
                    }
                }
            }
        }
        self.park(op, binding)
    }

    /// Parks `op` and answers with its questions and the state to retry with.
    fn park(&self, op: Op, binding: Binding) -> Outcome {
        op.parked.store(true, Ordering::SeqCst);
        let mut requests = Map::new();
        for waiting in &op.waiting {
            requests.insert(waiting.key.clone(), waiting.request.clone());
        }
        let state = match &self.node {
            Some(node) => format!("{node}~{}", new_state()),
            None => new_state(),
        };
        let now = Instant::now();
        {
            let mut parked = self.parked.lock();
            parked.retain(|_, p| p.until > now);
            if parked.len() >= MAX_PARKED {
                return Err(ErrorObject {
                    code: error_codes::INTERNAL_ERROR,
                    message: format!(
                        "{MAX_PARKED} calls are waiting for their clients' answers, the limit; try again later"
                    ),
                    data: None,
                });
            }
            let until = now + PARKED_FOR;
            parked.insert(state.clone(), Parked { op, binding, until });
        }
        // Not retried in time: dropped, which cancels the call upstream.
        let (table, key) = (Arc::downgrade(&self.parked), state.clone());
        tokio::spawn(async move {
            tokio::time::sleep(PARKED_FOR).await;
            let expired = table.upgrade().and_then(|t| t.lock().remove(&key));
            drop(expired);
        });
        Ok(json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": state,
        }))
    }

    /// The call a retry's `state` parked, with the retry's `responses` given
    /// to the questions they answer. A state that names no call (altered,
    /// used, expired) or one given for another request is refused.
    pub(crate) fn resume(
        &self,
        state: &str,
        binding: &Binding,
        responses: Option<&Map<String, Value>>,
    ) -> Result<Op, ErrorObject> {
        let refused = |message: &str| ErrorObject {
            code: error_codes::INVALID_PARAMS,
            message: message.to_string(),
            data: None,
        };
        let mut parked = self.parked.lock();
        let found = parked
            .remove(state)
            .filter(|p| p.until > Instant::now())
            .ok_or_else(|| refused("`requestState` names no waiting request: it was altered, used already, or expired"))?;
        if found.binding != *binding {
            // The state stays good for the request it was given for.
            parked.insert(state.to_string(), found);
            return Err(refused(
                "`requestState` was given for another request (a retry repeats its method and params)",
            ));
        }
        drop(parked);
        let mut op = found.op;
        op.parked.store(false, Ordering::SeqCst);
        let mut left = Vec::with_capacity(op.waiting.len());
        for waiting in op.waiting.drain(..) {
            match responses.and_then(|r| r.get(&waiting.key)) {
                Some(answer) => {
                    let _ = waiting.answer.send(Ok(answer.clone()));
                }
                None => left.push(waiting),
            }
        }
        op.waiting = left;
        Ok(op)
    }

    /// Calls parked now.
    #[cfg(test)]
    fn parked(&self) -> usize {
        self.parked.lock().len()
    }
}

fn ended(outcome: Result<Outcome, oneshot::error::RecvError>) -> Outcome {
    outcome.unwrap_or_else(|_| {
        Err(ErrorObject {
            code: error_codes::INTERNAL_ERROR,
            message: "the call ended without an answer".into(),
            data: None,
        })
    })
}

/// -32021 for a question of `method` the client did not declare it answers.
fn missing_capability(method: &str) -> ErrorObject {
    let capability = match method {
        "sampling/createMessage" => "sampling",
        "roots/list" => "roots",
        _ => "elicitation",
    };
    ErrorObject {
        code: MISSING_CLIENT_CAPABILITY,
        message: format!(
            "the server asks for {method} to answer this request, and the client did not declare `{capability}`"
        ),
        data: Some(json!({"requiredCapabilities": {capability: {}}})),
    }
}

/// A fresh state: 128 bits from the operating system, as hex (well under
/// [`MAX_KEY_BYTES`], which bounds what a client sends back).
fn new_state() -> String {
    let mut bytes = [0u8; 16];
    // Without an OS random source nothing secure can run; the state would be guessable.
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    let state: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    debug_assert!(state.len() <= MAX_KEY_BYTES);
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offers(elicitation: bool) -> ClientCapabilities {
        ClientCapabilities {
            elicitation,
            ..Default::default()
        }
    }

    /// A call that asks one question and answers with what it was told.
    fn asking_call() -> (Op, Asking) {
        Op::start_with(|asking: Asking, _| async move {
            let (answer, told) = oneshot::channel();
            let asked = Asked {
                key: Some(Arc::from("name")),
                method: "elicitation/create".into(),
                params: json!({"message": "name?", "requestedSchema": {"type": "object"}}),
                answer,
            };
            asking.send(asked).await.unwrap();
            let told = told.await.unwrap()?;
            Ok(json!({"content": [{"type": "text", "text": told["content"]["name"]}]}))
        })
    }

    #[tokio::test]
    async fn a_question_parks_the_call_and_the_retry_answers_it() {
        let bridge = Bridge::default();
        let binding = Binding::of("tools/call", Some(&json!({"name": "t", "_meta": {}})));
        let (op, _asking) = asking_call();
        let round = bridge
            .drive(op, binding.clone(), offers(true))
            .await
            .unwrap();
        assert_eq!(round["resultType"], "input_required");
        let state = round["requestState"].as_str().unwrap().to_string();
        let key = round["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        assert_eq!(key, "name", "the server's own key");
        assert_eq!(round["inputRequests"][&key]["method"], "elicitation/create");
        assert_eq!(bridge.parked(), 1);

        // Altered, or for another request: refused, and the state stays good.
        assert!(bridge.resume(&format!("{state}x"), &binding, None).is_err());
        let other = Binding::of("tools/call", Some(&json!({"name": "u"})));
        assert!(bridge.resume(&state, &other, None).is_err());
        let more = Binding::of("tools/call", Some(&json!({"name": "t", "extra": 1})));
        assert_eq!(
            more, binding,
            "params beyond name, uri and arguments are not bound"
        );

        let answers = json!({key.clone(): {"action": "accept", "content": {"name": "Ada"}}});
        let op = bridge
            .resume(&state, &binding, answers.as_object())
            .unwrap();
        let done = bridge
            .drive(op, binding.clone(), offers(true))
            .await
            .unwrap();
        assert_eq!(done["content"][0]["text"], "Ada");
        // Used once.
        assert!(bridge.resume(&state, &binding, None).is_err());
        assert_eq!(bridge.parked(), 0);
    }

    #[tokio::test]
    async fn a_retry_without_the_answer_is_asked_again() {
        let bridge = Bridge::default();
        let binding = Binding::of("tools/call", Some(&json!({"name": "t"})));
        let (op, _asking) = asking_call();
        let first = bridge
            .drive(op, binding.clone(), offers(true))
            .await
            .unwrap();
        let op = bridge
            .resume(first["requestState"].as_str().unwrap(), &binding, None)
            .unwrap();
        let again = bridge.drive(op, binding, offers(true)).await.unwrap();
        assert_eq!(again["inputRequests"], first["inputRequests"]);
        assert_ne!(again["requestState"], first["requestState"]);
    }

    #[tokio::test]
    async fn an_answer_sent_before_the_question_is_given_when_asked() {
        let bridge = Bridge::default();
        let (mut op, _asking) = asking_call();
        op.give(
            json!({"name": {"action": "accept", "content": {"name": "Bo"}}, "other": 1})
                .as_object()
                .unwrap(),
        );
        let done = bridge
            .drive(op, Binding::of("tools/call", None), offers(true))
            .await
            .unwrap();
        assert_eq!(done["content"][0]["text"], "Bo");
    }

    #[tokio::test]
    async fn a_question_the_client_cannot_answer_ends_the_call_naming_the_capability() {
        let bridge = Bridge::default();
        let (op, _asking) = asking_call();
        let binding = Binding::of("tools/call", None);
        let e = bridge.drive(op, binding, offers(false)).await.unwrap_err();
        assert_eq!(e.code, MISSING_CLIENT_CAPABILITY);
        assert_eq!(
            e.data,
            Some(json!({"requiredCapabilities": {"elicitation": {}}}))
        );
        assert_eq!(bridge.parked(), 0);
    }

    #[tokio::test]
    async fn a_call_that_does_not_ask_is_answered_as_it_ends() {
        let bridge = Bridge::default();
        let (op, _asking) = Op::start_with(|_, _| async { Ok(json!({"content": []})) });
        let done = bridge
            .drive(op, Binding::of("tools/call", None), offers(true))
            .await;
        assert_eq!(done, Ok(json!({"content": []})));
    }
}
