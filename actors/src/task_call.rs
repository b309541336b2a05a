//! A tool call the server runs as a task (protocol 2025-11-25, for tools whose
//! `execution.taskSupport` is `required`): `tools/call` with `task` answers at
//! once with the task's id; the call then polls `tasks/get` at the server's
//! pace until the task ends or needs input, and reads the result with
//! `tasks/result`. To the host it is one `PendingCall`: its progress reaches
//! the call's callback, dropping or cancelling it sends `tasks/cancel`, and
//! the call's timeout bounds the whole task.
//!
//! Creating and polling have the server's request timeout (and its rule: a
//! server that does not answer one is restarted). The task as a whole may run
//! as long as the call's timeout (also its `ttl`); past it the task is
//! cancelled and the call fails with `Timeout`, but the connection stays — the
//! server answered every request, it only worked longer than the host would
//! wait. `tasks/result` for a task that needs input is held by the server until
//! the task ends, so it has the whole call's time, and `tasks/cancel` (sent
//! without waiting) a long one, so that neither can end the connection first.
//!
//! Where the call is and what cancelling it asks for is the sans-I/O
//! [`TaskCall`] (`protocol/src/state/task_call.rs`); this file sends what it says.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::CallToolResult;
use mcpvisor_protocol::mcp::messages::methods;
use mcpvisor_protocol::mcp::tasks::{
    TASKS_CANCEL, TASKS_GET, TASKS_RESULT, TaskState, call_as_task_params, task_params,
};
use mcpvisor_protocol::state::task_call::{NextStep, OnCancel, OnCreated, TaskCall};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use crate::error::CallError;
use crate::lane::{Answer, CallLane};
use crate::options::ProgressCallback;
use crate::routes::{LaneRoute, Route};

/// How long a `tasks/cancel` nobody waits for may stay unanswered.
const CANCEL_WAIT: Duration = Duration::from_secs(600);

/// One task call's shared state: what cancelling it needs.
pub(crate) struct TaskFlow {
    lane: Arc<CallLane>,
    request_timeout: Duration,
    /// The call's timeout: the task's `ttl`, and the bound of `tasks/result`.
    call_timeout: Duration,
    /// Whether the server answers `tasks/cancel`.
    cancels: bool,
    /// Where the call is, and what cancelling it asks for.
    stage: Mutex<TaskCall>,
    reply: Mutex<Option<oneshot::Sender<Result<CallToolResult, CallError>>>>,
    abort: Mutex<Option<AbortHandle>>,
    /// The token its progress comes with (the first request's id).
    token: i64,
}

impl TaskFlow {
    /// Ends the call with [`CallError::Cancelled`] and asks the server to
    /// cancel the task (if it was created). A finished call is left alone.
    pub(crate) fn cancel(&self) {
        let Some(reply) = self.reply.lock().take() else {
            return;
        };
        self.lane.unwatch(self.token);
        let asked = self.stage.lock().cancel();
        match asked {
            // The task's id is still to come: the flow cancels it once it has it.
            OnCancel::WhenNamed | OnCancel::Nothing => {}
            OnCancel::CancelTask(id) => {
                if let Some(abort) = self.abort.lock().take() {
                    abort.abort();
                }
                self.cancel_task(&id);
            }
        }
        let _ = reply.send(Err(CallError::Cancelled));
    }

    /// Sends `tasks/cancel` without waiting for its answer (if the server offers it).
    fn cancel_task(&self, id: &str) {
        if self.cancels {
            let _ = self
                .lane
                .request(TASKS_CANCEL, Some(task_params(id)), CANCEL_WAIT);
        }
    }

    /// The task was created: from now on cancelling cancels it. False if the
    /// call was cancelled meanwhile (the task is then cancelled here).
    fn created(&self, id: &str) -> bool {
        let next = self.stage.lock().created(id);
        match next {
            OnCreated::Poll => true,
            OnCreated::CancelIt => {
                self.cancel_task(id);
                false
            }
        }
    }

