//! The clients compared, each as one open connection to one server.
//!
//! Every client offers the same three measurements: a run of sequential calls
//! (each call's round trip), a window with a fixed number of calls in flight
//! (completions counted), and opening itself (timed by the caller as
//! spawn-to-ready).

mod floor_http;
mod floor_pipe;
mod floor_tokio;
mod in_flight;
pub mod mcpvisor;
pub mod rmcp;

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::servers::ServerTarget;

pub use self::mcpvisor::McpvisorConnection;
pub use self::rmcp::RmcpConnection;
pub use floor_http::HttpFloor;
pub use floor_pipe::PipeFloor;
pub use floor_tokio::TokioPipeFloor;
pub use in_flight::keep_in_flight;

/// Which client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Client {
    /// mcpvisor through `Host::start` / `Host::call`.
    Mcpvisor,
    /// rmcp 3.11.0, the official Rust SDK, with its default transports.
    Rmcp,
    /// No MCP client: `cat` through a pipe for stdio, a kept-alive POST loop for HTTP.
    Floor,
    /// The stdio floor on Tokio's pipes and runtime (stdio only).
    TokioFloor,
}

impl Client {
    /// Every client, in report order.
    pub const ALL: [Client; 4] = [
        Client::Mcpvisor,
        Client::Rmcp,
        Client::Floor,
        Client::TokioFloor,
    ];

    /// The clients that start many servers (fleet and memory figures).
    pub const FLEET: [Client; 3] = [Client::Mcpvisor, Client::Rmcp, Client::Floor];

    /// True if this client can reach `server`.
    pub fn reaches(self, server: &ServerTarget) -> bool {
        match self {
            Client::Mcpvisor | Client::Rmcp => true,
            // The floors speak no MCP revision: only the dated targets have them.
            Client::Floor => !server.stateless,
            Client::TokioFloor => !server.is_http() && !server.stateless,
        }
    }

    /// The client called `name` (as [`Client::name`] spells it).
    pub fn parse(name: &str) -> anyhow::Result<Client> {
        Client::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| anyhow::anyhow!("unknown client {name:?}"))
    }

    /// The report's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Client::Mcpvisor => "mcpvisor",
            Client::Rmcp => "rmcp",
            Client::Floor => "floor",
            Client::TokioFloor => "tokio-floor",
        }
    }
}

/// An open connection of one client to one server.
pub enum Connection {
    /// mcpvisor.
    Mcpvisor(McpvisorConnection),
    /// rmcp.
    Rmcp(RmcpConnection),
    /// The stdio floor.
    Pipe(PipeFloor),
    /// The stdio floor on Tokio.
    TokioPipe(Box<TokioPipeFloor>),
    /// The HTTP floor.
    Http(HttpFloor),
}

impl Connection {
    /// Opens `client`'s connection to `server` and returns once its tools are
    /// listed (for the floors: once the first echo came back).
    pub async fn open(client: Client, server: &ServerTarget) -> anyhow::Result<Connection> {
        anyhow::ensure!(
            client.reaches(server),
            "{} cannot reach {}",
            client.name(),
            server.label
        );
        Ok(match client {
            Client::Mcpvisor => Connection::Mcpvisor(McpvisorConnection::open(server).await?),
            Client::Rmcp => Connection::Rmcp(RmcpConnection::open(server).await?),
            Client::Floor if server.is_http() => Connection::Http(HttpFloor::open(server).await?),
            Client::Floor => Connection::Pipe(PipeFloor::open()?),
            Client::TokioFloor => Connection::TokioPipe(Box::new(TokioPipeFloor::open().await?)),
        })
    }

    /// Makes `calls` calls one after another and returns each round trip.
    pub async fn sequential(&mut self, calls: usize) -> anyhow::Result<Vec<Duration>> {
        match self {
            Connection::Pipe(pipe) => tokio::task::block_in_place(|| pipe.sequential(calls)),
            Connection::TokioPipe(pipe) => pipe.sequential(calls).await,
            Connection::Mcpvisor(c) => timed_calls(calls, || c.call()).await,
            Connection::Rmcp(c) => timed_calls(calls, || c.call()).await,
            Connection::Http(c) => timed_calls(calls, || c.call()).await,
        }
    }

    /// Keeps `depth` calls in flight for `window` and returns how many completed in it.
    pub async fn in_flight(&mut self, depth: usize, window: Duration) -> anyhow::Result<u64> {
        match self {
            Connection::Pipe(pipe) => tokio::task::block_in_place(|| pipe.pipelined(depth, window)),
            Connection::TokioPipe(pipe) => pipe.pipelined(depth, window).await,
            Connection::Mcpvisor(c) => keep_in_flight(depth, window, || c.call()).await,
            Connection::Rmcp(c) => keep_in_flight(depth, window, || c.call()).await,
            Connection::Http(c) => keep_in_flight(depth, window, || c.call()).await,
        }
    }

    /// Closes the connection and stops what it started.
    pub async fn close(self) {
        match self {
            Connection::Mcpvisor(c) => c.close().await,
            Connection::Rmcp(c) => c.close().await,
            Connection::Pipe(c) => c.close(),
            Connection::TokioPipe(c) => (*c).close().await,
            Connection::Http(c) => c.close().await,
        }
    }
}

async fn timed_calls<F, Fut>(calls: usize, mut call: F) -> anyhow::Result<Vec<Duration>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        call().await?;
        times.push(start.elapsed());
    }
    Ok(times)
}
