//! mcpvisor through its public host API: supervisor, registry, server actor.

use std::time::Duration;

use anyhow::{bail, ensure};
use mcpvisor::HttpSpec;
use mcpvisor::{CallOptions, Host, ServerSpec, ServerState, StdioSpec, SupervisorOptions};
use serde_json::Value;

use crate::servers::{Endpoint, ServerTarget};

/// The route component every benchmarked server gets.
pub(crate) const SERVER_NAME: &str = "bench";

/// A [`Host`] supervising one server.
pub struct McpvisorConnection {
    host: Host,
    tool: String,
    arguments: Value,
}

impl McpvisorConnection {
    /// Starts a host with `server` and waits until it is ready.
    pub async fn open(server: &ServerTarget) -> anyhow::Result<McpvisorConnection> {
        let mut options = SupervisorOptions::default();
        if server.stateless {
            options.protocol_versions = mcpvisor::Versions::parse(&["2026-07-28"])?;
        }
        let host = start_host(vec![spec(SERVER_NAME, server)], options).await?;
        Ok(McpvisorConnection {
            host,
            tool: format!("mcp__{SERVER_NAME}__{}", server.tool),
            arguments: Value::Object(server.arguments()),
        })
    }

    /// One echo call.
    pub async fn call(&self) -> anyhow::Result<()> {
        let result = self
            .host
            .call(&self.tool, self.arguments.clone(), CallOptions::default())
            .await?;
        ensure!(!result.is_error, "the echo tool failed: {}", result.text());
        Ok(())
    }

    /// The host, for figures that need more than calls (pids, events).
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Shuts the host down.
    pub async fn close(self) {
        self.host.shutdown().await;
    }
}

/// The spec of `server`, routed as `name`.
pub fn spec(name: &str, server: &ServerTarget) -> ServerSpec {
    match &server.endpoint {
        Endpoint::Stdio { command, args } => {
            ServerSpec::stdio(name, StdioSpec::new(command.clone(), args.clone()))
        }
        Endpoint::Http { url } => ServerSpec::http(name, HttpSpec::new(url.clone())),
    }
}

/// Starts a host with `specs` and waits until every server is ready.
pub async fn start_host(
    specs: Vec<ServerSpec>,
    options: SupervisorOptions,
) -> anyhow::Result<Host> {
    let host = Host::start(specs, options).await?;
    let statuses = host.wait_ready(Duration::from_secs(60)).await;
    if let Some(down) = statuses.iter().find(|s| s.state != ServerState::Ready) {
        let state = format!("{:?}", down.state);
        host.shutdown().await;
        bail!("server {} is not ready: {state}", down.name);
    }
    Ok(host)
}
