//! A real MCP server over stdio, with tools that inject faults on purpose.
//!
//! `mcpvisor demo-server` runs it. The CLI uses it as the default server and the
//! integration tests use it as the peer that misbehaves on request: it sleeps,
//! fails, crashes, floods, reports progress, changes its tool list and starts a
//! grandchild process. It speaks newline-delimited JSON-RPC 2.0 at protocol
//! version `2025-03-26` on stdin/stdout and writes diagnostics only to stderr.
//!
//! Tools (see [`BUILT_IN_TOOLS`]): `echo`, `add`, `sleep`, `cancelled`, `fail`,
//! `crash`, `flood`, `progress`, `pid`, `grandchild_pid`, `log`, `add_tool`, plus
//! one echo-like tool per `--extra-tool NAME`.
//!
//! Every `tools/call` runs in its own task, so calls overlap and a `sleep` never
//! holds up the others; a single writer task owns stdout so lines never
//! interleave.

mod handlers;
mod hostile;
mod options;
mod state;
mod tools;

use std::io;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::mcp::logging::LogLevel;
use mcpvisor_protocol::mcp::messages::methods;
use mcpvisor_protocol::mcp::revision::Revision;
use mcpvisor_protocol::wire::jsonrpc::{
    ErrorResponse, Notification, Request, RequestId, Response, error_codes,
};
use mcpvisor_protocol::{
    FrameDecoder, Incoming, Message, MessageError, PROTOCOL_VERSION, STDIO_FRAME_LIMIT,
};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use handlers::ToolCall;
pub use hostile::{
    GARBAGE_FLOOD_DONE, GARBAGE_FLOOD_LINES, HUGE_SCHEMA_DEPTH, HUGE_SCHEMA_PROPERTIES, Hostile,
    MANY_TOOLS, REORDER_BATCH, SAMPLING_FLOOD, SERVER_REQUESTS, TERMINAL_ESCAPES, TOO_DEEP,
    many_tool_name,
};
pub use options::{DEFAULT_PAGE_SIZE, DemoServerOptions};
use state::{OUTBOX_CAPACITY, Outbox, Outgoing, Shared, lock};
pub use tools::BUILT_IN_TOOLS;

/// The `serverInfo.name` the demo server reports.
pub const SERVER_NAME: &str = "mcpvisor-demo";

/// How long in-flight calls may still finish after stdin closes.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(100);
/// How long queued lines may take to reach stdout at shutdown; a client that
/// stopped reading must not keep the server alive.
const WRITER_DRAIN: Duration = Duration::from_millis(500);

/// Serves MCP on stdin/stdout until stdin reaches end of file.
///
/// Returns `Ok` after a clean end of input; `Err` when stdin cannot be read or
/// the `--grandchild` process cannot be started. Some tools and options end the
/// process directly (`crash`, `--exit-during-initialize`).
pub async fn run(opts: DemoServerOptions) -> io::Result<()> {
    if opts.stderr_banner {
        eprintln!("demo server starting");
        eprintln!(
            "{SERVER_NAME} {} (pid {}, MCP {PROTOCOL_VERSION})",
            env!("CARGO_PKG_VERSION"),
            std::process::id()
        );
        eprintln!("this banner goes to stderr on purpose (--stderr-banner)");
    }
    let grandchild_pid = if opts.grandchild {
        Some(spawn_grandchild()?)
    } else {
        None
    };
    let (tx, rx) = mpsc::channel(OUTBOX_CAPACITY);
    let writer = tokio::spawn(write_lines(rx));
    let mut table = tools::ToolTable::new(&opts.extra_tools);
    if opts.fault_tools {
        table.add("garbage", tools::ToolKind::Garbage);
        table.add("cut_answer", tools::ToolKind::CutAnswer);
    }
    let page_size = match opts.hostile {
        Some(hostile) => {
            hostile.add_tools(&mut table);
            hostile.page_size(opts.page_size)
        }
        None => opts.page_size,
    };
    let shared = Arc::new(Shared::new(
        Outbox::new(tx),
        table,
        page_size,
        grandchild_pid,
        opts.hostile,
    ));
    if let Some(hostile) = opts.hostile {
        hostile.on_start(&shared).await;
    }
    let server = Server {
        shared: Arc::clone(&shared),
        opts,
    };
    let result = server.serve_stdin().await;

    let _ = tokio::time::timeout(SHUTDOWN_GRACE, shared.wait_idle()).await;
    shared.abort_all();
    // The writer stops once every task holding the outbox is gone.
    drop(server);
    drop(shared);
    let _ = tokio::time::timeout(WRITER_DRAIN, writer).await;
    result
}

/// Starts `sleep 1000` in our process group (the default for a child) and
/// leaves it running: cleaning it up is the client's job.
fn spawn_grandchild() -> io::Result<u32> {
    use std::process::{Command, Stdio};
    let child = Command::new("sleep")
        .arg("1000")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    Ok(child.id())
}

