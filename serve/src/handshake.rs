//! `initialize` as the gateway answers it.

use mcpvisor_protocol::mcp::messages::ClientCapabilities;
use mcpvisor_protocol::mcp::revision::{Revision, Versions};
use serde_json::{Value, json};

/// Reads `initialize`: the version must be there; what the client offers is
/// kept. The session speaks the client's revision when it is one of
/// `versions`, else the first of them (the client may then disconnect: the
/// MCP negotiation rule).
pub(crate) fn initialize_params(
    params: Option<&Value>,
    versions: &Versions,
) -> Result<(ClientCapabilities, Revision), String> {
    let requested = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .ok_or("`protocolVersion` is required")?;
    let revision = versions.accepts(requested).unwrap_or(versions.offered());
    tracing::debug!(requested, %revision, "downstream session initialized");
    let offered = params.and_then(|p| p.get("capabilities"));
    // Roots too: a 2026-07-28 server may ask them in a call made for this client.
    let offers = ClientCapabilities::declared_by(offered, revision);
    Ok((offers, revision))
}

/// The gateway's answer to `initialize`, at `revision`.
pub(crate) fn initialize_result(revision: Revision) -> Value {
    json!({
        "protocolVersion": revision.as_str(),
        "capabilities": {
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "completions": {},
            "logging": {},
        },
        "serverInfo": {"name": "mcpvisor", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "Tools of supervised MCP servers, named mcp__<server>__<tool>. \
            A tool result that says a server restarted can be retried.",
    })
}
