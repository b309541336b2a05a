//! An rmcp 3.11 server of what MCP 2026-07-28 adds, on stdio: the tasks
//! extension (`io.modelcontextprotocol/tasks`) on rmcp's own task runtime
//! ([`TaskManager`]) — to a client that declares it, `slow_echo` answers with
//! a task that completes after `ms`, and `ask_name` with one that asks for a
//! name (`input_required`, answered with `tasks/update`); `tasks/get`,
//! `tasks/update` and `tasks/cancel` are rmcp's — and, outside tasks,
//! `confirm` (a round of questions: `input_required` until the retry brings
//! the answer and the state back), `sleep` (a plain answer after `ms`) and
//! `grow` (one more tool, told as a list change to `subscriptions/listen`).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, GetTaskParams, GetTaskResult, InputRequest, InputRequiredResult, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

/// The argument that makes the harness binary this server.
pub const RMCP_TASKS_ARG: &str = "rmcp-tasks-server";

/// The server: rmcp's task runtime and two tools.
#[derive(Clone, Default)]
pub struct TaskServer {
    tasks: TaskManager,
    /// Set by `grow`: `grown` is listed from then on.
    grown: Arc<std::sync::atomic::AtomicBool>,
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::default(),
    }
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s.into())])
}

impl ServerHandler for TaskServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            vec![
                Tool::new(
                    "slow_echo",
                    "Echo the text after `ms` milliseconds, as a task",
                    schema(json!({"type": "object",
                    "properties": {"text": {"type": "string"}, "ms": {"type": "integer"}},
                    "required": ["text"]})),
                ),
                Tool::new(
                    "ask_name",
                    "Ask for a name, as a task, then greet it",
                    schema(json!({"type": "object", "properties": {}})),
                ),
                Tool::new(
                    "confirm",
                    "Ask for a confirmation (a round of questions), then say it",
                    schema(json!({"type": "object", "properties": {}})),
                ),
                Tool::new(
                    "sleep",
                    "Answer after `ms` milliseconds",
                    schema(json!({"type": "object",
                    "properties": {"ms": {"type": "integer"}}, "required": ["ms"]})),
                ),
                Tool::new(
                    "grow",
                    "List one more tool and tell the listeners",
                    schema(json!({"type": "object", "properties": {}})),
                ),
            ]
            .into_iter()
            .chain(
                self.grown
                    .load(std::sync::atomic::Ordering::SeqCst)
                    .then(|| {
                        Tool::new(
                            "grown",
                            "Listed after grow",
                            schema(json!({"type": "object"})),
                        )
                    }),
            )
            .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let as_task = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        let arguments = request.arguments.unwrap_or_default();
        let options = TaskOptions::new().with_poll_interval_ms(50);
        match &*request.name {
            "slow_echo" => {
                let said = arguments
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let ms = arguments.get("ms").and_then(Value::as_u64).unwrap_or(200);
                if !as_task {
                    return Ok(text(said).into());
                }
                let task = self.tasks.spawn(options, move |_ctx| {
                    Box::pin(async move {
                        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                        Ok(text(said))
                    })
                });
                Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
            }
            "ask_name" if as_task => {
                let task = self.tasks.spawn(options, |ctx| {
                    Box::pin(async move {
                        let question: InputRequest = serde_json::from_value(json!({
                            "method": "elicitation/create",
                            "params": {
                                "message": "What is your name?",
                                "requestedSchema": {"type": "object",
                                    "properties": {"name": {"type": "string"}},
                                    "required": ["name"]}
                            }
                        }))
                        .map_err(|e| {
                            TaskExit::Error(ErrorData::internal_error(e.to_string(), None))
                        })?;
                        let answer = ctx.request_input("name", question).await?;
                        let name = answer
                            .pointer("/content/name")
                            .and_then(Value::as_str)
                            .unwrap_or("nobody")
                            .to_string();
                        Ok(text(format!("hello {name}")))
                    })
                });
                Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
            }
            "ask_name" => Ok(text("ask_name runs as a task only").into()),
            "confirm" => {
                let answer = request
                    .input_responses
                    .as_ref()
                    .and_then(|r| r.get("ok"))
                    .and_then(|a| a.pointer("/content/confirm"))
                    .and_then(Value::as_bool);
                match (answer, request.request_state.as_deref()) {
                    (Some(yes), Some("rmcp-confirm")) => {
                        Ok(text(if yes { "confirmed" } else { "declined" }).into())
                    }
                    _ => {
                        let question: InputRequest = serde_json::from_value(json!({
                            "method": "elicitation/create",
                            "params": {
                                "message": "Go on?",
                                "requestedSchema": {"type": "object",
                                    "properties": {"confirm": {"type": "boolean"}},
                                    "required": ["confirm"]}
                            }
                        }))
                        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                        Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
                            Some([("ok".to_string(), question)].into_iter().collect()),
                            Some("rmcp-confirm".into()),
                        )))
                    }
                }
            }
            "sleep" => {
                let ms = arguments.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                Ok(text(format!("slept {ms}")).into())
            }
            "grow" => {
                self.grown.store(true, std::sync::atomic::Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                Ok(text("grown").into())
            }
            "grown" => Ok(text("here").into()),
            other => Err(ErrorData::invalid_params(
                format!("unknown tool {other}"),
                None,
            )),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks
            .get_task(&request.task_id)
            .map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel_task(&request.task_id)
    }
}

/// Serves [`TaskServer`] on stdin/stdout until stdin closes, then exits.
pub fn serve_stdio() -> ! {
    super::rmcp_echo::serve_on_stdio(TaskServer::default())
}