/// Owns stdout: one line per message, flushed at once.
async fn write_lines(mut rx: mpsc::Receiver<Outgoing>) {
    let mut stdout = tokio::io::stdout();
    while let Some(out) = rx.recv().await {
        let line = match out {
            Outgoing::Bytes(line) => line,
            Outgoing::Flush(done) => {
                // Each write below is already flushed.
                let _ = done.send(());
                continue;
            }
        };
        let written = async {
            stdout.write_all(&line).await?;
            stdout.flush().await
        };
        if let Err(e) = written.await {
            tracing::warn!(error = %e, "stdout closed; dropping further output");
            return;
        }
    }
}

struct Server {
    shared: Arc<Shared>,
    opts: DemoServerOptions,
}

impl Server {
    async fn serve_stdin(&self) -> io::Result<()> {
        let mut stdin = tokio::io::stdin();
        let mut decoder = FrameDecoder::new(STDIO_FRAME_LIMIT);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = stdin.read(&mut buf).await?;
            if n == 0 {
                if let Err(e) = decoder.finish() {
                    tracing::warn!(error = %e, "input ended inside a line");
                }
                return Ok(());
            }
            let mut frames = Vec::new();
            let pushed = decoder.push(&buf[..n], |f| frames.push(f.to_vec()));
            for frame in &frames {
                self.handle_frame(frame).await;
            }
            if let Err(e) = pushed {
                // The line was never buffered whole, so its id is unknowable.
                let reply = ErrorResponse::new(None, error_codes::INVALID_REQUEST, e.to_string());
                self.send(Message::Error(reply)).await;
            }
        }
    }

    async fn handle_frame(&self, frame: &[u8]) {
        match Message::parse(frame) {
            Ok(Incoming::Single(message)) => self.handle_message(message).await,
            // Each element is answered on its own line: the writer never emits arrays.
            Ok(Incoming::Batch(items)) => {
                for item in items {
                    match item {
                        Ok(message) => self.handle_message(message).await,
                        Err(e) => self.reply_unreadable(None, &e).await,
                    }
                }
            }
            Err(e) => self.reply_unreadable(salvage_id(frame), &e).await,
        }
    }

    async fn reply_unreadable(&self, id: Option<RequestId>, e: &MessageError) {
        let (id, code) = match e {
            MessageError::InvalidJson(_) => (None, error_codes::PARSE_ERROR),
            _ => (id, error_codes::INVALID_REQUEST),
        };
        let reply = ErrorResponse::new(id, code, e.to_string());
        self.send(Message::Error(reply)).await;
    }

    async fn handle_message(&self, message: Message) {
        match message {
            Message::Request(request) => self.handle_request(request).await,
            Message::Notification(n) => self.handle_notification(n),
            // Only a hostile server sends requests; it keeps the answers for the test.
            Message::Response(_) | Message::Error(_)
                if matches!(
                    self.shared.hostile,
                    Some(Hostile::ServerRequests | Hostile::SamplingFlood)
                ) =>
            {
                if let Ok(value) = serde_json::from_slice(&message.to_vec()) {
                    lock(&self.shared.client_answers).push(value);
                }
            }
            Message::Response(_) | Message::Error(_) => {
                tracing::debug!("ignoring a response the demo server never asked for");
            }
        }
    }

    fn handle_notification(&self, n: Notification) {
        match n.method.as_str() {
            methods::CANCELLED => {
                let id = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
                match id {
                    Some(id) => self.shared.cancel(&id),
                    None => tracing::debug!("cancellation without a usable requestId"),
                }
            }
            methods::INITIALIZED => {}
            other => tracing::debug!(method = other, "ignoring notification"),
        }
    }

    async fn handle_request(&self, request: Request) {
        let Request { id, method, params } = request;
        let answer = match method.as_str() {
            methods::INITIALIZE => {
                let asked = params
                    .as_ref()
                    .and_then(|p| p.get("protocolVersion"))
                    .and_then(Value::as_str)
                    .and_then(|v| v.parse::<Revision>().ok());
                return self.initialize(id, asked).await;
            }
            methods::TOOLS_CALL => return self.start_call(id, params).await,
            methods::PING => Ok(json!({})),
            methods::SET_LOG_LEVEL => {
                let level = params
                    .as_ref()
                    .and_then(|p| p.get("level"))
                    .and_then(Value::as_str)
                    .and_then(|l| l.parse::<LogLevel>().ok());
                match level {
                    Some(level) => {
                        *lock(&self.shared.log_level) = Some(level);
                        Ok(json!({}))
                    }
                    None => Err((error_codes::INVALID_PARAMS, "unknown log level".into())),
                }
            }
            methods::TOOLS_LIST if self.opts.no_tools => Err((
                error_codes::METHOD_NOT_FOUND,
                "method not found: tools/list".into(),
            )),
            methods::TOOLS_LIST => self.list_tools(params.as_ref()),
            other => Err((
                error_codes::METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        };
        self.answer(id, answer).await;
    }

    /// Answers `initialize` at the revision asked for when it is one this
    /// server knows (as real servers do), else at 2025-03-26.
    async fn initialize(&self, id: RequestId, asked: Option<Revision>) {
        let fault = self
            .opts
            .fault_file
            .as_ref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .unwrap_or_default();
        if self.opts.exit_during_initialize || fault.trim() == "exit" {
            eprintln!(
                "demo server: exiting with code 4 during initialize (--exit-during-initialize)"
            );
            std::process::exit(4);
        }
        if self.opts.hang_initialize || fault.trim() == "hang" {
            tracing::info!("not answering initialize (--hang-initialize)");
            return;
        }
        if self.opts.list_changed_early {
            let early = Notification::new(methods::TOOLS_LIST_CHANGED, Some(json!({})));
            self.send(Message::Notification(early)).await;
        }
        let capabilities = if self.opts.no_tools {
            json!({ "logging": {} })
        } else {
            json!({ "tools": { "listChanged": true }, "logging": {} })
        };
        let result = json!({
            "protocolVersion": asked.map_or(PROTOCOL_VERSION, Revision::as_str),
            "capabilities": capabilities,
            "serverInfo": { "name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION") },
        });
        self.answer(id, Ok(result)).await;
        if let Some(hostile) = self.opts.hostile {
            hostile.after_initialize(&self.shared).await;
        }
    }

    /// One page of tools; the cursor is the decimal offset of the page's first tool.
    fn list_tools(&self, params: Option<&Value>) -> Result<Value, (i64, String)> {
        let invalid = |why: String| (error_codes::INVALID_PARAMS, why);
        let cursor = match params.and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(c.as_str()),
            Some(_) => return Err(invalid("cursor must be a string".into())),
        };
        if let Some(page) = self.opts.hostile.and_then(|h| h.endless_page(cursor)) {
            return Ok(page);
        }
        let table = lock(&self.shared.tools);
        let offset = match cursor {
            None => 0,
            // The table only grows, so every cursor we issued stays within it.
            Some(c) => match c.parse::<usize>() {
                Ok(n) if n <= table.len() => n,
                _ => return Err(invalid(format!("invalid cursor: {c:?}"))),
            },
        };
        let size = self.shared.page_size.max(1);
        let mut page = table.page(offset, size);
        if let Some(hostile) = self.opts.hostile {
            hostile.rewrite_listing(&mut page);
        }
        let mut result = json!({ "tools": page });
        let next = offset.saturating_add(size);
        if next < table.len() {
            result["nextCursor"] = Value::String(next.to_string());
        }
        Ok(result)
    }

    /// Validates a `tools/call` and runs it in its own task.
    async fn start_call(&self, id: RequestId, params: Option<Value>) {
        let call = match self.read_call(id.clone(), params) {
            Ok(call) => call,
            Err(message) => {
                return self
                    .answer(id, Err((error_codes::INVALID_PARAMS, message)))
                    .await;
            }
        };
        if !self.shared.begin(&call.id, &call.name) {
            let why = format!("request id {id} is already in flight");
            return self
                .answer(id, Err((error_codes::INVALID_REQUEST, why)))
                .await;
        }
        let shared = Arc::clone(&self.shared);
        let task = tokio::spawn(async move {
            let outcome = handlers::call_tool(&shared, &call).await;
            // A call cancelled meanwhile must stay unanswered.
            if shared.finish(&call.id) {
                let message = match outcome {
                    Ok(result) => Message::Response(Response {
                        id: call.id,
                        result,
                    }),
                    Err(error) => Message::Error(ErrorResponse {
                        id: Some(call.id),
                        error,
                    }),
                };
                match shared.hostile {
                    Some(hostile) => hostile.answer(&shared, &message).await,
                    None => shared.outbox.send(&message).await,
                }
            }
        });
        self.shared.attach(&id, task.abort_handle());
    }

    fn read_call(&self, id: RequestId, params: Option<Value>) -> Result<ToolCall, String> {
        let Some(Value::Object(mut params)) = params else {
            return Err("tools/call params must be an object".into());
        };
        let name = match params.remove("name") {
            Some(Value::String(name)) => name,
            _ => return Err("tools/call params need a string `name`".into()),
        };
        let args = match params.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(args)) => args,
            Some(_) => return Err(format!("arguments of tool {name:?} must be an object")),
        };
        let progress_token = params
            .get("_meta")
            .and_then(|meta| meta.get("progressToken"))
            .filter(|token| !token.is_null())
            .cloned();
        let kind = lock(&self.shared.tools).find(&name);
        let Some(kind) = kind else {
            return Err(format!("unknown tool: {name}"));
        };
        Ok(ToolCall {
            id,
            name,
            kind,
            args,
            progress_token,
        })
    }

    async fn answer(&self, id: RequestId, answer: Result<Value, (i64, String)>) {
        let message = match answer {
            Ok(result) => Message::Response(Response { id, result }),
            Err((code, why)) => Message::Error(ErrorResponse::new(Some(id), code, why)),
        };
        self.send(message).await;
    }

    async fn send(&self, message: Message) {
        self.shared.outbox.send(&message).await;
    }
}

/// The id of a request that is JSON but not valid JSON-RPC, so its error can
/// still be matched to it.
fn salvage_id(frame: &[u8]) -> Option<RequestId> {
    let value: Value = serde_json::from_slice(frame).ok()?;
    serde_json::from_value(value.get("id")?.clone()).ok()
}
