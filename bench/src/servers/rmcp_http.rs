//! The rmcp echo server ([`EchoServer`]) over Streamable HTTP, in a process
//! of its own on a multi-thread runtime: `harness rmcp-http-server
//! [--sessions]` listens on a free loopback port, prints its MCP URL on
//! stdout and exits when its stdin closes (its parent went away).
//!
//! By default it is the cheapest Streamable HTTP server rmcp offers per call,
//! so the client's cost shows: stateless (`legacy_session_mode` off: no
//! session to look up, each POST served directly) and answering JSON rather
//! than an SSE stream (`json_response`). It offers no GET stream (405). With
//! [`SESSIONS_FLAG`] it keeps sessions and serves each one's GET stream, for
//! the memory figure of idle connections with their streams open.

use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::sync::Arc;

use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::open_streams::OpenStreams;
use super::rmcp_echo::EchoServer;

/// The argument that makes the harness binary serve [`EchoServer`] over HTTP.
pub const RMCP_HTTP_ARG: &str = "rmcp-http-server";

/// The argument that makes it keep sessions with their GET streams.
pub const SESSIONS_FLAG: &str = "--sessions";

/// Serves until stdin closes, then exits the process; `args` may hold [`SESSIONS_FLAG`].
pub fn serve(args: &[String]) -> ! {
    let sessions = match args {
        [] => false,
        [flag] if flag == SESSIONS_FLAG => true,
        _ => std::process::exit(2),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build();
    let code = match runtime {
        Ok(rt) => i32::from(rt.block_on(run(sessions)).is_err()),
        Err(_) => 1,
    };
    std::process::exit(code)
}

async fn run(sessions: bool) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let echo = Arc::new(EchoServer::default());
    let mcp = StreamableHttpService::new(
        move || Ok(echo.clone()),
        Arc::new(LocalSessionManager::default()),
        config(sessions),
    );
    let router = OpenStreams::default().around(Router::new().route_service("/mcp", mcp));
    exit_with_parent()?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{url}")?;
    stdout.flush()?;
    axum::serve(listener, router).await?;
    Ok(())
}

fn config(sessions: bool) -> StreamableHttpServerConfig {
    let config = StreamableHttpServerConfig::default();
    if sessions {
        config
    } else {
        config
            .with_legacy_session_mode(false)
            .with_json_response(true)
    }
}

/// Exits once stdin reaches its end, so a harness that dies leaves no server behind.
fn exit_with_parent() -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("stdin-watch".into())
        .spawn(|| {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            std::process::exit(0);
        })?;
    Ok(())
}
