//! A tool call the server runs as a task (2025-11-25), without I/O or a
//! clock: where the call is, what cancelling it asks for, and how long to
//! wait before the next poll. The driver (the actors' task call) sends what
//! this says and tells it what came back.
//!
//! The rules it keeps: a task is cancelled at most once, and never unless the
//! call was cancelled or ran out of time; a call cancelled before the server
//! named its task cancels that task as soon as it is named; once the result is
//! in, there is nothing left to cancel.

use std::time::Duration;

use crate::mcp::tasks::{TaskState, TaskStatus};

/// The fastest polling, whatever the server suggests.
pub const POLL_FLOOR: Duration = Duration::from_millis(100);
/// The slowest polling, whatever the server suggests.
pub const POLL_CEILING: Duration = Duration::from_secs(5);
/// The pause when the server suggests none.
pub const POLL_DEFAULT: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Stage {
    /// `tools/call` sent; no task id yet.
    Creating,
    /// The server runs this task.
    Created(String),
    /// Ended: the result is in, or the call was cancelled or timed out.
    Over,
}

/// What cancelling the call asks of the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnCancel {
    /// Send `tasks/cancel` for this task (and stop polling it).
    CancelTask(String),
    /// No task is named yet: it is cancelled when it is ([`TaskCall::created`]).
    WhenNamed,
    /// The call had already ended: nothing to do.
    Nothing,
}

/// What the server naming its task means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnCreated {
    /// Go on: poll it.
    Poll,
    /// The call was cancelled meanwhile: send `tasks/cancel` for it and stop.
    CancelIt,
}

/// What to do after reading the task's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// Ask `tasks/get` again after this pause.
    PollAfter(Duration),
    /// Ask `tasks/result`: the task ended, or needs input (the server holds
    /// the result request and carries its questions meanwhile).
    FetchResult,
}

/// One task call's stage.
#[derive(Debug)]
pub struct TaskCall {
    stage: Stage,
}

impl Default for TaskCall {
    fn default() -> Self {
        TaskCall::new()
    }
}

impl TaskCall {
    /// A call whose `tools/call` is on its way.
    pub fn new() -> TaskCall {
        TaskCall {
            stage: Stage::Creating,
        }
    }

    /// The caller cancels.
    pub fn cancel(&mut self) -> OnCancel {
        match std::mem::replace(&mut self.stage, Stage::Over) {
            Stage::Creating => OnCancel::WhenNamed,
            Stage::Created(id) => OnCancel::CancelTask(id),
            Stage::Over => OnCancel::Nothing,
        }
    }

    /// The server named its task `id`.
    pub fn created(&mut self, id: &str) -> OnCreated {
        match self.stage {
            Stage::Over => OnCreated::CancelIt,
            _ => {
                self.stage = Stage::Created(id.to_string());
                OnCreated::Poll
            }
        }
    }

    /// The result is in, or the call ran out of time: the call is over. The
    /// task still running, if one is (to cancel when out of time).
    pub fn over(&mut self) -> Option<String> {
        match std::mem::replace(&mut self.stage, Stage::Over) {
            Stage::Created(id) => Some(id),
            _ => None,
        }
    }

    /// What to do after reading `state`: poll at the server's pace within
    /// [`POLL_FLOOR`] and [`POLL_CEILING`], or fetch the result.
    pub fn next(state: &TaskState) -> NextStep {
        if state.status.is_terminal() || state.status == TaskStatus::InputRequired {
            return NextStep::FetchResult;
        }
        let pause = state
            .poll_interval_ms
            .map_or(POLL_DEFAULT, Duration::from_millis);
        NextStep::PollAfter(pause.clamp(POLL_FLOOR, POLL_CEILING))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(status: &str, poll: Option<u64>) -> TaskState {
        let mut task = json!({"taskId": "t", "status": status, "createdAt": "2025-11-25T00:00:00Z",
            "lastUpdatedAt": "2025-11-25T00:00:00Z", "ttl": 1000});
        if let Some(ms) = poll {
            task["pollInterval"] = json!(ms);
        }
        TaskState::parse(&task, "tasks/get").unwrap()
    }

    #[test]
    fn a_call_cancelled_before_its_task_is_named_cancels_it_when_it_is() {
        let mut call = TaskCall::new();
        assert_eq!(call.cancel(), OnCancel::WhenNamed);
        assert_eq!(call.created("t1"), OnCreated::CancelIt);
        // Cancelled once: nothing more to do, and nothing left when it times out.
        assert_eq!(call.cancel(), OnCancel::Nothing);
        assert_eq!(call.over(), None);
    }

    #[test]
    fn a_named_task_is_cancelled_once_and_not_after_its_result() {
        let mut call = TaskCall::new();
        assert_eq!(call.created("t1"), OnCreated::Poll);
        assert_eq!(call.cancel(), OnCancel::CancelTask("t1".into()));
        assert_eq!(call.cancel(), OnCancel::Nothing);

        let mut done = TaskCall::new();
        assert_eq!(done.created("t2"), OnCreated::Poll);
        // Timed out while running: the running task is handed back to cancel.
        assert_eq!(done.over(), Some("t2".into()));
        assert_eq!(done.over(), None);
        assert_eq!(done.cancel(), OnCancel::Nothing);
    }

    #[test]
    fn polling_follows_the_server_within_bounds_and_stops_when_the_task_ends_or_asks() {
        assert_eq!(
            TaskCall::next(&state("working", Some(500))),
            NextStep::PollAfter(Duration::from_millis(500))
        );
        assert_eq!(
            TaskCall::next(&state("working", Some(0))),
            NextStep::PollAfter(POLL_FLOOR)
        );
        assert_eq!(
            TaskCall::next(&state("working", Some(3_600_000))),
            NextStep::PollAfter(POLL_CEILING)
        );
        assert_eq!(
            TaskCall::next(&state("working", None)),
            NextStep::PollAfter(POLL_DEFAULT)
        );
        for status in ["completed", "failed", "cancelled", "input_required"] {
            assert_eq!(
                TaskCall::next(&state(status, Some(500))),
                NextStep::FetchResult,
                "{status}"
            );
        }
    }
}
