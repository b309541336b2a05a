//! The gateway's integration tests, one binary: `mcpvisor serve` (the built
//! binary) over stdio, Streamable HTTP and the local endpoint, driven by raw
//! JSON-RPC and by third-party clients (the TypeScript and Python SDKs, rmcp).

mod attach;
mod bridge;
mod forwarding;
mod http;
mod http_hardening;
mod http_peers;
mod inject;
mod inject_clients;
mod lifecycle;
mod reload;
mod resources_prompts;
mod rmcp_client;
mod running_leaks;
mod sdk_clients;
mod sessions;
mod stdio;
