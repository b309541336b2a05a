//! The tasks extension at a stateless revision (MCP 2026-07-28,
//! `io.modelcontextprotocol/tasks`): a request answered with a task
//! (`resultType: "task"`) is followed on a task of the lane's, which polls
//! `tasks/get` at the pace the server suggests (within bounds), answers its
//! questions (`input_required`: the host's handler, sent with
//! `tasks/update`), and hands the caller the task's result or error as the
//! request's own. One deadline covers it all; cancelling the call, or its
//! deadline, sends `tasks/cancel`.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::mcp::input_required::{InputRequired, MAX_INPUT_REQUESTS};
use mcpvisor_protocol::mcp::messages::ResultError;
use mcpvisor_protocol::mcp::tasks::{TaskState, TaskStatus, task_params};
use mcpvisor_protocol::state::task_call::{POLL_CEILING, POLL_DEFAULT, POLL_FLOOR};
use mcpvisor_protocol::wire::jsonrpc::ErrorObject;
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;

use super::rounds::Round;
use super::{CallLane, Slot};
use crate::error::CallError;

/// `tasks/update`.
const TASKS_UPDATE: &str = "tasks/update";
/// The most questions one task may ask over its life.
const MAX_TASK_QUESTIONS: usize = 4 * MAX_INPUT_REQUESTS;

/// How a followed task ended for its caller.
enum Ended {
    /// The task's result or error, as the request's.
    Answer(Result<Value, ErrorObject>),
    /// It cannot be followed: the caller gets this.
    Failed(CallError),
}

impl CallLane {
    /// `result` is a task the server made of `slot`'s request: it is
    /// followed on a task of its own until it ends.
    pub(super) fn follow_task(&self, slot: Slot, result: &Value) {
        let invalid = |detail: String| CallError::InvalidResult {
            server: self.server.clone(),
            source: ResultError {
                what: "task result",
                detail,
            },
        };
        let (Some(me), Some(asker), Some(retry)) = (
            self.me.get().and_then(|w| w.upgrade()),
            self.asker.get().cloned(),
            slot.retry.as_ref(),
        ) else {
            let error = invalid("this request cannot be followed as a task".into());
            self.rounds_ended(&slot);
            return slot.reply.fail(error);
        };
        let created = match created(result) {
            Ok(created) => created,
            Err(e) => {
                self.rounds_ended(&slot);
                return slot.reply.fail(invalid(e.detail));
            }
        };
        let (origin, deadline, timeout) = (retry.origin, retry.deadline, retry.timeout);
        let (stop, stopped) = oneshot::channel();
        self.rounds.lock().insert(origin, Round::Asking(stop));
        self.spawn(async move {
            let task_id = created.task_id.clone();
            let server = me.server.clone();
            let followed = me.poll_task(&asker, created, slot.after);
            let ended = tokio::select! {
                ended = followed => Some(ended),
                stop = stopped => {
                    if stop.is_ok() {
                        // The caller cancelled: so is the task (best effort).
                        me.cancel_task(&task_id);
                        slot.reply.fail(CallError::Cancelled);
                    } else {
                        slot.reply.fail(CallError::ConnectionClosed {
                            server,
                            reason: Arc::from("the connection ended while a task ran"),
                        });
                    }
                    return;
                }
                _ = tokio::time::sleep_until(deadline) => None,
            };
            me.rounds.lock().remove(&origin);
            match ended {
                Some(Ended::Answer(answer)) => me.deliver(slot, answer),
                Some(Ended::Failed(error)) => slot.reply.fail(error),
                None => {
                    me.cancel_task(&task_id);
                    slot.reply.fail(CallError::Timeout {
                        server,
                        after: timeout,
                    });
                }
            }
        });
    }

