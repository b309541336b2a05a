//! Tasks (protocol 2025-11-25): a `tools/call` the server runs as a task
//! answers at once with the task's id; the client polls `tasks/get` until the
//! task ends (or needs input), then reads its result with `tasks/result`.
//! At 2026-07-28 tasks are an extension ([`TASKS_EXTENSION`]): the task's
//! fields come at the top level of the answer, `tasks/get` carries the result
//! itself, and input goes back with `tasks/update`.

use serde_json::{Map, Value, json};

use crate::mcp::messages::ResultError;

/// `tasks/get`.
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/result`.
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/cancel`.
pub const TASKS_CANCEL: &str = "tasks/cancel";

/// The tasks extension of MCP 2026-07-28, as clients and servers declare it.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Longest task id kept (ids are the server's; a longer one is malformed).
pub const MAX_TASK_ID: usize = 1024;

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for the requestor: its result request carries the server's questions.
    InputRequired,
    /// Done; the result is ready.
    Completed,
    /// Failed; the result says how.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task has ended.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// A task as `tools/call` (in `task`), `tasks/get` and `tasks/cancel` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskState {
    /// Its id.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// A sentence about it, if the server sent one.
    pub status_message: Option<String>,
    /// How often the server suggests polling, in milliseconds.
    pub poll_interval_ms: Option<u64>,
}

impl TaskState {
    /// Reads a task object.
    pub fn parse(value: &Value, what: &'static str) -> Result<TaskState, ResultError> {
        let err = |detail: &str| ResultError {
            what,
            detail: detail.to_string(),
        };
        let task_id = value
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| err("`taskId` missing or not a string"))?;
        if task_id.is_empty() || task_id.len() > MAX_TASK_ID {
            return Err(err("`taskId` is empty or longer than 1 KiB"));
        }
        let status = match value.get("status").and_then(Value::as_str) {
            Some("working") => TaskStatus::Working,
            Some("input_required") => TaskStatus::InputRequired,
            Some("completed") => TaskStatus::Completed,
            Some("failed") => TaskStatus::Failed,
            Some("cancelled") => TaskStatus::Cancelled,
            _ => return Err(err("`status` missing or not a task status")),
        };
        Ok(TaskState {
            task_id: task_id.to_string(),
            status,
            status_message: value
                .get("statusMessage")
                .and_then(Value::as_str)
                .map(|m| m.chars().take(1024).collect()),
            poll_interval_ms: value.get("pollInterval").and_then(Value::as_u64),
        })
    }

    /// Reads the `CreateTaskResult` a task-augmented request is answered with.
    pub fn created(result: &Value) -> Result<TaskState, ResultError> {
        let task = result.get("task").ok_or_else(|| ResultError {
            what: "tools/call (task)",
            detail: "the answer to a task-augmented call has no `task`".into(),
        })?;
        TaskState::parse(task, "tools/call (task)")
    }
}

/// Parameters of a task-augmented `tools/call`: the call's, plus the task's
/// time to live and, when given, the progress token.
pub fn call_as_task_params(
    tool: &str,
    arguments: Option<&Value>,
    ttl_ms: u64,
    progress_token: Option<i64>,
) -> Value {
    let mut params = Map::new();
    params.insert("name".into(), Value::String(tool.to_string()));
    if let Some(arguments) = arguments {
        params.insert("arguments".into(), arguments.clone());
    }
    params.insert("task".into(), json!({ "ttl": ttl_ms }));
    if let Some(token) = progress_token {
        params.insert("_meta".into(), json!({ "progressToken": token }));
    }
    Value::Object(params)
}

/// Parameters of `tasks/get`, `tasks/result` and `tasks/cancel`.
pub fn task_params(task_id: &str) -> Value {
    json!({ "taskId": task_id })
}

/// A tool's `execution.taskSupport` is `required`.
pub fn requires_task(execution: Option<&Value>) -> bool {
    execution
        .and_then(|e| e.get("taskSupport"))
        .and_then(Value::as_str)
        == Some("required")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_tasks_are_read_and_checked() {
        let ok = TaskState::created(
            &json!({"task": {"taskId": "t-1", "status": "working", "pollInterval": 500}}),
        )
        .unwrap();
        assert_eq!(ok.task_id, "t-1");
        assert_eq!(ok.status, TaskStatus::Working);
        assert_eq!(ok.poll_interval_ms, Some(500));
        assert!(!ok.status.is_terminal());
        assert!(TaskState::created(&json!({})).is_err());
        assert!(TaskState::created(&json!({"task": {"taskId": "", "status": "working"}})).is_err());
        let long = "x".repeat(MAX_TASK_ID + 1);
        assert!(
            TaskState::created(&json!({"task": {"taskId": long, "status": "working"}})).is_err()
        );
        assert!(TaskState::parse(&json!({"taskId": "a", "status": "done"}), "t").is_err());
        let done = TaskState::parse(&json!({"taskId": "a", "status": "completed"}), "t").unwrap();
        assert!(done.status.is_terminal());
    }

    #[test]
    fn params_and_task_support() {
        let p = call_as_task_params("research", Some(&json!({"topic": "x"})), 60_000, Some(7));
        assert_eq!(p["task"], json!({"ttl": 60000}));
        assert_eq!(p["_meta"]["progressToken"], 7);
        assert!(requires_task(Some(&json!({"taskSupport": "required"}))));
        assert!(!requires_task(Some(&json!({"taskSupport": "optional"}))));
        assert!(!requires_task(None));
    }
}
