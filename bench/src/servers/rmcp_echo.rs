//! An rmcp echo server on stdio: one tool, `echo {text}`, answering the text.
//!
//! It does as little as an MCP server can, on a single-threaded runtime, so
//! that the client's cost dominates every figure measured against it. When
//! stdin and stdout are pipes (as every benchmarked client spawns it) it reads
//! and writes them through epoll-driven [`tokio::net::unix::pipe`] ends:
//! rmcp's own `stdio()` goes through Tokio's blocking-thread stdin and
//! stdout, which caps it near 16k calls/s on the benchmark machine.

use std::fs::File;
use std::os::fd::AsFd;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use tokio::net::unix::pipe;

/// The arguments of `echo`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct EchoArgs {
    /// The text to send back.
    pub text: String,
}

/// The server: a tool router with `echo`.
#[derive(Debug, Clone)]
pub struct EchoServer {
    tool_router: ToolRouter<Self>,
}

impl Default for EchoServer {
    fn default() -> Self {
        EchoServer {
            tool_router: Self::tool_router(),
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
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for EchoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// Serves [`EchoServer`] on stdin/stdout until stdin closes, then exits the process.
pub fn serve_stdio() -> ! {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let code = match runtime {
        Ok(rt) => {
            let served = rt.block_on(async {
                let service = match pipes() {
                    Ok(pipes) => EchoServer::default().serve(pipes).await?,
                    Err(_) => {
                        EchoServer::default()
                            .serve(rmcp::transport::stdio())
                            .await?
                    }
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