    /// The task's result is in: nothing is left to cancel. Its id, if it was running.
    fn over(&self) -> Option<String> {
        self.stage.lock().over()
    }

    fn finish(&self, outcome: Result<CallToolResult, CallError>) {
        self.lane.unwatch(self.token);
        if let Some(reply) = self.reply.lock().take() {
            let _ = reply.send(outcome);
        }
    }
}

/// Starts a task call of `route`'s tool on `runtime` through its connection
/// (`local`); the answer comes as a call's does.
pub(crate) fn start(
    runtime: &tokio::runtime::Handle,
    route: &Route,
    local: &LaneRoute,
    arguments: Option<Value>,
    progress: Option<ProgressCallback>,
    timeout: Duration,
) -> (Arc<TaskFlow>, Answer) {
    let cancels = local.task_cancels;
    let lane = local.lane.clone();
    let token = lane.next_id();
    let (reply, answer) = oneshot::channel();
    let flow = Arc::new(TaskFlow {
        lane: lane.clone(),
        request_timeout: local.request_timeout,
        call_timeout: timeout,
        cancels,
        stage: Mutex::new(TaskCall::new()),
        reply: Mutex::new(Some(reply)),
        abort: Mutex::new(None),
        token,
    });
    if let Some(progress) = progress.clone() {
        lane.watch(token, progress);
    }
    let tool = route.definition.name.tool().to_string();
    let output = local.output.clone();
    let server = lane.server().clone();
    let running = flow.clone();
    let task = runtime.spawn(async move {
        let work = run(&running, &tool, arguments, progress.is_some());
        let outcome = match tokio::time::timeout(timeout, work).await {
            Ok(Ok(result)) => match &output {
                Some(o) => o.check.check(&result).map(|()| result).map_err(|detail| {
                    CallError::OutputMismatch {
                        server: server.clone(),
                        tool: o.tool.clone(),
                        detail,
                    }
                }),
                None => Ok(result),
            },
            Ok(Err(e)) => Err(e),
            Err(_) => {
                if let Some(id) = running.over() {
                    running.cancel_task(&id);
                }
                Err(CallError::Timeout {
                    server: server.clone(),
                    after: timeout,
                })
            }
        };
        running.finish(outcome);
    });
    *flow.abort.lock() = Some(task.abort_handle());
    (flow, answer)
}

async fn run(
    flow: &TaskFlow,
    tool: &str,
    arguments: Option<Value>,
    with_progress: bool,
) -> Result<CallToolResult, CallError> {
    let lane = &flow.lane;
    let invalid = |source| CallError::InvalidResult {
        server: lane.server().clone(),
        source,
    };
    let params = call_as_task_params(
        tool,
        arguments.as_ref(),
        u64::try_from(flow.call_timeout.as_millis()).unwrap_or(u64::MAX),
        with_progress.then_some(flow.token),
    );
    let answer = lane.request_as(
        flow.token,
        methods::TOOLS_CALL,
        Some(params),
        flow.request_timeout,
    )?;
    let created = lane.await_raw(flow.token, answer).await?;
    let mut state = TaskState::created(&created).map_err(invalid)?;
    let id = state.task_id.clone();
    if !flow.created(&id) {
        return Err(CallError::Cancelled);
    }
    while let NextStep::PollAfter(pause) = TaskCall::next(&state) {
        tokio::time::sleep(pause).await;
        let got = lane
            .ask(TASKS_GET, Some(task_params(&id)), flow.request_timeout)
            .await?;
        state = TaskState::parse(&got, "tasks/get").map_err(invalid)?;
    }
    // Held by the server until the task ends (it carries the server's questions
    // meanwhile): it may take the whole call, which bounds it from outside.
    let result = lane
        .ask(
            TASKS_RESULT,
            Some(task_params(&id)),
            flow.call_timeout + CANCEL_WAIT,
        )
        .await;
    flow.over();
    CallToolResult::parse(result?).map_err(invalid)
}
