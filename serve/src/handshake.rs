//! `initialize` as the gateway answers it.

use mcpvisor_protocol::messages::{ClientCapabilities, PROTOCOL_VERSION};
use serde_json::{Value, json};

/// Reads `initialize`: the version must be there; what the client offers is kept.
pub(crate) fn initialize_params(params: Option<&Value>) -> Result<ClientCapabilities, String> {
    let requested = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .ok_or("`protocolVersion` is required")?;
    tracing::debug!(requested, "downstream session initialized");
    let offered = params.and_then(|p| p.get("capabilities"));
    let has = |name: &str| {
        offered
            .and_then(|c| c.get(name))
            .is_some_and(Value::is_object)
    };
    Ok(ClientCapabilities {
        sampling: has("sampling"),
        elicitation: has("elicitation"),
        roots: false,
    })
}

/// The gateway's answer to `initialize`.
pub(crate) fn initialize_result() -> Value {
    json!({
        // The one revision this gateway serves; a client that wants another
        // one sees it here and may disconnect (the MCP negotiation rule).
        "protocolVersion": PROTOCOL_VERSION,
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
