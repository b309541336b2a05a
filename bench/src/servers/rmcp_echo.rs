//! An rmcp echo server on stdio: one tool, `echo {text}`, answering the text.
//!
//! It does as little as an MCP server can, on a single-threaded runtime, so
//! that the client's cost dominates every figure measured against it. When
//! stdin and stdout are pipes (as every benchmarked client spawns it) it reads
//! and writes them through epoll-driven [`tokio::net::unix::pipe`] ends:
//! rmcp's own `stdio()` goes through Tokio's blocking-thread stdin and
//! stdout, which caps it near 16k calls/s on the benchmark machine.
//!
//! With [`TOOLS_FLAG`]` N` (the cost curve) it also lists `N` more tools
//! (`t000000`, `t000001`, …; listed only, not callable) in pages of
//! [`PAGE`], and offers `grow`, which adds one more and sends
//! `notifications/tools/list_changed`: how the curve changes a server's tools.

use std::fs::File;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData, Peer, RoleServer, ServerHandler, ServiceExt, schemars, tool, tool_handler,
    tool_router,
};
use tokio::net::unix::pipe;

/// The argument that gives the server extra tools and `grow`.
pub const TOOLS_FLAG: &str = "--tools";

/// Tools per `tools/list` page: a page of 1,000 small tools is about 100 KB,
/// well inside mcpvisor's 1 MiB stdio frame, so any count can be listed.
pub const PAGE: usize = 1_000;

/// The name of the `i`-th extra tool.
pub fn extra_tool_name(i: usize) -> String {
    format!("t{i:06}")
}

/// The arguments of `echo`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct EchoArgs {
    /// The text to send back.
    pub text: String,
}

/// The server: a tool router with `echo` (and `grow`), plus the extra tools.
#[derive(Debug, Clone)]
pub struct EchoServer {
    tool_router: ToolRouter<Self>,
    /// How many extra tools are listed now; `None` outside the curve mode.
    extra: Option<Arc<AtomicUsize>>,
}

impl Default for EchoServer {
    fn default() -> Self {
        let mut tool_router = Self::tool_router();
        tool_router.remove_route("grow");
        EchoServer {
            tool_router,
            extra: None,
        }
    }
}

impl EchoServer {
    /// The curve's server: `echo`, `grow` and `extra` listed tools.
    pub fn with_tools(extra: usize) -> Self {
        EchoServer {
            tool_router: Self::tool_router(),
            extra: Some(Arc::new(AtomicUsize::new(extra))),
        }
    }
}

#[tool_router]
impl EchoServer {
    /// Answers the text it was given.
    #[tool(description = "Echo the text back")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    /// Lists one tool more and tells the client its tools changed.
    #[tool(description = "Add a tool and announce the change")]
    async fn grow(&self, peer: Peer<RoleServer>) -> String {
        let count = match &self.extra {
            Some(extra) => extra.fetch_add(1, Ordering::SeqCst) + 1,
            None => 0,
        };
        // Sent before the answer, so the client learns of the change first.
        let _ = peer.notify_tool_list_changed().await;
        count.to_string()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for EchoServer {
    fn get_info(&self) -> ServerConfig {
        let tools = ServerCapabilities::builder().enable_tools();
        let capabilities = if self.extra.is_some() {
            tools.enable_tool_list_changed().build()
        } else {
            tools.build()
        };
        ServerConfig::new(capabilities)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.tool_router.list_all();
        let Some(extra) = &self.extra else {
            return Ok(ListToolsResult::with_all_items(tools));
        };
        let extra = extra.load(Ordering::SeqCst);
        let from: usize = match request.and_then(|r| r.cursor) {
            Some(cursor) => cursor
                .parse()
                .map_err(|_| ErrorData::invalid_params("unknown cursor", None))?,
            None => 0,
        };
        if from > 0 {
            tools.clear();
        }
        let to = (from + PAGE).min(extra);
        let schema = small_schema();
        tools.extend((from..to).map(|i| {
            Tool::new(
                extra_tool_name(i),
                "A listed tool of the cost curve",
                schema.clone(),
            )
        }));
        let mut page = ListToolsResult::with_all_items(tools);
        page.next_cursor = (to < extra).then(|| to.to_string());
        Ok(page)
    }
}

/// `{"type":"object","properties":{"text":{"type":"string"}}}`, shared by every extra tool.
fn small_schema() -> Arc<JsonObject> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
    });
    match schema {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => Arc::default(),
    }
}

/// Serves [`EchoServer`] on stdin/stdout until stdin closes, then exits the
/// process; `args` may hold [`TOOLS_FLAG`]` N`.
pub fn serve_stdio(args: &[String]) -> ! {
    let server = match args {
        [flag, n] if flag == TOOLS_FLAG => match n.parse() {
            Ok(n) => EchoServer::with_tools(n),
            Err(_) => std::process::exit(2),
        },
        [] => EchoServer::default(),
        _ => std::process::exit(2),
    };
    serve_on_stdio(server)
}

/// Serves `server` on stdin/stdout (through [`pipes`] where they are pipes)
/// on a single-threaded runtime until stdin closes, then exits the process.
pub fn serve_on_stdio<S: ServerHandler>(server: S) -> ! {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let code = match runtime {
        Ok(rt) => {
            let served = rt.block_on(async {
                let service = match pipes() {
                    Ok(pipes) => server.serve(pipes).await?,
                    Err(_) => server.serve(rmcp::transport::stdio()).await?,
                };
                service.waiting().await?;
                anyhow::Ok(())
            });
            i32::from(served.is_err())
        }
        Err(_) => 1,
    };
    std::process::exit(code)
}

/// Stdin and stdout as non-blocking pipe ends, if both are pipes.
fn pipes() -> std::io::Result<(pipe::Receiver, pipe::Sender)> {
    let stdin = File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let stdout = File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    Ok((
        pipe::Receiver::from_file(stdin)?,
        pipe::Sender::from_file(stdout)?,
    ))
}
