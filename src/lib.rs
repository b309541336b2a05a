//! mcpvisor

/// The built-in demo MCP server (`mcpvisor demo-server`), also the fault-injection peer of the tests.
pub mod demo_server;
