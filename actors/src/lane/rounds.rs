//! Multi-round-trip requests at a stateless revision (2026-07-28): a
//! `tools/call`, `resources/read` or `prompts/get` answered with
//! `resultType: "input_required"` is answered by the host's handler (its
//! questions: elicitation, sampling, roots) and sent again under a new id,
//! with the answers as `inputResponses` and the `requestState` exactly as it
//! came (none when none came). The caller sees one request: one answer, one
//! cancellation and one deadline over every round, and the id it was given
//! at the start cancels whichever round is current.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::mcp::client_offers::ClientCapabilities;
use mcpvisor_protocol::mcp::input_required::{
    ASKING_METHODS, InputRequest, InputRequired, InputRequiredError, MAX_ROUNDS, METHOD_ROOTS,
};
use mcpvisor_protocol::mcp::messages::{ResultError, Root};
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, error_codes};
use parking_lot::RwLock;
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::{CallLane, Slot, stateless::Line};
use crate::error::CallError;
use crate::host_requests::{self, HostAsk, SharedClientHandler};

/// Who answers a server's questions for this connection: the host's handler
/// (as declared to the server) and the host's roots.
pub(crate) struct InputAsker {
    pub(crate) handler: Option<SharedClientHandler>,
    pub(crate) roots: Arc<RwLock<Option<Arc<[Root]>>>>,
    /// What the server was told this client answers.
    pub(crate) offered: ClientCapabilities,
    /// How long the host may take over one question.
    pub(crate) timeout: Duration,
    /// The questions the host may be answering at once for this connection
    /// (`max_host_requests`, as for a dated revision's server requests).
    pub(crate) permits: Arc<tokio::sync::Semaphore>,
}

impl InputAsker {
    /// The answer to one question, or why there is none.
    pub(super) async fn answer(
        &self,
        server: &Arc<str>,
        request: InputRequest,
    ) -> Result<Value, ErrorObject> {
        let Some(handler) = self.handler_for(&request) else {
            return self.answer_unpermitted(request).await;
        };
        let Ok(_permit) = self.permits.try_acquire() else {
            return Err(busy());
        };
        self.ask_handler(handler, server, request).await
    }

    /// The answers to a round's questions, asked together: the round takes
    /// its permits at once (one each), or none and every question fails.
    pub(super) async fn answer_round(
        &self,
        server: &Arc<str>,
        requests: Vec<InputRequest>,
    ) -> Vec<(String, Result<Value, ErrorObject>)> {
        let asks_handler = requests
            .iter()
            .filter(|r| self.handler_for(r).is_some())
            .count();
        let permits = match u32::try_from(asks_handler) {
            Ok(0) => None,
            Ok(n) => match self.permits.try_acquire_many(n) {
                Ok(permits) => Some(permits),
                Err(_) => {
                    return requests.into_iter().map(|r| (r.key, Err(busy()))).collect();
                }
            },
            Err(_) => return requests.into_iter().map(|r| (r.key, Err(busy()))).collect(),
        };
        let asking = requests.into_iter().map(|request| async move {
            let key = request.key.clone();
            let answer = match self.handler_for(&request) {
                Some(handler) => self.ask_handler(handler, server, request).await,
                None => self.answer_unpermitted(request).await,
            };
            (key, answer)
        });
        let answers = futures::future::join_all(asking).await;
        drop(permits);
        answers
    }

    /// The handler that answers `request`: for roots, only one that answers
    /// them itself (a gateway's); the host's own roots answer otherwise.
    fn handler_for(&self, request: &InputRequest) -> Option<&SharedClientHandler> {
        let handler = self.handler.as_ref()?;
        if request.method == METHOD_ROOTS && !handler.0.capabilities().roots {
            return None;
        }
        Some(handler)
    }

    /// Roots, or a refusal for what was not offered (no permit needed).
    async fn answer_unpermitted(&self, request: InputRequest) -> Result<Value, ErrorObject> {
        if request.method != METHOD_ROOTS {
            return Err(host_requests::error(
                error_codes::METHOD_NOT_FOUND,
                format!("{} was not offered", request.method),
            ));
        }
        match self.roots.read().clone() {
            Some(roots) => Ok(serde_json::json!({ "roots": &*roots })),
            None => Err(host_requests::error(
                error_codes::METHOD_NOT_FOUND,
                "roots were not offered",
            )),
        }
    }

    async fn ask_handler(
        &self,
        handler: &SharedClientHandler,
        server: &Arc<str>,
        request: InputRequest,
    ) -> Result<Value, ErrorObject> {
        let ask = HostAsk::read(server.clone(), request.method, request.params, self.offered)?;
        let answering = ask.answer_within(&*handler.0, self.timeout);
        host_requests::in_round(&request.key, answering).await
    }
}