    /// Polls the task until it ends, answering what it asks on the way.
    /// Each poll may take `per_request` (the call's own timeout: the call's
    /// deadline, which the caller of this keeps, always comes first, so a
    /// task that outlives it is cancelled, not its connection restarted).
    async fn poll_task(
        &self,
        asker: &super::InputAsker,
        created: TaskState,
        per_request: Duration,
    ) -> Ended {
        let task_id = created.task_id.clone();
        let mut pause = pace(created.poll_interval_ms);
        let mut answered: HashSet<String> = HashSet::new();
        loop {
            tokio::time::sleep(pause).await;
            let polled = match self
                .ask("tasks/get", Some(task_params(&task_id)), per_request)
                .await
            {
                Ok(polled) => polled,
                Err(e) => return Ended::Failed(e),
            };
            let state = match TaskState::parse(&polled, "tasks/get") {
                Ok(state) if state.task_id == task_id => state,
                Ok(_) => return Ended::Failed(self.bad_task("tasks/get names another task")),
                Err(e) => return Ended::Failed(self.bad_task(&e.detail)),
            };
            pause = pace(
                polled
                    .get("pollIntervalMs")
                    .and_then(Value::as_u64)
                    .or(state.poll_interval_ms),
            );
            match state.status {
                TaskStatus::Working => {}
                TaskStatus::Completed => {
                    return match polled.get("result") {
                        Some(result) if result.is_object() => Ended::Answer(Ok(result.clone())),
                        _ => Ended::Failed(self.bad_task("a completed task without a result")),
                    };
                }
                TaskStatus::Failed => {
                    let error = polled
                        .get("error")
                        .and_then(|e| serde_json::from_value::<ErrorObject>(e.clone()).ok())
                        .unwrap_or_else(|| ErrorObject {
                            code: -32603,
                            message: "the task failed without saying why".into(),
                            data: None,
                        });
                    return Ended::Answer(Err(error));
                }
                TaskStatus::Cancelled => {
                    return Ended::Failed(CallError::ConnectionClosed {
                        server: self.server.clone(),
                        reason: Arc::from("the server cancelled the task"),
                    });
                }
                TaskStatus::InputRequired => {
                    let asked = match InputRequired::parse("tools/call", &polled) {
                        Ok(asked) => asked,
                        Err(e) => return Ended::Failed(self.bad_task(&e.to_string())),
                    };
                    let mut responses = Map::new();
                    for request in asked.requests {
                        // A question stays listed until the server has taken
                        // its answer: each is answered once.
                        if answered.contains(&request.key) {
                            continue;
                        }
                        if answered.len() >= MAX_TASK_QUESTIONS {
                            return Ended::Failed(
                                self.bad_task("the task asked too many questions"),
                            );
                        }
                        let key = request.key.clone();
                        match asker.answer(&self.server, request).await {
                            Ok(answer) => {
                                answered.insert(key.clone());
                                responses.insert(key, answer);
                            }
                            Err(error) => {
                                self.cancel_task(&task_id);
                                return Ended::Failed(CallError::InputUnanswered {
                                    server: self.server.clone(),
                                    key,
                                    error,
                                });
                            }
                        }
                    }
                    if !responses.is_empty() {
                        let params = json!({"taskId": task_id, "inputResponses": responses});
                        if let Err(e) = self.ask(TASKS_UPDATE, Some(params), per_request).await {
                            return Ended::Failed(e);
                        }
                    }
                    // Polled again after the pause, answers or not.
                }
            }
        }
    }

    /// Sends `tasks/cancel` for `task_id` and does not wait for it.
    fn cancel_task(&self, task_id: &str) {
        let Some(me) = self.me.get().and_then(|w| w.upgrade()) else {
            return;
        };
        let params = task_params(task_id);
        self.spawn(async move {
            let _ = me
                .ask("tasks/cancel", Some(params), Duration::from_secs(10))
                .await;
        });
    }

    fn bad_task(&self, detail: &str) -> CallError {
        CallError::InvalidResult {
            server: self.server.clone(),
            source: ResultError {
                what: "task",
                detail: detail.to_string(),
            },
        }
    }
}

/// The task a `resultType: "task"` answer names (its fields at the top level).
fn created(result: &Value) -> Result<TaskState, ResultError> {
    let mut state = TaskState::parse(result, "task result")?;
    state.poll_interval_ms = result
        .get("pollIntervalMs")
        .and_then(Value::as_u64)
        .or(state.poll_interval_ms);
    Ok(state)
}

/// The pause between polls: the server's suggestion, within bounds.
fn pace(suggested_ms: Option<u64>) -> Duration {
    suggested_ms
        .map(Duration::from_millis)
        .unwrap_or(POLL_DEFAULT)
        .clamp(POLL_FLOOR, POLL_CEILING)
}
