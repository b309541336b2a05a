//! mcpvisor: MCP servers for long-running agent hosts, supervised.
//!
//! A host reads a `.mcp.json` ([`config`]) or builds [`ServerSpec`]s itself,
//! starts a [`Host`], and gets the servers' tools as [`ToolDefinition`]s with
//! qualified names (`mcp__server__tool`). Calls are routed by that name, can be
//! cancelled by dropping them, and time out; a server that crashes, hangs or
//! misbehaves is isolated and restarted while the others keep working.
//! [`Host::events`] reports servers coming and going.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use mcpvisor::{CallOptions, Host, ServerSpec, StdioSpec, SupervisorOptions};
//! let files = ServerSpec::stdio(
//!     "files",
//!     StdioSpec::new("npx", ["-y", "@modelcontextprotocol/server-filesystem", "."]),
//! );
//! let host = Host::start(vec![files], SupervisorOptions::default()).await?;
//! host.wait_ready(std::time::Duration::from_secs(30)).await;
//! let result = host
//!     .call("mcp__files__list_directory", serde_json::json!({"path": "."}), CallOptions::default())
//!     .await?;
//! println!("{}", result.text());
//! host.shutdown().await;
//! # Ok(()) }
//! ```
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod approval;
pub mod config;
pub mod project;
pub mod settings;
mod start;

pub use start::{StartProjectError, start_project};

pub use mcpvisor_actors::fault::{FaultParseError, parse_duration};
pub use mcpvisor_actors::host_requests::{
    ClientHandler, FormRequest, HostAnswer, HostAsk, RootsRequest, SamplingRequest,
    SharedClientHandler, UrlRequest, round_key,
};
/// The route table ([`Host::routes`]).
pub use mcpvisor_actors::routes;
pub use mcpvisor_actors::{
    CallCanceller, CallError, CallOptions, Catalog, CompletionTarget, ConnectionError, DownReason,
    Fault, FaultError, FaultKind, Host, HostEvent, PendingCall, ProgressCallback, Refusals,
    RefusedRoute, ReloadReport, RestartPolicy, RoutedPrompt, ServerId, ServerResource, ServerSpec,
    ServerState, ServerStatus, ServerTemplate, Skipped, StartError, SupervisorOptions,
    TransportSpec, Vitals,
};
pub use mcpvisor_protocol::mcp::client_offers::{ClientCapabilities, Root};
pub use mcpvisor_protocol::mcp::completion::Completion;
pub use mcpvisor_protocol::mcp::elicit_answer::{ElicitAction, ElicitAnswer};
pub use mcpvisor_protocol::mcp::elicitation::{Field, FieldKind, Form};
pub use mcpvisor_protocol::mcp::logging::LogLevel;
pub use mcpvisor_protocol::mcp::prompts::{GetPromptResult, Prompt};
pub use mcpvisor_protocol::mcp::resources::{
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};
pub use mcpvisor_protocol::mcp::revision::{Revision, Versions};
pub use mcpvisor_protocol::mcp::sampling::{CreateMessage, Role, SamplingMessage, SamplingResult};
pub use mcpvisor_protocol::state::listing::ListingLimits;
pub use mcpvisor_protocol::wire::jsonrpc::ErrorObject;
pub use mcpvisor_protocol::{CallToolResult, ContentBlock, QualifiedMcpToolName, ToolDefinition};
pub use mcpvisor_transports::{
    HttpHeaders, HttpOptions, HttpSpec, SecretString, StdioOptions, StdioSpec, TransportError,
    http_client,
};

/// OAuth for HTTP servers.
pub use mcpvisor_auth as auth;
/// Supervisors on several machines as one cluster (`Host::join_cluster`;
/// the `cluster` feature).
#[cfg(feature = "cluster")]
pub use mcpvisor_cluster as cluster;
#[cfg(feature = "cluster")]
pub use mcpvisor_cluster::JoinCluster;
