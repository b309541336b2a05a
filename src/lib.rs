//! mcpvisor
