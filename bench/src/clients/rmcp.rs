//! rmcp 3.11.0 as the peer client: its child-process transport for stdio and
//! its default Streamable HTTP client (reqwest, connection reuse off).

use std::process::Stdio;

use anyhow::ensure;
use rmcp::model::{CallToolRequestParams, ClientConfig, JsonObject, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};

use crate::servers::{Endpoint, ServerTarget};

/// An initialized rmcp client session.
pub struct RmcpConnection {
    client: RunningService<RoleClient, ClientConfig>,
    tool: &'static str,
    arguments: JsonObject,
}

impl RmcpConnection {
    /// Connects (spawning a stdio server), initializes at the protocol version
    /// mcpvisor speaks, and lists the tools.
    pub async fn open(server: &ServerTarget) -> anyhow::Result<RmcpConnection> {
        let client = connect(server).await?;
        let tools = client.list_all_tools().await?;
        ensure!(
            tools.iter().any(|t| t.name == server.tool),
            "{} lists no `{}` tool",
            server.label,
            server.tool
        );
        Ok(RmcpConnection {
            client,
            tool: server.tool,
            arguments: server.arguments(),
        })
    }

    /// One echo call.
    pub async fn call(&self) -> anyhow::Result<()> {
        let params = CallToolRequestParams::new(self.tool).with_arguments(self.arguments.clone());
        let result = self.client.call_tool(params).await?;
        ensure!(result.is_error != Some(true), "the echo tool failed");
        Ok(())
    }

    /// Ends the session (and the child process).
    pub async fn close(self) {
        let _ = self.client.cancel().await;
    }
}

/// Spawns or reaches `server` and completes `initialize`, without listing tools.
pub async fn connect(
    server: &ServerTarget,
) -> anyhow::Result<RunningService<RoleClient, ClientConfig>> {
    let config = ClientConfig::default().with_protocol_version(ProtocolVersion::V_2025_03_26);
    // At 2026-07-28: rmcp's `server/discover` lifecycle, with no fallback.
    let lifecycle = match server.stateless {
        true => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        false => ClientLifecycleMode::Initialize,
    };
    Ok(match &server.endpoint {
        Endpoint::Stdio { command, args } => {
            let command = tokio::process::Command::new(command).configure(|c| {
                c.args(args);
            });
            let (transport, _) = TokioChildProcess::builder(command)
                .stderr(Stdio::null())
                .spawn()?;
            config.serve_with_lifecycle(transport, lifecycle).await?
        }
        Endpoint::Http { url } => {
            config
                .serve_with_lifecycle(
                    StreamableHttpClientTransport::from_uri(url.clone()),
                    lifecycle,
                )
                .await?
        }
    })
}