/// What a request needs to be sent again: kept only at a stateless revision,
/// for the methods that may be answered with questions.
pub(super) struct Retry {
    method: &'static str,
    /// The params as the caller gave them (no `_meta`: each round is stamped anew).
    params: Value,
    /// A progress token goes in `_meta` (the round's own id).
    progress: bool,
    /// The `Mcp-Param-*` headers of a `tools/call` (its arguments do not change).
    mirrored: Vec<(String, String)>,
    /// What the caller's own client answers, when less than the connection
    /// does (a gateway's client): each round declares only that.
    answers: Option<ClientCapabilities>,
    /// The id the caller was given, which cancels every round.
    pub(super) origin: i64,
    /// Rounds answered so far.
    round: usize,
    /// When the whole request is due.
    pub(super) deadline: Instant,
    /// The request's timeout, for the error that reports it.
    pub(super) timeout: Duration,
}

impl Retry {
    /// Declares only what `answers` answers in each round.
    pub(super) fn answering(mut self: Box<Self>, answers: Option<ClientCapabilities>) -> Box<Self> {
        self.answers = answers;
        self
    }

    /// A request of `method` with `params` that may go several rounds, if
    /// the method can be asked questions.
    pub(super) fn of(
        origin: i64,
        method: &str,
        params: Value,
        progress: bool,
        mirrored: Vec<(String, String)>,
        timeout: Duration,
    ) -> Option<Box<Retry>> {
        let method = ASKING_METHODS.into_iter().find(|m| *m == method)?;
        Some(Box::new(Retry {
            method,
            params,
            progress,
            mirrored,
            answers: None,
            origin,
            round: 0,
            deadline: Instant::now() + timeout,
            timeout,
        }))
    }
}

/// Where a request that went more than one round stands, by the id its
/// caller was given.
pub(super) enum Round {
    /// Its current round is in flight under this id.
    InFlight(i64),
    /// The host is answering its questions; sending here cancels it.
    Asking(oneshot::Sender<()>),
}

/// The rounds of a lane, by origin id.
pub(super) type Rounds = HashMap<i64, Round>;

impl CallLane {
    /// The line of one round of `retry` under `id`.
    /// The params are lent to the line and kept, not copied: a call at this
    /// revision costs no second copy of its arguments.
    pub(super) fn round_line(&self, id: i64, retry: &mut Retry) -> Line {
        let mut params = std::mem::take(&mut retry.params);
        if retry.progress
            && let Value::Object(map) = &mut params
        {
            map.insert("_meta".into(), serde_json::json!({ "progressToken": id }));
        }
        let ((line, route), mut kept) = self.line_keeping(id, retry.method, params, retry.answers);
        // What a retry sends again is the caller's params, without this round's `_meta`.
        if let Value::Object(map) = &mut kept {
            map.remove("_meta");
        }
        retry.params = kept;
        let mirrored = retry.mirrored.clone();
        (line, route.map(|r| Box::new((*r).with_params(mirrored))))
    }

    /// The id whose round is current for the caller's `origin`.
    pub(super) fn current_round(&self, origin: i64) -> i64 {
        match self.rounds.lock().get(&origin) {
            Some(Round::InFlight(id)) => *id,
            _ => origin,
        }
    }

    /// Cancels the request `origin` while its questions are being answered;
    /// false when it is not at that stage.
    pub(super) fn cancel_asking(&self, origin: i64) -> bool {
        let mut rounds = self.rounds.lock();
        if !matches!(rounds.get(&origin), Some(Round::Asking(_))) {
            return false;
        }
        if let Some(Round::Asking(stop)) = rounds.remove(&origin) {
            let _ = stop.send(());
        }
        true
    }

    /// The request of `slot` ended (answered or failed): its rounds are forgotten.
    pub(super) fn rounds_ended(&self, slot: &Slot) {
        if let Some(retry) = &slot.retry
            && retry.round > 0
        {
            self.rounds.lock().remove(&retry.origin);
        }
    }

    /// `result` asks for input: if `slot`'s request can go another round,
    /// its questions are put to the host on a task and the request sent
    /// again; when it cannot, its caller is told why.
    pub(super) fn next_round(&self, slot: Slot, result: &Value) {
        if let Err((slot, error)) = self.try_round(slot, result) {
            self.rounds_ended(&slot);
            slot.reply.fail(error);
        }
    }

    #[allow(clippy::result_large_err)] // private, and the slot goes straight back
    fn try_round(&self, mut slot: Slot, result: &Value) -> Result<(), (Slot, CallError)> {
        let invalid = |server: &Arc<str>, detail: String| CallError::InvalidResult {
            server: server.clone(),
            source: ResultError {
                what: "input_required result",
                detail,
            },
        };
        let (Some(me), Some(asker)) = (self.me.get().and_then(|w| w.upgrade()), self.asker.get())
        else {
            let error = invalid(&self.server, "this connection answers no questions".into());
            return Err((slot, error));
        };
        let Some(retry) = slot.retry.as_mut() else {
            let error = invalid(
                &self.server,
                InputRequiredError::NotAsking("this request".into()).to_string(),
            );
            return Err((slot, error));
        };
        if retry.round >= MAX_ROUNDS {
            let error = invalid(&self.server, InputRequiredError::TooManyRounds.to_string());
            return Err((slot, error));
        }
        let asked = match InputRequired::parse(retry.method, result) {
            Ok(asked) => asked,
            Err(e) => {
                let error = invalid(&self.server, e.to_string());
                return Err((slot, error));
            }
        };
        retry.round += 1;
        let (origin, deadline, timeout) = (retry.origin, retry.deadline, retry.timeout);
        let (stop, stopped) = oneshot::channel();
        {
            // Requests between rounds count against the lane's bound, as
            // they would in its table.
            let mut rounds = self.rounds.lock();
            let asking = rounds
                .values()
                .filter(|r| matches!(r, Round::Asking(_)))
                .count();
            if asking >= self.max_asking {
                drop(rounds);
                let error = CallError::Overloaded {
                    server: self.server.clone(),
                    limit: self.max_asking,
                };
                return Err((slot, error));
            }
            rounds.insert(origin, Round::Asking(stop));
        }
        let asker = asker.clone();
        self.spawn(async move {
            let server = me.server.clone();
            // A round's questions are asked together, as the server asked
            // them: a host that relays them (a gateway's client) sees them as one.
            let answers = async {
                let asked = asker.answer_round(&server, asked.requests.clone()).await;
                let mut answers = Map::new();
                for (key, answer) in asked {
                    match answer {
                        Ok(answer) => {
                            answers.insert(key, answer);
                        }
                        Err(error) => return Err((key, error)),
                    }
                }
                Ok(answers)
            };
            let answers = tokio::select! {
                answers = answers => answers,
                // The rounds share one deadline: the host's time counts, and a
                // request past it is not sent again (its connection goes on).
                _ = tokio::time::sleep_until(deadline) => {
                    me.rounds.lock().remove(&origin);
                    slot.reply.fail(CallError::Timeout { server, after: timeout });
                    return;
                }
                stop = stopped => {
                    // Told to stop: cancelled; the sender dropped: the lane closed.
                    slot.reply.fail(match stop {
                        Ok(()) => CallError::Cancelled,
                        Err(_) => CallError::ConnectionClosed {
                            server,
                            reason: Arc::from("the connection ended while the host answered the server's questions"),
                        },
                    });
                    return;
                }
            };
            let answers = match answers {
                Ok(answers) => answers,
                Err((key, error)) => {
                    me.rounds.lock().remove(&origin);
                    slot.reply
                        .fail(CallError::InputUnanswered { server, key, error });
                    return;
                }
            };
            me.send_round(slot, &asked, answers);
        });
        Ok(())
    }

    /// Sends the next round of `slot`'s request with `answers`, under a new id.
    fn send_round(&self, mut slot: Slot, asked: &InputRequired, answers: Map<String, Value>) {
        let Some(retry) = slot.retry.as_mut() else {
            return;
        };
        retry.params = asked.retry_params(&retry.params, answers);
        let origin = retry.origin;
        // The rounds share one deadline: what the host took is not given back
        // (the asking phase ends at the deadline, so some time is left).
        slot.after = retry
            .deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        let id = self.next_id();
        let line = self.round_line(id, retry);
        match self.begin(Some(id), |_| line, slot) {
            Ok(id) => {
                let mut rounds = self.rounds.lock();
                if let Some(round) = rounds.get_mut(&origin) {
                    *round = Round::InFlight(id);
                } else {
                    // Cancelled meanwhile: the caller is gone, and so goes this round.
                    drop(rounds);
                    self.cancel(id);
                }
            }
            Err(_) => {
                // `begin` failed the caller; the request is over.
                self.rounds.lock().remove(&origin);
            }
        }
    }
}

fn busy() -> ErrorObject {
    host_requests::error(
        -32000,
        "the host is answering as many questions of this server as it takes; try again later",
    )
}
